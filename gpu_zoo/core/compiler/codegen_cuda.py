"""The CUDA kernels' source: threads are agents (or observation elements), barriers between stages."""

from __future__ import annotations

from .launch_shape import LaunchShape
from .layout import Layout
from .plan import Stages, block_runs, bound_groups, field_args, restart_tail, state_tuple, stored

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
                    f"{ind}    {store} = {stored(gi, val)}", f"{ind}    il += {W}"]

        row = whole_row(value)
        out += ["            if _observing(s, e, a):", *row, "            else:", *whole_row(zero)] if observed else row
        return out + [f"            al += {R}"]
    val = f"{value} if _observing(s, e, a) else {zero}" if observed else value
    return _flat_pairs(n, D, tpe, "il", [f"            a = (ai + {lo}) & {NONNEG}", f"            i = il & {NONNEG}",
                                          f"            {store} = {stored(gi, val)}"])


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
    """By-block values: per run of equal-size blocks (`block_runs`), a loop over (agent, offset) pairs.

    A lane computes offset ``j`` of every block in the run for one agent, all before it stores
    any: loads shared between the blocks (the observer's own state, what sits in slot ``j``) are
    then read once, where a store in between would make the compiler read them again, since it
    cannot tell the observation from the state it is computed from. The pairs run flat over the
    group, so rows whose length is not a multiple of the warp leave no lanes idle, and the store
    indices are unsigned (non-negative by construction: no wraparound for negative indices).
    """
    n, lo = gi.count, gi.lo
    out = []
    for run in block_runs(gi):
        values = [(f"v{b}", value.format(b=b)) for b, _, _ in run]
        ind = "            "
        if observed:
            compute = [f"{ind}if _observing(s, e, a):", *(f"{ind}    {v} = {x}" for v, x in values),
                       f"{ind}else:", *(f"{ind}    {v} = np.float32(0.0)" for v, _ in values)]
        else:
            compute = [f"{ind}{v} = {x}" for v, x in values]
        stores = [f"{ind}s.{target}_{gi.name}[e, np.uint64(ai), np.uint64({off} + jl)] = {stored(gi, f'v{b}')}"
                  for b, off, _ in run]
        head = [f"{ind}a = (ai + {lo}) & {NONNEG}", f"{ind}j = jl & {NONNEG}"]
        out += _flat_pairs(n, run[0][2], tpe, "jl", head + compute + stores)
    return out


def _scratch_arrays(names) -> str:
    """Extra arguments of a phase with scratch: the thread's own arrays (`_scratch_decls`)."""
    return "".join(f", _scratch_{n}" for n in names)


def _scratch_decls(layout: Layout) -> list[str]:
    """A thread's own local array per scratch field (one a kernel does not use costs nothing)."""
    np_types = {"f64": "np.float64", "f32": "np.float32", "i32": "np.int32", "u8": "np.uint8"}
    fields = layout.fields
    return [f"    _scratch_{n} = cuda.local.array({max(1, fields[n].shape[0])}, {np_types[fields[n].dtype]})"
            for n in layout.scratch_fields]


def _shared_calls(layout: Layout, bound) -> list[list[tuple]]:
    """The bound phases of a ``grouped`` stage in runs: adjacent groups calling one function with actions of one type.

    The lanes of a warp hold agents of several groups; a call per group would inline one copy of a shared
    function per group and run the copies one after another.
    """
    runs: list[list[tuple]] = []
    for b in sorted(bound, key=lambda b: b[3]):
        last = runs[-1][-1] if runs else None
        if (last and last[0] == b[0] and last[1] == b[1] and last[4] == b[3]
                and _action_type(layout, last[2]) == _action_type(layout, b[2])):
            runs[-1].append(b)
        else:
            runs.append([b])
    return runs


