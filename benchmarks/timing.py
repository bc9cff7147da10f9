"""Clocks: repeated timed runs with a device synchronisation before every clock read.

GPU work is timed with CUDA events recorded on the current stream (they bracket exactly the
launched work); the CPU clock is read only after ``torch.cuda.synchronize()``, which also waits
for kernels that other libraries (Numba, XLA) put on their own streams.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch


def sync(device: torch.device | str):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


@dataclass
class Timing:
    """Seconds of each timed repeat of ``steps`` calls."""

    steps: int
    seconds: list[float]

    def rates(self, work_per_step: float) -> list[float]:
        return [self.steps * work_per_step / s for s in self.seconds]

    def summary(self, work_per_step: float) -> dict:
        """Median rate and its spread (min, max) over the repeats."""
        r = self.rates(work_per_step)
        return {"median": statistics.median(r), "spread": [min(r), max(r)], "samples": r}


def _timed(step: Callable[[], object], steps: int, device: torch.device, sync_fn) -> float:
    if device.type == "cuda" and sync_fn is None:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(steps):
            step()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / 1e3
    wait = sync_fn or (lambda: sync(device))
    wait()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    wait()
    return time.perf_counter() - t


def time_steps(step: Callable[[], object], device: torch.device | str, *, target_s: float, repeats: int,
               warmup: int = 3, sync_fn: Callable[[], object] | None = None, max_steps: int = 1 << 20,
               steps: int | None = None) -> Timing:
    """Times ``repeats`` runs of ``step``, each sized to last about ``target_s`` seconds.

    Args:
        step: one step of the system under test (its launch, for asynchronous work).
        device: where the work runs; a CUDA device is timed with CUDA events.
        target_s: wanted seconds per repeat; the step count is calibrated from the warm-up.
        repeats: timed repeats (the report gives their median and spread).
        warmup: untimed calls first (compilation, caches, CUDA graph capture).
        sync_fn: waits for the system's own asynchronous work (e.g. ``block_until_ready``);
            when given, the CPU clock is used instead of CUDA events.
        max_steps: upper bound on the calibrated step count.
        steps: a fixed step count per repeat instead of the calibrated one.
    """
    device = torch.device(device)
    for _ in range(warmup):
        step()
    if steps is not None:
        return Timing(steps, [_timed(step, steps, device, sync_fn) for _ in range(repeats)])
    probe, probe_s = 1, 0.0
    while probe_s < target_s / 10 and probe < max_steps:
        probe_s = _timed(step, probe, device, sync_fn)
        if probe_s < target_s / 10:
            probe *= 4
    steps = max(1, min(max_steps, round(probe * target_s / max(probe_s, 1e-9))))
    return Timing(steps, [_timed(step, steps, device, sync_fn) for _ in range(repeats)])


def host_us_per_step(step: Callable[[], object], device: torch.device | str, steps: int = 50,
                     repeats: int = 3) -> float:
    """Host (Python) time per call, without waiting for the device: the launch cost.

    Few enough calls that the launch queue never fills, so the clock sees only host work.
    """
    device = torch.device(device)
    out = []
    for _ in range(repeats):
        sync(device)
        t = time.perf_counter()
        for _ in range(steps):
            step()
        out.append((time.perf_counter() - t) / steps * 1e6)
        sync(device)
    return statistics.median(out)


def copy_bandwidth_gbps(device: torch.device | str, nbytes: int = 2 << 30, repeats: int = 5) -> float | None:
    """Device-to-device copy bandwidth (bytes read + written per second, in GB/s) of a large tensor."""
    device = torch.device(device)
    if device.type != "cuda":
        return None
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).uniform_()
    dst = torch.empty_like(src)
    timing = time_steps(lambda: dst.copy_(src), device, target_s=0.05, repeats=repeats, warmup=2)
    src = dst = None  # free both before the env is measured further
    torch.cuda.empty_cache()
    return timing.summary(2 * nbytes / 1e9)["median"]


def gpu_memory_in_use(device: torch.device | str) -> int | None:
    """Bytes in use on the whole device (every allocator: torch, Numba, XLA), or None on the CPU."""
    device = torch.device(device)
    if device.type != "cuda":
        return None
    free, total = torch.cuda.mem_get_info(device)
    return total - free


def peak_gpu_memory(device: torch.device | str, baseline: int | None) -> dict:
    """Peak bytes held by torch's allocator, and device bytes in use now above ``baseline``."""
    device = torch.device(device)
    if device.type != "cuda":
        return {"peak_gpu_mem_bytes": None}
    used = gpu_memory_in_use(device) - (baseline or 0)
    return {"peak_gpu_mem_bytes": max(torch.cuda.max_memory_allocated(device), used),
            "torch_peak_bytes": torch.cuda.max_memory_allocated(device), "device_bytes_in_use": used}
