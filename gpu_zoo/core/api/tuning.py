"""Tuning: the one optional place for an env's performance knobs, and the core's own constants.

An env that sets no `Tuning` runs under the core's general choices (`gpu_zoo.core.compiler.launch_shape`),
which are tuned for every env at once. An env's `Tuning` overrides them where a benchmark showed
its kernel runs faster otherwise. The figures behind every choice, the core's constants here and
each env's knobs, are kept outside the package, in `benchmarks/tuning_records.py`, with the record
and the command behind each, so a choice can be checked again on another GPU;
`docs/gen/tuning_table.py` renders them as `docs/tuning.md`.

Not knobs: a phase's ``scratch`` fields are its working memory (its function takes them as
arguments), and `PerObs(fn, by_block=True)` chooses the signature of ``fn``; both say what the
code is, so they stay on the phase.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Tuning:
    """An env's tuning knobs, every one optional (`EnvSpec.tuning`).

    Attributes:
        launch: ``launch(params, num_envs) -> dict`` with any of ``threads_per_env``,
            ``max_registers`` (the GPU launch, used when the caller of ``make`` gives neither) and
            ``split_observe`` (used when the caller does not give it). Return ``{}`` for the core's
            choice; see `gpu_zoo.core.compiler.launch_shape.launch_shape` for what each means.
        observe_by_block: with `PerObs()` (each `ObsBlock` filled by its own function), write a
            run of equal-size blocks together: a lane computes offset ``j`` of every block of the
            run before storing any, so what they share for that offset is read once (see
            `PerObs`). The default, element by element, suits blocks that share nothing.
        cpu_inline_helpers: on the CPU, the helpers of the observation functions inlined into the
            element loop with them, by name (each with every njit function it reaches); the
            others are called. ``None`` (the default) inlines all of them: the fastest code, and
            the longest compile where an observation reaches many helpers. Naming only the helpers
            most elements use (an egocentric map's, say) keeps the speed and shortens the compile.
    """

    launch: Callable[[Any, int], dict] | None = None
    observe_by_block: bool = False
    cpu_inline_helpers: tuple[str, ...] | None = None

    def __post_init__(self):
        if self.launch is not None and not callable(self.launch):
            raise TypeError(f"Tuning.launch must be a function (params, num_envs) -> dict, or None; "
                            f"got {self.launch!r}")
        if not isinstance(self.observe_by_block, bool):
            raise TypeError(f"Tuning.observe_by_block must be a bool, got {self.observe_by_block!r}")
        names = self.cpu_inline_helpers
        if names is not None and not (isinstance(names, tuple) and all(isinstance(n, str) and n for n in names)):
            raise TypeError(f"Tuning.cpu_inline_helpers must be a tuple of function names, or None; got {names!r}")


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
