"""From an `EnvSpec` and its params to concrete shapes, offsets, spaces and kernel constants.

All state, inputs and outputs of every environment live in one allocation, structure of
arrays: each field a contiguous ``(num_envs, *shape)`` block (`gpu_zoo.core.runtime.buffers`). Shapes
depend on the params only, never on ``num_envs``, so adding an environment never recompiles.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import cached_property

import gymnasium
import numpy as np

from ..api.spec import EnvSpec, Field, Group

# Fields every environment has; the core reads and writes them around the env's phases.
CORE_DOCS = {
    "rew": "reward of each agent for the last step",
    "ep_ret": "return of each agent in the running episode",
    "last_ret": "return of each agent in the last finished episode",
    "seed": "the two 31-bit halves of the env's seed",
    "episode": "episodes started in this env since reset(seed)",
    "t": "step count of the running episode",
    "max_cycles": "the step count at which episodes are truncated (a runtime value: set_params changes it)",
    "start_t": "step count the running episode started at: 0, or a late first start's (reset's start_steps)",
    "ep_count": "episodes finished in this env since reset(seed)",
    "last_len": "length of the last finished episode",
    "alive": "1 while the agent is in the game",
    "active": "1 if the agent was in the game at the start of the last step",
    "term": "1 if the agent's episode terminated at the last step",
    "trunc": "1 if the agent's episode was truncated at the last step",
    "done": "1 if the env's episode ended at the last step",
    "over": "1 once the game has ended for everyone (set by the env)",
    "autoreset": "1 if the env restarts as soon as its episode ends",
    "finished": "1 once an episode ended without auto-reset: later steps leave the env as it is until reset",
    "current_player": "the global index of the agent to move (turn-based games: set by the env)",
    "mover": "the agent whose move a launch applies, -1 for a whole cycle (sequential games: set by the face)",
}
LIVE_INT_PARAMS = ("max_cycles",)
"""Int params kept in a core field of their own name rather than compiled in."""


@dataclass(frozen=True)
class GroupInfo:
    """A group with its global agent range and derived spaces."""

    group: Group
    lo: int
    hi: int

    @property
    def name(self) -> str:
        return self.group.name

    @property
    def count(self) -> int:
        return self.group.count

    @cached_property
    def observation_space(self) -> gymnasium.spaces.Box:
        g = self.group
        dtype = np.uint8 if g.obs_dtype == "u8" else np.float32
        return gymnasium.spaces.Box(g.obs_low, g.obs_high, (g.obs_size,), dtype)

    @property
    def action_space(self) -> gymnasium.spaces.Space:
        return self.group.action_space

    @cached_property
    def obs_offsets(self) -> dict[str, tuple[int, int]]:
        """Block name -> (start, size) in the observation vector."""
        out, start = {}, 0
        for b in self.group.obs:
            out[b.name] = (start, b.size)
            start += b.size
        return out

    @property
    def action_shape(self) -> tuple[int, ...]:
        """Per-agent shape of the action tensor."""
        sp = self.action_space
        if isinstance(sp, gymnasium.spaces.Discrete):
            return ()
        if isinstance(sp, gymnasium.spaces.MultiDiscrete):
            return tuple(sp.nvec.shape)
        return tuple(sp.shape)

    @property
    def mask_size(self) -> int:
        """Entries of one agent's action mask: ``n`` for Discrete(n), ``sum(nvec)`` for MultiDiscrete."""
        sp = self.action_space
        if isinstance(sp, gymnasium.spaces.Discrete):
            return int(sp.n)
        if isinstance(sp, gymnasium.spaces.MultiDiscrete):
            return int(sp.nvec.sum())
        return 0

    @property
    def action_dtype(self) -> str:
        return "f32" if isinstance(self.action_space, gymnasium.spaces.Box) else "i32"


def _check_action_space(g: Group):
    sp = g.action_space
    if isinstance(sp, gymnasium.spaces.Discrete):
        if sp.start != 0:
            raise ValueError(f"group {g.name!r}: Discrete actions must start at 0")
    elif isinstance(sp, gymnasium.spaces.MultiDiscrete):
        if sp.nvec.ndim != 1 or np.any(sp.start != 0):
            raise ValueError(f"group {g.name!r}: MultiDiscrete actions must be 1-d and start at 0")
    elif isinstance(sp, gymnasium.spaces.Box):
        if sp.dtype != np.float32 or len(sp.shape) != 1:
            raise ValueError(f"group {g.name!r}: Box actions must be 1-d float32")
    else:
        raise ValueError(f"group {g.name!r}: unsupported action space {sp}")
    if g.masked and not isinstance(sp, gymnasium.spaces.Discrete | gymnasium.spaces.MultiDiscrete):
        raise ValueError(f"group {g.name!r}: action masks need Discrete or MultiDiscrete actions, got {sp}")


