"""Checks for gpu_zoo envs, the project's own and users'.

- `check_env`: the conformance checks every gpu_zoo env passes (PettingZoo's tests, the batched
  contract, seeds, bad input, CPU against CUDA, the real CUDA compile);
- `compile_kernels`: an env's CUDA kernels compiled for a GPU by NVVM, with no GPU.
"""

from .check import check_env
from .cuda_compile import CudaCompileError, compile_kernels, nvvm_available

__all__ = ["CudaCompileError", "check_env", "compile_kernels", "nvvm_available"]
