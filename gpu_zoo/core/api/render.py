"""A tiny NumPy rasteriser for env frames (no window system, no pygame) and GIF writing."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np


class Canvas:
    """An RGB image over a world rectangle ``[0, width] x [0, height]`` (y pointing up)."""

    def __init__(self, size: int, world: tuple[float, float], background=(250, 250, 246), margin: int = 8):
        self.size, self.margin = size, margin
        self.world = world
        self.scale = (size - 2 * margin) / max(world)
        self.image = np.empty((size, size, 3), np.uint8)
        self.image[:] = background
        lo, hi = margin, margin + int(round(world[0] * self.scale))
        top = size - margin - int(round(world[1] * self.scale))
        self.image[top:size - margin, lo] = self.image[top:size - margin, hi - 1] = (60, 60, 60)
        self.image[top, lo:hi] = self.image[size - margin - 1, lo:hi] = (60, 60, 60)
        self._yy, self._xx = np.mgrid[0:size, 0:size]

    def to_pixel(self, x: float, y: float) -> tuple[float, float]:
        return self.margin + x * self.scale, self.size - self.margin - y * self.scale

    def disc(self, x: float, y: float, radius: float, color: Sequence[int]):
        px, py = self.to_pixel(x, y)
        r = max(1.5, radius * self.scale)
        y0, y1 = max(0, int(py - r - 1)), min(self.size, int(py + r + 2))
        x0, x1 = max(0, int(px - r - 1)), min(self.size, int(px + r + 2))
        yy, xx = self._yy[y0:y1, x0:x1], self._xx[y0:y1, x0:x1]
        mask = (xx - px) ** 2 + (yy - py) ** 2 <= r * r
        self.image[y0:y1, x0:x1][mask] = color

    def line(self, x0: float, y0: float, x1: float, y1: float, color: Sequence[int]):
        (p0x, p0y), (p1x, p1y) = self.to_pixel(x0, y0), self.to_pixel(x1, y1)
        n = int(max(abs(p1x - p0x), abs(p1y - p0y))) + 1
        xs = np.clip(np.linspace(p0x, p1x, n).round().astype(int), 0, self.size - 1)
        ys = np.clip(np.linspace(p0y, p1y, n).round().astype(int), 0, self.size - 1)
        self.image[ys, xs] = color

    def heading(self, x: float, y: float, angle: float, length: float, color: Sequence[int]):
        self.line(x, y, x + length * math.cos(angle), y + length * math.sin(angle), color)

    def text_bar(self, fraction: float, color=(120, 120, 120)):
        """A progress bar along the top edge (episode time), in place of text."""
        w = int(round(max(0.0, min(1.0, fraction)) * (self.size - 2 * self.margin)))
        self.image[2:5, self.margin:self.margin + w] = color


TAGGER, RUNNER, OUT_OF_GAME = (220, 50, 47), (38, 139, 210), (170, 170, 170)


def tag_color(is_tagger: bool, alive: bool) -> tuple[int, int, int]:
    """The Tag family's palette: taggers red, runners blue, agents out of the game grey."""
    if is_tagger:
        return TAGGER
    return RUNNER if alive else OUT_OF_GAME


def write_gif(frames: Iterable[np.ndarray], path, fps: int = 15):
    """Writes uint8 RGB frames as a looping GIF (needs Pillow)."""
    try:
        from PIL import Image
    except ImportError as err:  # pragma: no cover - Pillow is a dependency
        raise ImportError("writing GIFs needs Pillow: pip install pillow") from err
    images = [Image.fromarray(np.asarray(f, np.uint8)) for f in frames]
    if not images:
        raise ValueError("no frames to write")
    images[0].save(path, save_all=True, append_images=images[1:], duration=int(1000 / fps), loop=0)
