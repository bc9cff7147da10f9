"""The batched tensor API: many environments stepped by one kernel launch, torch tensors in and out.

Output tensors are views of buffers allocated once and overwritten by every ``step``: clone
what you keep. ``step`` allocates nothing and never waits for the device, except for the
optional value checks (on by default; pass ``validate=False`` for full speed).
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Mapping

import gymnasium
import numpy as np
import torch

from ..api.params import check_count, checked
from ..api.spec import EnvSpec
from ..compiler.layout import LIVE_INT_PARAMS, Layout
from .buffers import Buffers
from .graphs import capture
from .launch import Launcher, check_cuda_device, default_device, simulator_enabled

_INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)
_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def check_seed(seed) -> int | None:
    """``seed`` as a Python int (NumPy integers are seeds too), or None; anything else is refused."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__}")
    seed = int(seed)
    if seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    return seed


def split_seed(seed: int) -> tuple[int, int]:
    """A non-negative int seed as two 31-bit halves (seeds are taken mod 2**62)."""
    seed = check_seed(seed)
    if seed is None:
        raise TypeError("seed must be an int, got None")
    return seed & 0x7FFFFFFF, (seed >> 31) & 0x7FFFFFFF


class BatchedEnv:
    """``num_envs`` copies of one environment, stepped together on one device.

    Args:
        spec: the environment's `EnvSpec`.
        num_envs: number of environments.
        device: ``"cuda"``, ``"cpu"`` or a torch device; default CUDA when usable, else CPU.
        autoreset: reset each environment as soon as its episode ends (the pre-reset
            observation is kept in ``info["final_obs"]``).
        validate: check action values (range, NaN) every step; costs a device sync.
        target: ``"cuda"`` or ``"cpu"`` kernels; follows ``device``. ``target="cuda"`` with a CPU
            device runs the CUDA kernel under Numba's simulator (``NUMBA_ENABLE_CUDASIM=1``).
        cuda_graph: on a GPU, replay the step launch as a captured CUDA graph (a few microseconds
            of host time instead of tens).
        block: CUDA threads per block (several envs share one when they need fewer threads).
        threads_per_env: CUDA threads per env, a power of two up to 1024. The default is the env's
            choice (its `Tuning.launch`), else one per agent (at most 256), and more while
            ``num_envs`` is too small to fill the GPU and the observations are large: see
            `gpu_zoo.core.compiler.launch_shape.launch_shape`.
        max_registers: cap on the CUDA kernel's registers per thread (default: 80 for blocks of
            256 threads, else the compiler's choice); a lower cap lets more blocks run at once on
            each multiprocessor, at the cost of spills.
        split_observe: on CUDA, a step as three kernels (the env's phases, the observations, the
            finished envs) instead of one: the observations then run without the per-agent
            phases' barriers (`gpu_zoo.core.compiler.launch_shape.launch_shape`). Same values either way.
            Default: the env's choice (its `Tuning.launch`), else one kernel.
        **params: the environment's constructor arguments.
    """

    def __init__(self, spec: EnvSpec, num_envs: int = 1, device=None, *, autoreset: bool = True,
                 validate: bool = True, target: str | None = None, block: int = 128, cuda_graph: bool = True,
                 threads_per_env: int | None = None, max_registers: int | None = None,
                 split_observe: bool | None = None, **params):
        check_count("num_envs", num_envs)
        for name, flag in (("autoreset", autoreset), ("validate", validate), ("cuda_graph", cuda_graph)):
            if not isinstance(flag, bool | np.bool_):
                raise TypeError(f"{name} must be a bool, got {flag!r}")
        self.spec = spec
        self.params = spec.make_params(**params)
        self.layout = Layout(spec, self.params)
        self.device = torch.device(device) if device is not None else default_device()
        if self.device.type == "cuda":
            check_cuda_device(self.device)
            if self.device.index is None:
                self.device = torch.device("cuda", torch.cuda.current_device())
        if target is None:
            target = "cuda" if self.device.type == "cuda" else "cpu"
        if target == "cuda" and self.device.type == "cpu" and not simulator_enabled():
            raise ValueError("target='cuda' on a CPU device needs NUMBA_ENABLE_CUDASIM=1")
        self.num_envs, self.autoreset, self.validate = num_envs, autoreset, validate
        self.buffers = Buffers(self.layout, num_envs, self.device)
        self.state = self.buffers.fields
        self.state.params[:] = torch.as_tensor(self.layout.runtime_values(), device=self.device)
        for name in LIVE_INT_PARAMS:
            getattr(self.state, name)[:] = getattr(self.params, name)
        for name, fld in self.layout.fields.items():
            if fld.init is not None:
                view = self.buffers.raw[name]
                view[:] = torch.tensor(fld.init, dtype=view.dtype, device=self.device).view(fld.shape)
        self.state.autoreset[:] = bool(autoreset)
        self._launcher = Launcher(self.layout, self.buffers, target, block, threads_per_env, max_registers,
                                  split_observe)
        self.target = target
        self._options = dict(autoreset=autoreset, validate=validate, target=target, block=block,
                             cuda_graph=cuda_graph, threads_per_env=threads_per_env, max_registers=max_registers,
                             split_observe=split_observe)
        self.groups = tuple(self.layout.groups)
        self._build_views()
        self._seeded = False
        self._saved: Buffers | None = None  # the state a partial reset puts back, allocated on first use
        self._use_graph = cuda_graph and self.device.type == "cuda" and target == "cuda"
        self._graph = None

    # ----------------------------------------------------------------- spaces
    def single_observation_space(self, group: str) -> gymnasium.spaces.Box:
        return self._group(group).observation_space

    def single_action_space(self, group: str) -> gymnasium.spaces.Space:
        return self._group(group).action_space

    def group_size(self, group: str) -> int:
        return self._group(group).count

    def _group(self, group: str):
        try:
            return self.layout.groups[group]
        except KeyError:
            raise ValueError(f"unknown group {group!r}; expected one of {list(self.layout.groups)}") from None

    # ------------------------------------------------------------------ views
    def _build_views(self):
        f = self.state
        g = self.layout.groups
        self.obs = {n: getattr(f, f"obs_{n}") for n in g}
        self.final_obs = {n: getattr(f, f"final_obs_{n}") for n in g}
        self.actions = {n: getattr(f, f"act_{n}") for n in g}
        self.rewards = {n: f.rew[:, gi.lo:gi.hi] for n, gi in g.items()}
        self.terminated = {n: f.term[:, gi.lo:gi.hi] for n, gi in g.items()}
        self.truncated = {n: f.trunc[:, gi.lo:gi.hi] for n, gi in g.items()}
        self.alive = {n: f.alive[:, gi.lo:gi.hi] for n, gi in g.items()}
        self.active = {n: f.active[:, gi.lo:gi.hi] for n, gi in g.items()}
        self.action_masks = {n: getattr(f, f"mask_{n}") for n, gi in g.items() if gi.group.masked}
        self.info = {"final_obs": self.final_obs, "done": f.done, "active": self.active, "alive": self.alive}
        # Turn-based games: (num_envs,) int32, the global index of the agent whose action the next step reads.
        self.current_player = f.current_player if self.spec.turn_based else None
        if self.action_masks:
            self.info["action_mask"] = self.action_masks
        self._bounds, self._box_affine = {}, {}
        for n, gi in g.items():
            sp = gi.action_space
            if isinstance(sp, gymnasium.spaces.Discrete):
                self._bounds[n] = torch.tensor(int(sp.n), device=self.device)
            elif isinstance(sp, gymnasium.spaces.MultiDiscrete):
                self._bounds[n] = torch.as_tensor(sp.nvec.astype(np.int64), device=self.device)
            else:
                self._bounds[n] = (torch.as_tensor(sp.low, device=self.device),
                                   torch.as_tensor(sp.high, device=self.device))
                low, high = (b.to(self.actions[n].dtype) for b in self._bounds[n])
                self._box_affine[n] = (low, high - low)

    # -------------------------------------------------------------------- API
    def reset(self, seed: int | None = None, episode_counts: torch.Tensor | None = None,
              start_steps: torch.Tensor | None = None, envs=None) -> dict[str, torch.Tensor]:
        """Resets every environment, or those in ``envs``. With a seed, env ``e`` of episode ``k`` starts alike.

        ``episode_counts`` (one integer per env) starts the finished-episode counts there instead
        of at zero, before the envs start: a run resumed without its env state keeps what counts
        episodes (the economy's tax annealing) where it was. ``start_steps`` (one integer per env,
        in ``[0, max_cycles)``) starts each env's first episode as if that many steps were taken:
        it is truncated that much sooner (its recorded length is the steps it ran), so envs reset
        together end their episodes apart, and a trainer's rollout then holds every part of an
        episode instead of the same part from every env. Later episodes run in full.

        ``envs``, a bool mask of shape ``(num_envs,)``, resets only the envs it marks, finished
        or mid-episode: each starts its next episode exactly as its own auto-reset would start
        it (the next episode of its seed, from step 0), and every other env is left exactly as
        it was. Episode statistics (`episode_stats`) keep counting; an episode cut short is not
        counted as finished. It needs a reset of every env first, and takes no ``seed``,
        ``episode_counts`` or ``start_steps`` (they apply to every env). It costs about a full
        reset: the reset kernel runs over every env, and the others' state is copied back.

        Returns the observations, one ``(num_envs, group_size, obs_size)`` tensor per group.
        """
        if envs is not None:
            return self._reset_envs(envs, seed=seed, episode_counts=episode_counts, start_steps=start_steps)
        f = self.state
        counts = self._per_env_ints("episode_counts", episode_counts, 0, None)
        starts = self._per_env_ints("start_steps", start_steps, 0, self.params.max_cycles)
        if seed is None and not self._seeded:
            seed = secrets.randbits(62)
        if seed is not None:
            lo, hi = split_seed(seed)
            f.seed[:, 0], f.seed[:, 1] = lo, hi
            f.episode.zero_()
            self._seeded = True
        else:
            f.episode.add_(1)
        for name in ("ep_count", "last_len", "last_ret", "rew", "ep_ret"):
            getattr(f, name).zero_()
        if counts is not None:
            f.ep_count.copy_(counts.to(f.ep_count.device, f.ep_count.dtype))
        if starts is None:
            f.t.zero_()
        else:
            f.t.copy_(starts.to(f.t.device, f.t.dtype))
        f.start_t.copy_(f.t)
        for d in (self.final_obs, self.obs):
            for t in d.values():
                t.zero_()
        self._launcher.reset()
        return self.obs

    def _reset_envs(self, envs, **full_reset_only) -> dict[str, torch.Tensor]:
        mask = self._env_mask(envs)
        if given := [name for name, value in full_reset_only.items() if value is not None]:
            raise ValueError(f"reset(envs=...) starts each marked env's next episode from its own seed; "
                             f"{', '.join(given)} apply to a reset of every env")
        if not self._seeded:
            raise RuntimeError("call reset() on every env before resetting some of them with reset(envs=...)")
        if self._saved is None:
            self._saved = Buffers(self.layout, self.num_envs, self.device)
        self._saved.storage.copy_(self.buffers.storage)
        f = self.state
        f.episode.add_(1)  # what an auto-reset does: the next episode's draws
        for name in ("t", "start_t", "rew", "ep_ret"):
            getattr(f, name).zero_()
        for d in (self.final_obs, self.obs):
            for t in d.values():
                t.zero_()
        self._launcher.reset()
        # The kernel reset every env (each env's reset reads and writes only its own rows): the others
        # get back all they had. Unlike a full reset, this one leaves the episode statistics counting.
        self.buffers.copy_envs_from(self._saved, ~mask)
        return self.obs

    def _env_mask(self, envs) -> torch.Tensor:
        """``envs`` checked as a bool mask of shape ``(num_envs,)``, on the env's device."""
        try:
            mask = torch.as_tensor(envs)
        except (TypeError, ValueError, RuntimeError):
            raise ValueError(f"envs must be a bool mask of shape ({self.num_envs},), "
                             f"got {type(envs).__name__}") from None
        if mask.dtype != torch.bool or tuple(mask.shape) != (self.num_envs,):
            raise ValueError(f"envs must be a bool mask of shape ({self.num_envs},), got {mask.dtype} of shape "
                             f"{tuple(mask.shape)}")
        return mask.to(self.device)

    def _per_env_ints(self, name: str, values, low: int, high: int | None) -> torch.Tensor | None:
        """``values`` checked as one integer per env in ``[low, high)`` (no upper bound when ``high`` is None)."""
        if values is None:
            return None
        x = torch.as_tensor(values)
        if x.shape != (self.num_envs,) or x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
            raise ValueError(f"{name} must be integers of shape ({self.num_envs},), got {x.dtype} of shape "
                             f"{tuple(x.shape)}")
        if bool((x < low).any()) or (high is not None and bool((x >= high).any())):
            bounds = f"in [{low}, {high})" if high is not None else f">= {low}"
            raise ValueError(f"{name} must be {bounds}, got values from {int(x.min())} to {int(x.max())}")
        return x

    def step(self, actions: Mapping[str, torch.Tensor] | None = None):
        """Steps every environment once.

        Args:
            actions: one tensor per group, ``(num_envs, group_size, *action_shape)``: integer
                indices for Discrete/MultiDiscrete groups, floats for Box groups. ``None`` steps
                with what is already in ``env.actions`` (write into it directly to skip a copy).

        Returns:
            ``(obs, rewards, terminated, truncated, info)``, dicts keyed by group (``info`` holds
            ``final_obs`` per group, ``done`` per env, ``active`` and ``alive`` masks per group,
            and ``action_mask`` per masked group: ``(num_envs, group_size, mask_size)`` bools,
            the actions feasible at the next step; an infeasible action is a no-op).
            ``terminated``/``truncated`` mark the agents whose episode ended at this step;
            ``active`` marks the agents that were in the game during this step.
        """
        if not self._seeded:
            raise RuntimeError("call reset() before step()")
        if actions is not None:
            self._load_actions(actions)
        # Inside a caller's capture (a trainer graphing its whole rollout step), the kernel is
        # launched into that capture: graphs cannot be replayed while one is being captured.
        if self._use_graph and not torch.cuda.is_current_stream_capturing():
            self._replay_step()
        else:
            self._launcher.step()
        return self.obs, self.rewards, self.terminated, self.truncated, self.info

    def _replay_step(self):
        """The step kernel as a CUDA graph: captured once (capture runs nothing), then replayed."""
        if self._graph is None:
            self._graph = capture(self._launcher.step, self.device)
        self._graph.replay()

    def _load_actions(self, actions: Mapping[str, torch.Tensor]):
        if not isinstance(actions, Mapping):
            raise ValueError(f"actions must be a dict keyed by group {list(self.groups)}, got {type(actions).__name__}")
        if set(actions) != set(self.groups):
            raise ValueError(f"actions must have exactly the groups {sorted(self.groups)}, got {sorted(actions)}")
        for name, value in actions.items():  # every group checked before any is written: a refusal changes nothing
            self.check_actions(name, value)
        for name, value in actions.items():
            if value is not self.actions[name]:
                self.actions[name].copy_(value)

    def check_actions(self, name: str, value):
        """Raises ValueError, naming what is expected, unless ``value`` is a valid action tensor for group ``name``."""
        discrete = self._check_action_tensor(name, value)
        if self.validate:
            self._check_values(name, value, discrete)

    def _check_action_tensor(self, name: str, value) -> bool:
        """Type, shape, device and dtype of an action tensor for group ``name``; returns whether it is discrete."""
        if name not in self.actions:
            raise ValueError(f"unknown group {name!r}; expected one of {list(self.groups)}")
        dst, gi = self.actions[name], self.layout.groups[name]
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"actions[{name!r}] must be a torch.Tensor, got {type(value).__name__}")
        if tuple(value.shape) != tuple(dst.shape):
            raise ValueError(f"actions[{name!r}] must have shape {tuple(dst.shape)} "
                             f"(num_envs, {gi.count}, *{gi.action_shape}), got {tuple(value.shape)}")
        if value.device != self.device:
            raise ValueError(f"actions[{name!r}] must be on {self.device}, got {value.device}")
        discrete = gi.action_dtype == "i32"
        allowed = _INT_DTYPES if discrete else _FLOAT_DTYPES
        if value.dtype not in allowed:
            kind = "an integer" if discrete else "a floating"
            raise ValueError(f"actions[{name!r}] must have {kind} dtype for {gi.action_space}, got {value.dtype}")
        return discrete

    def _check_values(self, name, value, discrete):
        if discrete:
            bad = (value < 0) | (value >= self._bounds[name])
            if bool(bad.any()):
                raise ValueError(f"actions[{name!r}] out of range for {self.single_action_space(name)}: "
                                 f"first bad index {tuple(bad.nonzero()[0].tolist())}")
        else:
            low, high = self._bounds[name]
            bad = ~torch.isfinite(value) | (value < low) | (value > high)
            if bool(bad.any()):
                raise ValueError(f"actions[{name!r}] must be finite and within [{low.tolist()}, "
                                 f"{high.tolist()}]: first bad index {tuple(bad.nonzero()[0].tolist())}")

    # ----------------------------------------------------------------- extras
    @property
    def state_size(self) -> int:
        """Length of `global_state`'s rows: every agent's observation."""
        return self.layout.obs_elements

    def global_state(self, obs: Mapping[str, torch.Tensor] | None = None) -> torch.Tensor:
        """The global state of every env, ``(num_envs, state_size)``: the PettingZoo face's ``state()``.

        Every agent's observation, concatenated in agent order. ``obs`` (default: the current
        observations) may be any tensors shaped as the observations, with more leading axes allowed:
        ``final_obs``, or a rollout's stored ``(T, num_envs, group_size, obs_size)``.
        """
        obs = self.obs if obs is None else obs  # float32 whatever the groups' obs_dtype
        return torch.cat([obs[g].flatten(-2).to(torch.float32) for g in self.groups], dim=-1)

    def sample_actions(self, generator: torch.Generator | None = None, groups=None,
                       out: Mapping[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
        """Uniformly random valid actions, made on the env's device (the batched ``action_space.sample()``).

        For a masked group each action (each dimension of a MultiDiscrete one) is uniform over
        the entries its current mask allows; an agent whose mask allows nothing (a player waiting
        for its turn) gets an action the env does not read. ``out`` (``env.actions``, say) takes the draws in
        place of new tensors: ``env.sample_actions(gen, out=env.actions); env.step()`` draws and
        steps with no copy, one or two device kernels a group. A ``generator`` on another device
        (a CPU one for a CUDA env) draws there, and the draws are copied over.
        """
        groups = list(self.groups if groups is None else groups)
        for g in groups:  # all checked before any is drawn: a refusal changes nothing
            if g not in self.actions:
                raise ValueError(f"unknown group {g!r}; expected one of {list(self.groups)}")
            if out is not None:
                if g not in out:
                    raise ValueError(f"out has no tensor for group {g!r}")
                self._check_action_tensor(g, out[g])
        device = self.device if generator is None else generator.device
        here = _same_device(device, self.device)
        result = {}
        for g in groups:
            dst = None if out is None else out[g]
            if here:
                result[g] = self._draw(g, generator, device, dst)
            else:
                drawn = self._draw(g, generator, device)
                result[g] = drawn.to(self.device) if dst is None else dst.copy_(drawn)
        return result

    def _draw(self, g: str, generator, device, dst: torch.Tensor | None = None) -> torch.Tensor:
        """Group ``g``'s draw on ``device``, into ``dst`` (a new tensor when None)."""
        sp, buf = self.single_action_space(g), self.actions[g]
        if g in self.action_masks:
            drawn = self._sample_masked(g, generator, device)
            return drawn if dst is None else dst.copy_(drawn)
        if dst is None:
            dst = torch.empty(buf.shape, dtype=buf.dtype, device=device)
        if isinstance(sp, gymnasium.spaces.Discrete):
            dst.random_(0, int(sp.n), generator=generator)  # one kernel, in the action dtype
        elif isinstance(sp, gymnasium.spaces.Box):
            low, span = (t.to(device) for t in self._box_affine[g])  # no copy on the env's device
            torch.addcmul(low, span, torch.rand(buf.shape, device=device, generator=generator, dtype=buf.dtype),
                          out=dst)
        else:
            dst.copy_(torch.rand(buf.shape, device=device, generator=generator) * self._bounds[g].to(device))
        return dst

    def _sample_masked(self, g: str, generator, device) -> torch.Tensor:
        # The arg-max of uniform scores over the allowed entries is a uniform pick among them.
        mask, sp = self.action_masks[g].to(device), self.single_action_space(g)
        scores = torch.rand(mask.shape, device=device, generator=generator).masked_fill_(~mask, -1.0)
        if isinstance(sp, gymnasium.spaces.Discrete):
            return scores.argmax(-1).to(self.actions[g].dtype)
        parts = scores.split([int(n) for n in sp.nvec], dim=-1)
        return torch.stack([p.argmax(-1) for p in parts], dim=-1).to(self.actions[g].dtype)

    def episode_stats(self) -> dict[str, torch.Tensor]:
        """Per env, on the device: finished-episode count, last length and last return per group."""
        f = self.state
        out = {"episodes": f.ep_count, "length": f.last_len}
        for n, gi in self.layout.groups.items():
            out[f"return_{n}"] = f.last_ret[:, gi.lo:gi.hi]
        return out

    def set_params(self, **values):
        """Changes runtime params of every env without recompiling: the float ones, and ``max_cycles``.

        The new values pass the checks a constructor's do (types, ranges, relations between
        params); a refused call changes nothing. A shorter ``max_cycles`` truncates the running
        episodes that have reached it at their next step.
        """
        names = self.layout.live_params
        for k in values:
            if k not in names:
                raise ValueError(f"{k!r} is not a runtime param; runtime params are {list(names)}")
        params = dataclasses.replace(self.params, **checked(type(self.params), values))
        floats = self.layout.runtime_params
        for k in values:
            if k in floats:
                self.state.params[:, floats.index(k)] = float(getattr(params, k))
            else:
                getattr(self.state, k)[:] = getattr(params, k)
        self.params = params

    def render(self, env_index: int = 0) -> np.ndarray:
        """An RGB frame (uint8 H x W x 3) of one environment."""
        if self.spec.render is None:
            raise NotImplementedError(f"{self.spec.id} has no render function")
        if not 0 <= env_index < self.num_envs:
            raise ValueError(f"env_index must be in [0, {self.num_envs}), got {env_index}")
        return self.spec.render(self.env_state(env_index), self.params)

    def env_state(self, env_index: int) -> dict[str, np.ndarray]:
        """Every field of one env as NumPy arrays (a host copy)."""
        return {n: v[env_index].cpu().numpy() for n, v in self.buffers.raw.items()}

    def __reduce__(self):
        """Pickled as its spec, its constructor's arguments and its state's bytes.

        Its kernels live in a module generated in this process, which another one (a spawned
        worker, say) cannot import: unpickling builds the env anew, its kernels coming from the
        kernel cache, and puts the state back, so it continues exactly where this one stands.
        """
        params = {f.name: getattr(self.params, f.name) for f in dataclasses.fields(self.params)}
        return (_rebuilt, (self.spec, self.num_envs, str(self.device), self._options, params),
                {"storage": self.buffers.storage.cpu(), "seeded": self._seeded})

    def __setstate__(self, state):
        self.buffers.storage.copy_(state["storage"])
        self._seeded = state["seeded"]

    def __repr__(self):
        return f"BatchedEnv({self.spec.id}, num_envs={self.num_envs}, device={self.device}, target={self.target})"


def _same_device(a, b) -> bool:
    """Whether two torch devices are one (``cuda`` is the current CUDA device)."""
    a, b = torch.device(a), torch.device(b)
    if a.type != b.type:
        return False
    if a.type != "cuda":
        return True
    current = torch.cuda.current_device()
    return (current if a.index is None else a.index) == (current if b.index is None else b.index)


def _rebuilt(spec: EnvSpec, num_envs: int, device: str, options: dict, params: dict) -> BatchedEnv:
    return BatchedEnv(spec, num_envs, device, **options, **params)
