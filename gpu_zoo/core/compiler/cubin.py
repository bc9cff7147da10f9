"""CUDA kernels kept as cubins in the kernel cache and launched through the CUDA driver.

Numba compiles each kernel of a generated module once (`build`); its cubin, entry name and
PTX parameter list go to the kernel cache beside the module. Every later process loads them
(`cached`) with ``cuModuleLoadData`` and launches with ``cuLaunchKernel`` on torch's stream: it
never imports numba-cuda (about half a second) nor runs its cached-kernel lookup (which imports
SciPy), and a launch is one C call, its parameters packed once for the buffers it runs on
(Numba's launch converts every array argument on every call).

Numba's ABI for an array argument is its model's fields, flattened: meminfo, parent, item
count, item size, data pointer, then the shape and the strides in bytes; a boolean is a byte.
The PTX states each parameter's type, which `Kernel.bind` checks the buffers against.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import tempfile
from pathlib import Path

import torch

_ENTRY = re.compile(r"\.entry\s+(\S+)\s*\(([^)]*)\)", re.S)
_PARAM = re.compile(r"\.param\s+\.(\w+)\s+\S+?_param_\d+\s*$")
_CTYPES = {"u8": ctypes.c_uint8, "s8": ctypes.c_int8, "b8": ctypes.c_uint8,
           "u16": ctypes.c_uint16, "s16": ctypes.c_int16, "b16": ctypes.c_uint16,
           "u32": ctypes.c_uint32, "s32": ctypes.c_int32, "b32": ctypes.c_uint32, "f32": ctypes.c_float,
           "u64": ctypes.c_uint64, "s64": ctypes.c_int64, "b64": ctypes.c_uint64, "f64": ctypes.c_double}


class DriverError(RuntimeError):
    """A CUDA driver call that failed, with the driver's name for the error."""


def entry_params(ptx: str) -> tuple[str, tuple[str, ...]]:
    """(the kernel's entry name, the PTX type of each of its parameters) from a one-kernel PTX module."""
    entries = _ENTRY.findall(ptx)
    if len(entries) != 1:
        raise ValueError(f"expected one .entry in the PTX, found {len(entries)}")
    name, params = entries[0]
    types = []
    for decl in (d.strip() for d in params.split(",") if d.strip()):
        m = _PARAM.match(decl)
        if m is None or m.group(1) not in _CTYPES:
            raise ValueError(f"kernel {name}: a parameter this loader cannot pass: {decl[:120]!r}")
        types.append(m.group(1))
    return name, tuple(types)


def array_params(t: torch.Tensor) -> list[int]:
    """The integers Numba's kernel ABI passes for a C-contiguous array ``t``."""
    if not t.is_contiguous():
        raise ValueError(f"kernel arrays must be contiguous, got strides {t.stride()} for shape {tuple(t.shape)}")
    size = t.element_size()
    return [0, 0, t.numel(), size, t.data_ptr(), *t.shape, *(s * size for s in t.stride())]


_lib = None


def _driver():
    global _lib
    if _lib is None:
        lib = ctypes.CDLL("libcuda.so.1" if os.name != "nt" else "nvcuda.dll")
        vp, u = ctypes.c_void_p, ctypes.c_uint
        for name, args in {
            "cuGetErrorName": (ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)),
            "cuCtxGetCurrent": (ctypes.POINTER(vp),),
            "cuCtxSetCurrent": (vp,),
            "cuDeviceGet": (ctypes.POINTER(ctypes.c_int), ctypes.c_int),
            "cuDevicePrimaryCtxRetain": (ctypes.POINTER(vp), ctypes.c_int),
            "cuModuleLoadData": (ctypes.POINTER(vp), ctypes.c_char_p),
            "cuModuleGetFunction": (ctypes.POINTER(vp), vp, ctypes.c_char_p),
            "cuLaunchKernel": (vp, u, u, u, u, u, u, u, vp, ctypes.POINTER(vp), ctypes.POINTER(vp)),
        }.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, ctypes.c_int
        _lib = lib
    return _lib


def _check(rc: int, what: str):
    if rc:
        name = ctypes.c_char_p()
        _driver().cuGetErrorName(rc, ctypes.byref(name))
        raise DriverError(f"{what} failed: {(name.value or b'CUDA error').decode()} ({rc})")


