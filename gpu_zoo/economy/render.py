"""Frames of the map: tiles, houses and workers."""

from __future__ import annotations

import numpy as np

from .layouts import TILE_EMPTY, TILE_STONE, TILE_WATER, TILE_WOOD
from .params import EconomyParams

_TILE_RGB = {TILE_EMPTY: (236, 230, 214), TILE_WATER: (96, 156, 222), TILE_WOOD: (200, 226, 190),
             TILE_STONE: (214, 214, 214)}

_UNIT_RGB = {TILE_WOOD: (46, 125, 50), TILE_STONE: (97, 97, 97)}

_WORKER_RGB = ((220, 50, 47), (38, 139, 210), (133, 153, 0), (211, 54, 130), (181, 137, 0), (42, 161, 152),
               (108, 113, 196), (203, 75, 22))


def render(state: dict, p: EconomyParams, cell: int = 12) -> np.ndarray:
    """Top view: tiles, resource units (dark squares), houses (outlined in the owner's colour), workers (discs)."""
    H, W = p.height, p.width
    img = np.empty((H * cell + 6, W * cell, 3), np.uint8)
    img[:] = (250, 250, 246)
    tile, res, house = state["tile"], state["res"], state["house"]
    yy, xx = np.mgrid[0:cell, 0:cell]
    disc = (yy - (cell - 1) / 2) ** 2 + (xx - (cell - 1) / 2) ** 2 <= (cell * 0.4) ** 2
    for r in range(H):
        for c in range(W):
            block = img[6 + r * cell:6 + (r + 1) * cell, c * cell:(c + 1) * cell]
            kind = int(tile[r, c])
            block[:] = _TILE_RGB[kind]
            if res[r, c] and kind in _UNIT_RGB:
                q = cell // 4
                block[q:cell - q, q:cell - q] = _UNIT_RGB[kind]
            if house[r, c]:
                block[:] = (120, 85, 60)
                rgb = _WORKER_RGB[(int(house[r, c]) - 1) % len(_WORKER_RGB)]
                block[:2], block[-2:], block[:, :2], block[:, -2:] = rgb, rgb, rgb, rgb
    for a in range(p.num_workers):
        r, c = int(state["row"][a]), int(state["col"][a])
        block = img[6 + r * cell:6 + (r + 1) * cell, c * cell:(c + 1) * cell]
        block[disc] = _WORKER_RGB[a % len(_WORKER_RGB)]
    frac = min(1.0, int(state["t"]) / p.max_cycles)
    img[1:4, :int(round(frac * W * cell))] = (120, 120, 120)
    return img
