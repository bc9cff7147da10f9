"""Go: two players place stones on an N x N board; the larger area wins. PettingZoo's ``go_v5``.

A drop-in for `pettingzoo.classic.go_v5`, whose engine is minigo's: the same agents, spaces,
observations (with their eight moves of history), masks, captures, ko, scoring, rewards, ends and
``agent_selection`` after every move (compared over whole games with PettingZoo's env in the
tests), with many games stepped at once by the batched face.

## Rules
``black_0`` and ``white_0`` take turns, black first. A move places a stone on an empty point or
passes. Opposing groups left without liberties are captured. A move is illegal on an occupied
point, on the ko point (the single stone just captured, when that capture recaptured a single
stone: simple ko, cleared by a pass), or if it would leave its own group without liberties
(suicide). Two passes in a row end the game, scored by area as PettingZoo scores it: stones plus
empty regions bordered by one colour alone, black's less white's, less ``komi``. Black above zero
wins (+1, white -1); otherwise white wins (-1, +1). The game has no move limit of its own.

An illegal move ends the game with -1 for the mover and 0 for the other, as PettingZoo's
``env()`` rules it (its `TerminateIllegalWrapper`): through ``env()`` PettingZoo's wrapper does
it; the batched face does it in the kernel. ``raw_env()`` refuses one, naming the legal moves.

## Observations
``(N, N, 17)`` bools, the same for both players but the last plane: planes ``2k`` and ``2k + 1``
are the board after the ``k``-th latest move (0 the latest, up to 7), the stones of the player
who made that move, then its opponent's (zeros before the game's first moves); plane 16 is 1
for white. With it an ``action_mask`` of ``N * N + 1`` moves: the legal ones for the player to
move (only the pass once the game is over), zeros for the other. The batched face gives flat
uint8 rows, the masks in ``info["action_mask"]`` and the mover in ``env.current_player``.

## Actions
``Discrete(N * N + 1)``: point ``row * N + col``, or ``N * N`` to pass.

## Version history
- v5: PettingZoo 1.27's go (``max_cycles`` is gpu_zoo's episode limit: by default none is reached).
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium
import numpy as np

from gpu_zoo.classic.boards import discs, lose_by_illegal_move, win
from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerEnv, PerObs, kernel_fn
from gpu_zoo.core.api.params import check_count

HISTORY = 8  # boards kept for the observation's planes
PLANES = 2 * HISTORY + 1
BLACK, WHITE = 1, 2  # stones on the board: agent a plays a + 1
_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)


@dataclass(frozen=True)
class GoParams:
    """Constructor arguments of go: PettingZoo's, and the core's episode limit."""

    board_size: int = 19
    komi: float = 7.5
    screen_height: float = 800.0
    """frames are ``screen_height`` pixels square, as PettingZoo's"""
    max_cycles: int = 2**31 - 1

    def __post_init__(self):
        if not isinstance(self.board_size, int) or isinstance(self.board_size, bool) or not 2 <= self.board_size <= 25:
            raise ValueError(f"board_size must be an int from 2 to 25, got {self.board_size!r}")
        check_count("max_cycles", self.max_cycles)
        if not self.screen_height >= 1:
            raise ValueError(f"screen_height must be at least 1 pixel, got {self.screen_height}")


def groups(p: GoParams) -> tuple[Group, ...]:
    n = p.board_size
    planes = ObsBlock("planes", n * n * PLANES, f"({n}, {n}, {PLANES}): eight boards of history, then the colour",
                      fill=plane)
    return (Group("player", 2, (planes,), gymnasium.spaces.Discrete(n * n + 1), obs_low=0.0, obs_high=1.0,
                  obs_dtype="u8", masked=True, agent_names=("black_0", "white_0"),
                  obs_space=gymnasium.spaces.Box(0, 1, (n, n, PLANES), bool)),)


def fields(p: GoParams) -> tuple[Field, ...]:
    points = p.board_size * p.board_size
    return (
        Field("board", "i32", (points,), "0 empty, 1 black, 2 white; row-major"),
        Field("history", "i32", (HISTORY * points,), "the boards after the last eight moves (move m at (m-1) % 8)"),
        Field("moves", "i32", (), "moves made, passes included"),
        Field("ko", "i32", (), "the point a ko forbids now, or -1"),
        Field("passes", "i32", (), "passes in a row"),
        Field("stack", "i32", (points,), "the flood fills' stack"),
        Field("mark", "i32", (points,), "points a flood fill has reached: the fill's number"),
        Field("fill", "i32", (), "flood fills since the game began: the mark of the next one"),
    )