def _current_context() -> int:
    """The CUDA context current on this thread; if none is, torch's current GPU's primary context (torch's own)."""
    lib = _driver()
    ctx = ctypes.c_void_p()
    _check(lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
    if not ctx.value:
        dev = ctypes.c_int()
        _check(lib.cuDeviceGet(ctypes.byref(dev), torch.cuda.current_device()), "cuDeviceGet")
        _check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
        _check(lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return ctx.value


class Kernel:
    """One compiled kernel: its cubin, loaded into each CUDA context that launches it."""

    def __init__(self, image: bytes, entry: str, params: tuple[str, ...], origin: str = "memory"):
        self.image, self.entry, self.params, self.origin = image, entry, params, origin
        self._functions: dict[int, ctypes.c_void_p] = {}

    def function(self) -> ctypes.c_void_p:
        """The kernel's handle in the current context, its module loaded there on first use."""
        ctx = _current_context()
        fn = self._functions.get(ctx)
        if fn is None:
            lib = _driver()
            module, fn = ctypes.c_void_p(), ctypes.c_void_p()
            _check(lib.cuModuleLoadData(ctypes.byref(module), self.image),
                   f"loading the cubin {self.origin}.cubin (made for another GPU or by a newer CUDA than this "
                   f"driver's? delete {self.origin}.* and it compiles again)")
            _check(lib.cuModuleGetFunction(ctypes.byref(fn), module, self.entry.encode()), "cuModuleGetFunction")
            self._functions[ctx] = fn
        return fn

    def bind(self, lead: tuple, arrays: tuple[torch.Tensor, ...]) -> Launch:
        """This kernel with its arguments packed: leading scalars, then one array per state field."""
        values = [int(v) for v in lead]
        for t in arrays:
            values += array_params(t)
        if len(values) != len(self.params):
            raise ValueError(f"kernel {self.entry[:60]} takes {len(self.params)} parameters; its {len(lead)} "
                             f"scalars and {len(arrays)} arrays give {len(values)}")
        return Launch(self, [_CTYPES[p](v) for p, v in zip(self.params, values, strict=True)])

    def load(self) -> Kernel:
        """Loads the module into the current context now: a first launch inside a CUDA graph's capture could not."""
        self.function()
        return self


class Launch:
    """A kernel bound to its arguments; calling it launches on a CUDA stream."""

    def __init__(self, kernel: Kernel, values: list):
        self.kernel = kernel
        self._values = values  # kept alive: the driver reads them through the pointers below
        self._pointers = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))

    def __call__(self, grid: int, block: int, stream: int):
        fn = self.kernel.function()
        _check(_driver().cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, stream, self._pointers, None),
               f"launching {grid} blocks of {block} threads")


def _stem(folder: Path, module_name: str, kernel: str, cc: tuple[int, int], compiler: str) -> Path:
    return folder / f"{module_name}.{kernel}.sm{cc[0]}{cc[1]}.{compiler}"


def cached(folder: Path, module_name: str, names: tuple[str, ...], cc, compiler: str) -> dict[str, Kernel] | None:
    """The kernels ``names`` of a generated module as the cache holds them, or None unless all are there."""
    out = {}
    for name in names:
        stem = _stem(folder, module_name, name, cc, compiler)
        try:
            meta = json.loads(stem.with_name(stem.name + ".json").read_text())
            image = stem.with_name(stem.name + ".cubin").read_bytes()
        except (OSError, ValueError):
            return None
        out[name] = Kernel(image, meta["entry"], tuple(meta["params"]), str(stem))
    return out


def store(folder: Path, module_name: str, name: str, cc, compiler: str, image: bytes, ptx: str) -> Kernel:
    """Keeps a compiled kernel in the cache (the cubin, then its description: a reader sees both or neither)."""
    entry, params = entry_params(ptx)
    stem = _stem(folder, module_name, name, cc, compiler)
    for suffix, data in ((".cubin", image), (".json", json.dumps({"entry": entry, "params": params}).encode())):
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, stem.with_name(stem.name + suffix))
    return Kernel(image, entry, params, str(stem))
