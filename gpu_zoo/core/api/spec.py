"""What an environment declares: its agent groups, its state fields and its phase functions.

An environment module builds one `EnvSpec`. Everything else (buffers, kernels for both targets,
the batched API, the PettingZoo adapter, the docs tables) is derived from it by the core.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium

from .params import check_count, checked
from .tuning import Tuning

DTYPES = ("f64", "f32", "i32", "u8")
OBS_DTYPES = ("f32", "u8")  # what a group's observation buffers hold (Group.obs_dtype)
PLAYS = ("simultaneous", "turns", "rounds", "sequential")  # how an env's agents take their actions (EnvSpec.play)


@dataclass(frozen=True)
class Field:
    """One named state array. Its full shape is ``(num_envs, *shape)``.

    Attributes:
        name: attribute name under which phase functions reach it (``s.name``).
        dtype: ``"f32"``, ``"i32"``, ``"u8"`` (booleans) or ``"f64"`` (for state that must track a
            double-precision reference; rewards stay float32, observations too unless their group
            is ``obs_dtype="u8"``).
        shape: per-environment shape, e.g. ``(num_agents,)`` or ``()``.
        doc: one line for the docs.
        init: optional per-environment contents (a flat tuple of ``prod(shape)`` values), written
            into every environment once when the buffers are made: a constant table such as a
            map layout, which the env's reset phases read but never write.
    """

    name: str
    dtype: str
    shape: tuple[int, ...] = ()
    doc: str = ""
    init: tuple | None = None
    flag: bool = True
    """For ``"u8"``: the values are booleans, which Python sees as ``torch.bool`` (`Buffers.fields`);
    False for bytes 0..255 seen as ``torch.uint8`` (a ``obs_dtype="u8"`` group's observations)."""

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"Field {self.name!r}: dtype must be one of {DTYPES}, got {self.dtype!r}")
        if not self.name.isidentifier() or self.name.startswith("_"):
            raise ValueError(f"Field name {self.name!r} must be an identifier not starting with '_'")
        if any((not isinstance(n, int)) or n < 0 for n in self.shape):
            raise ValueError(f"Field {self.name!r}: shape must be non-negative ints, got {self.shape}")
        if self.init is not None and len(self.init) != math.prod(self.shape):
            raise ValueError(f"Field {self.name!r}: init must hold {math.prod(self.shape)} values, "
                             f"got {len(self.init)}")


@dataclass(frozen=True)
class ObsBlock:
    """A named, contiguous slice of an agent's observation vector.

    ``fill``, when given, computes the block: ``fill(s, p, e, a, j) -> float32`` is element ``j``
    (``0 <= j < size``) of agent ``a``'s block, a `kernel_fn`. An observation phase ``PerObs()``
    with no function of its own then fills every block with its ``fill``: no env works out where a
    block starts. (A ``PerObs(fn)`` computes the whole
    row itself and leaves the fills unused: a reference to test them against, for instance.)
    """

    name: str
    size: int
    doc: str = ""
    fill: Callable | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"ObsBlock name must be a non-empty str, got {self.name!r}")
        check_count(f"ObsBlock {self.name!r} size", self.size, 0)
        if self.fill is not None and not callable(self.fill):
            raise TypeError(f"ObsBlock {self.name!r}: fill must be a kernel_fn fill(s, p, e, a, j), got {self.fill!r}")


