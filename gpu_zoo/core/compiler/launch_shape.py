"""How CUDA threads map to environments and agents: the launch shape a kernel is generated for.

Chosen per configuration from the agent count, the observation size and the batch size; the
generated kernel bakes it in as compile-time constants (`gpu_zoo.core.runtime.launch` launches it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..api.params import is_int
from ..api.tuning import FILL_THREADS, OBS_ELEMENTS_PER_LANE, WIDE_BLOCK_REGISTERS
from .layout import Layout


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


def check_launch_options(threads_per_env: int | None, max_registers: int | None, split_observe: bool | None = None):
    """Raises a ValueError naming what was expected (on every target, used or not)."""
    if split_observe is not None and not isinstance(split_observe, bool):
        raise ValueError(f"split_observe must be a bool (or None: the env's choice), got {split_observe!r}")
    t = threads_per_env
    if t is not None and (not is_int(t) or t < 1 or t > 1024 or t & (t - 1)):
        raise ValueError(f"threads_per_env must be a power of two in [1, 1024], got {t!r}")
    r = max_registers
    if r is not None and (not is_int(r) or not 16 <= r <= 255):
        raise ValueError(f"max_registers must be an int in [16, 255], got {r!r}")


def launch_shape(num_agents: int, simulator: bool = False, block: int = 128,
                 threads_per_env: int | None = None, obs_elements: int = 0, num_envs: int = 1,
                 max_registers: int | None = None, split_observe: bool = False) -> LaunchShape:
    """Threads per env (a power of two) and envs per block of ``block`` threads.

    One thread per agent (at most 256), and more while the batch is too small to fill the GPU and
    the observations are large (``obs_elements`` per env, a lane per `OBS_ELEMENTS_PER_LANE`).

    Writing observations is most of a step when they are large against the agent count (Tag
    gridworld with 51 agents writes 10455 values per env), and spare lanes speed that up; but
    they idle through the per-agent phases, so once ``num_envs`` alone fills the GPU
    (`FILL_THREADS`) they cost more than they give. ``threads_per_env`` overrides the choice (a
    power of two up to 1024). ``max_registers`` caps the registers per thread of the compiled
    kernel (16 to 255). By default a block of 256 threads gets a cap of `WIDE_BLOCK_REGISTERS`,
    so three fit on a multiprocessor (65536 registers); smaller blocks get the compiler's choice.
    The figures behind each constant: `benchmarks/tuning_records.py` (docs: Tuning).
    ``split_observe`` launches a step as three kernels (`gpu_zoo.core.compiler.plan.step_kernels`).
    """
    check_launch_options(threads_per_env, max_registers, split_observe)
    if threads_per_env is not None:
        tpe = threads_per_env
    else:
        spare = min(_pow2(-(-obs_elements // OBS_ELEMENTS_PER_LANE)), _pow2(-(-FILL_THREADS // max(1, num_envs))))
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
    """`launch_shape` for ``num_envs`` copies of ``layout``; the env's `Tuning.launch` unless the caller picks."""
    launch = layout.spec.tuning.launch
    preferred = launch(layout.params, num_envs) if launch is not None else {}
    if threads_per_env is None and max_registers is None:
        threads_per_env, max_registers = preferred.get("threads_per_env"), preferred.get("max_registers")
        if simulator and threads_per_env is not None:  # a choice for the GPU; the simulator's lanes are OS threads
            threads_per_env = min(threads_per_env, 8)
    if split_observe is None:
        split_observe = preferred.get("split_observe", False)
    return launch_shape(layout.num_agents, simulator, block, threads_per_env, layout.obs_elements, num_envs,
                        max_registers, split_observe)
