"""Launching cached cubins through the CUDA driver: the kernel ABI the buffers are packed into.

The launches themselves need a GPU (``GPU_ZOO_REAL_CUDA=1`` runs the whole suite through them);
here the parameter list numba-cuda compiles (NVVM, no GPU) is checked against the packing.
"""

import ctypes
import json
import os
import subprocess
import sys

import pytest
import torch

from gpu_zoo.core.compiler.cubin import Kernel, array_params, cached, entry_params, store
from gpu_zoo.core.compiler.layout import Layout
from gpu_zoo.core.runtime.buffers import Buffers
from gpu_zoo.registry import get_spec
from gpu_zoo.testing import nvvm_available

PTX = """
.visible .entry _Z4kern(
\t.param .u8 _Z4kern_param_0,
\t.param .u64 _Z4kern_param_1,
\t.param .f32 _Z4kern_param_2
)
{
\tret;
}
"""


def test_the_entry_and_its_parameter_types_are_read_off_the_ptx():
    assert entry_params(PTX) == ("_Z4kern", ("u8", "u64", "f32"))
    with pytest.raises(ValueError, match="expected one .entry"):
        entry_params(PTX + PTX.replace("_Z4kern", "_Z5other"))
    with pytest.raises(ValueError, match="cannot pass"):
        entry_params(PTX.replace(".param .u64 _Z4kern_param_1", ".param .align 8 .b8 _Z4kern_param_1[16]"))


def test_an_array_passes_numbas_array_model_flattened():
    t = torch.zeros(3, 4, 5, dtype=torch.float32)
    assert array_params(t) == [0, 0, 60, 4, t.data_ptr(), 3, 4, 5, 80, 20, 4]
    with pytest.raises(ValueError, match="contiguous"):
        array_params(t.transpose(0, 1))


def test_binding_packs_each_value_as_its_ptx_type_and_refuses_a_wrong_count():
    t = torch.arange(6, dtype=torch.int32).view(2, 3)
    launch = Kernel(b"", "k", ("u8", *("u64",) * 9)).bind((True,), (t,))
    assert [type(v) for v in launch._values] == [ctypes.c_uint8, *(ctypes.c_uint64,) * 9]
    assert [v.value for v in launch._values] == [1, 0, 0, 6, 4, t.data_ptr(), 2, 3, 12, 4]
    assert [ctypes.cast(p, ctypes.POINTER(ctypes.c_uint64)).contents.value for p in launch._pointers[1:]] == \
        [v.value for v in launch._values[1:]]
    with pytest.raises(ValueError, match="takes 10 parameters; its 0 scalars and 1 arrays give 9"):
        Kernel(b"", "k", ("u8", *("u64",) * 9)).bind((), (t,))


def test_the_cache_gives_every_kernel_or_none(tmp_path):
    cc, compiler = (9, 0), "numba-cuda-test"
    store(tmp_path, "mod", "step_phases", cc, compiler, b"\x7fELF1", PTX)
    assert cached(tmp_path, "mod", ("step_phases", "step_observe"), cc, compiler) is None
    store(tmp_path, "mod", "step_observe", cc, compiler, b"\x7fELF2", PTX)
    got = cached(tmp_path, "mod", ("step_phases", "step_observe"), cc, compiler)
    assert {k: (v.image, v.entry, v.params) for k, v in got.items()} == {
        "step_phases": (b"\x7fELF1", "_Z4kern", ("u8", "u64", "f32")),
        "step_observe": (b"\x7fELF2", "_Z4kern", ("u8", "u64", "f32"))}
    assert cached(tmp_path, "mod", ("step_phases",), (8, 0), compiler) is None
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.skipif(not nvvm_available(), reason="needs NVVM: pip install nvidia-cuda-nvcc-cu12 nvidia-cuda-nvrtc-cu12")
def test_the_buffers_fill_the_compiled_kernels_parameters_exactly():
    # compiled for real in a process without the simulator, which this one may run under
    code = ("import json; from gpu_zoo.core.compiler.cubin import entry_params; "
            "from gpu_zoo.testing.cuda_compile import kernel_ptx; "
            "print(json.dumps(entry_params(kernel_ptx('simple_v3', num_envs=8)[0])))")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    entry, params = json.loads(done.stdout.strip().splitlines()[-1])
    spec = get_spec("simple_v3")
    buffers = Buffers(Layout(spec, spec.make_params()), 8, torch.device("cpu"))
    launch = Kernel(b"", entry, tuple(params)).bind((False,), tuple(buffers.raw.values()))
    assert params[0] == "u8" and set(params[1:]) == {"u64"}
    assert len(launch._values) == len(params)


@pytest.mark.cuda
def test_a_warm_process_launches_the_cached_cubins_without_numba_cuda(tmp_path):
    code = ("import sys, torch, gpu_zoo; env = gpu_zoo.make('simple_v3', num_envs=64, device='cuda'); "
            "env.reset(seed=1); env.step(env.sample_actions()); torch.cuda.synchronize(); "
            "print(float(env.buffers.fields.t.float().sum()), 'numba_cuda' in sys.modules)")
    env = {**os.environ, "GPU_ZOO_CACHE_DIR": str(tmp_path), "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
            for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr[-3000:]
    (t_cold, cold_imported), (t_warm, warm_imported) = (r.stdout.split()[-2:] for r in runs)
    assert cold_imported == "True" and warm_imported == "False"  # the cold one compiled
    assert t_cold == t_warm == "64.0"  # every env stepped once
    assert list(tmp_path.glob("*.drive.sm*.cubin")) and list(tmp_path.glob("*.drive.sm*.json"))
