"""The plan of an env's kernels, free of any target: which phases run in which stages, under which guard.

Execution model (the same on both targets):
  - a kernel is a list of stages; a stage runs one phase per agent or once per env;
  - between stages there is a barrier: ``cuda.syncthreads()`` on CUDA, the end of a loop on CPU;
  - on CUDA, ``envs_per_block`` environments share a block, ``threads_per_env`` threads each,
    a thread looping over agents when there are more agents than threads;
  - on CPU, ``prange`` runs environments in parallel and the stages in order inside each.

`gpu_zoo.core.compiler.codegen_cpu` and `gpu_zoo.core.compiler.codegen_cuda` write these stages out as source.
"""

from __future__ import annotations

import re
import sys

from ..api.spec import PerAgent, PerEnv, PerItem, PerObs
from . import episode as _episode
from .layout import Layout
from .speed import ENABLED as _ACCELERATED


def _qualified(fn) -> tuple[str, str]:
    """(module, name) of a module-level njit function, checked importable."""
    py = getattr(fn, "py_func", None)
    if py is None:
        raise TypeError(f"phase {fn!r} must be decorated with numba.njit (gpu_zoo.core.kernel_fn)")
    mod, name = py.__module__, py.__name__
    if getattr(sys.modules.get(mod), name, None) is not fn:
        raise TypeError(f"phase {mod}.{name} must be a module-level function")
    return mod, name


class Stages:
    """The ordered stages of a kernel: (kind, what to run, guard).

    Guards: ``""`` (always), ``"done"`` (the env's episode ended at this step), ``"restart"``
    (ended, and the env restarts at once: its ``autoreset`` flag, a run-time value, so one
    compiled kernel serves both the batched face and the PettingZoo one). In a step's stages
    (``step``), an env that finished without auto-reset (``s.finished``) runs only the
    ``"idle"`` stages, and the others run only in the other envs.

    Kinds: ``agent``, ``env`` and ``item`` call a phase; ``grouped`` calls one or more phases bound
    to different groups (`PerAgent` ``group``), each for its group's agents, in one stage; ``elem``
    assigns ``s.<target>_<group>[e, ai, i]`` for every observation element of every group, from an
    expression of ``a``, ``ai`` and ``i`` (or, ``by_block``, of the literal block index ``{b}`` and
    the offset ``j`` in it). An observation
    (``observed``) is computed only for agents that are `observing`; the others get zeros (unless
    the `PerObs` asks to see them too).
    """

    def __init__(self, step: bool = False):
        self.items: list[tuple[str, object, bool]] = []
        self.imports: dict[str, tuple[str, str]] = {}
        self.per_obs: set[str] = set()
        self.ladders: dict[str, list[tuple[str, int, int]]] = {}
        self.step = step

    def add(self, phase, guard: str = ""):
        mod, name = _qualified(phase.fn)
        alias = f"_{mod.replace('.', '_')}__{name}"
        self.imports[alias] = (mod, name)
        if isinstance(phase, PerObs):
            self.per_obs.add(alias)
            call = f"{alias}(s, p, e, a, {{b}}, j)" if phase.by_block else f"{alias}(s, p, e, a, i)"
            self.elem("obs", call, guard, observed=phase.zeros_out_of_game, by_block=phase.by_block)
        elif isinstance(phase, PerItem):
            self.items.append(("item", (alias, phase.count, phase.scratch), guard))
        elif isinstance(phase, PerAgent) and phase.group is not None:
            bound = (alias, phase.scratch, phase.group)
            last = self.items[-1] if self.items else None
            if last and last[0] == "grouped" and last[2] == guard and phase.group not in {g for *_, g in last[1]}:
                self.items[-1] = ("grouped", (*last[1], bound), guard)  # another role: the same stage
            else:
                self.items.append(("grouped", (bound,), guard))
        elif isinstance(phase, PerAgent):
            self.items.append(("agent", (alias, phase.scratch), guard))
        else:
            self.items.append(("env", alias, guard))

    def elem(self, target: str, value: str, guard: str = "", observed: bool = False, by_block: bool = False):
        self.items.append(("elem", (target, value, observed, by_block), guard))

    def observe(self, phases, layout: Layout, guard: str = ""):
        bound = _group_observations(phases, layout)
        for ph in phases:
            if isinstance(ph, PerObs) and ph.fn is None:
                self._add_fills(ph, layout, guard)
            elif not (isinstance(ph, PerObs) and ph.group is not None):
                self.add(ph, guard)
            elif ph is bound[0]:
                self._add_group_observations(bound, guard)

    def _add_fills(self, phase: PerObs, layout: Layout, guard: str):
        """One element stage calling each block's own ``fill`` (alias ``_fill_<group>_<block>``).

        By block, the stage calls the block's fill with the offset in it. By element, it calls
        ``_fills_of_<group>(s, p, e, a, i)``, a function the generated module defines from
        `Stages.ladders`: which block element ``i`` is in, and that block's fill.
        """
        for g, gi in layout.groups.items():
            off = 0
            ladder = []
            for b, block in enumerate(gi.group.obs):
                alias = f"_fill_{g}_{b}"
                try:
                    self.imports[alias] = _qualified(block.fill)
                except TypeError as err:
                    where = f"{layout.spec.id}: the fill of block {block.name!r} of group {g!r}"
                    raise TypeError(f"{where}: {err}") from None
                self.per_obs.add(alias)
                if block.size:
                    ladder.append((alias, off, block.size))
                off += block.size
            self.ladders[f"_fills_of_{g}"] = ladder
        if layout.spec.tuning.observe_by_block:
            self.elem("obs", "_fill_{g}_{b}(s, p, e, a, j)", guard, observed=phase.zeros_out_of_game, by_block=True)
        else:
            self.elem("obs", "_fills_of_{g}(s, p, e, a, i)", guard, observed=phase.zeros_out_of_game)

    def _add_group_observations(self, bound, guard: str):
        """One element stage whose loop for group ``g`` calls that group's function (alias ``_obs_of_g``)."""
        for ph in bound:
            alias = f"_obs_of_{ph.group}"
            self.imports[alias] = _qualified(ph.fn)
            self.per_obs.add(alias)
        first = bound[0]
        call = "_obs_of_{g}(s, p, e, a, {b}, j)" if first.by_block else "_obs_of_{g}(s, p, e, a, i)"
        self.elem("obs", call, guard, observed=first.zeros_out_of_game, by_block=first.by_block)


