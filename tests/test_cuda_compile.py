"""Every env's CUDA kernels compiled for real (NVVM, no GPU): what the simulator's plain Python cannot catch."""


import pytest

import gpu_zoo
from gpu_zoo.testing import CudaCompileError, compile_kernels
from tests.helpers import require_nvvm


@pytest.fixture(scope="module", autouse=True)
def nvvm():
    require_nvvm()


@pytest.mark.parametrize("env_id", gpu_zoo.registered_envs())
def test_every_registered_env_compiles_for_a_gpu(env_id):
    sizes = compile_kernels(env_id)
    assert set(sizes) in ({"drive"}, {"step_phases", "step_observe", "step_finished"})
    assert all(n > 1000 for n in sizes.values())


def test_a_kernel_that_only_the_simulator_runs_is_named(monkeypatch):
    # registered for this test alone: the registry-wide tests must not meet it
    monkeypatch.setitem(gpu_zoo.registry._ENTRIES, "cuda_only_error_v0", "tests.cuda_only_error_env:SPEC")
    for target in ("cpu", "cuda"):  # the CPU and the simulator run it
        env = gpu_zoo.make("cuda_only_error_v0", num_envs=2, device="cpu", target=target)
        env.reset(seed=0)
        env.step(env.sample_actions())
    with pytest.raises(CudaCompileError, match="cuda_only_error_v0 .*kernel 'drive' does not compile for sm_90"):
        compile_kernels("cuda_only_error_v0")
