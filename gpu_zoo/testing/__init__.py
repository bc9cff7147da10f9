"""Checks for gpu_zoo envs, the project's own and users': `cuda_compile` compiles an env's CUDA kernels for real."""

from .cuda_compile import CudaCompileError, compile_kernels, nvvm_available

__all__ = ["CudaCompileError", "compile_kernels", "nvvm_available"]