@dataclass(frozen=True)
class Group:
    """A set of agents sharing a role, an observation layout and an action space.

    Agents are numbered globally in group order: the first group's agents are ``0..count-1``,
    the next group's follow, and so on. PettingZoo names are ``f"{name}_{i}"``.
    """

    name: str
    count: int
    obs: tuple[ObsBlock, ...]
    action_space: gymnasium.spaces.Space
    obs_low: float = -float("inf")
    obs_high: float = float("inf")
    masked: bool = False
    """If True the env writes ``s.mask_<name>[e, i, k]`` (1 = action ``k`` feasible now) in its
    observe phases: ``n`` entries for ``Discrete(n)``, the per-dimension masks concatenated for
    ``MultiDiscrete``. The faces hand them out as action masks; the env must still treat an
    infeasible action as a no-op, since nothing forces a policy to respect them."""
    agent_names: tuple[str, ...] | None = None
    """PettingZoo's names of the agents, where they are not ``f"{name}_{i}"`` (tic-tac-toe's
    ``player_1``, ``player_2``)."""
    obs_space: gymnasium.spaces.Space | None = None
    """The space the PettingZoo faces give one observation in, where it is not the batched face's flat
    float32 ``Box``: a ``Box`` of the same number of values (the row read in C order, cast to its
    dtype: a board's ``(rows, cols, planes)`` of int8 or bool 0/1 planes), or a ``Discrete`` for a
    one-value observation (rock-paper-scissors' last move). The kernels compute float32 values
    either way, which must then be whole numbers the space contains."""
    obs_dtype: str = "f32"
    """What the observation buffers (``obs_<name>``, ``final_obs_<name>``) hold: ``"f32"``, or
    ``"u8"`` for observations that are whole numbers 0..255 (a board's 0/1 planes, pixels): a
    quarter of the memory traffic of float32. The kernels still compute float32 values, cast to
    uint8 as they are stored (they must then be whole numbers, and ``obs_low >= 0``,
    ``obs_high <= 255``); the batched face's observations and `observation_space` are uint8, and
    a network converts them to float32 itself."""

    def __post_init__(self):
        if self.agent_names is not None:
            names = tuple(self.agent_names)
            if len(names) != self.count or len(set(names)) != len(names) or not all(
                    isinstance(n, str) and n for n in names):
                raise ValueError(f"group {self.name!r}: agent_names must be {self.count} distinct non-empty strs, "
                                 f"got {self.agent_names!r}")
            object.__setattr__(self, "agent_names", names)
        if self.obs_dtype not in OBS_DTYPES:
            raise ValueError(f"group {self.name!r}: obs_dtype must be one of {OBS_DTYPES}, got {self.obs_dtype!r}")
        if self.obs_dtype == "u8" and not (0 <= self.obs_low and self.obs_high <= 255):
            raise ValueError(f"group {self.name!r}: obs_dtype='u8' holds whole numbers 0..255, so it needs "
                             f"obs_low >= 0 and obs_high <= 255; got obs_low={self.obs_low}, obs_high={self.obs_high}")
        sp = self.obs_space
        if sp is not None and not (isinstance(sp, gymnasium.spaces.Box) and math.prod(sp.shape) == self.obs_size
                                   or isinstance(sp, gymnasium.spaces.Discrete) and self.obs_size == 1):
            raise ValueError(f"group {self.name!r}: obs_space must be a Box of the observation's {self.obs_size} "
                             f"values, or a Discrete for an observation of one value; got {sp!r}")

    @property
    def obs_size(self) -> int:
        return sum(b.size for b in self.obs)

    @property
    def names(self) -> tuple[str, ...]:
        """The PettingZoo names of the group's agents, in order."""
        return self.agent_names or tuple(f"{self.name}_{i}" for i in range(self.count))


def _check_scratch(scratch) -> tuple:
    if isinstance(scratch, str) or not all(isinstance(n, str) for n in scratch):
        raise TypeError(f"scratch must be a tuple of field names, got {scratch!r}")
    return tuple(scratch)


@dataclass(frozen=True)
class PerAgent:
    """A phase run once per agent: ``fn(s, p, e, a)``. Agent ``a`` may write only its own cells.

    With ``group="name"`` it runs for that group's agents only, as ``fn(s, p, e, a, act)``: ``a``
    is still the global agent index (the one the state's per-agent fields take), and ``act`` is
    the agent's own action, ``s.act_<name>[e, a - p.<name>_lo]`` (a number for ``Discrete``, a
    row for ``Box`` and ``MultiDiscrete``). Phases bound to different groups that follow each
    other run as one stage, with no barrier between them: one function per role instead of a
    ladder of ``if a < p.<group>_hi`` in one. The rule of one phase then holds for the stage: no
    agent reads a cell that another agent of the stage writes (put a `PerEnv` or an unbound
    phase between roles where one must see what the other wrote).

    ``scratch`` names fields of shape ``(n,)`` (per env) that ``fn`` takes as extra arguments after
    the usual ones: 1-D arrays of length n for its own temporary values, which do not outlive
    the call. On a GPU each thread gets its own (local memory: what a thread reads back right
    after writing it stays in the multiprocessor, where a global array would round-trip through
    the cache); on the CPU, where an env runs on one thread, the env's row of the field.
    """

    fn: Callable
    scratch: tuple = ()
    group: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "scratch", _check_scratch(self.scratch))
        if self.group is not None and (not isinstance(self.group, str) or not self.group):
            raise TypeError(f"PerAgent group must be a group's name (a str) or None, got {self.group!r}")


@dataclass(frozen=True)
class PerEnv:
    """A phase run once per environment: ``fn(s, p, e)``. The place for reductions over agents."""

    fn: Callable


