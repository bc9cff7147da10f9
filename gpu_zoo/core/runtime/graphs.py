"""CUDA graphs: work captured once and replayed with one launch, for the batched env and for trainers."""

from __future__ import annotations

from collections.abc import Callable

import torch


def capture(fn: Callable[[], object], device: torch.device) -> torch.cuda.CUDAGraph:
    """``fn`` captured as a CUDA graph on ``device``; capturing runs nothing. Its tensors keep their addresses.

    Captured with ``device`` current, on a stream of that GPU: torch's default capture stream is
    made once, on whichever GPU captured first, and work for another GPU would bypass it.
    """
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.device(device), torch.cuda.graph(graph, stream=torch.cuda.Stream(device)):
        fn()
    return graph
