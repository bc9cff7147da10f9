"""A kernel's PTX assembled as a whole program (`gpu_zoo.core.compiler.ptxas`), with the real ptxas and no GPU."""

import os
import subprocess

import pytest

from gpu_zoo.core.compiler import ptxas

# One IEEE division: ptxas adds a slow-path routine for it and calls that routine.
DIVIDE = """
.version 7.8
.target sm_90
.address_size 64
.visible .entry divide(.param .u64 out, .param .f32 a, .param .f32 b)
{
    .reg .f32 %f<4>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    ld.param.f32 %f1, [a];
    ld.param.f32 %f2, [b];
    div.rn.f32 %f3, %f1, %f2;
    cvta.to.global.u64 %rd2, %rd1;
    st.global.f32 [%rd2], %f3;
    ret;
}
"""
ET_REL, ET_EXEC = 1, 2


@pytest.fixture(scope="module")
def exe():
    found = ptxas.find()
    if found is None:
        if os.environ.get("GPU_ZOO_REQUIRE_REFERENCES") == "1":
            pytest.fail("ptxas is missing: make test installs nvidia-cuda-nvcc-cu12, which ships it beside NVVM")
        pytest.skip("needs ptxas: pip install nvidia-cuda-nvcc-cu12")
    return found


def _elf_type(image: bytes) -> int:
    assert image[:4] == b"\x7fELF"
    return int.from_bytes(image[16:18], "little")


def test_ptxas_is_found_beside_the_nvvm_numba_cuda_loads_and_runs(exe):
    import sys
    from pathlib import Path

    assert os.access(exe, os.X_OK)
    assert "release" in subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    pytest.importorskip("numba_cuda")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    nvvm = subprocess.run([sys.executable, "-c", "from numba.cuda.cuda_paths import get_cuda_paths; "
                           "print(get_cuda_paths()['nvvm'].info)"], env=env, capture_output=True, text=True,
                          timeout=300).stdout.strip().splitlines()[-1]
    assert Path(nvvm).resolve().parents[2] == Path(exe).resolve().parents[1]  # <root>/nvvm/lib64, <root>/bin


def test_a_kernel_is_assembled_whole_with_its_division_routine_internal(exe, tmp_path):
    whole = ptxas.assemble(DIVIDE)
    assert _elf_type(whole) == ET_EXEC
    assert b"$__internal_" in whole and b"div_rn_noftz_f32_slowpath" in whole
    # what a linker assembles first: relocatable, the routine a global function called through the ABI
    (tmp_path / "k.ptx").write_text(DIVIDE)
    subprocess.run([exe, "-arch=sm_90", "-c", "-o", str(tmp_path / "k.o"), str(tmp_path / "k.ptx")], check=True)
    relocatable = (tmp_path / "k.o").read_bytes()
    assert _elf_type(relocatable) == ET_REL and b"$__internal_" not in relocatable


def test_a_register_cap_reaches_ptxas(exe):
    uncapped = ptxas.assemble(DIVIDE)
    assert ptxas.assemble(DIVIDE, max_registers=16) != uncapped


def test_ptx_that_ptxas_refuses_raises_its_message(exe):
    with pytest.raises(RuntimeError, match=r"ptxas .* refused the kernel's PTX:\n.*error"):
        ptxas.assemble(DIVIDE.replace("div.rn.f32", "div.nonsense.f32"))
    with pytest.raises(ValueError, match=r"names no \.target"):
        ptxas.assemble(DIVIDE.replace(".target sm_90", ""))


_ROUTING = r'''
import json, warnings
from numba.cuda import codegen
from numba.cuda.cudadrv import driver
from gpu_zoo.core.compiler import ptxas
from tests.test_ptxas import DIVIDE

class Library(codegen.CUDACodeLibrary):  # a kernel's library as numba-cuda leaves it before the link
    def __init__(self, ptx, **flags):
        self._entry_name, self._cubin_cache, self._max_registers, self._ptx = "divide", {}, None, ptx
        self._lto, self._linking_files, self.needs_cudadevrt = flags.get("lto", False), flags.get("files", set()), False
    def _ensure_cc(self, cc):
        return cc
    def get_asm_str(self, cc=None):
        return self._ptx

linked = codegen.CUDACodeLibrary.get_cubin
codegen.CUDACodeLibrary.get_cubin = lambda self, cc=None: self._cubin_cache.get(cc, b"linked")
out = {}
with ptxas.whole_programs():
    whole = Library(DIVIDE).get_cubin((9, 0))
    # numba-cuda's module loader takes what its linker returns (cuda.core's ObjectCode, whose handle it reads)
    out["whole_type"] = type(whole).__name__
    out["linker_type"] = "ObjectCode" if hasattr(driver, "ObjectCode") else "bytes"
    out["whole"] = bytes(getattr(whole, "code", whole))[16:18].hex()
    out["lto"] = Library(DIVIDE, lto=True).get_cubin((9, 0)).decode()
    out["files"] = Library(DIVIDE, files={"x.ptx"}).get_cubin((9, 0)).decode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out["refused"] = Library(DIVIDE.replace("div.rn", "div.nonsense")).get_cubin((9, 0)).decode()
    out["warning"] = str(caught[0].message) if caught else ""
out["restored"] = codegen.CUDACodeLibrary.get_cubin.__name__ == "<lambda>"
print(json.dumps(out))
'''


def test_only_a_kernel_alone_is_assembled_whole_and_a_refusal_falls_back_to_the_link(exe):
    import json
    import sys
    from pathlib import Path

    pytest.importorskip("numba_cuda")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, "-c", _ROUTING], env=env, capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1], timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["whole"] == "0200"  # ET_EXEC, little-endian
    assert out["whole_type"] == out["linker_type"]
    assert (out["lto"], out["files"], out["refused"]) == ("linked", "linked", "linked")
    assert "refused the kernel's PTX" in out["warning"] and "relocatable" in out["warning"]
    assert out["restored"]
