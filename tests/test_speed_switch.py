"""``GPU_ZOO_COMPILE_ACCELERATIONS=0`` changes compile time only: every env steps through the same states.

The switch (`gpu_zoo.core.compiler.speed`) is read once per process, when the compiler is imported,
so the side it is not on in this process runs in a child process (``python -m tests.test_speed_switch``),
which saves its states, a step at a time, to a file. Same seed, same actions, past the first
episode's end (an auto-reset): integer and boolean fields equal exactly; floats bitwise on the CPU
target and, under the CUDA simulator, within `gpu_zoo.testing.check.assert_same_state`'s tolerance.

Every registered env (`tests.helpers.PZ_CONFIGS`) is compared on the CPU target. The simulator runs
a kernel as Python threads, a few seconds a step for the larger envs, and compiles nothing: it is
compared for a representative few (an MPE env, the economy, a board game), their episodes
cut to ``SIMULATED_CYCLES`` steps. With every env on both targets the test took 4 min 53 s of a cold
run on 2 cores and 2 workers (both settings compiled, the economy's 60-step episodes simulated); so,
2 min 39 s with every kernel cold and Tag continuous simulated too, less in a whole run, whose other tests
compile the "on" kernels (a cold ``make test`` on 2 cores is close to its 15-minute budget).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gpu_zoo.core.compiler import speed
from tests.helpers import PZ_CONFIGS

SIMULATED = ("simple_tag_v3", "gather_trade_build_v0", "connect_four_v3")
EXTRA_STEPS = 3  # past the first episode's end: an auto-reset is stepped through
SIMULATED_CYCLES = 12  # the simulator's episodes cut to this (a run-time param: the same kernels)
SEED, ACTION_SEED = 11, 3


def trajectory(env_id: str, params: dict, target: str) -> list[dict[str, torch.Tensor]]:
    """Every non-scratch field after the reset and after each step, two envs, seeded actions."""
    from gpu_zoo.core.runtime.batched import BatchedEnv
    from gpu_zoo.registry import get_spec

    if target == "cuda":
        params = {**params, "max_cycles": min(params["max_cycles"], SIMULATED_CYCLES)}
    env = BatchedEnv(get_spec(env_id), 2, device="cpu", target=target, **params)
    gen = torch.Generator().manual_seed(ACTION_SEED)
    env.reset(seed=SEED)
    states = []
    for _ in range(env.params.max_cycles + EXTRA_STEPS):
        states.append({k: v.cpu().clone() for k, v in env.buffers.raw.items() if k not in env.layout.scratch_fields})
        env.step(env.sample_actions(gen))
    states.append({k: v.cpu().clone() for k, v in env.buffers.raw.items() if k not in env.layout.scratch_fields})
    return states


def _trajectories(env_id: str, targets: tuple[str, ...], on: bool, out: Path) -> dict[str, list]:
    """``targets`` -> `trajectory`, with the accelerations ``on``: here if this process has them so, else a child."""
    params = PZ_CONFIGS[env_id]
    if on == speed.ENABLED:
        return {t: trajectory(env_id, params, t) for t in targets}
    env = {**os.environ, speed.SWITCH: "1" if on else "0", "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    cmd = [sys.executable, "-m", "tests.test_speed_switch", env_id, json.dumps(list(targets)), str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr[-3000:]
    return torch.load(out)


def _assert_same(a: torch.Tensor, b: torch.Tensor, bitwise: bool, where: str):
    assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {a.dtype} {a.shape} != {b.dtype} {b.shape}"
    if not a.is_floating_point():
        assert torch.equal(a, b), f"{where}: {a} != {b}"
    elif bitwise:
        assert torch.equal(a.view(torch.uint8), b.view(torch.uint8)), f"{where}: {a} != {b}"
    else:  # `gpu_zoo.testing.check.assert_same_state`'s tolerance
        torch.testing.assert_close(b, a, rtol=1e-5, atol=2e-5, msg=lambda m: f"{where}: {m}")


@pytest.mark.parametrize("env_id", sorted(PZ_CONFIGS))
def test_switch_off_same_trajectory(env_id, tmp_path):
    targets = ("cpu", "cuda") if env_id in SIMULATED else ("cpu",)
    on = _trajectories(env_id, targets, True, tmp_path / "on.pt")
    off = _trajectories(env_id, targets, False, tmp_path / "off.pt")
    for target in targets:
        assert len(on[target]) == len(off[target])
        for t, (a, b) in enumerate(zip(on[target], off[target], strict=True)):
            assert a.keys() == b.keys()
            for name in a:
                _assert_same(a[name], b[name], target == "cpu", f"{target}, after {t} steps, field {name}")


def main(argv=None):
    env_id, targets, out = argv or sys.argv[1:]
    torch.save({t: trajectory(env_id, PZ_CONFIGS[env_id], t) for t in json.loads(targets)}, out)


if __name__ == "__main__":
    main()
