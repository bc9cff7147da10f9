"""Choosing a target, loading its kernels once per configuration and launching them on buffers."""

from __future__ import annotations

import contextlib
import time

import torch

from ..api.tuning import SERIAL_MAX_ENVS
from ..compiler.compile import compile_lock, load_cuda_kernels, load_kernels
from ..compiler.launch_shape import LaunchShape, check_launch_options, layout_launch_shape
from ..compiler.layout import Layout
from ..compiler.speed import compat
from ..compiler.speed.compat import simulator_enabled
from .buffers import Buffers

_loaded: dict[tuple, object] = {}
compile_seconds: dict[tuple, float] = {}


def cuda_usable() -> bool:
    """True when real CUDA kernels can run: torch sees a GPU and numba-cuda is installed to compile them."""
    if simulator_enabled() or not torch.cuda.is_available():
        return False
    return compat.numba_cuda_installed()


def check_cuda_device(device: torch.device):
    """Refuses a CUDA ``device`` this machine cannot run, saying what would make it run."""
    if not torch.cuda.is_available():
        why = ("this torch build has no CUDA support" if torch.version.cuda is None
               else "torch finds no usable GPU (no GPU, or no working NVIDIA driver)")
        raise RuntimeError(f"device={str(device)!r}: {why}. Install a CUDA build of torch and gpu_zoo's CUDA "
                           "extra (pip install 'gpu_zoo[cuda]') on a machine with an NVIDIA GPU and driver, "
                           "or pass device='cpu'")
    if device.index is not None and not 0 <= device.index < torch.cuda.device_count():
        raise RuntimeError(f"device={str(device)!r}: this machine has {torch.cuda.device_count()} GPU(s), "
                           f"cuda:0 to cuda:{torch.cuda.device_count() - 1}")


def default_device() -> torch.device:
    return torch.device("cuda") if cuda_usable() else torch.device("cpu")


def _host_array(t: torch.Tensor):
    """Zero-copy NumPy view of a CPU tensor (the CPU target and the CUDA simulator take these)."""
    return t.numpy()