def _grouped_calls(layout: Layout, bound, name: str, ind: str) -> list[str]:
    """Agent ``a``'s call in a ``grouped`` stage: a branch per run of `_shared_calls`, none where one run is all."""
    runs = _shared_calls(layout, bound)
    # no agent between runs: no range checks
    tiled = all(r[-1][4] == q[0][3] for r, q in zip(runs[:-1], runs[1:], strict=True))
    out = []
    for k, run in enumerate(runs):
        alias, scratch, lo, hi = run[0][0], run[0][1], run[0][3], run[-1][4]
        body = ind
        if not tiled:
            out.append(f"{ind}{'if' if k == 0 else 'elif'} {lo} <= a < {hi}:")
            body += "    "
        elif len(runs) > 1:
            out.append(f"{ind}{'else:' if k == len(runs) - 1 else ('if' if k == 0 else 'elif') + f' a < {hi}:'}")
            body += "    "
        act = f"s.act_{run[0][2]}[e, a - {lo}]"
        if len(run) > 1:  # pick the action first: one inlined body for the run, not a diverging copy per group
            act = f"{name}_{k}"  # a name per stage and run: the runs' action types may differ
            for j, (_, _, g, glo, ghi) in enumerate(run):
                head = "else:" if j == len(run) - 1 else f"{'if' if j == 0 else 'elif'} a < {ghi}:"
                out += [f"{body}{head}", f"{body}    {act} = s.act_{g}[e, a - {glo}]"]
        out.append(f"{body}{alias}(s, p, e, a, {act}{_scratch_arrays(scratch)})")
    return out


def _action_type(layout: Layout, g: str) -> tuple:
    gi = layout.groups[g]
    return gi.action_dtype, tuple(gi.action_shape)


def _prologue(name: str, args: str, layout: Layout, shape: LaunchShape, sim: bool) -> list[str]:
    """A kernel's head: its env and lane, whether the env exists (``ok``), its params, its scratch arrays."""
    tpe, epb = shape.threads_per_env, shape.envs_per_block
    # Assembled whole from the PTX numba-cuda makes anyway (`gpu_zoo.core.compiler.ptxas`): with LTO it also
    # makes LTO-IR with NVVM and nvJitLink optimises the whole module again, the larger part of a
    # cold compile's back end, for the same code.
    # `cuda.jit` is handed the function itself: as a decorator factory it drops ``lto``.
    options = ["lto=False"] + ([f"max_registers={shape.max_registers}"] if shape.max_registers else [])
    # Masks tell the compiler that env and lane are not negative (`NONNEG`).
    # no Numba cache: each kernel's cubin is kept by `gpu_zoo.core.compiler.cubin`, which launches it
    return ["@cuda.jit" if sim else f"@partial(cuda.jit, {', '.join(options)})", f"def {name}({args}):",
            f"    s = {state_tuple(layout)}",
            "    n_env = s.t.shape[0]", "    tid = cuda.threadIdx.x & 1023",
            f"    e = (cuda.blockIdx.x & {NONNEG}) * {epb} + tid // {tpe}", f"    lane = tid & {tpe - 1}",
            "    ok = e < n_env", "    p = _params(s, min(e, n_env - 1))", *_scratch_decls(layout)]


STEP_GUARDS = {"": "ok", "done": "ok and s.done[e]", "restart": "ok and s.done[e] and s.autoreset[e]", "idle": "idle"}
"""A stage's condition by its guard (`plan.Stages`); ``ok`` is false for a missing env, and in a
step for a finished one (``idle``)."""


def cuda_body(name: str, stages: Stages, layout: Layout, shape: LaunchShape, sim: bool) -> str:
    """One kernel running ``stages``."""
    out = _prologue(name, field_args(layout), layout, shape, sim)
    if stages.step:  # read once at the start: the step that finishes an env sets the flag
        out += ["    idle = ok and s.finished[e] != 0", "    ok = ok and not idle"]
    return "\n".join(out + _stage_lines(stages.items, layout, shape, STEP_GUARDS, "    "))


