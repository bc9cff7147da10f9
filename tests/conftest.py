"""Test set-up: CUDA kernels run under Numba's CUDA simulator and Triton's interpreter unless a GPU is asked for.

``GPU_ZOO_REAL_CUDA=1 pytest`` runs the same suite against real CUDA kernels (on a GPU host).
The simulator must be switched on before Numba is first imported, hence at the top of conftest.
"""

import os

REAL_CUDA = os.environ.get("GPU_ZOO_REAL_CUDA") == "1"
if not REAL_CUDA:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    os.environ["TRITON_INTERPRET"] = "1"  # the trainer's Triton kernels on CPU tensors (tests/test_fused.py)
os.environ.setdefault("GPU_ZOO_DOT_PRECISION", "ieee")  # full fp32 products: the tests' tolerances hold

import pytest  # noqa: E402
import torch  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--all", action="store_true", help="run the larger test matrix and slow tests")


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--all"):
        skip = pytest.mark.skip(reason="slow: run with --all")
        for item in items:
            if "slow" in item.keywords:
                item.add_marker(skip)
    if not REAL_CUDA:
        skip = pytest.mark.skip(reason="needs a real GPU: GPU_ZOO_REAL_CUDA=1")
        for item in items:
            if "cuda" in item.keywords:
                item.add_marker(skip)


@pytest.fixture
def cuda_device() -> torch.device:
    """Where the CUDA target's tensors live: the GPU, or the CPU under the simulator."""
    return torch.device("cuda") if REAL_CUDA else torch.device("cpu")


@pytest.fixture(autouse=True)
def _log_compiles(request):
    """With ``GPU_ZOO_COMPILE_LOG=FILE``, a JSON line per kernel module each test loads (a cold suite's time).

    Each line names the test, the env and target, the module (its source's digest) and the seconds
    it took. Modules loaded by a module or session fixture are not seen.
    """
    path = os.environ.get("GPU_ZOO_COMPILE_LOG")
    if not path:
        yield
        return
    import json

    from gpu_zoo.core.runtime import launch

    before = set(launch.compile_seconds)
    yield
    with open(path, "a") as fh:
        for key in set(launch.compile_seconds) - before:
            fh.write(json.dumps({"test": request.node.nodeid, "env": str(key[0][0]), "target": key[1],
                                 "module": launch._loaded[key].__name__,
                                 "seconds": round(launch.compile_seconds[key], 2),
                                 "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")}) + "\n")
