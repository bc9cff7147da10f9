"""Tic-tac-toe: two players mark a 3 x 3 board; three in a row wins. PettingZoo's ``tictactoe_v3``.

A drop-in for `pettingzoo.classic.tictactoe_v3`: the same agents, spaces, observations, masks,
rewards, ends and ``agent_selection`` after every move (compared over whole games with
PettingZoo's env in the tests), with many games stepped at once by the batched face.

## Rules
``player_1`` and ``player_2`` take turns, ``player_1`` first, each marking an empty square.
Squares are numbered as PettingZoo numbers them: ``0 1 2`` down the first column of the picture,
``3 4 5`` down the second, ``6 7 8`` down the third. Three of a player's marks in a row, column or
diagonal win: +1 for it, -1 for the other, and the game ends for both. A full board without a
line is a draw (0 each).

An illegal move (a marked square) ends the game with -1 for the mover and 0 for the other, as
PettingZoo's ``env()`` rules it (its `TerminateIllegalWrapper`): through ``env()`` PettingZoo's
wrapper itself does it; the batched face does it in the kernel. ``raw_env()`` refuses one with a
ValueError naming the legal squares.

## Observations
``(3, 3, 2)`` int8 planes from the observer's side, ``observation[i // 3, i % 3]`` for square
``i``: its own marks, then its opponent's. With it an ``action_mask`` of the 9 squares: the
legal ones for the player to move, zeros for the other. The batched face gives flat uint8
rows of 18, the masks in ``info["action_mask"]`` and the mover in ``env.current_player``.

## Actions
``Discrete(9)``: the square. In the batched face only the mover's action is read.

## Version history
- v3: PettingZoo 1.27's tic-tac-toe (``max_cycles`` is gpu_zoo's episode limit: 9 moves fill the
  board, so by default no game is cut short).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpu_zoo.classic.boards import discs, filled, lose_by_illegal_move, mask_empty_cells, two_seats, win
from gpu_zoo.core import EnvSpec, Field, PerAgent, PerEnv, PerObs, kernel_fn
from gpu_zoo.core.api.params import check_count

SQUARES = 9


@dataclass(frozen=True)
class TicTacToeParams:
    """Constructor arguments of tic-tac-toe: PettingZoo's, and the core's episode limit."""

    screen_height: float = 1000.0
    """frames are ``screen_height`` pixels square, as PettingZoo's"""
    max_cycles: int = SQUARES

    def __post_init__(self):
        check_count("max_cycles", self.max_cycles)
        if not self.screen_height >= 1:
            raise ValueError(f"screen_height must be at least 1 pixel, got {self.screen_height}")


def groups(p: TicTacToeParams):
    return two_seats(3, 3, SQUARES, ("player_1", "player_2"))


def fields(p: TicTacToeParams) -> tuple[Field, ...]:
    return (Field("board", "i32", (SQUARES,), "0 empty, 1 player_1's mark, 2 player_2's"),)


def constants(p: TicTacToeParams) -> dict:
    return {"num_moves": SQUARES}


# ------------------------------------------------------------------ phases
@kernel_fn
def new_game(s, p, e):
    for i in range(SQUARES):
        s.board[e, i] = 0
    s.current_player[e] = 0


@kernel_fn
def line_of(s, e, i, j, k, mark):
    return s.board[e, i] == mark and s.board[e, j] == mark and s.board[e, k] == mark


@kernel_fn
def three_in_a_row(s, e, mark):
    """PettingZoo's winning combinations (only the mover can have one: the game ends at the first)."""
    return (line_of(s, e, 0, 1, 2, mark) or line_of(s, e, 3, 4, 5, mark) or line_of(s, e, 6, 7, 8, mark)
            or line_of(s, e, 0, 3, 6, mark) or line_of(s, e, 1, 4, 7, mark) or line_of(s, e, 2, 5, 8, mark)
            or line_of(s, e, 0, 4, 8, mark) or line_of(s, e, 2, 4, 6, mark))


@kernel_fn
def play(s, p, e):
    """The mover marks its square; then a win, a draw, or the other player's turn."""
    mover = s.current_player[e]
    square = s.act_player[e, mover]
    if square < 0 or square >= SQUARES or s.board[e, square] != 0:
        lose_by_illegal_move(s, e, mover)
        return
    s.board[e, square] = mover + 1
    if three_in_a_row(s, e, mover + 1):
        win(s, e, mover)
    elif filled(s, e, SQUARES):
        s.over[e] = 1
    s.current_player[e] = 1 - mover


# ------------------------------------------------------------------ render
def render(state: dict, p: TicTacToeParams) -> np.ndarray:
    """The board as PettingZoo draws it: square ``i`` in column ``i // 3``, row ``i % 3``; crosses and circles."""
    size = int(p.screen_height)
    image = np.empty((size, size, 3), np.uint8)
    image[:] = (250, 250, 246)
    third = size / 3
    for k in (1, 2):  # the grid
        at = int(k * third)
        image[max(0, at - size // 100): at + size // 100 + 1, :] = (40, 40, 40)
        image[:, max(0, at - size // 100): at + size // 100 + 1] = (40, 40, 40)
    yy, xx = np.ogrid[:size, :size]
    radius, stroke = third * 0.32, max(1.0, size / 60)
    for i, mark in enumerate(state["board"]):
        cx, cy = (i // 3 + 0.5) * third, (i % 3 + 0.5) * third
        if mark == 1:  # a cross: two diagonal strokes
            dx, dy = xx - cx, yy - cy
            near = (np.abs(dx) <= radius) & (np.abs(dy) <= radius)
            image[near & ((np.abs(dx - dy) <= stroke) | (np.abs(dx + dy) <= stroke))] = (204, 32, 32)
        elif mark == 2:  # a circle: a ring
            discs(image, [(cx, cy)], radius, (24, 72, 176))
            discs(image, [(cx, cy)], radius - 1.5 * stroke, (250, 250, 246))
    return image


SPEC = EnvSpec(
    id="tictactoe_v3",
    params=TicTacToeParams,
    groups=groups,
    fields=fields,
    reset=(PerEnv(new_game),),
    step=(PerEnv(play),),
    observe=(PerAgent(mask_empty_cells), PerObs()),
    constants=constants,
    render=render,
    module=__name__,
    play="turns",
)