def _group_observations(phases, layout: Layout) -> list[PerObs]:
    """The group-bound `PerObs` of an observation, checked: one per group, every group, one kind.

    Also checked: a ``PerObs()`` of the blocks' fill functions stands alone, and every block has one.
    """
    obs = [ph for ph in phases if isinstance(ph, PerObs)]
    _check_fills(obs, layout)
    bound = [ph for ph in obs if ph.group is not None]
    if not bound:
        return bound
    sid, groups = layout.spec.id, list(layout.groups)
    named = [ph.group for ph in bound]
    if len(bound) != len(obs) or sorted(named) != sorted(groups):
        raise ValueError(f"{sid}: group-bound PerObs phases must name each of the groups {groups} once, and no "
                         f"PerObs may be left unbound beside them; got groups {named} and "
                         f"{len(obs) - len(bound)} unbound")
    if len({(ph.by_block, ph.zeros_out_of_game) for ph in bound}) > 1:
        raise ValueError(f"{sid}: the PerObs phases of one observation must agree on by_block and zeros_out_of_game")
    return bound


def _check_fills(obs: list[PerObs], layout: Layout):
    sid = layout.spec.id
    if not any(ph.fn is None for ph in obs):
        return
    if len(obs) != 1 or obs[0].group is not None:
        raise ValueError(f"{sid}: PerObs() (the blocks' fill functions) observes every group, alone: no other "
                         f"PerObs and no group beside it")
    missing = [(g, blk.name) for g, gi in layout.groups.items() for blk in gi.group.obs if blk.fill is None]
    if missing:
        raise ValueError(f"{sid}: PerObs() fills each ObsBlock with its fill function, and these blocks have "
                         f"none: {missing}")


def stages(layout: Layout) -> tuple[Stages, Stages]:
    """The fused step's stages, and the reset's."""
    phases, ends, observe, finished = _step_parts(layout)
    return _joined(phases, observe, ends, finished), _reset_stages(layout)


