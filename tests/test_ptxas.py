"""A kernel's PTX assembled as a whole program (`gpu_zoo.core.ptxas`), with the real ptxas and no GPU."""

import os
import subprocess

import pytest

from gpu_zoo.core import ptxas

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


def test_ptxas_is_found_beside_nvvm_and_runs(exe):
    assert os.access(exe, os.X_OK)
    assert "release" in subprocess.run([exe, "--version"], capture_output=True, text=True).stdout


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
