"""One allocation for all state and I/O of a batch, with typed zero-copy views per field."""

from __future__ import annotations

import math
from types import SimpleNamespace

import torch

from .layout import Layout

TORCH_DTYPES = {"f64": torch.float64, "f32": torch.float32, "i32": torch.int32, "u8": torch.uint8}
FIELD_ALIGN = 128  # bytes: a GPU cache line


class Buffers:
    """Holds the storage of ``num_envs`` environments and a torch view per field.

    ``fields.<name>`` are the ``(num_envs, *shape)`` views Python code reads and writes (booleans
    as ``torch.bool``), and ``raw.<name>`` the same views with booleans as uint8, which the
    kernels receive. Every field starts on a `FIELD_ALIGN`-byte boundary of the allocation: rows
    whose length is a multiple of 32 floats then start on a cache line, and a warp's 32 stores
    fill one line instead of parts of two.
    """

    def __init__(self, layout: Layout, num_envs: int, device: torch.device):
        self.layout, self.num_envs, self.device = layout, num_envs, device
        E = num_envs
        spans, end = {}, 0
        for dtype in TORCH_DTYPES:  # float64 first, as before: one order whatever the padding
            for name, f in layout.fields.items():
                if f.dtype == dtype:
                    nbytes = E * math.prod(f.shape) * TORCH_DTYPES[dtype].itemsize
                    spans[name] = (end, nbytes)
                    end += -(-nbytes // FIELD_ALIGN) * FIELD_ALIGN
        words = torch.zeros(end // 4, dtype=torch.int32, device=device)
        self.storage = words
        raw_bytes = words.view(torch.uint8)
        views = {}
        for name, f in layout.fields.items():
            start, nbytes = spans[name]
            views[name] = raw_bytes[start:start + nbytes].view(TORCH_DTYPES[f.dtype]).view(E, *f.shape)
        self.raw = views
        self.fields = SimpleNamespace(**{n: (v.view(torch.bool) if layout.fields[n].dtype == "u8" else v)
                                         for n, v in views.items()})

    def kernel_args(self, to_array) -> tuple:
        """One array per field, in layout order, converted for the target by ``to_array``."""
        return tuple(to_array(v) for v in self.raw.values())

    def nbytes(self) -> int:
        return self.storage.numel() * 4