def constants(p: GoParams) -> dict:
    return {"n": p.board_size, "points": p.board_size * p.board_size}


# ------------------------------------------------------------------ the board
@kernel_fn
def neighbour(i, d, n):
    """Point ``i``'s neighbour in direction ``d`` (up, down, left, right), or -1 off the board."""
    r, c = i // n, i % n
    if d == 0:
        return i - n if r > 0 else -1
    if d == 1:
        return i + n if r < n - 1 else -1
    if d == 2:
        return i - 1 if c > 0 else -1
    return i + 1 if c < n - 1 else -1


@kernel_fn
def new_mark(s, e):
    s.fill[e] += 1
    return s.fill[e]


@kernel_fn
def region(s, p, e, start, besides):
    """The points joined to ``start`` holding what it holds (a group, or an empty region), marked with a new mark.

    Returns ``(size, touched)``: ``touched`` has bit ``v`` set for each other value ``v`` next to the region
    (bit 0: an empty point other than ``besides``, a liberty; bit 1: black; bit 2: white).
    """
    value, mark = s.board[e, start], new_mark(s, e)
    s.mark[e, start] = mark
    s.stack[e, 0] = start
    top, size, touched = 1, 1, 0
    while top > 0:
        top -= 1
        i = s.stack[e, top]
        for d in range(4):
            j = neighbour(i, d, p.n)
            if j < 0 or j == besides:
                continue
            v = s.board[e, j]
            if v != value:
                touched |= 1 << v
            elif s.mark[e, j] != mark:
                s.mark[e, j] = mark
                s.stack[e, top] = j
                top += 1
                size += 1
    return size, touched


@kernel_fn
def has_liberty(s, p, e, start, besides):
    """Whether the group of the stone at ``start`` touches an empty point other than ``besides``."""
    return (region(s, p, e, start, besides)[1] & 1) != 0


@kernel_fn
def remove_group(s, p, e, start):
    """Takes the group of the stone at ``start`` off the board; returns its size."""
    color = s.board[e, start]
    s.board[e, start] = 0
    s.stack[e, 0] = start
    top, removed = 1, 1
    while top > 0:
        top -= 1
        i = s.stack[e, top]
        for d in range(4):
            j = neighbour(i, d, p.n)
            if j >= 0 and s.board[e, j] == color:
                s.board[e, j] = 0
                s.stack[e, top] = j
                top += 1
                removed += 1
    return removed


@kernel_fn
def suicidal(s, p, e, i, color):
    """Minigo's test: no empty neighbour, no opposing group left in atari, no own group with a liberty besides ``i``."""
    for d in range(4):
        j = neighbour(i, d, p.n)
        if j < 0:
            continue
        v = s.board[e, j]
        if v == 0:
            return False
        if v == color:
            if has_liberty(s, p, e, j, i):  # the stone joins a group that keeps a liberty
                return False
        elif not has_liberty(s, p, e, j, i):  # the stone captures this group
            return False
    return True


@kernel_fn
def koish(s, p, e, i):
    """The colour of every neighbour of the empty point ``i`` when they are all one colour, else 0."""
    color = 0
    for d in range(4):
        j = neighbour(i, d, p.n)
        if j < 0:
            continue
        v = s.board[e, j]
        if v == 0 or (color != 0 and v != color):
            return 0
        color = v
    return color


@kernel_fn
def legal(s, p, e, i, color):
    return s.board[e, i] == 0 and i != s.ko[e] and not suicidal(s, p, e, i, color)


@kernel_fn
def area_score(s, p, e):
    """Black's stones and territory less white's, less komi: minigo's ``score``."""
    diff = 0
    for i in range(p.points):
        v = s.board[e, i]
        diff += 1 if v == BLACK else -1 if v == WHITE else 0
    first = s.fill[e] + 1  # every region's mark from here on is at least this
    for start in range(p.points):
        if s.board[e, start] != 0 or s.mark[e, start] >= first:
            continue
        size, touched = region(s, p, e, start, -1)
        if touched == 1 << BLACK:
            diff += size
        elif touched == 1 << WHITE:
            diff -= size
    return np.float64(diff) - np.float64(p.komi)


