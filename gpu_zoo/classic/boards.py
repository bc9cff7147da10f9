"""What PettingZoo's two-player board games share: the seats, the board planes, legal moves, drawing.

The board is an int32 state field ``board`` of one cell per square, row-major: 0 empty, 1 the first
seat's piece, 2 the second's. Agent ``a`` (0 or 1) plays pieces ``a + 1``.
"""

from __future__ import annotations

import gymnasium
import numpy as np

from gpu_zoo.core import Group, ObsBlock, kernel_fn

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
ILLEGAL_REWARD = -1.0  # what PettingZoo's TerminateIllegalWrapper gives an illegal move's maker


@kernel_fn
def lose_by_illegal_move(s, e, mover):
    """The game ends on an illegal move as PettingZoo's wrapper ends it: -1 to its maker, 0 to the other."""
    s.rew[e, mover] = ILLEGAL_REWARD
    s.over[e] = 1


@kernel_fn
def win(s, e, winner):
    """The game ends: +1 to ``winner`` (0 or 1), -1 to the other."""
    s.rew[e, winner] = 1.0
    s.rew[e, 1 - winner] = -1.0
    s.over[e] = 1


@kernel_fn
def filled(s, e, n):
    """Whether the board's first ``n`` cells all hold a piece."""
    for i in range(n):
        if s.board[e, i] == 0:
            return False
    return True


@kernel_fn
def own_and_opponent_planes(s, p, e, a, j):
    """Element ``j`` of a ``(rows, cols, 2)`` board seen by agent ``a``: its pieces, then its opponent's."""
    cell = j >> 1
    piece = a + 1 if (j & 1) == 0 else 2 - a
    return _ONE if s.board[e, cell] == piece else _ZERO


@kernel_fn
def mask_empty_cells(s, p, e, a):
    """The mover may play move ``k`` where cell ``k`` is empty; every other agent's mask is zeros.

    PettingZoo's connect four (``k`` a column: its top cell) and tic-tac-toe (``k`` a square) alike.
    """
    mover = s.current_player[e] == a
    for k in range(p.num_moves):
        s.mask_player[e, a, k] = 1 if mover and s.board[e, k] == 0 else 0


def two_seats(rows: int, cols: int, num_moves: int, names: tuple[str, str]) -> tuple[Group, ...]:
    """The one group of a two-player board game: PettingZoo's agents, board planes and masked moves."""
    board = ObsBlock("board", rows * cols * 2, f"({rows}, {cols}, 2): the observer's pieces, then its opponent's",
                     fill=own_and_opponent_planes)
    # 0/1 planes as bytes: a quarter of float32's memory traffic (Group.obs_dtype)
    return (Group("player", 2, (board,), gymnasium.spaces.Discrete(num_moves), obs_low=0.0, obs_high=1.0,
                  obs_dtype="u8", masked=True, agent_names=names,
                  obs_space=gymnasium.spaces.Box(0, 1, (rows, cols, 2), np.int8)),)


def discs(image: np.ndarray, centres, radius: float, color) -> None:
    """Fills a disc of ``radius`` pixels round each ``(x, y)`` of ``centres`` in ``image``."""
    yy, xx = np.ogrid[: image.shape[0], : image.shape[1]]
    for x, y in centres:
        image[(xx - x) ** 2 + (yy - y) ** 2 <= radius * radius] = color