def step_kernels(layout: Layout) -> tuple[Stages, Stages, Stages]:
    """The step as three kernels (`LaunchShape.split_observe`).

    First the env's phases and the episode ends, then the observations, then the finished envs
    (final observations, statistics, auto-reset). The observations then run without the
    per-agent phases' barriers, where the lanes beyond the agent count idle. They run after the
    episode ends here, before them in the fused kernel: nothing an observation reads is written
    by the ends (`observing` is the same either side).
    """
    phases, ends, observe, finished = _step_parts(layout)
    return _joined(phases, ends), observe, finished


def _joined(*parts: Stages) -> Stages:
    out = Stages(step=any(part.step for part in parts))
    for part in parts:
        out.items += part.items
        out.imports.update(part.imports)
        out.per_obs |= part.per_obs
        out.ladders.update(part.ladders)
    return out


def _step_parts(layout: Layout) -> tuple[Stages, Stages, Stages, Stages]:
    """A step's stages in four parts: the env's phases; the episode ends; the observations; the finished envs."""
    spec, E, params = layout.spec, _episode, layout.params
    step_phases, reset_phases, observe_phases = (spec.phases(k, params) for k in ("step", "reset", "observe"))
    phases, ends, observe, finished = (Stages(step=True) for _ in range(4))
    phases.add(PerEnv(E.idle_env), guard="idle")
    phases.add(PerAgent(E.idle_agent), guard="idle")
    phases.add(PerEnv(E.begin_sub_step if spec.play == "sequential" else E.begin_env))
    phases.add(PerAgent(E.begin_agent))
    for ph in step_phases:
        phases.add(ph)
    ends.add(PerEnv(E.end_env))
    ends.add(PerAgent(E.end_agent))
    observe.observe(observe_phases, layout)
    finished.elem("final_obs", "s.obs_{g}[e, ai, i]", guard="done")
    finished.add(PerAgent(E.save_return), guard="done")
    finished.add(PerEnv(E.finish_env), guard="done")
    finished.add(PerEnv(E.restart_env), guard="restart")
    finished.add(PerAgent(E.restart_agent), guard="restart")
    for ph in reset_phases:
        finished.add(ph, guard="restart")
    finished.observe(observe_phases, layout, guard="restart")
    return phases, ends, observe, finished


def _reset_stages(layout: Layout) -> Stages:
    spec, E, params = layout.spec, _episode, layout.params
    reset_phases, observe_phases = (spec.phases(k, params) for k in ("reset", "observe"))
    reset = Stages()
    reset.add(PerEnv(E.reset_env))
    reset.add(PerAgent(E.reset_agent))
    for ph in reset_phases:
        reset.add(ph)
    reset.observe(observe_phases, layout)
    return reset


def restart_tail(step: Stages, reset: Stages) -> int:
    """How many of the reset's last stages the step runs too, as its auto-reset (guard ``"restart"``).

    Both end with the env's reset phases and the observation; a driver that holds both kernels
    runs that tail once, for a reset or for a restart.
    """
    n = 0
    while n < min(len(step.items), len(reset.items)):
        (ks, fs, gs), (kr, fr, gr) = step.items[-1 - n], reset.items[-1 - n]
        if gs != "restart" or gr != "" or (ks, fs) != (kr, fr):
            break
        n += 1
    return n


def field_args(layout: Layout) -> str:
    """Kernel parameters: one array per field (structs from the kernel's parameter space, no reshapes)."""
    return ", ".join(f"f_{n}" for n in layout.fields)


# CPython passes a call of more than 30 arguments as a list grown one append at a time, which
# Numba types and lowers as a tuple rebuilt whole per argument: quadratic IR.
CALL_ARGS_MAX = 30


def wide_call(name: str, args: list[str]) -> str:
    """``name(*args)`` as source whose IR grows linearly with the arguments.

    More than ``CALL_ARGS_MAX`` are spread from a sum of tuples of at most that many: one tuple
    concatenation per chunk where a call with every argument made Numba build a tuple per
    argument, each copied whole from the last (tag_continuous's state of 40 fields: 3.2 MB of its
    kernel's 5.6 MB of NVVM IR).
    """
    if len(args) <= CALL_ARGS_MAX or not _ACCELERATED:  # off (`gpu_zoo.core.compiler.speed`): one plain call
        return f"{name}({', '.join(args)})"
    chunks = [args[i:i + CALL_ARGS_MAX] for i in range(0, len(args), CALL_ARGS_MAX)]
    return f"{name}(*(" + " + ".join(f"({', '.join(c)},)" for c in chunks) + "))"