# ------------------------------------------------------------------ phases
@kernel_fn
def new_game(s, p, e):
    for i in range(p.points):
        s.board[e, i] = 0
        s.mark[e, i] = 0
    s.moves[e] = 0
    s.ko[e] = -1
    s.passes[e] = 0
    s.fill[e] = 0
    s.current_player[e] = 0


@kernel_fn
def place(s, p, e, i, color):
    """A legal stone at ``i``: captures, and the ko it may leave (minigo's ``play_move``)."""
    enemy = 3 - color
    ko_color = koish(s, p, e, i)
    s.board[e, i] = color
    captured, last = 0, -1
    for d in range(4):
        j = neighbour(i, d, p.n)
        if j >= 0 and s.board[e, j] == enemy and not has_liberty(s, p, e, j, -1):
            captured += remove_group(s, p, e, j)
            last = j
    s.ko[e] = last if captured == 1 and ko_color == enemy else -1


@kernel_fn
def play(s, p, e):
    """The mover's stone or pass; two passes in a row end the game, scored."""
    mover = s.current_player[e]
    color = mover + 1
    move = s.act_player[e, mover]
    if move < 0 or move > p.points or (move < p.points and not legal(s, p, e, move, color)):
        lose_by_illegal_move(s, e, mover)
        return
    if move == p.points:
        s.passes[e] += 1
        s.ko[e] = -1
    else:
        s.passes[e] = 0
        place(s, p, e, move, color)
    s.moves[e] += 1
    at = ((s.moves[e] - 1) % HISTORY) * p.points
    for i in range(p.points):
        s.history[e, at + i] = s.board[e, i]
    if s.passes[e] >= 2:
        win(s, e, 0 if area_score(s, p, e) > 0 else 1)  # black is agent 0; a tie goes to white
    s.current_player[e] = 1 - mover


@kernel_fn
def mask_legal_moves(s, p, e, a):
    """The mover's legal points and the pass (only the pass once the game is over); zeros for the other."""
    mover = s.current_player[e] == a
    for i in range(p.points):
        s.mask_player[e, a, i] = 1 if mover and not s.over[e] and legal(s, p, e, i, a + 1) else 0
    s.mask_player[e, a, p.points] = 1 if mover else 0


@kernel_fn
def plane(s, p, e, a, j):
    """Element ``j`` of the ``(N, N, 17)`` observation: history planes from each move's mover, then the colour."""
    cell = j // PLANES
    k = j - cell * PLANES
    if k == 2 * HISTORY:
        return _ONE if a == 1 else _ZERO
    move = s.moves[e] - (k >> 1)  # the move whose board this pair of planes shows (1-based)
    if move < 1:
        return _ZERO
    mover_color = BLACK if move % 2 == 1 else WHITE  # players alternate, black first, passes included
    wanted = mover_color if (k & 1) == 0 else 3 - mover_color
    stone = s.history[e, ((move - 1) % HISTORY) * p.points + cell]
    return _ONE if stone == wanted else _ZERO


# ------------------------------------------------------------------ render
def render(state: dict, p: GoParams) -> np.ndarray:
    """The board as PettingZoo lays it out: ``screen_height`` pixels square, a tile per point."""
    size, n = int(p.screen_height), p.board_size
    image = np.empty((size, size, 3), np.uint8)
    image[:] = (220, 179, 92)
    tile = size / n
    for k in range(n):  # the lines through the points' centres
        at = int((k + 0.5) * tile)
        lo, hi = int(tile / 2), int((n - 0.5) * tile)
        image[at, lo:hi + 1] = (40, 30, 20)
        image[lo:hi + 1, at] = (40, 30, 20)
    board = state["board"]
    for stone, color in ((BLACK, (20, 20, 20)), (WHITE, (245, 245, 245))):
        centres = [((i % n + 0.5) * tile, (i // n + 0.5) * tile) for i in range(n * n) if board[i] == stone]
        discs(image, centres, tile * 5 / 12, color)
    return image


SPEC = EnvSpec(
    id="go_v5",
    params=GoParams,
    groups=groups,
    fields=fields,
    reset=(PerEnv(new_game),),
    step=(PerEnv(play),),
    observe=(PerAgent(mask_legal_moves), PerObs()),
    constants=constants,
    render=render,
    module=__name__,
    play="turns",
)
