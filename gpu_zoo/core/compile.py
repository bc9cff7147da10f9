"""One environment source, two kernels: a CUDA kernel and a parallel CPU driver.

The kernels are generated as a small Python module written to a cache directory, then imported.
A real file lets Numba's ``cache=True`` persist the machine code, so a second process starts in
a fraction of a second instead of recompiling (functions built in a closure never hit that cache).
The file name is a hash of the generated source and of the sources it calls, because Numba's own
cache does not notice when a called function in another module changes.

Execution model (the same on both targets):
  - a kernel is a list of stages; a stage runs one phase per agent or once per env;
  - between stages there is a barrier: ``cuda.syncthreads()`` on CUDA, the end of a loop on CPU;
  - on CUDA, ``envs_per_block`` environments share a block, ``threads_per_env`` threads each,
    a thread looping over agents when there are more agents than threads;
  - on CPU, ``prange`` runs environments in parallel and the stages in order inside each.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import math
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

from . import episode as _episode
from . import rng as _rng
from .layout import LIVE_INT_PARAMS, Layout
from .spec import PerAgent, PerEnv, PerItem, PerObs


@dataclass(frozen=True)
class LaunchShape:
    """How CUDA threads map to environments and agents (compile-time for the kernel)."""

    threads_per_env: int
    envs_per_block: int
    max_registers: int | None = None  # a cap per thread: more blocks resident per SM, some spills
    split_observe: bool = False  # the step as three kernels: the step's phases, observations, finished envs
    phase_threads_per_env: int = 0  # split: the threads per env of the kernels around the observations

    @property
    def block(self) -> int:
        return self.threads_per_env * self.envs_per_block

    def for_phases(self) -> LaunchShape:
        """The split step's shape for its phase kernels: as many lanes per env as agents need, the same block size."""
        t = self.phase_threads_per_env or self.threads_per_env
        return LaunchShape(t, max(1, self.block // t), self.max_registers)

    def grid(self, num_envs: int) -> int:
        return -(-num_envs // self.envs_per_block)


# Resident threads that keep a large GPU busy (an H200 holds 132 x 2048).
FILL_THREADS = 1 << 18


# The register cap of a default block of 256 threads. Tag (continuous) with 1000 agents and the
# 10 nearest observed compiles to 103 registers, two blocks per multiprocessor; capped at 80 (a
# few spills) three fit, and it ran 17% faster on an H200 (3.9e5 -> 4.5e5 env-steps/s).
WIDE_BLOCK_REGISTERS = 80


def check_launch_options(threads_per_env: int | None, max_registers: int | None, split_observe: bool | None = None):
    """Raises a ValueError naming what was expected (on every target, used or not)."""
    if split_observe is not None and not isinstance(split_observe, bool):
        raise ValueError(f"split_observe must be a bool (or None: the env's choice), got {split_observe!r}")
    t = threads_per_env
    if t is not None and (isinstance(t, bool) or not isinstance(t, int) or t < 1 or t > 1024 or t & (t - 1)):
        raise ValueError(f"threads_per_env must be a power of two in [1, 1024], got {t!r}")
    r = max_registers
    if r is not None and (isinstance(r, bool) or not isinstance(r, int) or not 16 <= r <= 255):
        raise ValueError(f"max_registers must be an int in [16, 255], got {r!r}")


def launch_shape(num_agents: int, simulator: bool = False, block: int = 128,
                 threads_per_env: int | None = None, obs_elements: int = 0, num_envs: int = 1,
                 max_registers: int | None = None, split_observe: bool = False) -> LaunchShape:
    """Threads per env (a power of two) and envs per block of ``block`` threads.

    One thread per agent (at most 256), and more while the batch is too small to fill the GPU and
    the observations are large (``obs_elements`` per env, about 64 each).

    Writing observations is most of a step when they are large against the agent count (Tag
    gridworld with 51 agents writes 10455 values per env), and spare lanes speed that up; but
    they idle through the per-agent phases, so once ``num_envs`` alone fills the GPU they cost
    more than they give (measured on an H200: the economy at 1024 envs ran 2.2x faster with 128
    threads per env than with 8, at 16384 envs 3x slower). ``threads_per_env`` overrides the
    choice (a power of two up to 1024). ``max_registers`` caps the registers per thread of the
    compiled kernel (16 to 255). By default a block of 256 threads gets a cap of `WIDE_BLOCK_REGISTERS`,
    so three fit on a multiprocessor (65536 registers); smaller blocks get the compiler's choice.
    ``split_observe`` launches a step as three kernels (`step_kernels`).
    """
    check_launch_options(threads_per_env, max_registers, split_observe)
    if threads_per_env is not None:
        tpe = threads_per_env
    else:
        spare = min(_pow2(-(-obs_elements // 64)), _pow2(-(-FILL_THREADS // max(1, num_envs))))
        tpe = min(max(_pow2(num_agents), spare), 256)
    if simulator and threads_per_env is None:  # the simulator runs a thread per OS thread: few
        tpe = min(tpe, 8)
    # Split, the phase kernels get a lane per agent (at most 256, never more than tpe): spare lanes
    # help write observations but idle through per-agent phases, so only the observation kernel keeps them.
    phase_tpe = min(tpe, _pow2(num_agents), 256) if split_observe else 0
    if simulator:
        # blocks of at most 8 threads, but as many envs in one as fit, so the tests run several envs a
        # block, and a partly empty last block, as a GPU does
        return LaunchShape(tpe, max(1, 8 // tpe), None, split_observe, phase_tpe)
    epb = max(1, block // tpe)
    if max_registers is None and threads_per_env is None and tpe * epb == 256:
        max_registers = WIDE_BLOCK_REGISTERS
    return LaunchShape(tpe, epb, max_registers, split_observe, phase_tpe)


def _pow2(n: int) -> int:
    """The smallest power of two at least ``n`` (1 for n <= 1)."""
    return 1 << math.ceil(math.log2(max(1, n)))


def layout_launch_shape(layout: Layout, num_envs: int, simulator: bool = False, block: int = 128,
                        threads_per_env: int | None = None, max_registers: int | None = None,
                        split_observe: bool | None = None) -> LaunchShape:
    """`launch_shape` for ``num_envs`` copies of ``layout``; `EnvSpec.launch`'s choices where the caller makes none."""
    preferred = layout.spec.launch(layout.params, num_envs) if layout.spec.launch is not None else {}
    if threads_per_env is None and max_registers is None:
        threads_per_env, max_registers = preferred.get("threads_per_env"), preferred.get("max_registers")
        if simulator and threads_per_env is not None:  # a choice for the GPU; the simulator's lanes are OS threads
            threads_per_env = min(threads_per_env, 8)
    if split_observe is None:
        split_observe = preferred.get("split_observe", False)
    return launch_shape(layout.num_agents, simulator, block, threads_per_env, layout.obs_elements, num_envs,
                        max_registers, split_observe)


def cache_dir() -> Path:
    root = os.environ.get("GPU_ZOO_CACHE_DIR")
    if root:
        return Path(root)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpu_zoo" / "kernels"


def _qualified(fn) -> tuple[str, str]:
    """(module, name) of a module-level njit function, checked importable."""
    py = getattr(fn, "py_func", None)
    if py is None:
        raise TypeError(f"phase {fn!r} must be decorated with numba.njit (gpu_zoo.core.kernel_fn)")
    mod, name = py.__module__, py.__name__
    if getattr(sys.modules.get(mod), name, None) is not fn:
        raise TypeError(f"phase {mod}.{name} must be a module-level function")
    return mod, name


class _Stages:
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

    def observe(self, phases, guard: str = ""):
        for ph in phases:
            self.add(ph, guard)


def _stages(layout: Layout) -> tuple[_Stages, _Stages]:
    """The fused step's stages, and the reset's."""
    phases, ends, observe, finished = _step_parts(layout)
    return _joined(phases, observe, ends, finished), _reset_stages(layout)


def _step_kernels(layout: Layout) -> tuple[_Stages, _Stages, _Stages]:
    """The step as three kernels (`LaunchShape.split_observe`).

    First the env's phases and the episode ends, then the observations, then the finished envs
    (final observations, statistics, auto-reset). The observations then run without the
    per-agent phases' barriers, where the lanes beyond the agent count idle. They run after the
    episode ends here, before them in the fused kernel: nothing an observation reads is written
    by the ends (`observing` is the same either side).
    """
    phases, ends, observe, finished = _step_parts(layout)
    return _joined(phases, ends), observe, finished


def _joined(*parts: _Stages) -> _Stages:
    out = _Stages(step=any(part.step for part in parts))
    for part in parts:
        out.items += part.items
        out.imports.update(part.imports)
        out.per_obs |= part.per_obs
    return out


def _step_parts(layout: Layout) -> tuple[_Stages, _Stages, _Stages, _Stages]:
    """A step's stages in four parts: the env's phases; the episode ends; the observations; the finished envs."""
    spec, E, params = layout.spec, _episode, layout.params
    step_phases, reset_phases, observe_phases = (spec.phases(k, params) for k in ("step", "reset", "observe"))
    phases, ends, observe, finished = (_Stages(step=True) for _ in range(4))
    phases.add(PerEnv(E.idle_env), guard="idle")
    phases.add(PerAgent(E.idle_agent), guard="idle")
    phases.add(PerEnv(E.begin_env))
    phases.add(PerAgent(E.begin_agent))
    for ph in step_phases:
        phases.add(ph)
    ends.add(PerEnv(E.end_env))
    ends.add(PerAgent(E.end_agent))
    observe.observe(observe_phases)
    finished.elem("final_obs", "s.obs_{g}[e, ai, i]", guard="done")
    finished.add(PerAgent(E.save_return), guard="done")
    finished.add(PerEnv(E.finish_env), guard="done")
    finished.add(PerEnv(E.restart_env), guard="restart")
    finished.add(PerAgent(E.restart_agent), guard="restart")
    for ph in reset_phases:
        finished.add(ph, guard="restart")
    finished.observe(observe_phases, guard="restart")
    return phases, ends, observe, finished


def _reset_stages(layout: Layout) -> _Stages:
    spec, E, params = layout.spec, _episode, layout.params
    reset_phases, observe_phases = (spec.phases(k, params) for k in ("reset", "observe"))
    reset = _Stages()
    reset.add(PerEnv(E.reset_env))
    reset.add(PerAgent(E.reset_agent))
    for ph in reset_phases:
        reset.add(ph)
    reset.observe(observe_phases)
    return reset


def _args(layout: Layout) -> str:
    """Kernel parameters: one array per field (structs from the kernel's parameter space, no reshapes)."""
    return ", ".join(f"f_{n}" for n in layout.fields)


def _state(layout: Layout) -> str:
    return f"State({_args(layout)})"


def _const_literal(v) -> str:
    if isinstance(v, bool):
        return repr(v)
    if isinstance(v, int):
        return repr(v)
    if isinstance(v, np.float64):
        return f"np.float64({float(v)!r})"
    return f"np.float32({float(v)!r})"


def _params_source(layout: Layout, deco: str) -> tuple[str, list[str]]:
    names, values = [], []
    for k, v in layout.kernel_constants.items():
        names.append(k)
        values.append(_const_literal(v))
    for i, k in enumerate(layout.runtime_params):
        names.append(k)
        values.append(f"s.params[e, {i}]")
    for k in LIVE_INT_PARAMS:
        names.append(k)
        values.append(f"s.{k}[e]")
    body = [deco, "def _params(s, e):", f"    return Params({', '.join(values)})"]
    return "\n".join(body), names


def _blocks(gi) -> list[tuple[int, int, int]]:
    """(index, first element, size) of each of a group's observation blocks."""
    out, off = [], 0
    for b, block in enumerate(gi.group.obs):
        out.append((b, off, block.size))
        off += block.size
    return out


def _block_runs(gi) -> list[list[tuple[int, int, int]]]:
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


def _cpu_elem_helper(name: str, target: str, value: str, observed: bool, by_block: bool, layout: Layout) -> str:
    """An element stage as its own function: inlined in the parfor body it computes wrong values."""
    out = ["@njit(cache=True, _nrt=False, error_model='numpy')", f"def {name}(s, p, e):"]
    for gi in layout.groups.values():
        D, store = gi.group.obs_size, f"s.{target}_{gi.name}[e, ai, i]"
        out += [f"    for ai in range({gi.count}):", f"        a = ai + {gi.lo}"]
        if observed:
            out += ["        if not _observing(s, e, a):", f"            for i in range({D}):",
                    f"                {store} = np.float32(0.0)", "            continue"]
        if by_block:
            # As on CUDA (`_cuda_run_loops`): a run's blocks computed together for each offset. The
            # observation is inlined once per block, which doubles the compile time of Tag
            # (continuous) on a CPU and runs its 2000 x 100 full observations 5x faster.
            for run in _block_runs(gi):
                out += [f"        for j in range({run[0][2]}):",
                        *(f"            v{b} = {value.format(g=gi.name, b=b)}" for b, _, _ in run),
                        *(f"            s.{target}_{gi.name}[e, ai, {off} + j] = v{b}" for b, off, _ in run)]
        else:
            out += [f"        for i in range({D}):", f"            {store} = {value.format(g=gi.name)}"]
    return "\n".join(out)


def _bound_groups(layout: Layout, bound) -> list[tuple[str, tuple, str, int, int]]:
    """(alias, scratch, group, lo, hi) of each group-bound phase of a ``grouped`` stage; an unknown group is refused."""
    out = []
    for alias, scratch, g in bound:
        if g not in layout.groups:
            raise ValueError(f"{layout.spec.id}: a PerAgent phase is bound to group {g!r}, which is not one of "
                             f"its groups {list(layout.groups)}")
        gi = layout.groups[g]
        out.append((alias, scratch, g, gi.lo, gi.lo + gi.count))
    return out


def _cpu_body(name: str, stages: _Stages, layout: Layout, helpers: dict) -> str:
    """The CPU drivers of one kernel: ``name`` runs the envs in parallel, ``name_serial`` in order.

    A parallel launch wakes the thread pool, about 120 us on a 2-core machine: a hundred times a
    step of one small env, which is what the PettingZoo face runs. The serial driver loops over a
    function of one env (``_name_env``); the parallel one keeps the body inline, as it was, rather
    than call that function once per env with every field's array. Numba compiles each only when
    it is first called. Element stages become functions in ``helpers``, shared by the
    module's kernels: a stage that appears in both (the observation) is compiled once.
    """
    args = _args(layout)
    # The state tuple is built inside the loop: a namedtuple crossing into a parfor body fails to lower.
    head = [f"s = {_state(layout)}", "p = _params(s, e)", *_cpu_stages(stages, layout, helpers)]
    out = ["@njit(parallel=True, cache=True, _nrt=False, error_model='numpy')", f"def {name}({args}):",
           "    for e in prange(f_t.shape[0]):", *("        " + line for line in head),
           "", "", "@njit(cache=True, _nrt=False, error_model='numpy')", f"def _{name}_env({args}, e):",
           *("    " + line for line in head),
           "", "", "@njit(cache=True, _nrt=False, error_model='numpy')", f"def {name}_serial({args}):",
           "    for e in range(f_t.shape[0]):", f"        _{name}_env({args}, e)"]
    return "\n".join(out)


def _cpu_stages(stages: _Stages, layout: Layout, helpers: dict) -> list[str]:
    """The body of one env's kernel on the CPU, unindented: the stages in order."""
    A = layout.num_agents
    out = ["idle = s.finished[e] != 0"] if stages.step else []
    running = ["not idle"] if stages.step else []
    conditions = {"idle": "idle", "": " and ".join(running), "done": " and ".join([*running, "s.done[e]"]),
                  "restart": " and ".join([*running, "s.done[e]", "s.autoreset[e]"])}
    for kind, fn, guard in stages.items:
        ind = ""
        if conditions[guard]:
            out.append(f"if {conditions[guard]}:")
            ind += "    "
        if kind == "agent":
            out += [ind + f"for a in range({A}):", ind + f"    {fn[0]}(s, p, e, a{_scratch_args(fn[1], 'cpu')})"]
        elif kind == "grouped":
            for alias, scratch, g, lo, hi in _bound_groups(layout, fn):
                out += [ind + f"for a in range({lo}, {hi}):",
                        ind + f"    {alias}(s, p, e, a, s.act_{g}[e, a - {lo}]{_scratch_args(scratch, 'cpu')})"]
        elif kind == "env":
            out.append(ind + f"{fn}(s, p, e)")
        elif kind == "item":
            out += [ind + f"for k in range({fn[1]}):", ind + f"    {fn[0]}(s, p, e, k{_scratch_args(fn[2], 'cpu')})"]
        else:
            if fn not in helpers:
                helpers[fn] = (f"_elem{len(helpers)}", _cpu_elem_helper(f"_elem{len(helpers)}", *fn, layout))
            out.append(ind + f"{helpers[fn][0]}(s, p, e)")
    return out


# Masking an index with this tells the compiler it is not negative, so the array accesses built
# from it skip Numba's wraparound for negative indices (a compare and a select per access). Loop
# counters lose that knowledge: Numba's integer adds carry no no-overflow flag.
NONNEG = "0x7FFFFFFF"

# Observation rows at least this long get a warp (or the env's lanes, if fewer) each.
ROW_MIN = 32


def _cuda_elem_loop(gi, tpe: int, target: str, value: str, observed: bool, by_block: bool = False) -> list[str]:
    """Lines looping one lane over its elements of a group's (agents, obs) block.

    Long rows (``ROW_MIN`` elements or more) go a row to a warp: the lanes of a warp step through
    one agent's row, so what holds for the whole row (``observing``) is read once, and the index
    arithmetic per element is one add. Rows are dealt to warps by agent index over all groups,
    so a small group does not start on the warp a large one ended on.

    Short rows go flat: consecutive lanes take consecutive elements of the block, the (agent,
    element) pair advancing by a compile-time step with one carry instead of being divided out of
    a flat index (64-bit integer division costs more than most elements).

    ``by_block`` values go by `_cuda_run_loops`.
    """
    if by_block:
        return _cuda_run_loops(gi, tpe, target, value, observed)
    D, n, lo = gi.group.obs_size, gi.count, gi.lo
    store = f"s.{target}_{gi.name}[e, ai, i]"
    zero = "np.float32(0.0)"
    if D >= ROW_MIN:
        W = min(32, tpe)
        R = tpe // W
        out = [f"        al = {lo} + ((lane // {W} + {R - lo % R}) & {R - 1})", f"        while al < {lo + n}:",
               f"            a = al & {NONNEG}", f"            ai = a - {lo}"]
        ind = "                " if observed else "            "

        def whole_row(val):
            return [f"{ind}il = lane & {W - 1}", f"{ind}while il < {D}:", f"{ind}    i = il & {NONNEG}",
                    f"{ind}    {store} = {val}", f"{ind}    il += {W}"]

        row = whole_row(value)
        out += ["            if _observing(s, e, a):", *row, "            else:", *whole_row(zero)] if observed else row
        return out + [f"            al += {R}"]
    val = f"{value} if _observing(s, e, a) else {zero}" if observed else value
    return _flat_pairs(n, D, tpe, "il", [f"            a = (ai + {lo}) & {NONNEG}", f"            i = il & {NONNEG}",
                                          f"            {store} = {val}"])


def _flat_pairs(n: int, size: int, tpe: int, inner: str, body: list[str]) -> list[str]:
    """A loop dealing the env's lanes the (agent ``ai`` < n, ``inner`` < size) pairs in order, body per pair.

    Consecutive lanes take consecutive pairs; a lane's pair advances by a compile-time step with
    one carry instead of being divided out of a flat index.
    """
    da, di = divmod(tpe, size)
    return [f"        ai = lane // {size}", f"        {inner} = lane - ai * {size}", f"        while ai < {n}:",
            *body, f"            ai += {da}", f"            {inner} += {di}", f"            if {inner} >= {size}:",
            f"                {inner} -= {size}", "                ai += 1"]


def _cuda_run_loops(gi, tpe: int, target: str, value: str, observed: bool) -> list[str]:
    """By-block values: per run of equal-size blocks (`_block_runs`), a loop over (agent, offset) pairs.

    A lane computes offset ``j`` of every block in the run for one agent, all before it stores
    any: loads shared between the blocks (the observer's own state, what sits in slot ``j``) are
    then read once, where a store in between would make the compiler read them again, since it
    cannot tell the observation from the state it is computed from. The pairs run flat over the
    group, so rows whose length is not a multiple of the warp leave no lanes idle, and the store
    indices are unsigned (non-negative by construction: no wraparound for negative indices).
    """
    n, lo = gi.count, gi.lo
    out = []
    for run in _block_runs(gi):
        values = [(f"v{b}", value.format(b=b)) for b, _, _ in run]
        ind = "            "
        if observed:
            compute = [f"{ind}if _observing(s, e, a):", *(f"{ind}    {v} = {x}" for v, x in values),
                       f"{ind}else:", *(f"{ind}    {v} = np.float32(0.0)" for v, _ in values)]
        else:
            compute = [f"{ind}{v} = {x}" for v, x in values]
        stores = [f"{ind}s.{target}_{gi.name}[e, np.uint64(ai), np.uint64({off} + jl)] = v{b}" for b, off, _ in run]
        head = [f"{ind}a = (ai + {lo}) & {NONNEG}", f"{ind}j = jl & {NONNEG}"]
        out += _flat_pairs(n, run[0][2], tpe, "jl", head + compute + stores)
    return out


def _scratch_args(names, target: str) -> str:
    """Extra arguments of a phase with scratch: the env's rows on the CPU, the thread's own arrays on CUDA."""
    return "".join(f", s.{n}[e]" if target == "cpu" else f", _scratch_{n}" for n in names)


def _scratch_decls(layout: Layout) -> list[str]:
    """A thread's own local array per scratch field (one a kernel does not use costs nothing)."""
    np_types = {"f64": "np.float64", "f32": "np.float32", "i32": "np.int32", "u8": "np.uint8"}
    fields = layout.fields
    return [f"    _scratch_{n} = cuda.local.array({max(1, fields[n].shape[0])}, {np_types[fields[n].dtype]})"
            for n in layout.scratch_fields]


def _cuda_body(name: str, stages: _Stages, layout: Layout, shape: LaunchShape, sim: bool) -> str:
    A = layout.num_agents
    tpe, epb = shape.threads_per_env, shape.envs_per_block
    cap = f", max_registers={shape.max_registers}" if shape.max_registers else ""
    # Masks tell the compiler that env and lane are not negative (`NONNEG`).
    out = ["@cuda.jit" if sim else f"@cuda.jit(cache=True{cap})", f"def {name}({_args(layout)}):",
           f"    s = {_state(layout)}",
           "    n_env = s.t.shape[0]", "    tid = cuda.threadIdx.x & 1023",
           f"    e = (cuda.blockIdx.x & {NONNEG}) * {epb} + tid // {tpe}", f"    lane = tid & {tpe - 1}",
           "    ok = e < n_env", "    p = _params(s, min(e, n_env - 1))", *_scratch_decls(layout)]
    if stages.step:  # read once at the start: the step that finishes an env sets the flag
        out += ["    idle = ok and s.finished[e] != 0", "    ok = ok and not idle"]
    for kind, fn, guard in stages.items:
        cond = {"": "ok", "done": "ok and s.done[e]", "restart": "ok and s.done[e] and s.autoreset[e]",
                "idle": "idle"}[guard]
        if kind == "agent":
            out += [f"    if {cond}:", "        al = lane", f"        while al < {A}:",
                    f"            {fn[0]}(s, p, e, al & {NONNEG}{_scratch_args(fn[1], 'cuda')})",
                    f"            al += {tpe}"]
        elif kind == "grouped":
            bound = _bound_groups(layout, fn)
            if len(bound) == 1:  # the group's agents dealt to the env's lanes from lane 0
                alias, scratch, g, lo, hi = bound[0]
                out += [f"    if {cond}:", "        al = lane", f"        while al < {hi - lo}:",
                        f"            {alias}(s, p, e, (al + {lo}) & {NONNEG}, s.act_{g}[e, al & {NONNEG}]"
                        f"{_scratch_args(scratch, 'cuda')})", f"            al += {tpe}"]
            else:  # the roles' agents dealt together, each to its own phase
                first, end = min(b[3] for b in bound), max(b[4] for b in bound)
                out += [f"    if {cond}:", f"        al = lane + {first}", f"        while al < {end}:",
                        f"            a = al & {NONNEG}"]
                for k, (alias, scratch, g, lo, hi) in enumerate(bound):
                    call = f"{alias}(s, p, e, a, s.act_{g}[e, a - {lo}]{_scratch_args(scratch, 'cuda')})"
                    out += [f"            {'if' if k == 0 else 'elif'} {lo} <= a < {hi}:", f"                {call}"]
                out.append(f"            al += {tpe}")
        elif kind == "env":
            out += [f"    if {cond} and lane == 0:", f"        {fn}(s, p, e)"]
        elif kind == "item":
            out += [f"    if {cond}:", "        k = lane", f"        while k < {fn[1]}:",
                    f"            {fn[0]}(s, p, e, k & {NONNEG}{_scratch_args(fn[2], 'cuda')})",
                    f"            k += {tpe}"]
        else:
            target, value, observed, by_block = fn
            out.append(f"    if {cond}:")
            for gi in layout.groups.values():
                # {b} stays a placeholder for the block loops to fill
                value_g = value.format(g=gi.name, b="{b}")
                out += _cuda_elem_loop(gi, tpe, target, value_g, observed, by_block)
        out.append("    cuda.syncthreads()")
    return "\n".join(out)


def _dependency_hash(stages: list[_Stages]) -> str:
    """Hash of every source file a kernel calls into (Numba's cache would not see them change)."""
    files = {inspect.getsourcefile(_rng), inspect.getsourcefile(_episode), __file__}
    for st in stages:
        for mod, _ in st.imports.values():
            files.add(inspect.getsourcefile(sys.modules[mod]))
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(Path(f).read_bytes())
    return h.hexdigest()[:16]


def generate_source(layout: Layout, target: str, shape: LaunchShape | None) -> str:
    step, reset = _stages(layout)
    imports = {**step.imports, **reset.imports}
    sim = target == "cudasim"
    cuda = target != "cpu"
    wrap = "plain" if sim else "cuda_device"
    deco = {"cpu": "@njit(cache=True, _nrt=False, error_model='numpy')", "cudasim": "",
            "cuda": "@cuda.jit(device=True, forceinline=True)"}[target]
    params_src, param_names = _params_source(layout, deco)
    layout.scratch_fields  # noqa: B018 - checks the scratch names on every target
    head = [
        f"# gpu_zoo kernels for {layout.spec.id}, target {target}, launch {shape}",
        f"# dependencies {_dependency_hash([step, reset])}, numba {numba.__version__}",
        "import numpy as np",
        "from collections import namedtuple",
        "from numba import njit, prange" if target == "cpu" else "from numba import njit, cuda",
        *sorted(f"from {m} import {n} as {a}" for a, (m, n) in imports.items()),
        "from gpu_zoo.core.episode import observing as _observing",
        *(["from gpu_zoo.core.rebuild import rebuild, plain, cuda_device", "_memo = {}"] if cuda else []),
        *(["_observing = rebuild(_observing, " + wrap + ", _memo)"] if cuda else []),
        *(f"{a} = rebuild({a}, {wrap}, _memo)" for a in (sorted(imports) if cuda else ())),
        # On the CPU an observation function and its helpers are inlined into the element loop: a
        # call per element, passing the state tuple (every field's array), costs more than most elements.
        *(["from gpu_zoo.core.rebuild import rebuild, cpu_inline", "_inline = {}"] if not cuda else []),
        *(f"{a} = rebuild({a}, cpu_inline, _inline)" for a in (() if cuda else sorted(step.per_obs | reset.per_obs))),
        f"State = namedtuple('State', {tuple(layout.fields)!r})",
        f"Params = namedtuple('Params', {tuple(param_names)!r})",
    ]
    parts = ["\n".join(head), params_src]
    if target == "cpu":
        helpers: dict = {}
        bodies = [_cpu_body("step", step, layout, helpers), _cpu_body("reset", reset, layout, helpers)]
        parts += [src for _, src in helpers.values()] + bodies
    elif shape.split_observe:
        phases, observe, finished = _step_kernels(layout)
        parts += [_cuda_body("step_phases", phases, layout, shape.for_phases(), sim),
                  _cuda_body("step_observe", observe, layout, shape, sim),
                  _cuda_body("step_finished", finished, layout, shape.for_phases(), sim),
                  _cuda_body("reset", reset, layout, shape, sim)]
    else:
        parts += [_cuda_body("step", step, layout, shape, sim), _cuda_body("reset", reset, layout, shape, sim)]
    return "\n\n\n".join(parts) + "\n"


def load_kernels(layout: Layout, target: str, shape: LaunchShape | None):
    """Writes (once) and imports the generated module; returns it (``.step``, ``.reset``)."""
    src = generate_source(layout, target, shape)
    digest = hashlib.sha256(src.encode()).hexdigest()[:20]
    modname = f"gpu_zoo_kernels_{layout.spec.id}_{target}_{digest}"
    if modname in sys.modules:
        return sys.modules[modname]
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{modname}.py"
    if not path.exists() or path.read_text() != src:
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            fh.write(src)
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one
    spec = importlib.util.spec_from_file_location(modname, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    spec.loader.exec_module(module)
    return module
