"""Connect four: two players drop pieces into a 6 x 7 board; four in a row wins. PettingZoo's ``connect_four_v3``.

A drop-in for `pettingzoo.classic.connect_four_v3`: the same agents, spaces, observations,
masks, rewards, ends and ``agent_selection`` after every move (compared over whole games with
PettingZoo's env in the tests), with many games stepped at once by the batched face.

## Rules
``player_0`` and ``player_1`` take turns, ``player_0`` first. A move names a column; the piece
falls to the lowest empty cell of that column. A player with four of its pieces in a line
(across, down or diagonal) wins: +1 for it, -1 for the other, and the game ends for both. A full
board without a line is a draw (0 each). The game has no randomness.

An illegal move (a full column) ends the game with -1 for the mover and 0 for the other, as
PettingZoo's ``env()`` rules it (its `TerminateIllegalWrapper`): through ``env()`` PettingZoo's
wrapper itself does it; the batched face does it in the kernel. ``raw_env()`` refuses one with a
ValueError naming the legal columns.

## Observations
``(6, 7, 2)`` int8 planes from the observer's side: its own pieces, then its opponent's (row 0 is
the top). With it an ``action_mask`` of the 7 columns: the legal ones for the player to move,
zeros for the other. The batched face gives the board as flat uint8 rows of 84 and the masks
in ``info["action_mask"]``; ``env.current_player`` says whose move each env reads.

## Actions
``Discrete(7)``: the column. In the batched face only the mover's action is read.

## Version history
- v3: PettingZoo 1.27's connect four (``max_cycles`` is gpu_zoo's episode limit: 42 moves fill the
  board, so by default no game is cut short).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpu_zoo.classic.boards import discs, filled, lose_by_illegal_move, mask_empty_cells, two_seats, win
from gpu_zoo.core import EnvSpec, Field, PerAgent, PerEnv, PerObs, kernel_fn
from gpu_zoo.core.api.params import check_count

ROWS, COLS = 6, 7


@dataclass(frozen=True)
class ConnectFourParams:
    """Constructor arguments of connect four: PettingZoo's, and the core's episode limit."""

    screen_scaling: float = 9.0
    """frames are ``99 * screen_scaling`` pixels wide, as PettingZoo's"""
    max_cycles: int = ROWS * COLS

    def __post_init__(self):
        check_count("max_cycles", self.max_cycles)
        if not self.screen_scaling > 0:
            raise ValueError(f"screen_scaling must be positive, got {self.screen_scaling}")


def groups(p: ConnectFourParams):
    return two_seats(ROWS, COLS, COLS, ("player_0", "player_1"))


def fields(p: ConnectFourParams) -> tuple[Field, ...]:
    return (Field("board", "i32", (ROWS * COLS,), "0 empty, 1 player_0's piece, 2 player_1's; row-major from the top"),)


def constants(p: ConnectFourParams) -> dict:
    return {"num_moves": COLS}


# ------------------------------------------------------------------ phases
@kernel_fn
def new_game(s, p, e):
    for i in range(ROWS * COLS):
        s.board[e, i] = 0
    s.current_player[e] = 0


@kernel_fn
def run_length(s, e, r, c, dr, dc, piece):
    """How many of ``piece`` follow cell (r, c) in direction (dr, dc), not counting the cell."""
    n = 0
    r += dr
    c += dc
    while r >= 0 and r < ROWS and c >= 0 and c < COLS and s.board[e, r * COLS + c] == piece:
        n += 1
        r += dr
        c += dc
    return n


@kernel_fn
def four_through(s, e, r, c, piece):
    """Whether the piece just dropped at (r, c) completes a line of four.

    PettingZoo checks every line of the mover's pieces; before this move there was none (the game
    would have ended), so a line now runs through the new piece.
    """
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        if 1 + run_length(s, e, r, c, dr, dc, piece) + run_length(s, e, r, c, -dr, -dc, piece) >= 4:
            return True
    return False


@kernel_fn
def play(s, p, e):
    """The mover's piece falls down its column; then a win, a draw, or the other player's turn."""
    mover = s.current_player[e]
    col = s.act_player[e, mover]
    if col < 0 or col >= COLS or s.board[e, col] != 0:
        lose_by_illegal_move(s, e, mover)
        return
    r = ROWS - 1
    while s.board[e, r * COLS + col] != 0:
        r -= 1
    s.board[e, r * COLS + col] = mover + 1
    if four_through(s, e, r, col, mover + 1):
        win(s, e, mover)
    elif filled(s, e, COLS):  # the top row full: the whole board is
        s.over[e] = 1
    s.current_player[e] = 1 - mover


# ------------------------------------------------------------------ render
BOARD_BLUE = (28, 72, 176)
EMPTY = (236, 236, 236)
PIECE_COLORS = {1: (204, 32, 32), 2: (24, 24, 24)}  # player_0 red, player_1 black, as PettingZoo draws them


def render(state: dict, p: ConnectFourParams) -> np.ndarray:
    """The board as PettingZoo lays it out: ``(86/99 * W, W)`` pixels, ``W = 99 * screen_scaling``."""
    width = int(99 * p.screen_scaling)
    height = int(86 / 99 * width)
    image = np.empty((height, width, 3), np.uint8)
    image[:] = BOARD_BLUE
    tile = width * (91 / 99) / COLS
    radius = tile * 9 / 26
    board = state["board"]
    for piece, color in ((0, EMPTY), *PIECE_COLORS.items()):
        centres = [(c * tile + tile * 6 / 13 + radius, r * tile + tile * 6 / 13 + radius)
                   for r in range(ROWS) for c in range(COLS) if board[r * COLS + c] == piece]
        discs(image, centres, radius, color)
    return image


SPEC = EnvSpec(
    id="connect_four_v3",
    params=ConnectFourParams,
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