class Launcher:
    """Runs the ``step`` and ``reset`` kernels of one layout on one set of buffers.

    Targets: ``"cpu"`` (``njit(parallel=True)`` on CPU tensors) and ``"cuda"`` (a CUDA kernel on
    CUDA tensors, or under Numba's CUDA simulator on CPU tensors when it is enabled).
    """

    def __init__(self, layout: Layout, buffers: Buffers, target: str, block: int = 128,
                 threads_per_env: int | None = None, max_registers: int | None = None,
                 split_observe: bool | None = None):
        self.target = target
        self.device = dev = buffers.device
        check_launch_options(threads_per_env, max_registers, split_observe)
        if target == "cpu":
            if dev.type != "cpu":
                raise ValueError(f"the cpu target needs CPU tensors, got device {dev}")
            compat.configure_cpu_threading()
            self.shape = None
            self._to_array = _host_array
        elif target == "cuda":
            self.simulator = simulator_enabled()
            if self.simulator != (dev.type == "cpu"):
                raise ValueError("the cuda target runs on CUDA tensors, or on CPU tensors under "
                                 f"NUMBA_ENABLE_CUDASIM=1; got device {dev} with the simulator "
                                 f"{'on' if self.simulator else 'off'}")
            if self.simulator:
                compat.import_cuda()
            elif not compat.numba_cuda_installed():
                raise ImportError("the CUDA target needs numba-cuda: pip install 'gpu_zoo[cuda]'")
            self.shape = layout_launch_shape(layout, buffers.num_envs, self.simulator, block, threads_per_env,
                                             max_registers, split_observe)
            # real kernels take the tensors themselves (`cubin.Kernel.bind`)
            self._to_array = _host_array if self.simulator else (lambda t: t)
        else:
            raise ValueError(f"target must be 'cpu' or 'cuda', got {target!r}")
        self.num_envs = buffers.num_envs
        with self._on_device():
            self._args = buffers.kernel_args(self._to_array)
        self._real_cuda = target == "cuda" and not self.simulator
        cc = torch.cuda.get_device_capability(dev) if self._real_cuda else None
        key = (layout.key(), target, self.shape, cc)
        if key not in _loaded:
            t0 = time.perf_counter()
            if self._real_cuda:  # compiled (or found in the cache) here; nothing to warm up
                with self._on_device():
                    _loaded[key] = load_cuda_kernels(layout, self.shape, cc)
            else:
                kind = "cudasim" if target == "cuda" else target
                _loaded[key] = self.module = load_kernels(layout, kind, self.shape)
                # the simulator compiles nothing and caches nothing: no other process waits on it
                with contextlib.nullcontext() if kind == "cudasim" else compile_lock(self.module.__file__):
                    self._warm(buffers)
            compile_seconds[key] = time.perf_counter() - t0
        self.module = _loaded[key]
        self.compile_key = key
        self._steps = tuple(self._bound(*kernel, self._args) for kernel in self._step_kernels())
        self._reset = self._bound(*self._reset_kernel(), self._args)

    def _bound(self, kernel, shape: LaunchShape | None, lead: tuple, args: tuple) -> tuple:
        """(what to call, its launch shape, its arguments): a real CUDA kernel packs its arguments once."""
        if self._real_cuda:
            with self._on_device():
                return kernel.load().bind(lead, args), shape, ()
        return kernel, shape, (*lead, *args)

    def _warm(self, buffers: Buffers):
        """Compiles the kernels now (CPU, simulator), on a one-env scratch batch, so the first real call is not slow."""
        scratch = Buffers(buffers.layout, 1, buffers.device)
        # env 0's state (its params, max_cycles, the env's constant tables): zeros would divide by zero
        for name, view in scratch.raw.items():
            view.copy_(buffers.raw[name][:1])
        args = scratch.kernel_args(self._to_array)
        for kernel, shape, lead in (self._reset_kernel(), *self._step_kernels()):
            self._launch(kernel, (*lead, *args), 1, shape)

    def _on_device(self):
        """The buffers' GPU made current, as every launch has it.

        Numba launches in the current device's context; an env on another GPU than the current
        one would have none of its memory there.
        """
        if self.target == "cuda" and not self.simulator:
            return torch.cuda.device(self.device)
        return contextlib.nullcontext()

    def _launch(self, kernel, args: tuple, num_envs: int | None = None, shape: LaunchShape | None = None):
        if self.target == "cpu":
            kernel(*args)
            return
        grid = shape.grid(self.num_envs if num_envs is None else num_envs)
        if self.simulator:
            kernel[grid, shape.block](*args)
            return
        with self._on_device():  # on torch's stream: ordered with the torch work around it, captured in graphs
            kernel(grid, shape.block, torch.cuda.current_stream(self.device).cuda_stream)

    def _step_kernels(self) -> tuple:
        """(kernel, launch shape, leading arguments) of each kernel of a step, in order.

        One kernel, or three with ``split_observe``. On CUDA a step and a reset are one kernel's two
        branches (`codegen_cuda.cuda_driver`), picked by its first argument.
        """
        if self.target == "cpu":
            return ((self._kernel("step"), None, ()),)
        if self.shape.split_observe:
            around = self.shape.for_phases()
            return ((self._kernel("step_phases"), around, ()), (self._kernel("step_observe"), self.shape, ()),
                    (self._kernel("step_finished"), around, (False,)))
        return ((self._kernel("drive"), self.shape, (False,)),)

    def _reset_kernel(self) -> tuple:
        """(kernel, launch shape, leading arguments) of a reset."""
        if self.target == "cpu":
            return self._kernel("reset"), None, ()
        if self.shape.split_observe:
            return self._kernel("step_finished"), self.shape.for_phases(), (True,)
        return self._kernel("drive"), self.shape, (True,)

    def _kernel(self, name: str):
        # A few envs on the CPU: the serial driver, which skips waking the thread pool (more than
        # a few small envs' steps cost) and compiles in about half the time (no parallel loop).
        if self.target == "cpu" and self.num_envs <= SERIAL_MAX_ENVS:
            name += "_serial"
        return getattr(self.module, name)

    def step(self):
        for kernel, shape, args in self._steps:
            self._launch(kernel, args, shape=shape)

    def reset(self):
        kernel, shape, args = self._reset
        self._launch(kernel, args, shape=shape)


__all__ = ["Launcher", "LaunchShape", "cuda_usable", "default_device", "simulator_enabled"]
