"""Pursuit seen from the host: PettingZoo's map, its ``state()`` and a frame, from one env's fields as NumPy arrays."""

from __future__ import annotations

import numpy as np


def building(x_size: int, y_size: int) -> np.ndarray:
    """PettingZoo's ``rectangle_map``: 1 on the building's cells, indexed ``[x, y]``."""
    rx = np.arange(x_size, dtype=np.float64) / x_size
    ry = np.arange(y_size, dtype=np.float64) / y_size
    return (((rx > 0.3) & (rx < 0.7))[:, None] & ((ry > 0.2) & (ry < 0.8))[None, :]).astype(np.int32)


def pettingzoo_state(state: dict, p) -> np.ndarray:
    """PettingZoo's ``state()``, ``(y_size, x_size, 3)`` float32, from one env's fields as NumPy arrays."""
    out = np.zeros((p.y_size, p.x_size, 3), np.float32)
    out[:, :, 0] = building(p.x_size, p.y_size).T
    out[:, :, 1] = np.asarray(state["pcount"]).reshape(p.x_size, p.y_size).T
    out[:, :, 2] = np.asarray(state["ecount"]).reshape(p.x_size, p.y_size).T
    return out


def render(state: dict, p) -> np.ndarray:
    """The map from above, x across: the building white, pursuers red, evaders blue, each pursuer's window shaded."""
    scale = max(4, min(30, 480 // max(p.x_size, p.y_size)))
    image = np.zeros((p.y_size * scale, p.x_size * scale, 3), np.uint8)
    wall = building(p.x_size, p.y_size)
    for x, y in zip(*np.nonzero(wall), strict=True):
        image[y * scale:(y + 1) * scale, x * scale:(x + 1) * scale] = 255
    half = (p.obs_range - 1) // 2
    shade = np.zeros(image.shape[:2], bool)
    for x, y in zip(state["px"], state["py"], strict=True):
        rows = slice(max(0, (y - half) * scale), (y + half + 1) * scale)
        shade[rows, max(0, (x - half) * scale):(x + half + 1) * scale] = True
    image[shade] = (image[shade] * 0.5 + np.array([255, 152, 72]) * 0.5).astype(np.uint8)
    m = max(1, scale // 5)
    for xs, ys, color, alive in ((state["ex"], state["ey"], (0, 0, 255), state["ev_alive"]),
                                 (state["px"], state["py"], (255, 0, 0), np.ones(len(state["px"])))):
        for x, y, on in zip(xs, ys, alive, strict=True):
            if on:
                image[y * scale + m:(y + 1) * scale - m, x * scale + m:(x + 1) * scale - m] = color
    return image
