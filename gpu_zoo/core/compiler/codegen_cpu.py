"""The CPU kernels' source: an ``njit(parallel=True)`` driver per kernel, ``prange`` over envs, the stages in order."""

from __future__ import annotations

from ..api.tuning import ONE_OBS_LOOP_ELEMENTS
from .layout import Layout
from .plan import (
    Stages,
    block_runs,
    bound_groups,
    field_args,
    fields_direct,
    keeps_state_tuple,
    restart_tail,
    state_tuple,
    stored,
)
from .speed.state_fields import SubStates

CPU_HELPER = "@njit(cache=True, _nrt=False, error_model='numpy', no_cpython_wrapper=True, no_cfunc_wrapper=True)"
"""Decorator of a generated function only the drivers call (the params, an element stage).

No Python wrapper: one that unpacks the state tuple, every field's array, lengthened the compile
of every helper (`GENERATED_CODE` in `benchmarks/tuning_records.py`).
"""


def _cpu_elem_helper(name: str, target: str, value: str, observed: bool, by_block: bool, layout: Layout) -> str:
    """An element stage as its own function: inlined in the parfor body it computes wrong values."""
    out = [CPU_HELPER, f"def {name}(s, p, e):"]
    # A value naming no group (``{g}``) is one function for every group: worth one loop when the rows are long.
    if "{g}" not in value and not by_block and len(layout.groups) > 1 and layout.obs_elements >= ONE_OBS_LOOP_ELEMENTS:
        return "\n".join(out + _one_loop_for_every_group(target, value, observed, layout))
    for gi in layout.groups.values():
        D, store = gi.group.obs_size, f"s.{target}_{gi.name}[e, ai, i]"
        out += [f"    for ai in range({gi.count}):", f"        a = ai + {gi.lo}"]
        if observed:
            out += ["        if not _observing(s, e, a):", f"            for i in range({D}):",
                    f"                {store} = {stored(gi, 'np.float32(0.0)')}", "            continue"]
        if by_block:
            # As on CUDA (`codegen_cuda._cuda_run_loops`): a run's blocks computed together for each
            # offset. The observation is inlined once per block: a longer compile for a faster step
            # (Tag continuous's record in `benchmarks/tuning_records.py`).
            for run in block_runs(gi):
                out += [f"        for j in range({run[0][2]}):",
                        *(f"            v{b} = {value.format(g=gi.name, b=b)}" for b, _, _ in run),
                        *(f"            s.{target}_{gi.name}[e, ai, {off} + j] = {stored(gi, f'v{b}')}"
                          for b, off, _ in run)]
        else:
            out += [f"        for i in range({D}):", f"            {store} = {stored(gi, value.format(g=gi.name))}"]
    return "\n".join(out)


def _one_loop_for_every_group(target: str, value: str, observed: bool, layout: Layout) -> list[str]:
    """One function observing every group, as one loop over all agents: the function is inlined once.

    A loop per group would inline (and type, and optimise) the whole function once per group;
    here only the row length and the store pick the agent's group. The element loop runs to the
    longest row, a constant, so the compiler still unrolls short rows and folds the function's
    branches on ``i`` (a loop to the agent's own length ran small MPE scenarios up to 20% slower).
    """
    groups = list(layout.groups.values())

    def ladder(pick) -> list[str]:
        lines = []
        for k, gi in enumerate(groups):
            head = "if" if k == 0 else "elif"
            lines += ([f"{head} a < {gi.lo + gi.count}:"] if k < len(groups) - 1 else ["else:"]) + ["    " + pick(gi)]
        return lines

    out = [f"    for a in range({layout.num_agents}):",
           *("        " + line for line in ladder(lambda gi: f"D = {gi.group.obs_size}")),
           *(["        seen = _observing(s, e, a)"] if observed else []),
           f"        for i in range({max(gi.group.obs_size for gi in groups)}):",
           "            if i < D:",
           f"                v = {value} if seen else np.float32(0.0)" if observed else f"                v = {value}"]
    out += ["                " + line
            for line in ladder(lambda gi: f"s.{target}_{gi.name}[e, a - {gi.lo}, i] = {stored(gi, 'v')}")]
    return out


