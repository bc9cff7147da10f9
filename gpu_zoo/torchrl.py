"""A TorchRL environment over a batched env, in the multi-agent layout of TorchRL's VMAS and PettingZoo wrappers.

One nested entry per agent group, batch size ``(num_envs,)`` and group tensors
``(num_envs, group_size, ...)``::

    (group, "observation")   (E, n, obs_size) float32 (uint8 for a group of obs_dtype="u8")
    (group, "action")        (E, n) indices (MultiDiscrete: (E, n, k); one-hot with categorical_actions=False)
    (group, "action_mask")   (E, n, mask_size) bool, for groups with action masks
    (group, "reward")        (E, n, 1) float32
    (group, "done" | "terminated" | "truncated")   (E, n, 1) bool: the agent is out of the game
    "done" | "terminated" | "truncated"             (E, 1) bool: the env's episode ended
    "state"                  (E, state_size) float32, every agent's observation (`BatchedEnv.global_state`)

An agent that left the game mid-episode (a tagged runner) stays ``terminated`` until its env
resets, with zero observations and rewards; its env goes on until the episode ends for all.

Episode ends. By default the batched env restarts a finished env inside its step kernel
(auto-reset). Its transition still ends on the episode's last observation (``("next", group,
"observation")`` is the final one, never the next episode's start), and the ``_reset`` that
TorchRL then sends for that env serves the episode that already started instead of starting
another. With ``autoreset=False`` a finished env waits, and ``_reset`` starts its next episode
through `BatchedEnv.reset` with ``envs=``. Either way a collector's data equals the batched
env's own steps on the same seed and actions. A ``_reset`` of an env that has not finished
starts its next episode too.

Tensors stay on the env's device. Besides the batched env's action checks (``validate``), only
a partial ``_reset`` reads a value back to the host: whether any env needs the reset kernel.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import torch
import torch.nn.functional as F

import gpu_zoo
from gpu_zoo.core.runtime.batched import BatchedEnv

try:
    from tensordict import TensorDict, TensorDictBase
    from torchrl.data import (
        Bounded,
        Categorical,
        Composite,
        MultiCategorical,
        MultiOneHot,
        OneHot,
        TensorSpec,
        Unbounded,
    )
    from torchrl.envs import EnvBase
except ImportError as err:
    raise ImportError(f"gpu_zoo.torchrl needs TorchRL and TensorDict ({err}); install them with "
                      "`pip install gpu_zoo[torchrl]`") from err

_FLAGS = ("done", "terminated", "truncated")


def box_spec(space: gymnasium.spaces.Box) -> TensorSpec:
    """One agent's spec of a Box: unbounded where the Box is, else bounded (as TorchRL's gym wrapper maps it).

    Of the Box's dtype: float32, or uint8 for a ``obs_dtype="u8"`` group's observations.
    """
    dtype = torch.uint8 if space.dtype == np.uint8 else torch.float32
    low, high = torch.as_tensor(space.low, dtype=dtype), torch.as_tensor(space.high, dtype=dtype)
    if bool(torch.isinf(low).all()) and bool(torch.isinf(high).all()):
        return Unbounded(space.shape, dtype=dtype)
    return Bounded(low, high, space.shape, dtype=dtype)


def agent_action_spec(space: gymnasium.spaces.Space, categorical: bool) -> TensorSpec:
    """One agent's action spec: indices (``Categorical``/``MultiCategorical``) or one-hot, or bounded floats."""
    if isinstance(space, gymnasium.spaces.Discrete):
        return (Categorical if categorical else OneHot)(int(space.n), dtype=torch.int64)
    if isinstance(space, gymnasium.spaces.MultiDiscrete):
        nvec = [int(n) for n in space.nvec]
        return MultiCategorical(nvec, dtype=torch.int64) if categorical else MultiOneHot(nvec, dtype=torch.int64)
    return box_spec(space)


