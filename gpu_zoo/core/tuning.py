"""Tuning: the one optional place for an env's performance knobs, and the table of every measured choice.

An env that sets no `Tuning` runs under the core's general choices (`gpu_zoo.core.launch_shape`),
which are tuned for every env at once. An env's `Tuning` overrides them where a benchmark showed
its kernel runs faster otherwise, and carries that benchmark (`Measured`), so the choice can be
checked again on another GPU. The core's own constants are here too, each with the figure behind
it. `docs/gen/tuning_table.py` renders all of them as `docs/tuning.md`.

Not knobs: a phase's ``scratch`` fields are its working memory (its function takes them as
arguments), and `PerObs(fn, by_block=True)` chooses the signature of ``fn``; both say what the
code is, so they stay on the phase.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Measured:
    """One measured choice: what it is, the figure that chose it, the record and the command behind it.

    Attributes:
        choice: what was chosen, e.g. ``"max_registers 64"``.
        figure: the measurement that chose it, on which hardware (same-run comparisons).
        record: the committed results files or folders holding the figure (paths from the
            repository's root, separated by ``", "``), or ``""`` where none was kept (the command
            then measures it again).
        command: how to measure it again.
    """

    choice: str
    figure: str
    record: str
    command: str

    def __post_init__(self):
        for name in ("choice", "figure", "command"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise TypeError(f"Measured.{name} must be a non-empty str, got {getattr(self, name)!r}")
        if not isinstance(self.record, str):
            raise TypeError(f"Measured.record must be a str (a path under the repository, or ''), got {self.record!r}")


@dataclass(frozen=True)
class Tuning:
    """An env's tuning knobs, every one optional (`EnvSpec.tuning`).

    Attributes:
        launch: ``launch(params, num_envs) -> dict`` with any of ``threads_per_env``,
            ``max_registers`` (the GPU launch, used when the caller of ``make`` gives neither) and
            ``split_observe`` (used when the caller does not give it). Return ``{}`` for the core's
            choice; see `gpu_zoo.core.launch_shape.launch_shape` for what each means.
        observe_by_block: with `PerObs()` (each `ObsBlock` filled by its own function), write a
            run of equal-size blocks together: a lane computes offset ``j`` of every block of the
            run before storing any, so what they share for that offset is read once (see
            `PerObs`). The default, element by element, suits blocks that share nothing.
        cpu_inline_helpers: on the CPU, the helpers of the observation functions inlined into the
            element loop with them, by name (each with every njit function it reaches); the
            others are called. ``None`` (the default) inlines all of them: the fastest code, and
            the longest compile where an observation reaches many helpers. Naming only the helpers
            most elements use (an egocentric map's, say) keeps the speed and shortens the compile.
        measured: the benchmarks behind these choices (shown in the tuning table).
    """

    launch: Callable[[Any, int], dict] | None = None
    observe_by_block: bool = False
    cpu_inline_helpers: tuple[str, ...] | None = None
    measured: tuple[Measured, ...] = field(default=())

    def __post_init__(self):
        if self.launch is not None and not callable(self.launch):
            raise TypeError(f"Tuning.launch must be a function (params, num_envs) -> dict, or None; "
                            f"got {self.launch!r}")
        if not isinstance(self.observe_by_block, bool):
            raise TypeError(f"Tuning.observe_by_block must be a bool, got {self.observe_by_block!r}")
        names = self.cpu_inline_helpers
        if names is not None and not (isinstance(names, tuple) and all(isinstance(n, str) and n for n in names)):
            raise TypeError(f"Tuning.cpu_inline_helpers must be a tuple of function names, or None; got {names!r}")
        measured = tuple(self.measured) if isinstance(self.measured, tuple | list) else None
        if measured is None or not all(isinstance(m, Measured) for m in measured):
            raise TypeError(f"Tuning.measured must be a tuple of Measured, got {self.measured!r}")
        object.__setattr__(self, "measured", measured)


# ------------------------------------------------------------------ the core's constants
FILL_THREADS = 1 << 18
"""Resident threads that keep a large GPU busy (an H200 holds 132 multiprocessors x 2048)."""

OBS_ELEMENTS_PER_LANE = 64
"""While the batch leaves the GPU idle, an env gets a lane per this many observation elements."""

WIDE_BLOCK_REGISTERS = 80
"""The register cap of a block of 256 threads, so three blocks fit on a multiprocessor (65536 registers)."""

SERIAL_MAX_ENVS = 8
"""Up to this many envs, the CPU target runs them one after another on the calling thread."""

ONE_OBS_LOOP_ELEMENTS = 48
"""From this many observation values an env, the CPU observes every group in one loop when one function serves all."""

_PROBE = "python -m benchmarks.probe"

CORE: dict[str, Measured] = {
    "FILL_THREADS": Measured(
        "2^18 resident threads: the batch size under which an env gets spare lanes",
        "an H200 holds 132 x 2048 = 270336 resident threads; below that many, spare lanes an env write its "
        "observations while the GPU would otherwise idle",
        "", f"{_PROBE} gather_trade_build_v0 --num-envs 1024 --tpe 8 32 128"),
    "OBS_ELEMENTS_PER_LANE": Measured(
        "a lane per 64 observation elements while the batch is under FILL_THREADS lanes",
        "H200, the economy (gather_trade_build_v0: 5 agents, 5010 observation values an env): 1024 envs ran "
        "2.2x faster with 128 threads an env than with 8, while 16384 envs ran 3x slower with 128 (the spare "
        "lanes idle through the per-agent phases once the batch alone fills the GPU)",
        "", f"{_PROBE} gather_trade_build_v0 --num-envs 1024 --tpe 8 128; "
        f"{_PROBE} gather_trade_build_v0 --num-envs 16384 --tpe 8 128"),
    "WIDE_BLOCK_REGISTERS": Measured(
        "80 registers a thread for a default block of 256 threads",
        "H200, Tag continuous with 1000 agents and the 10 nearest observed: 103 registers fit two blocks a "
        "multiprocessor; capped at 80 (a few spills) three fit: 3.9e5 -> 4.5e5 env-steps/s (+17%) at 2000 envs "
        "(the record holds the capped run, 4.6e5)",
        "benchmarks/results/env_cuda_full_h200-4.json",
        f"{_PROBE} tag_continuous_v0 --num-envs 2000 --kw num_taggers=50 num_runners=950 "
        "use_full_observation=False num_other_agents_observed=10 --tpe 256 --regs 0 80"),
    "SERIAL_MAX_ENVS": Measured(
        "up to 8 envs, the CPU steps them in order on the calling thread",
        "2 CPU cores: waking Numba's thread pool costs about 120 us, a hundred times a small env's step; "
        "simple_push at 4 envs: first step 41.1 -> 25.5 s (the serial driver compiles no parallel loop), "
        "63k -> 691k env-steps/s",
        "", "python -m benchmarks.cold_start --device cpu --only '^simple_push' --label LABEL, once as is and "
        "once with SERIAL_MAX_ENVS below 4"),
    "ONE_OBS_LOOP_ELEMENTS": Measured(
        "one observation loop over every agent (the function inlined once) from 48 values an env",
        "2 CPU cores, cold first step and env-steps/s at 4096 envs, a loop per group against one loop: "
        "world comm (192 values) 15.7 -> 9.4 s and +33%; simple_tag (62) 6.5 -> 5.9 s and +35%; "
        "collect_treasure (684) 11.8 -> 9.3 s, -1.5%; below, the loop per group stays: simple_push (27) "
        "ran 8% slower in one loop, for 0.6 s of compile",
        "benchmarks/results/cpu_one_obs_loop_cpu-2core-s37.txt",
        "the script in the record, from two checkouts"),
}
"""The measurement behind each constant above, by name."""

GENERATED_CODE: tuple[Measured, ...] = (
    Measured(
        "a tuple constant (`EnvSpec.constants`) becomes an array frozen into the kernels",
        "H200, 131072 envs: indexed at run time, a tuple compiles to a switch over its entries with an "
        "out-of-range branch; simple_world_comm ran 17.8% slower with tuples than with per-env fields, "
        "7.9% faster with constant arrays",
        "benchmarks/results/mpe_entity_tables",
        "python -m benchmarks run --suite env --device cuda --warm-jobs 12 --label LABEL "
        "--only '^(simple|collect).*/gpu_zoo/cuda/131072$'"),
    Measured(
        "both CPU drivers (parallel and serial) keep the env's body inline in their loop",
        "2 CPU cores: one function of the env called by the serial loop cost 17% more compile time "
        "(simple_spread, tag_continuous) for no speed, since Numba optimises a function again in every "
        "caller it is linked into",
        "",
        "python -m benchmarks.cold_start --device cpu --only '^(simple_spread|tag_continuous)' --label LABEL"),
    Measured(
        "step and reset are one CPU driver, told apart by a run-time flag; the generated helpers have no "
        "Python wrapper",
        "2 CPU cores, the economy's cold first step (make, reset, step at 4 envs), four alternating pairs: "
        "48.1 / 59.8 / 48.2 / 46.4 s before, 41.9 / 44.6 / 40.1 / 37.8 s after (-17%); the reset driver had "
        "typed, linked and optimised its whole call tree again, and a wrapper unpacking the state tuple of "
        "every field's array cost about 1 s a helper; steps as fast (simple_spread, simple_tag at 4096 envs). "
        "The reset's tail written once for a reset or a restart: the driver's own compile 8.7 -> 6.5 s, the "
        "first step 39.4 -> 34.0 s (mean of three alternating pairs)",
        "benchmarks/results/cpu_drivers_cpu-2core.txt",
        "the script in the record, from two checkouts"),
    Measured(
        "the CPU drivers read each state field from its kernel argument, with no state tuple of every field",
        "2 CPU cores, two alternating pairs: the economy's cold first step 15.4 / 15.1 -> 13.7 / 13.9 s and its "
        "parallel driver's compile 32.8 -> 20.2 s; tag_continuous 6.2 / 6.5 -> 5.9 s; simple_tag 3.7 / 3.9 -> "
        "3.4 / 3.3 s; env-steps/s equal within noise (4 and 256 envs); Numba loaded the whole tuple at each use",
        "benchmarks/results/cpu_driver_fields_cpu-2core-s54.txt",
        "the script in the record, from two checkouts"),
)
"""Choices of the generated code, each measured against the alternative."""