def cpu_drivers(step: Stages, reset: Stages, layout: Layout, helpers: dict, subs: SubStates) -> str:
    """The CPU drivers: ``step`` and ``reset`` run the envs in parallel, ``step_serial`` and ``reset_serial`` in order.

    A parallel launch wakes the thread pool, about 120 us on a 2-core machine: a hundred times a
    step of one small env, which is what the PettingZoo face runs. Step and reset are one
    compiled driver each way, told apart by a run-time flag: every reset phase is in the step
    already (its auto-reset), and Numba types, links and optimises each driver's whole call tree
    again, so a separate reset driver compiled it all a second time
    (`GENERATED_CODE` in `benchmarks/tuning_records.py`). Both keep the env's body inline in their loop: a
    function of one env called by the serial loop cost more compile time for no speed. Numba
    compiles each driver only when it is first called. Element stages become functions in
    ``helpers``, shared by both stage lists: a stage that appears in both (the observation) is compiled once.

    The reset's last stages (the env's reset phases, the observation) are the step's auto-reset:
    written once, after both branches, for an env resetting or restarting (`plan.restart_tail`).
    """
    args = field_args(layout)
    n = restart_tail(step, reset)
    reset_own = _cpu_stages(reset.items[:len(reset.items) - n], False, layout, helpers)
    step_own = _cpu_stages(step.items[:len(step.items) - n], True, layout, helpers)
    if n:  # read where the tail starts, as each of its stages would: the phases before may end the episode
        step_own.append("restart = not idle and s.done[e] != 0 and s.autoreset[e] != 0")
    head = ["p = _params(s, e)", *(["restart = resetting"] if n else []),
            "if resetting:", *_indented(reset_own), "else:", *_indented(step_own)]
    if n:
        head += ["if restart:", *_indented(_cpu_stages(reset.items[len(reset.items) - n:], False, layout, helpers))]
    for name, body in helpers.values():  # an element helper is passed the fields its body uses
        subs.helpers[name] = subs.fields_of_source(body)
    head = [fields_direct(subs.narrow(line), layout) for line in head]
    if keeps_state_tuple(head):  # a callee whose fields cannot be told takes it all
        # built inside the loop: a namedtuple crossing into a parfor body fails to lower
        head.insert(0, f"s = {state_tuple(layout)}")
    out = []
    for driver, deco, loop in (("_drive", "parallel=True, ", "prange"), ("_drive_serial", "", "range")):
        out += [f"@njit({deco}cache=True, _nrt=False, error_model='numpy')", f"def {driver}(resetting, {args}):",
                f"    for e in {loop}(f_t.shape[0]):", *("        " + line for line in head), "", ""]
    # C-level partials: the PettingZoo face calls a step per env step, and a Python function would add a frame
    out += [f"{name}{suffix} = partial(_drive{suffix}, {flag})"
            for name, flag in (("step", False), ("reset", True)) for suffix in ("", "_serial")]
    return "\n".join(out) + "\n"


def _indented(lines: list[str]) -> list[str]:
    """A block's body: ``lines`` one level in, or ``pass`` where there are none."""
    return ["    " + line for line in lines] or ["    pass"]


def _cpu_stages(items: list, step: bool, layout: Layout, helpers: dict) -> list[str]:
    """Stages of one env on the CPU, unindented, in order; a step's (``step``) skip the finished envs."""
    A = layout.num_agents
    out = ["idle = s.finished[e] != 0"] if step else []
    running = ["not idle"] if step else []
    conditions = {"idle": "idle", "": " and ".join(running), "done": " and ".join([*running, "s.done[e]"]),
                  "restart": " and ".join([*running, "s.done[e]", "s.autoreset[e]"])}
    for kind, fn, guard in items:
        ind = ""
        if conditions[guard]:
            out.append(f"if {conditions[guard]}:")
            ind += "    "
        if kind == "agent":
            out += [ind + f"for a in range({A}):", ind + f"    {fn[0]}(s, p, e, a{_scratch_rows(fn[1])})"]
        elif kind == "grouped":
            for alias, scratch, g, lo, hi in bound_groups(layout, fn):
                out += [ind + f"for a in range({lo}, {hi}):",
                        ind + f"    {alias}(s, p, e, a, s.act_{g}[e, a - {lo}]{_scratch_rows(scratch)})"]
        elif kind == "env":
            out.append(ind + f"{fn}(s, p, e)")
        elif kind == "item":
            out += [ind + f"for k in range({fn[1]}):", ind + f"    {fn[0]}(s, p, e, k{_scratch_rows(fn[2])})"]
        else:
            if fn not in helpers:
                helpers[fn] = (f"_elem{len(helpers)}", _cpu_elem_helper(f"_elem{len(helpers)}", *fn, layout))
            out.append(ind + f"{helpers[fn][0]}(s, p, e)")
    return out



def _scratch_rows(names) -> str:
    """Extra arguments of a phase with scratch: the env's rows of those fields."""
    return "".join(f", s.{n}[e]" for n in names)