def state_tuple(layout: Layout) -> str:
    """The kernel's state: a ``State`` namedtuple of its field arrays."""
    return wide_call("State", [f"f_{n}" for n in layout.fields])


STATE_FIELD = re.compile(r"(?<![\w.])s\.(\w+)")
"""A field read off the state ``s``: ``s.pos_x``."""
WHOLE_STATE = re.compile(r"(?<![\w.])s\b(?!\.)")
"""The state ``s`` itself, not one of its fields: a call passing all of it."""
_ANY_STATE = re.compile(r"(?<![\w.])s\b")


def fields_direct(line: str, layout: Layout) -> str:
    """``line`` reading each state field from its kernel argument (``f_NAME``) instead of the state tuple.

    Numba keeps a kernel's state tuple (every field's array) in one stack slot and loads all of it
    at each use, and spells out its type in each: on the CPU LLVM then spent seconds taking those
    loads apart (the economy's cold first step 15.3 -> 13.8 s, its parallel driver's compile 33 ->
    20 s, on 2 cores); on CUDA the type filled NVVM's IR (tag_continuous's kernel 3.1 -> 1.0 MB).
    """
    if not _ACCELERATED:  # `gpu_zoo.core.compiler.speed`: read off the state tuple
        return line
    return STATE_FIELD.sub(lambda m: f"f_{m.group(1)}" if m.group(1) in layout.fields else m.group(0), line)


def keeps_state_tuple(lines: list[str]) -> bool:
    """Whether a kernel's lines need its state tuple ``s``: a call passing it whole, or (accelerations off) any use."""
    pattern = WHOLE_STATE if _ACCELERATED else _ANY_STATE
    return any(pattern.search(line) for line in lines)


def ladder_source(name: str, ladder: list[tuple[str, int, int]], deco: str) -> str:
    """``name(s, p, e, a, i)``: element ``i`` of a row from the fill of the block it falls in."""
    out = [deco, f"def {name}(s, p, e, a, i):"] if deco else [f"def {name}(s, p, e, a, i):"]
    if not ladder:
        return "\n".join([*out, "    return np.float32(0.0)"])
    for alias, off, size in ladder[:-1]:
        out += [f"    if i < {off + size}:", f"        return {alias}(s, p, e, a, {f'i - {off}' if off else 'i'})"]
    alias, off, _ = ladder[-1]
    out.append(f"    return {alias}(s, p, e, a, {f'i - {off}' if off else 'i'})")
    return "\n".join(out)


def bound_groups(layout: Layout, bound) -> list[tuple[str, tuple, str, int, int]]:
    """(alias, scratch, group, lo, hi) of each group-bound phase of a ``grouped`` stage; an unknown group is refused."""
    out = []
    for alias, scratch, g in bound:
        if g not in layout.groups:
            raise ValueError(f"{layout.spec.id}: a PerAgent phase is bound to group {g!r}, which is not one of "
                             f"its groups {list(layout.groups)}")
        gi = layout.groups[g]
        out.append((alias, scratch, g, gi.lo, gi.lo + gi.count))
    return out


def stored(gi, value: str) -> str:
    """``value``, a float32 observation value, as group ``gi``'s observation buffers hold it.

    A ``obs_dtype="u8"`` group's buffers hold bytes (a board's 0/1 planes at a quarter of the
    memory traffic): the value, a whole number 0..255, is cast as it is stored.
    """
    return f"np.uint8({value})" if gi.group.obs_dtype == "u8" else value


def _blocks(gi) -> list[tuple[int, int, int]]:
    """(index, first element, size) of each of a group's observation blocks."""
    out, off = [], 0
    for b, block in enumerate(gi.group.obs):
        out.append((b, off, block.size))
        off += block.size
    return out


def block_runs(gi) -> list[list[tuple[int, int, int]]]:
    """A group's blocks in runs that one loop writes: consecutive blocks of one size share a pass.

    A lane then writes element j of every block in the run in one iteration: the loop and index
    work, and whatever the blocks' values share for offset j (an env's per-slot lookups), are paid
    once per run instead of once per block, and a block's partly idle last pass once per run.
    """
    runs: list[list[tuple[int, int, int]]] = []
    for blk in _blocks(gi):
        if runs and runs[-1][-1][2] == blk[2]:
            runs[-1].append(blk)
        else:
            runs.append([blk])
    return runs