class Layout:
    """Shapes and offsets of every field of one env configuration (independent of num_envs)."""

    def __init__(self, spec: EnvSpec, params):
        self.spec = spec
        self.params = params
        groups = tuple(spec.groups(params))
        if not groups or len({g.name for g in groups}) != len(groups):
            raise ValueError(f"{spec.id}: groups must be non-empty with distinct names")
        self.groups: dict[str, GroupInfo] = {}
        lo = 0
        for g in groups:
            if g.count < 1:
                raise ValueError(f"{spec.id}: group {g.name!r} needs at least one agent, got {g.count}")
            _check_action_space(g)
            self.groups[g.name] = GroupInfo(g, lo, lo + g.count)
            lo += g.count
        self.num_agents = lo
        self.fields: dict[str, Field] = {}
        for f in (*self._core_fields(), *spec.fields(params)):
            if f.name in self.fields:
                raise ValueError(f"{spec.id}: field {f.name!r} is declared twice (or clashes with a core field)")
            self.fields[f.name] = f
        self._place()

    def _core_fields(self) -> list[Field]:
        A = self.num_agents
        out = [Field(n, "f32", (A,), CORE_DOCS[n]) for n in ("rew", "ep_ret", "last_ret")]
        out.append(Field("params", "f32", (max(1, len(self.runtime_params)),), "runtime float params"))
        out += [Field("seed", "i32", (2,), CORE_DOCS["seed"])]
        out += [Field(n, "i32", (), CORE_DOCS[n]) for n in ("episode", "t", "start_t", "ep_count", "last_len",
                                                             "max_cycles")]
        out += [Field(n, "u8", (A,), CORE_DOCS[n]) for n in ("alive", "active", "term", "trunc")]
        out += [Field(n, "u8", (), CORE_DOCS[n]) for n in ("done", "over", "autoreset", "finished")]
        if self.spec.turn_based:
            out.append(Field("current_player", "i32", (), CORE_DOCS["current_player"]))
        if self.spec.play == "sequential":  # whole cycles unless a face asks for one agent's move
            out.append(Field("mover", "i32", (), CORE_DOCS["mover"], init=(-1,)))
        for gi in self.groups.values():
            D, dt = gi.group.obs_size, gi.group.obs_dtype  # u8: bytes, not flags (Field.flag)
            out.append(Field(f"obs_{gi.name}", dt, (gi.count, D), f"observations of the {gi.name} group", flag=False))
            out.append(Field(f"final_obs_{gi.name}", dt, (gi.count, D), "observation before an auto-reset", flag=False))
            out.append(Field(f"act_{gi.name}", gi.action_dtype, (gi.count, *gi.action_shape), "actions"))
            if gi.group.masked:
                out.append(Field(f"mask_{gi.name}", "u8", (gi.count, gi.mask_size), "1 where an action is feasible"))
        return out

    def _place(self):
        """``words_per_env``: 32-bit words of state, inputs and outputs per env."""
        sizes = dict.fromkeys(("f64", "f32", "i32", "u8"), 0)
        for f in self.fields.values():
            sizes[f.dtype] += math.prod(f.shape)
        self.words_per_env = 2 * sizes["f64"] + sizes["f32"] + sizes["i32"] + -(-sizes["u8"] // 4)

    @cached_property
    def obs_elements(self) -> int:
        """Observation values of one env: every agent's observation, all groups."""
        return sum(gi.count * gi.group.obs_size for gi in self.groups.values())

    @cached_property
    def scratch_fields(self) -> tuple[str, ...]:
        """Fields that phases use as scratch (checked: each of shape ``(n,)``), in order of first use.

        They are undefined between steps, and untouched on a GPU.
        """
        out = []
        for kind in ("reset", "step", "observe"):
            for phase in self.spec.phases(kind, self.params):
                for name in getattr(phase, "scratch", ()):
                    f = self.fields.get(name)
                    if f is None or len(f.shape) != 1:
                        raise ValueError(f"{self.spec.id}: scratch {name!r} must name a field of shape (n,), got "
                                         f"{None if f is None else f.shape}")
                    if name not in out:
                        out.append(name)
        return tuple(out)

    @cached_property
    def live_params(self) -> tuple[str, ...]:
        """Params the kernels read at run time, which ``set_params`` changes: the float ones and `LIVE_INT_PARAMS`."""
        return (*self.runtime_params, *LIVE_INT_PARAMS)

    @cached_property
    def runtime_params(self) -> tuple[str, ...]:
        """Params stored per env at run time: the float ones."""
        return tuple(f.name for f in dataclasses.fields(self.params) if f.type in (float, "float"))

    @cached_property
    def kernel_constants(self) -> dict:
        """Compile-time constants: the non-float, non-str params but ``max_cycles``, and the spec's extra constants.

        ``max_cycles`` is read from its field (`LIVE_INT_PARAMS`): envs differing only in episode
        length share their kernels.
        """
        out = {}
        for f in dataclasses.fields(self.params):
            v = getattr(self.params, f.name)
            if f.name not in self.live_params and isinstance(v, bool | int | float):
                out[f.name] = v
        extra = self.spec.constants(self.params)
        clash = set(extra) & (set(out) | set(self.live_params))
        if clash:
            raise ValueError(f"{self.spec.id}: constants {sorted(clash)} clash with params")
        out.update(extra)
        derived = {"num_agents": self.num_agents}
        for gi in self.groups.values():
            derived[f"{gi.name}_lo"], derived[f"{gi.name}_hi"] = gi.lo, gi.hi
        taken = set(derived) & (set(out) | set(self.live_params))
        if taken:
            raise ValueError(f"{self.spec.id}: {sorted(taken)} are derived by the core (the agent count, each group's "
                             "agent range) and cannot also be params or constants: rename them")
        out.update(derived)
        return out

    def runtime_values(self) -> np.ndarray:
        return np.array([getattr(self.params, n) for n in self.runtime_params] or [0.0], np.float32)

    def key(self) -> tuple:
        """What the compiled kernels depend on (not num_envs, not runtime params)."""
        shape = tuple((n, f.dtype, f.shape) for n, f in self.fields.items())
        consts = tuple(sorted((k, repr(v)) for k, v in self.kernel_constants.items()))
        # The phases too: the same params can compile other phases (an env choosing them by a
        # module setting, a test swapping one), and a kernel compiled for others must not be reused.
        phases = tuple(self.spec.phases(kind, self.params) for kind in ("reset", "step", "observe"))
        return (self.spec.id, shape, consts, self.runtime_params, phases)
