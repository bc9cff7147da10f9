"""The benchmarks behind every performance choice of the kernels: the core's and each env's.

The code holds the choices themselves: the constants of `gpu_zoo.core.api.tuning`, the generated code,
an env's `Tuning` knobs and the form of its functions. The figures that made them are kept here,
outside the package, each with the record that holds it and the command that measures it again;
`docs/gen/tuning_table.py` renders them all as `docs/tuning.md`. A new choice gets its record here
(`ENVS` for an env's), measured first (`python -m benchmarks.probe ENV_ID --tpe 4 8 16 --regs 0 64`).
"""

from __future__ import annotations

from dataclasses import dataclass


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
        note: anything else the measurement showed, or ``""``.
    """

    choice: str
    figure: str
    record: str
    command: str
    note: str = ""

    def __post_init__(self):
        for name in ("choice", "figure", "command"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise TypeError(f"Measured.{name} must be a non-empty str, got {getattr(self, name)!r}")
        if not isinstance(self.record, str):
            raise TypeError(f"Measured.record must be a str (a path under the repository, or ''), got {self.record!r}")
        if not isinstance(self.note, str):
            raise TypeError(f"Measured.note must be a str, got {self.note!r}")


_PROBE = "python -m benchmarks.probe"

# ------------------------------------------------------------------ the core
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
"""The measurement behind each constant of `gpu_zoo.core.api.tuning`, by name."""

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

# ------------------------------------------------------------------ the envs
_OWN_OBSERVE = "its own observation function rather than the particle core's fills"
_AGAINST_FILLS = "from this tree and from one observing through the fills"

ENVS: dict[str, tuple[Measured, ...]] = {
    "tag_continuous_v0": (
        Measured(
            "threads_per_env 512 for full observations of 32 to 127 others",
            "H200, 2000 envs x 100 agents: 4.7e6 env-steps/s with 128 threads an env, 5.8e6 with 256, 6.9e6 with "
            "512 (the probe's figures; the record holds the suite's run with 512, 6.96e6)",
            "benchmarks/results/env_cuda_full_h200-6.json",
            f"{_PROBE} tag_continuous_v0 --num-envs 2000 --kw num_taggers=5 num_runners=95 --tpe 128 256 512"),
        Measured(
            "observe_by_block",
            "2 CPU cores, 2000 envs x 100 agents with full observations: 1.8e4 -> 9.1e4 env-steps/s against a "
            "call per element, first compile 15 -> 32 s (the observation is inlined once per block); on an H200 "
            "the by-block step's PTX equals that of the one by-block function it replaced",
            "",
            "python -m benchmarks run --suite env --device cpu --label LABEL "
            "--only '^tag_continuous/gpu_zoo/cpu/2000,num_runners=95,num_taggers=5$', with observe_by_block on "
            "and off"),
        Measured(
            "fills that return early for an empty slot",
            "H200, 2000 x 100: a -1 sentinel for an empty slot (every load then checks for a negative index) ran "
            "0.81x; checking the slot before computing its agent, 0.94x (0.92x at 2000 x 5)",
            "benchmarks/results/tag_obs_fills",
            "python -m benchmarks run --suite env --device cuda --warm-jobs 8 --budget-s 150 --label LABEL "
            "--only '^tag_continuous/gpu_zoo/cuda/2000,(?!actions)', on a tree with the other form"),
    ),
    "simple_v3": (
        Measured(
            _OWN_OBSERVE,
            "H200, 131072 envs: 1.353e10 env-steps/s with its own function, 1.315e10 and 1.326e10 through the fills",
            "benchmarks/results/mpe_obs_fills",
            "python -m benchmarks run --suite env --device cuda --only '^simple/gpu_zoo/cuda/131072$' --label LABEL, "
            + _AGAINST_FILLS),
    ),
    "simple_spread_v3": (
        Measured(
            "max_registers 64",
            "H200, N=3, 131072 envs: 1.44e9 env-steps/s with 64 registers a thread, 1.15e9 with the compiler's choice",
            "benchmarks/results/env_cuda_full_h200-s27.json, benchmarks/results/env_cuda_full_h200-s27c.json",
            f"{_PROBE} simple_spread_v3 --num-envs 131072 --tpe 4 --regs 0 64"),
        Measured(
            _OWN_OBSERVE,
            "H200, 131072 envs: 1.533e9 env-steps/s with its own function, 1.439e9 and 1.440e9 through the fills",
            "benchmarks/results/mpe_obs_fills",
            "python -m benchmarks run --suite env --device cuda --only '^simple_spread/gpu_zoo/cuda/131072$' "
            "--label LABEL, " + _AGAINST_FILLS),
    ),
    "simple_adversary_v3": (
        Measured(
            _OWN_OBSERVE,
            "H200, 131072 envs: 2.87e9 env-steps/s with its own function, 2.80e9 through the fills (two passes "
            "each); H100: 2.58e9 and 2.54e9",
            "benchmarks/results/group_phases",
            "python -m benchmarks run --suite env --device cuda --only '^simple_adversary/gpu_zoo/cuda/131072$' "
            "--label LABEL, " + _AGAINST_FILLS,
            note="through the fills, the step's PTX had 36 instructions more"),
    ),
    "simple_reference_v3": (
        Measured(
            "threads_per_env 8 up to 2048 envs, else 4",
            "H200, 131072 envs: 2.36e9-2.37e9 env-steps/s with 4 lanes an env, 1.56e9-1.59e9 with the core's 2 (a "
            "lane per agent), 7.5e8 with 1, 1.77e9 with 8 (capped at 40 registers): the spare lanes share the 42 "
            "observation values; 1024 envs, which leave most of the GPU idle: 1.42e8 with 8 lanes, 1.26e8 with 4, "
            "1.37e8 with 16",
            "benchmarks/results/launch_sweep_h200-s29.txt, benchmarks/results/obs_write_experiments_h200-s28.txt",
            f"{_PROBE} simple_reference_v3 --num-envs 131072 --tpe 1 2 4 8; "
            f"{_PROBE} simple_reference_v3 --num-envs 1024 --tpe 4 8 16"),
        Measured(
            _OWN_OBSERVE,
            "H200, 131072 envs: 2.34e9 env-steps/s with its own function, 2.29e9 through the fills (two passes "
            "each); PTX 1294 instructions against 1313",
            "benchmarks/results/group_phases",
            "python -m benchmarks run --suite env --device cuda --only '^simple_reference/gpu_zoo/cuda/131072$' "
            "--label LABEL, " + _AGAINST_FILLS),
    ),
    "simple_world_comm_v3": (
        Measured(
            "threads_per_env 32 up to 2048 envs, else 4 (worlds of up to 8 agents)",
            "H200, the default world (6 agents), 131072 envs: 3.03e8 env-steps/s with 4 lanes, 1.92e8 with the "
            "core's 8 (a lane per agent), 1.04e8 with 16; 16384 envs: 2.81e8 with 4, 1.79e8 with 8; 1024 envs, "
            "which leave most of the GPU idle: 3.98e7 with 32 lanes, 3.61e7 with 16, 2.40e7 with 4",
            "benchmarks/results/launch_sweep_h200-s29.txt, benchmarks/results/obs_write_experiments_h200-s28.txt",
            f"{_PROBE} simple_world_comm_v3 --num-envs 131072 --tpe 4 8 16; "
            f"{_PROBE} simple_world_comm_v3 --num-envs 1024 --tpe 4 16 32"),
    ),
    "gather_trade_build_v0": (
        Measured(
            "on the CPU, the observation inlines `window` (the map) and calls its other helpers",
            "2 CPU cores, two alternating pairs: cold first step 17.0 / 16.8 s -> 15.2 / 14.5 s; 256 envs "
            "6.6e4 -> 6.8e4-7.1e4 env-steps/s, 4 envs equal; with no helper inlined the compile was as short but "
            "the step 55% slower (the map's 1089 values a worker each paid a call)",
            "benchmarks/results/cpu_obs_inline_cpu-2core-s54.txt",
            "python -m benchmarks.cold_start --device cpu --only '^gather_trade_build_v0$' --label LABEL, "
            "and env-steps/s at 256 envs, from two checkouts"),
    ),
}
"""The measurements behind each env's choices (its `Tuning` knobs, the form of its functions), by env id."""
