"""Platform fixes: NumPy 2.5's missing row_stack for numba-cuda, fork-safe CPU threading."""

import numpy as np

from gpu_zoo.core import compat


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
