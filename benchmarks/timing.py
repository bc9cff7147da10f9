"""Shared measurement helpers: device sync, timed stepping, system description."""

from __future__ import annotations

import platform
import statistics
import sys
import time
from datetime import datetime, timezone

import torch


def sync(device: torch.device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def fill_random_actions(env, seed: int = 0):
    """Writes random actions into the env's own buffers once, so timing covers the step alone."""
    gen = torch.Generator(device=env.device).manual_seed(seed)
    for g, a in env.sample_actions(gen).items():
        env.actions[g].copy_(a)


def step_rates(env, steps: int, repeats: int, warmup: int = 10) -> list[float]:
    """Env-steps/s of ``repeats`` timed runs of ``steps`` steps each, the clock read after a sync."""
    for _ in range(warmup):
        env.step()
    rates = []
    for _ in range(repeats):
        sync(env.device)
        t = time.perf_counter()
        for _ in range(steps):
            env.step()
        sync(env.device)
        rates.append(steps * env.num_envs / (time.perf_counter() - t))
    return rates


def summary(rates: list[float]) -> dict:
    return {"env_steps_per_s": statistics.median(rates), "spread": [min(rates), max(rates)]}


def system_info(device: str) -> dict:
    import numba

    info = {"python": platform.python_version(), "torch": torch.__version__, "numba": numba.__version__,
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": platform.machine()}
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name()
        try:
            import numba_cuda  # noqa: F401

            info["numba_cuda"] = sys.modules["numba_cuda"].__version__
        except (ImportError, AttributeError):
            pass
    return info
