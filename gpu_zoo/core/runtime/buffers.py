"""One allocation for all state and I/O of a batch, with typed zero-copy views per field."""

from __future__ import annotations

import math
from types import SimpleNamespace

import torch

from ..compiler.layout import Layout

TORCH_DTYPES = {"f64": torch.float64, "f32": torch.float32, "i32": torch.int32, "u8": torch.uint8}
FIELD_ALIGN = 128  # bytes: a GPU cache line


class Buffers:
    """Holds the storage of ``num_envs`` environments and a torch view per field.

    ``fields.<name>`` are the ``(num_envs, *shape)`` views Python code reads and writes (booleans,
    the ``"u8"`` fields with ``Field.flag``, as ``torch.bool``; bytes, such as a ``obs_dtype="u8"``
    group's observations, as ``torch.uint8``), and ``raw.<name>`` the same views with booleans as
    uint8, which the kernels receive. Every field starts on a `FIELD_ALIGN`-byte boundary of the
    allocation: rows whose length is a multiple of 32 floats then start on a cache line, and a
    warp's 32 stores fill one line instead of parts of two.
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
        self._spans = spans
        words = torch.zeros(end // 4, dtype=torch.int32, device=device)
        self.storage = words
        raw_bytes = words.view(torch.uint8)
        views = {}
        for name, f in layout.fields.items():
            start, nbytes = spans[name]
            views[name] = raw_bytes[start:start + nbytes].view(TORCH_DTYPES[f.dtype]).view(E, *f.shape)
        self.raw = views
        flags = {n for n, f in layout.fields.items() if f.dtype == "u8" and f.flag}
        self.fields = SimpleNamespace(**{n: (v.view(torch.bool) if n in flags else v) for n, v in views.items()})

    def layout_record(self) -> dict:
        """What the storage's bytes mean: its size, the env count, each field's name, dtype, shape, offset.

        A saved copy of `storage` is only meaningful to buffers with the same record: a field added,
        removed or resized shifts every field after it, often without changing the byte count.
        """
        return {"bytes": self.nbytes(), "num_envs": self.num_envs,
                "fields": [[n, f.dtype, list(f.shape), self._spans[n][0]] for n, f in self.layout.fields.items()]}

    def check_layout_record(self, record, source: str):
        """Raises ValueError, naming the difference, unless ``record`` is this buffers' `layout_record`."""
        mine = self.layout_record()
        if isinstance(record, dict):  # as saved; shapes compared as lists whatever the pickling made them
            record = {**record, "fields": [[n, d, list(sh), *rest] for n, d, sh, *rest in record.get("fields", [])]}
        if record == mine:
            return
        if not isinstance(record, dict):
            why = "it does not say which layout it was saved with (it predates layout records)"
        elif record.get("num_envs") != mine["num_envs"]:
            why = f"it holds {record.get('num_envs')} envs, this env has {mine['num_envs']}"
        else:
            theirs = {n: (d, sh) for n, d, sh, *_ in record["fields"]}
            ours = {n: (d, sh) for n, d, sh, _ in mine["fields"]}
            parts = []
            if missing := [n for n in ours if n not in theirs]:
                parts.append(f"lacks fields {missing}")
            if extra := [n for n in theirs if n not in ours]:
                parts.append(f"has fields this env lacks {extra}")
            if changed := [n for n in ours if n in theirs and theirs[n] != ours[n]]:
                parts.append(f"stores {changed} with other dtypes or shapes")
            why = "; ".join(parts) or "the same fields placed at other byte offsets"
        raise ValueError(f"{source}: the saved env state does not fit this env ({self.layout.spec.id}): {why}. "
                         "It was saved by another version of gpu_zoo or of the env, or with other params")

    def copy_envs_from(self, other: Buffers, envs: torch.Tensor):
        """Copies every field of the envs marked in ``envs`` from ``other``, in place.

        ``other`` must have this layout and env count; ``envs`` is a bool tensor ``(num_envs,)``
        on this device. Every field has the env axis first, so a row is all of one env.
        """
        for name, mine in self.raw.items():
            theirs = other.raw[name]
            rows = envs.view(-1, *(1,) * (mine.dim() - 1))
            torch.where(rows, theirs, mine, out=mine)

    def kernel_args(self, to_array) -> tuple:
        """One array per field, in layout order, converted for the target by ``to_array``."""
        return tuple(to_array(v) for v in self.raw.values())

    def nbytes(self) -> int:
        return self.storage.numel() * 4