def _flag_specs(shape: tuple[int, ...]) -> dict[str, TensorSpec]:
    return {k: Categorical(2, (*shape, 1), dtype=torch.bool) for k in _FLAGS}


class GpuZooEnv(EnvBase):
    """A gpu_zoo env as a TorchRL ``EnvBase`` of batch size ``(num_envs,)``.

    Keys, shapes and specs follow TorchRL's multi-agent wrappers (one nested entry per agent
    group; the guide lists them). A step that ends an episode reports its final observation;
    with auto-reset (the default) the env has already restarted, and the ``_reset`` TorchRL sends
    for it serves that start, while with ``autoreset=False`` the ``_reset`` starts the next
    episode (`BatchedEnv.reset` with ``envs``). ``set_seed(s)`` resets every env from ``s``, and
    the next full reset keeps that start: the episodes replay ``BatchedEnv.reset(seed=s)``'s.

    Args:
        env: a registered env id (``"simple_tag_v3"``), or a `BatchedEnv` to wrap as it is (then
            pass nothing else but the keywords below).
        num_envs: environments stepped together (with an env id; default 1).
        device: where they run (with an env id): as `gpu_zoo.make`, CUDA when usable.
        categorical_actions: discrete actions as indices (TorchRL's ``Categorical``,
            ``MultiCategorical``), or one-hot vectors (``OneHot``, ``MultiOneHot``) when False.
        return_state: put the global state under ``"state"`` (a copy of every observation per step).
        **params: with an env id, the env's arguments and `BatchedEnv`'s (``autoreset``,
            ``validate``, ...), as for `gpu_zoo.make`.

    Attributes:
        batched: the `BatchedEnv` that runs the envs.
        group_map: agent names per group, ``{"tagger": ["tagger_0", ...], ...}``, as TorchRL's
            multi-agent wrappers have it.
    """

    def __init__(self, env: str | BatchedEnv, num_envs: int | None = None, device=None, *,
                 categorical_actions: bool = True, return_state: bool = True, **params):
        for name, flag in (("categorical_actions", categorical_actions), ("return_state", return_state)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be a bool, got {flag!r}")
        if isinstance(env, BatchedEnv):
            if num_envs is not None or device is not None or params:
                raise TypeError("GpuZooEnv(batched_env) wraps the env as it is: pass num_envs, device and the env's "
                                "arguments to gpu_zoo.make, or give an env id instead")
            batched = env
        elif isinstance(env, str):
            batched = gpu_zoo.make(env, num_envs=1 if num_envs is None else num_envs, device=device, **params)
        else:
            raise TypeError(f"env must be a registered env id or a BatchedEnv, got {type(env).__name__}")
        super().__init__(device=batched.device, batch_size=torch.Size([batched.num_envs]))
        self.batched = batched
        self.categorical_actions, self.return_state = categorical_actions, return_state
        self.group_map = {g: [f"{g}_{i}" for i in range(batched.group_size(g))] for g in batched.groups}
        self._make_specs()
        # Envs that restarted inside the last step (auto-reset): their next _reset has nothing to run.
        self._restarted = torch.zeros(batched.num_envs, dtype=torch.bool, device=self.device)
        self._seeded_start = False  # set_seed just reset every env: the next full reset keeps that start

    # ------------------------------------------------------------------ specs
    def _make_specs(self):
        b, E = self.batched, tuple(self.batch_size)
        # built on no device and moved at the end: every leaf then lands where the env is
        obs, act, rew, flags = (Composite(shape=E) for _ in range(4))
        for g in b.groups:
            shape = (*E, b.group_size(g))
            leaves = {"observation": box_spec(b.single_observation_space(g))}
            if g in b.action_masks:
                leaves["action_mask"] = Categorical(2, (b.layout.groups[g].mask_size,), dtype=torch.bool)
            obs[g] = Composite({k: v.expand(*shape, *v.shape) for k, v in leaves.items()}, shape=shape)
            one = agent_action_spec(b.single_action_space(g), self.categorical_actions)
            act[g] = Composite({"action": one.expand(*shape, *one.shape)}, shape=shape)
            rew[g] = Composite({"reward": Unbounded((*shape, 1), dtype=torch.float32)}, shape=shape)
            flags[g] = Composite(_flag_specs(shape), shape=shape)
        flags.update(_flag_specs(E))
        if self.return_state:
            obs["state"] = Unbounded((*E, b.state_size), dtype=torch.float32)
        self.full_observation_spec = obs.to(self.device)
        self.full_action_spec = act.to(self.device)
        self.full_reward_spec = rew.to(self.device)
        self.full_done_spec = flags.to(self.device)

    # ------------------------------------------------------------------ steps
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        b = self.batched
        actions = {g: self._read_action(tensordict, g) for g in b.groups}
        obs, rew, term, trunc, info = b.step(actions)  # checks every group before it writes any
        done = info["done"]
        out = TensorDict(batch_size=self.batch_size, device=self.device)
        last_obs, any_truncated = {}, torch.zeros_like(done)
        for g in b.groups:
            # An env that ended has restarted already (auto-reset): its transition ends on the final observation.
            last_obs[g] = torch.where(done.view(-1, 1, 1), info["final_obs"][g], obs[g])
            out_of_game = term[g] | ~info["active"][g]  # left at this step, or before it
            group = {"observation": last_obs[g], "reward": rew[g].unsqueeze(-1).clone(),
                     "terminated": out_of_game.unsqueeze(-1), "truncated": trunc[g].unsqueeze(-1).clone(),
                     "done": (out_of_game | trunc[g]).unsqueeze(-1)}
            if g in b.action_masks:
                # No action follows an agent's last step: all allowed there, as TorchRL's PettingZoo wrapper has it.
                group["action_mask"] = b.action_masks[g] | group["done"]
            out.set(g, TensorDict(group, batch_size=obs[g].shape[:2], device=self.device))
            any_truncated |= trunc[g].any(-1)
        truncated = done & any_truncated
        out.update({"done": done.unsqueeze(-1).clone(), "truncated": truncated.unsqueeze(-1),
                    "terminated": (done & ~truncated).unsqueeze(-1)})
        if self.return_state:
            out.set("state", b.global_state(last_obs))
        self._restarted = done & bool(b.autoreset)
        self._seeded_start = False
        return out

    def _read_action(self, tensordict: TensorDictBase, group: str) -> torch.Tensor:
        """The group's actions as the batched env takes them (indices); one-hot vectors decoded and checked."""
        spec = self.full_action_spec[group, "action"]
        value = tensordict.get((group, "action"), None)
        if value is None:
            raise ValueError(f"the tensordict has no {(group, 'action')!r} entry: expected {spec.dtype} actions of "
                             f"shape {tuple(spec.shape)}")
        if not isinstance(spec, OneHot | MultiOneHot):
            return value
        if tuple(value.shape) != tuple(spec.shape) or value.is_floating_point() or value.is_complex():
            raise ValueError(f"{(group, 'action')!r} must be one-hot integers or bools of shape {tuple(spec.shape)}, "
                             f"got {value.dtype} of shape {tuple(value.shape)}")
        space = self.batched.single_action_space(group)
        sizes = [int(space.n)] if isinstance(space, gymnasium.spaces.Discrete) else [int(n) for n in space.nvec]
        parts = value.split(sizes, dim=-1)
        if self.batched.validate and not all(bool(((p == 0) | (p == 1)).all() & (p.sum(-1) == 1).all())
                                             for p in parts):
            raise ValueError(f"{(group, 'action')!r} must hold exactly one 1 per action (the rest 0) for {space}")
        indices = torch.stack([p.argmax(-1) for p in parts], dim=-1)
        return indices.squeeze(-1) if isinstance(space, gymnasium.spaces.Discrete) else indices

    # ----------------------------------------------------------------- resets
    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs) -> TensorDictBase:
        if kwargs:
            raise TypeError(f"GpuZooEnv.reset takes no arguments {sorted(kwargs)}; seed it with set_seed")
        mask = None if tensordict is None else tensordict.get("_reset", None)
        b = self.batched
        if mask is None:
            if not self._seeded_start:
                b.reset()
            self._restarted.zero_()
        else:
            envs = self._reset_mask(mask)
            waiting = envs & ~self._restarted
            if bool(waiting.any()):
                b.reset(envs=waiting)
            self._restarted &= ~envs
        self._seeded_start = False
        return self._reset_output()

    def _reset_mask(self, mask: torch.Tensor) -> torch.Tensor:
        E = self.batched.num_envs
        if not isinstance(mask, torch.Tensor):
            raise ValueError(f"'_reset' must be a bool mask of shape ({E}, 1), got {type(mask).__name__}")
        if mask.dtype != torch.bool or tuple(mask.shape) not in ((E,), (E, 1)):
            raise ValueError(f"'_reset' must be a bool mask of shape ({E}, 1), got {mask.dtype} of shape "
                             f"{tuple(mask.shape)}")
        return mask.reshape(E).to(self.device)

    def _reset_output(self) -> TensorDictBase:
        b = self.batched
        out = TensorDict(batch_size=self.batch_size, device=self.device)
        for g in b.groups:
            shape = b.obs[g].shape[:2]
            group = {"observation": b.obs[g].clone(),
                     **{k: torch.zeros((*shape, 1), dtype=torch.bool, device=self.device) for k in _FLAGS}}
            if g in b.action_masks:
                group["action_mask"] = b.action_masks[g].clone()
            out.set(g, TensorDict(group, batch_size=shape, device=self.device))
        out.update({k: torch.zeros((*self.batch_size, 1), dtype=torch.bool, device=self.device) for k in _FLAGS})
        if self.return_state:
            out.set("state", b.global_state())
        return out

    def _set_seed(self, seed: int | None) -> None:
        """Resets every env from ``seed``; the next full reset keeps that start, as `BatchedEnv.reset` gives it."""
        self.batched.reset(seed=seed)
        self._restarted.zero_()
        self._seeded_start = True

    # ---------------------------------------------------------------- actions
    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """Uniformly random valid actions, inside the action masks (`BatchedEnv.sample_actions`), on the device."""
        if tensordict is None:
            tensordict = TensorDict(batch_size=self.batch_size, device=self.device)
        for g, value in self.batched.sample_actions().items():
            tensordict.set((g, "action"), self._encode_action(g, value))
        return tensordict

    def _encode_action(self, group: str, indices: torch.Tensor) -> torch.Tensor:
        space = self.batched.single_action_space(group)
        if isinstance(space, gymnasium.spaces.Box):
            return indices
        indices = indices.long()
        if self.categorical_actions:
            return indices
        if isinstance(space, gymnasium.spaces.Discrete):
            return F.one_hot(indices, int(space.n))
        return torch.cat([F.one_hot(indices[..., k], int(n)) for k, n in enumerate(space.nvec)], dim=-1)

    def to(self, device) -> GpuZooEnv:
        """This env, when ``device`` is where it runs: it cannot move (make it on the device you want)."""
        target = torch.device(device)
        if target.type == "cuda" and target.index is None and self.device.type == "cuda":
            target = torch.device("cuda", torch.cuda.current_device())
        if target != self.device:
            raise ValueError(f"GpuZooEnv runs on {self.device}, where its batched env's buffers are; make it with "
                             f"device={str(target)!r} to run there")
        return self

    def __repr__(self):
        return f"GpuZooEnv({self.batched.spec.id}, num_envs={self.batched.num_envs}, device={self.device})"
