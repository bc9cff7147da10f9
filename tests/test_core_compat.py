"""Platform fixes: NumPy 2.5's row_stack, fork-safe CPU threading, the simulator's poll, Numba's error colours."""

import os
import subprocess
import sys

import numpy as np
import pytest

from gpu_zoo.core.compiler.speed import compat

cuda = compat.import_cuda()  # a module global: the simulator swaps it for its own inside kernels


def test_row_stack_shim_for_numpy_without_it(monkeypatch):
    monkeypatch.delattr(np, "row_stack", raising=False)
    cuda = compat.import_cuda()
    assert np.row_stack is np.vstack
    assert hasattr(cuda, "jit")


def test_cpu_threading_layer_is_fork_safe_by_default(monkeypatch):
    import numba

    monkeypatch.delenv("NUMBA_THREADING_LAYER", raising=False)
    monkeypatch.setattr(numba.config, "THREADING_LAYER", "default")
    compat.configure_cpu_threading()
    assert numba.config.THREADING_LAYER == "workqueue"


def _colour_scheme(setting: str | None) -> str:
    """Numba's error colour scheme in a fresh process importing gpu_zoo first, the variable set to ``setting``."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING"}
    if setting is not None:
        env["NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING"] = setting
    code = "import gpu_zoo, numba.core.errors as e; print(type(e.termcolor()).__name__)"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_numba_error_messages_are_plain_unless_the_user_asks_for_colour():
    pytest.importorskip("colorama")  # without it Numba never colours
    assert _colour_scheme(None) == "NOPColorScheme"
    assert _colour_scheme("") != "NOPColorScheme"  # an explicit setting is the user's


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") != "1", reason="a fix for Numba's CUDA simulator")
def test_simulator_block_threads_meet_at_barriers_while_their_manager_yields():
    compat.import_cuda()
    from numba.cuda.simulator.kernel import BlockThread

    assert BlockThread.is_alive is compat._yielding_is_alive
    rotate = cuda.jit(_rotate)
    x = np.zeros(8, np.int64)
    rotate[1, 8](x)
    assert x.tolist() == [10, 20, 30, 40, 50, 60, 70, 0]


def _rotate(x):
    """Every thread reads its neighbour's value only after all have written theirs."""
    i = cuda.threadIdx.x
    x[i] = i * 10
    cuda.syncthreads()
    v = x[(i + 1) % 8]
    cuda.syncthreads()
    x[i] = v


def test_numba_cuda_is_found_without_being_imported(monkeypatch):
    import importlib.util

    assert compat.numba_cuda_installed()  # a dependency of the tests (the simulator is numba-cuda's)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert not compat.numba_cuda_installed()


def test_compile_flags_hash_and_compare_as_numba_cuda_defines_them():
    from numba.cuda.core.targetconfig import Option, TargetConfig
    from numba.cuda.flags import Flags

    class Other(TargetConfig):
        colour = Option(str, default="red", doc="an option Flags does not have")

    def as_defined(cfg):  # numba-cuda's own: every option read through its property
        values = {k: getattr(cfg, k) for k in cfg.options}
        return values, hash(tuple(sorted(values)))

    compat._quick_compile_flags()
    assert TargetConfig.values is compat._flag_values
    plain, set_some = Flags(), Flags()
    set_some.debuginfo, set_some.fastmath = True, True
    other = Other()
    other.colour = "blue"
    mixed = Flags(copy_from=Other(copy_from=other))  # a copy of another class's options keeps only its own
    for cfg in (plain, set_some, other, mixed):
        values, digest = as_defined(cfg)
        assert cfg.values() == values and list(cfg.values()) == list(values) and hash(cfg) == digest
    assert plain == mixed and plain != set_some and Flags(copy_from=set_some) == set_some
    assert plain.values() is not plain.values()  # a new dict each time: a caller may change it
