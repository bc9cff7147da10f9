"""Float arithmetic that the CPU and CUDA targets round alike."""

from .jit import CUDA_TWINS, kernel_fn


@kernel_fn
def mul_rn(a, b):
    """``a * b`` of two float32 values, rounded on its own: never fused with an add that follows.

    A GPU compiler contracts ``a * b + c`` into one fused multiply-add, rounded once where the
    CPU rounds twice. The two differ by an ulp now and then, and that ulp decides whatever is
    compared exactly: a heading summed from turn levels that lands on 0 wraps to 2 pi on one
    target and stays 0 on the other; a speed summed from acceleration levels that lands on its
    limit resets the acceleration on one of them only.
    """
    return a * b


def _cuda_mul_rn():
    from numba import cuda
    from numba.cuda import libdevice

    @cuda.jit(device=True, forceinline=True)
    def mul_rn(a, b):
        return libdevice.fmul_rn(a, b)  # NVIDIA's product that the compiler never contracts

    return mul_rn


CUDA_TWINS[mul_rn] = _cuda_mul_rn
