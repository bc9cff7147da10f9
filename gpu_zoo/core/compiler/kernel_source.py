"""The source gpu_zoo generates for an env's kernels, to read what runs (``gpu-zoo show-kernel``)."""

from __future__ import annotations

from ..api.params import check_count
from .compile import generate_source
from .launch_shape import check_launch_options, layout_launch_shape
from .layout import Layout

TARGETS = ("cpu", "cuda", "cudasim")


def kernel_source(env_id: str, target: str = "cuda", num_envs: int = 1024, *, block: int = 128,
                  threads_per_env: int | None = None, max_registers: int | None = None,
                  split_observe: bool | None = None, **params) -> str:
    """The Python source of ``env_id``'s step and reset kernels as gpu_zoo compiles them; nothing is compiled.

    Args:
        env_id: a registered env.
        target: ``cpu`` (Numba's parallel CPU loops), ``cuda`` (the GPU kernels) or ``cudasim``
            (the same for Numba's CUDA simulator).
        num_envs: the batch size, which picks the CUDA launch shape (threads per env, envs per block).
        block: CUDA threads per block, as `BatchedEnv` takes it.
        threads_per_env: CUDA threads per env (default: the env's or the core's choice).
        max_registers: cap on the CUDA kernel's registers per thread.
        split_observe: a step as three kernels instead of one (default: the env's choice).
        **params: the env's constructor arguments (checked as a constructor checks them).
    """
    from gpu_zoo.registry import get_spec

    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    check_count("num_envs", num_envs)
    check_launch_options(threads_per_env, max_registers, split_observe)
    spec = get_spec(env_id)
    layout = Layout(spec, spec.make_params(**params))
    shape = None if target == "cpu" else layout_launch_shape(layout, num_envs, target == "cudasim", block,
                                                             threads_per_env, max_registers, split_observe)
    return generate_source(layout, target, shape)