@dataclass(frozen=True)
class PerItem:
    """A phase run ``count`` times per environment: ``fn(s, p, e, k)`` for ``k < count``.

    For work over an env's own items that are not agents, such as the cells of a map: on a GPU
    the env's threads share the items instead of one thread looping over all of them. Item
    ``k`` may write only its own cells. ``scratch`` as for `PerAgent`.
    """

    fn: Callable
    count: int
    scratch: tuple = ()

    def __post_init__(self):
        check_count("PerItem count", self.count, 0)
        object.__setattr__(self, "scratch", _check_scratch(self.scratch))


@dataclass(frozen=True)
class PerObs:
    """A phase computing observations element by element: ``fn(s, p, e, a, i) -> float32``.

    ``PerObs()`` without ``fn`` fills each `ObsBlock` with its own ``fill`` function (every block
    of every group must have one): the form to start with. The core finds each element's block,
    as a function of the whole row would; the env's ``Tuning(observe_by_block=True)`` has it
    write the blocks as below instead (`gpu_zoo.core.api.tuning.Tuning`).
    A function of the whole row stays for observations whose elements share work that blocks
    cannot (measure before choosing it).

    It returns element ``i`` of agent ``a``'s observation. The core stores it in
    ``s.obs_<group>``, with neighbouring threads writing neighbouring elements: coalesced on a
    GPU, where a row written by each agent's own thread is not. It is called only for agents
    that are `gpu_zoo.core.compiler.episode.observing` (in the game, or leaving it at this step); the
    core writes zeros for the others.

    With ``by_block=True`` it is ``fn(s, p, e, a, b, j) -> float32`` instead: element ``j`` of
    the group's `ObsBlock` number ``b``, always a literal, so the compiler folds every branch on
    it. Consecutive blocks of one size form a run: a lane (a loop iteration on the CPU) computes
    offset ``j`` of every block in the run for one agent before storing any, so what the blocks
    share for that offset (the agent in a slot, the observer's own state) is read once. On a GPU
    the lanes take the (agent, offset) pairs of a run in order, leaving none idle at row ends.
    Worth it whenever blocks hold per-slot values (several features of the same other agents).

    With ``zeros_out_of_game=False`` ``fn`` is called for every agent and decides itself what an
    agent out of the game sees (an env reproducing another's observation of its dead agents).

    With ``group``, ``fn`` observes that group's agents only (``a`` is still the env's agent
    index): an env whose groups see different things gives one `PerObs` per group, all with the
    same ``by_block`` and ``zeros_out_of_game``, instead of one function branching on the group.
    Each group's loop then compiles its own function alone. (On the CPU, an env with many
    observation values inlines one function for all groups once too: one loop over every
    agent, the row length and the buffer picked by the agent's group.)
    """

    fn: Callable | None = None
    by_block: bool = False
    zeros_out_of_game: bool = True
    group: str | None = None

    def __post_init__(self):
        if self.group is not None and (not isinstance(self.group, str) or not self.group):
            raise TypeError(f"PerObs group must be a group's name (a str) or None, got {self.group!r}")
        if not isinstance(self.by_block, bool):
            raise TypeError(f"PerObs by_block must be a bool, got {self.by_block!r}")
        if self.fn is None and self.by_block:
            raise TypeError("PerObs(by_block=True) takes a function of the block and the offset in it; for the "
                            "blocks' own fill functions, choose the layout on the spec: "
                            "EnvSpec(tuning=Tuning(observe_by_block=True))")