def cuda_driver(name: str, step: Stages, reset: Stages, layout: Layout, shape: LaunchShape, sim: bool) -> str:
    """One kernel for a step and a reset: ``name(resetting, ...)``, the flag a kernel argument.

    Every reset phase is in the step already (its auto-reset), and NVVM compiles each kernel's
    whole inlined body: a reset kernel of its own compiled the env's reset and observation a
    second time. The flag is the same in every thread, so the barriers inside its branches are
    reached by the whole block. The reset's last stages (the env's reset phases, the
    observation) are the step's auto-reset, written once after both branches
    (`plan.restart_tail`).
    """
    n = restart_tail(step, reset)
    out = _prologue(name, f"resetting, {field_args(layout)}", layout, shape, sim)
    if step.step:  # as in `cuda_body`; a reset runs finished envs too
        out += ["    idle = ok and not resetting and s.finished[e] != 0", "    ok = ok and not idle"]
    ind = "        "
    own_reset = reset.items[:len(reset.items) - n]
    out += ["    if resetting:", *_stage_lines(own_reset, layout, shape, STEP_GUARDS, ind, "r"), f"{ind}restart = ok",
            "    else:"]
    # Once the step has set an env's flags (the first stage after them is guarded by them), they
    # are read into registers: the stages after them, and the tail, test those instead of loading
    # the flags again after every barrier. Nothing after that point writes them.
    own = step.items[:len(step.items) - n]
    k = next((i for i, (_, _, g) in enumerate(own) if g in ("done", "restart")), len(own))
    flags = [f"{ind}fin = ok and s.done[e] != 0", f"{ind}restart = fin and s.autoreset[e] != 0"]
    read = {**STEP_GUARDS, "done": "fin", "restart": "restart"}
    out += [*_stage_lines(own[:k], layout, shape, STEP_GUARDS, ind, "s"), *flags,
            *_stage_lines(own[k:], layout, shape, read, ind, "s")]
    tail = {**STEP_GUARDS, "": "restart"}
    return "\n".join(out + _stage_lines(reset.items[len(reset.items) - n:], layout, shape, tail, "    ", "t"))


def _stage_lines(items: list, layout: Layout, shape: LaunchShape, guards: dict, ind: str, tag: str = "") -> list[str]:
    """The stages' lines at indent ``ind``, a barrier after each; a stage runs where ``guards[its guard]`` holds.

    ``tag`` keeps the names of picked actions apart between the stage lists of one kernel.
    """
    A = layout.num_agents
    tpe = shape.threads_per_env
    out = []
    for n, (kind, fn, guard) in enumerate(items):
        cond = guards[guard]
        if kind == "agent":
            out += [f"    if {cond}:", "        al = lane", f"        while al < {A}:",
                    f"            {fn[0]}(s, p, e, al & {NONNEG}{_scratch_arrays(fn[1])})",
                    f"            al += {tpe}"]
        elif kind == "grouped":
            bound = bound_groups(layout, fn)
            if len(bound) == 1:  # the group's agents dealt to the env's lanes from lane 0
                alias, scratch, g, lo, hi = bound[0]
                out += [f"    if {cond}:", "        al = lane", f"        while al < {hi - lo}:",
                        f"            {alias}(s, p, e, (al + {lo}) & {NONNEG}, s.act_{g}[e, al & {NONNEG}]"
                        f"{_scratch_arrays(scratch)})", f"            al += {tpe}"]
            else:  # the roles' agents dealt together, each to its own phase
                first, end = min(b[3] for b in bound), max(b[4] for b in bound)
                start = f"lane + {first}" if first else "lane"
                out += [f"    if {cond}:", f"        al = {start}", f"        while al < {end}:",
                        f"            a = al & {NONNEG}",
                        *_grouped_calls(layout, bound, f"act{tag}{n}", "            "),
                        f"            al += {tpe}"]
        elif kind == "env":
            out += [f"    if {cond} and lane == 0:", f"        {fn}(s, p, e)"]
        elif kind == "item":
            out += [f"    if {cond}:", "        k = lane", f"        while k < {fn[1]}:",
                    f"            {fn[0]}(s, p, e, k & {NONNEG}{_scratch_arrays(fn[2])})",
                    f"            k += {tpe}"]
        else:
            target, value, observed, by_block = fn
            out.append(f"    if {cond}:")
            for gi in layout.groups.values():
                # {b} stays a placeholder for the block loops to fill
                value_g = value.format(g=gi.name, b="{b}")
                out += _cuda_elem_loop(gi, tpe, target, value_g, observed, by_block)
        out.append("    cuda.syncthreads()")
    return [ind[4:] + line for line in out]
