"""One allocation for all state and I/O of a batch, with typed zero-copy views per field."""

from __future__ import annotations

import math
from types import SimpleNamespace

import torch

from .layout import Layout

TORCH_DTYPES = {"f64": torch.float64, "f32": torch.float32, "i32": torch.int32, "u8": torch.uint8}


class Buffers:
    """Holds the storage of ``num_envs`` environments and a torch view per field.

    ``sections`` are the per-dtype views of the one allocation; ``fields.<name>`` are the
    ``(num_envs, *shape)`` views Python code reads and writes (booleans as ``torch.bool``), and
    ``raw.<name>`` the same views with booleans as uint8, which the kernels receive.
    """

    def __init__(self, layout: Layout, num_envs: int, device: torch.device):
        self.layout, self.num_envs, self.device = layout, num_envs, device
        E, pe = num_envs, layout.per_env
        words = torch.zeros(E * layout.words_per_env, dtype=torch.int32, device=device)
        nd, nf, ni = 2 * E * pe["f64"], E * pe["f32"], E * pe["i32"]
        self.storage = words
        self.sections = {
            "f64": words[:nd].view(torch.float64),
            "f32": words[nd:nd + nf].view(torch.float32),
            "i32": words[nd + nf:nd + nf + ni],
            "u8": words[nd + nf + ni:].view(torch.uint8),
        }
        views = {}
        for name, f in layout.fields.items():
            start = E * layout.offsets[name]
            flat = self.sections[f.dtype][start : start + E * math.prod(f.shape)]
            views[name] = flat.view(E, *f.shape)
        self.raw = views
        self.fields = SimpleNamespace(**{n: (v.view(torch.bool) if layout.fields[n].dtype == "u8" else v)
                                         for n, v in views.items()})

    def kernel_args(self, to_array) -> tuple:
        """One array per field, in layout order, converted for the target by ``to_array``."""
        return tuple(to_array(v) for v in self.raw.values())

    def nbytes(self) -> int:
        return self.storage.numel() * 4
