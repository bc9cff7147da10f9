"""Shared small configurations, so the whole suite compiles few kernels, and the reference packages."""

import atexit
import importlib
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
import torch

import gpu_zoo

# One structural configuration of Tag for most tests (floats are runtime params: no recompile).
TAG_SMALL = dict(num_taggers=2, num_runners=3, max_cycles=6)
GRID_SMALL = dict(num_taggers=2, num_runners=2, grid_length=4, max_cycles=5)
# The configurations the PettingZoo-face tests share (one env, no auto-reset: kernels of their own).
PZ_CONFIGS = {
    "tag_continuous_v0": TAG_SMALL,
    "tag_gridworld_v0": GRID_SMALL,
    "simple_tag_v3": dict(max_cycles=10),
    "simple_v3": dict(max_cycles=25),  # MPE2's defaults: the comparisons with MPE2 share these kernels
    "simple_spread_v3": dict(max_cycles=25),
    "simple_adversary_v3": dict(max_cycles=25),
    "simple_push_v3": dict(max_cycles=25),
    "simple_speaker_listener_v4": dict(max_cycles=25),
    "simple_reference_v3": dict(max_cycles=25),
    "simple_crypto_v3": dict(max_cycles=25),
    "simple_formation_v1": dict(max_cycles=25),
    "simple_line_v1": dict(max_cycles=25),
    "simple_world_comm_v3": dict(max_cycles=25),
    "collect_treasure_v1": dict(max_cycles=25),
    "gather_trade_build_v0": dict(max_cycles=60, tax_period=10),
    "connect_four_v3": dict(max_cycles=42),  # the defaults (42 and 9 moves fill the boards)
    "tictactoe_v3": dict(max_cycles=9),
    "go_v5": dict(board_size=9, max_cycles=30),  # the comparisons' board; games cut short
    "rps_v2": dict(max_cycles=15),
    # the pursuit comparisons' small non-square grid (tests/sisl): one kernel for both
    "pursuit_v5": dict(x_size=7, y_size=5, n_pursuers=3, n_evaders=4, obs_range=5, surround=False, n_catch=1,
                       shared_reward=False, max_cycles=100),
    "chess_v6": dict(max_cycles=40),  # games cut short; the comparisons share its kernels
}
# The economy with the AI Economist's fixed skills and starts, short, and the period's income observed: the
# rule and parity tests share its compile (the default observations are the other configurations').
# The AI Economist's training configuration with our options on: parity then covers them (one more compile each
# would cost CI minutes); "economy" covers the planner's own rates.
ECON_FIXED = dict(max_cycles=4, tax_period=2, fixed_four_skill_and_loc=True, observe_period_income=True,
                  tax_model="random-bracket-rates", energy_warmup_method="auto", energy_warmup_constant=3.0)
# The Saez model: its ring of 12 fills on the third tax day (4 workers), so its formula, elasticity fit included
# (10 samples or more), sets the rates from the fourth period on; the ring lasts through the auto-reset after it.
ECON_SAEZ = dict(max_cycles=8, tax_period=2, tax_model="saez", saez_buffer_size=12)
SAEZ_INCOME = 450.0  # coin a step a worker may be handed in tests, so a period's income passes the top cutoff


def tag_env(num_envs=2, **kw):
    return gpu_zoo.make("tag_continuous_v0", num_envs=num_envs, device="cpu", **{**TAG_SMALL, **kw})


def noop_actions(env):
    return {g: torch.zeros_like(env.actions[g]) for g in env.groups}



def reference(module: str, reason: str = ""):
    """A reference package's module, or a skip where it is not installed.

    Under ``make test``, which installs every one (it sets ``GPU_ZOO_REQUIRE_REFERENCES=1``), a
    missing or broken one fails instead: a broken install must not turn the comparisons into skips.
    """
    if os.environ.get("GPU_ZOO_REQUIRE_REFERENCES") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=reason or None)


def require_nvvm():
    """Skips where NVVM (CUDA compiles without a GPU) is missing; fails under ``make test``, which installs it."""
    from gpu_zoo.testing import nvvm_available

    if not nvvm_available():
        if os.environ.get("GPU_ZOO_REQUIRE_REFERENCES") == "1":
            pytest.fail("NVVM is missing: make test installs nvidia-cuda-nvcc-cu12 and nvidia-cuda-nvrtc-cu12")
        pytest.skip("needs NVVM: pip install nvidia-cuda-nvcc-cu12 nvidia-cuda-nvrtc-cu12")


def built_once(name: str, build) -> Path:
    """A folder that ``build(folder)`` fills once per test run, shared by pytest-xdist's workers.

    The first worker to ask builds it under a file lock; the others wait, then use what it built
    (``build``'s own failures included: it should record them in the folder rather than raise).
    Outside pytest-xdist, a fresh temporary folder, removed at exit.
    """
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        folder = Path(tempfile.mkdtemp(prefix=f"gpu_zoo_{name}_"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        build(folder)
        return folder
    import fcntl

    tmp = Path(tempfile.gettempdir())
    root = tmp / f"gpu_zoo_{name}_run_{run}"
    root.mkdir(exist_ok=True)
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "built").exists():
            for old in tmp.glob(f"gpu_zoo_{name}_run_*"):  # earlier runs' folders
                if old != root and time.time() - old.stat().st_mtime > 3600:
                    shutil.rmtree(old, ignore_errors=True)
            (root / "out").mkdir(exist_ok=True)
            build(root / "out")
            (root / "built").touch()
    return root / "out"