@dataclass(frozen=True)
class EnvSpec:
    """The complete declaration of an environment.

    Attributes:
        id: versioned id, e.g. ``"tag_continuous_v0"``.
        params: a frozen dataclass of constructor arguments. ``float`` fields are runtime values
            (stored per environment, changeable without recompiling), and so is the int
            ``max_cycles`` it must have; every other field is a compile-time constant.
        groups: ``groups(params) -> tuple[Group, ...]``.
        fields: ``fields(params) -> tuple[Field, ...]``, the env's own state.
        reset: phases that draw a fresh episode start for one environment. Like ``step`` and
            ``observe``: a tuple, or a function of the params returning one.
        step: phases of one step, after the actions are in ``s.act_<group>``. They write
            ``s.rew``, set ``s.alive[e, a] = 0`` and ``s.term[e, a] = 1`` for agents that
            leave the game, and ``s.over[e] = 1`` when the game has ended for everyone.
        observe: phases run after every reset and step to fill ``s.obs_<group>``: usually
            a `PerObs`, optionally after `PerAgent`/`PerEnv` phases preparing what it reads.
        constants: ``constants(params) -> dict`` of extra compile-time values for the kernels
            (bools, ints, floats compiled as float32, or ``np.float64`` values kept double, and
            tuples of one kind of number: a table the kernels index, ``p.size[j]``, frozen into
            them as constant data shared by every env).
        render: ``render(state, params) -> uint8 (H, W, 3)``; ``state`` maps field names to the
            NumPy arrays of one environment.
        module: the module whose docstring documents the environment.
        tuning: the env's performance knobs (`gpu_zoo.core.api.tuning.Tuning`: its GPU launch, how
            fills are laid out); the benchmarks behind them are kept in `benchmarks/tuning_records.py`.
            Optional: without it the core's general choices apply, and every env runs well under them.
        play: how the agents take their actions.
            ``"simultaneous"`` (the default): every agent acts at every step; the PettingZoo face is
            a ``ParallelEnv`` (`gpu_zoo.core.faces.pettingzoo`). ``"turns"``: one agent moves at a time
            (board games); the core adds the field ``current_player`` (per env: the global index of
            the agent to move), which the env's reset phases set and its step phases advance, a
            step reads only that agent's action, the batched face hands it out as
            ``env.current_player`` and the PettingZoo face is an AEC env following it as
            ``agent_selection`` (`gpu_zoo.core.faces.aec.GpuZooAECEnv`). ``"rounds"``: a simultaneous
            game whose PettingZoo face is an AEC env taking a round's moves one agent after
            another, as PettingZoo's rock-paper-scissors (`gpu_zoo.core.faces.aec.GpuZooRoundsEnv`).
            ``"sequential"``: the agents act one after another within a cycle, each seeing the
            moves before its own, and the world advances after the last (PettingZoo's pursuit).
            The core adds the field ``mover`` (per env: ``-1`` for a whole cycle, else the one
            agent whose move a launch applies), which the step phases read through
            `gpu_zoo.core.api.sequential` (``moves``, ``cycle_ends``); the step count advances
            with each cycle. The batched face and ``parallel_env`` step whole cycles; the AEC
            face launches one sub-step per agent step, as PettingZoo's AEC env
            (`gpu_zoo.core.faces.aec.GpuZooSequentialEnv`).
    """

    id: str
    params: type
    groups: Callable[[Any], tuple[Group, ...]]
    fields: Callable[[Any], tuple[Field, ...]]
    reset: tuple | Callable
    step: tuple | Callable
    observe: tuple | Callable
    constants: Callable[[Any], dict] = lambda p: {}
    render: Callable | None = None
    module: str = ""
    tuning: Tuning = Tuning()
    play: str = "simultaneous"

    def __post_init__(self):
        if self.play not in PLAYS:
            raise ValueError(f"{self.id}: play must be one of {PLAYS}, got {self.play!r}")
        if not isinstance(self.tuning, Tuning):
            raise TypeError(f"{self.id}: tuning must be a gpu_zoo.core.api.tuning.Tuning, got {self.tuning!r}")
        if not (dataclasses.is_dataclass(self.params) and self.params.__dataclass_params__.frozen):
            raise TypeError(f"{self.id}: params must be a frozen dataclass")
        if "max_cycles" not in {f.name for f in dataclasses.fields(self.params)}:
            raise TypeError(f"{self.id}: params must have a max_cycles field")

    @property
    def turn_based(self) -> bool:
        """Whether one agent moves at a time (``play="turns"``)."""
        return self.play == "turns"

    def __reduce_ex__(self, protocol):
        # By reference to the module attribute that holds it, as functions pickle: its callables
        # (lambdas among them) then need not pickle, and a spawned process gets the same object.
        module = importlib.import_module(self.module) if self.module else None
        for name, value in vars(module).items() if module else ():
            if value is self:
                return _spec_at, (self.module, name)
        return super().__reduce_ex__(protocol)

    def phases(self, kind: str, params) -> tuple:
        """The ``reset``, ``step`` or ``observe`` phases for these params (checked).

        Each may be given as a tuple or as a function of the params, for phases that differ
        between configurations (e.g. discrete or continuous actions): the kernels compile only
        the phases a configuration uses.
        """
        value = getattr(self, kind)
        out = tuple(value(params) if callable(value) else value)
        allowed = (PerAgent, PerEnv, PerItem, PerObs) if kind == "observe" else (PerAgent, PerEnv, PerItem)
        for phase in out:
            if not isinstance(phase, allowed):
                names = ", ".join(c.__name__ for c in allowed)
                raise TypeError(f"{self.id}: {kind} phases must be {names}; got {phase!r}")
        return out

    def make_params(self, **kwargs):
        """Builds the params dataclass: an unknown argument or one of the wrong type is refused, naming it."""
        names = [f.name for f in dataclasses.fields(self.params)]
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise TypeError(f"{self.id}: unknown argument(s) {unknown}; expected some of {names}")
        return self.params(**checked(self.params, kwargs))


def _spec_at(module: str, name: str) -> EnvSpec:
    return getattr(importlib.import_module(module), name)
