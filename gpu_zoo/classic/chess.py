"""Chess: two players, white first; mate the other's king. PettingZoo's ``chess_v6``.

A drop-in for `pettingzoo.classic.chess_v6`, whose rules are python-chess's: the same agents,
spaces, observations (AlphaZero's planes with eight boards of history), masks over AlphaZero's
4672 moves, rewards, ends, infos and ``agent_selection`` after every move (compared over whole
games with PettingZoo's env in the tests), with many games stepped at once by the batched face.
Legal moves are generated in the kernels.

## Rules
``player_0`` plays white and moves first, ``player_1`` black. Every rule of chess: castling on
either side, en passant, promotion to any piece. After every move the game ends as PettingZoo
ends it (``is_game_over(claim_draw=True)``): checkmate (+1 for the mover, -1 for the other),
stalemate, insufficient material, or a draw the next player could claim: the fifty-move rule
(100 half-moves without a capture or pawn move, or 99 and a move reaching 100) or threefold
repetition (the position's third occurrence, or a move reaching one). A draw gives 0 each.

An illegal move ends the game with -1 for the mover and 0 for the other, as PettingZoo's
``env()`` rules it (its `TerminateIllegalWrapper`): through ``env()`` PettingZoo's wrapper does
it; the batched face does it in the kernel. ``raw_env()`` refuses one, naming the legal moves.

## Observations
``(8, 8, 111)`` bools from the observer's side (black's board mirrored, its pieces first):
planes 0-3 castling rights (the observer's king side, queen side, then the opponent's), 4 ones
for ``player_1``, 5 the fifty-move clock (half-moves // 2, one square), 6 ones; then the boards
after the eight latest moves, 13 planes each: the observer's pawns, knights, bishops, rooks,
queen, king, the opponent's, and ones where that position occurred before (zeros before the
game's first moves). A pawn that just advanced two squares shows on its side's back rank. With
it an ``action_mask`` of 4672 moves: the legal ones for the player to move, zeros for the other.
The batched face gives flat uint8 rows, the masks in ``info["action_mask"]`` and the mover in
``env.current_player``.

## Actions
``Discrete(4672)``: ``(file * 8 + rank) * 73 + plane`` of the square a piece leaves, from the
mover's side (black's ranks mirrored): planes 0-55 queen-like moves (distance and direction),
56-63 knight moves, 64-72 under-promotions (direction, then knight, bishop or rook). A pawn's
other move to the last rank promotes to a queen.

## Version history
- v6: PettingZoo 1.27's chess (``max_cycles`` is gpu_zoo's episode limit: by default none is reached).
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium
import numpy as np

from gpu_zoo.classic.boards import discs, lose_by_illegal_move, win
from gpu_zoo.classic.chess_moves import (
    BISHOP,
    KING,
    KNIGHT,
    LIST,
    NUM_ACTIONS,
    PAWN,
    QUEEN,
    ROOK,
    commit,
    decode,
    encode,
    in_check,
    legal_ep_file,
    legal_moves,
    rights_after,
    shift,
    unshift,
    zeroing,
)
from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerEnv, PerObs, kernel_fn
from gpu_zoo.core.api.params import check_count

HISTORY = 8  # boards in the observation
PLANES = 7 + 13 * HISTORY  # 111
KEY = 17  # a position's words in the repetition window: 16 of four squares, then side, rights, en passant
WINDOW = 104  # positions since the last irreversible move: at most 101 (the fifty-move rule ends the game)
_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)


@dataclass(frozen=True)
class ChessParams:
    """Constructor arguments of chess: PettingZoo's, and the core's episode limit."""

    screen_height: float = 800.0
    """frames are ``screen_height`` pixels square, as PettingZoo's"""
    max_cycles: int = 2**31 - 1

    def __post_init__(self):
        check_count("max_cycles", self.max_cycles)
        if not self.screen_height >= 1:
            raise ValueError(f"screen_height must be at least 1 pixel, got {self.screen_height}")


def groups(p: ChessParams) -> tuple[Group, ...]:
    planes = ObsBlock("planes", 64 * PLANES, "(8, 8, 111): castling, colour, clock, ones, eight boards of history",
                      fill=plane)
    return (Group("player", 2, (planes,), gymnasium.spaces.Discrete(NUM_ACTIONS), obs_low=0.0, obs_high=1.0,
                  obs_dtype="u8", masked=True, obs_space=gymnasium.spaces.Box(0, 1, (8, 8, PLANES), bool)),)


def fields(p: ChessParams) -> tuple[Field, ...]:
    return (
        Field("board", "i32", (64,), "a1 = 0 .. h8 = 63: 0 empty, 1-6 white P N B R Q K, 7-12 black"),
        Field("king", "i32", (2,), "each side's king square"),
        Field("rights", "i32", (), "castling rights: 1 white h1, 2 white a1, 4 black h8, 8 black a8"),
        Field("ep", "i32", (), "the square a double pawn push just passed, or -1"),
        Field("ep_legal", "i32", (), "the file of a legal en passant capture now, or -1"),
        Field("clock", "i32", (), "half-moves since a capture or pawn move"),
        Field("moves", "i32", (), "half-moves made"),
        Field("hist", "i32", (HISTORY * 64,), "the boards after the last eight moves (move m at (m-1) % 8)"),
        Field("hist_ep", "i32", (HISTORY,), "the en passant square after each of them"),
        Field("hist_rep", "i32", (HISTORY,), "1 where that position occurred before"),
        Field("win", "i32", ((WINDOW + 1) * KEY,), "positions since the last irreversible move, and a probe"),
        Field("win_len", "i32", (), "positions in the window"),
        Field("win_dup", "i32", (), "bit t: a position with side t to move occurs twice in the window"),
        Field("mlist", "i32", (2 * LIST,), "legal moves: a list, and a nested search's"),
    )


# ------------------------------------------------------------------ repetitions
@kernel_fn
def store_key(s, e, slot, side, rights, ep_file):
    """The board's position, ``side`` to move, into window slot ``slot``: python-chess's transposition key."""
    at = slot * KEY
    for w in range(16):
        v = 0
        for i in range(4):
            v |= s.board[e, 4 * w + i] << (4 * i)
        s.win[e, at + w] = v
    s.win[e, at + 16] = side | (rights << 1) | ((ep_file + 1) << 5)


@kernel_fn
def matches(s, e, slot, upto):
    """How many of the window's slots ``0 .. upto - 1`` hold slot ``slot``'s position."""
    at = slot * KEY
    count = 0
    for k in range(upto):
        same = True
        for w in range(KEY - 1, -1, -1):  # the side, rights and en passant first
            if s.win[e, k * KEY + w] != s.win[e, at + w]:
                same = False
                break
        if same:
            count += 1
    return count


@kernel_fn
def threefold_next(s, e, side, n):
    """Whether one of ``side``'s ``n`` legal moves (in ``mlist``) reaches a position the window holds twice."""
    turn = 1 - side
    if (s.win_dup[e] >> turn) & 1 == 0:
        return False
    probe = s.win_len[e]
    for i in range(n):
        m = s.mlist[e, i]
        fr, to = m & 63, (m >> 6) & 63
        # an irreversible move reaches a position the window cannot hold (pawns, material or rights differ)
        if zeroing(s, e, side, fr, to) or rights_after(s, e, side, fr, to) != s.rights[e]:
            continue
        shift(s, e, fr, to)
        store_key(s, e, probe, turn, s.rights[e], -1)
        unshift(s, e, fr, to)
        if matches(s, e, probe, probe) >= 2:
            return True
    return False


@kernel_fn
def fifty_moves(s, e, side, n):
    """python-chess's ``can_claim_fifty_moves`` for ``side`` to move, with ``n`` > 0 legal moves in ``mlist``."""
    if s.clock[e] >= 100:
        return True
    if s.clock[e] < 99:
        return False
    saved_ep = s.ep[e]
    s.ep[e] = -1  # after a move that is not a pawn's
    found = False
    for i in range(n):
        m = s.mlist[e, i]
        fr, to = m & 63, (m >> 6) & 63
        if zeroing(s, e, side, fr, to):
            continue
        shift(s, e, fr, to)
        found = legal_moves(s, e, 1 - side, LIST, 1) > 0  # the clock reaches 100 with a move to play
        unshift(s, e, fr, to)
        if found:
            break
    s.ep[e] = saved_ep
    return found


@kernel_fn
def insufficient_material(s, e):
    """python-chess's ``is_insufficient_material``: neither side has material to mate with."""
    wp = wn = wb = wother = wall = 0
    bp = bn = bb = bother = ball = 0
    light = dark = 0
    for sq in range(64):
        pc = s.board[e, sq]
        if pc == 0:
            continue
        t = pc if pc <= 6 else pc - 6
        if t == BISHOP:
            if ((sq & 7) + (sq >> 3)) & 1:
                light += 1
            else:
                dark += 1
        pawn, knight, bishop = (1 if t == PAWN else 0), (1 if t == KNIGHT else 0), (1 if t == BISHOP else 0)
        heavy = 1 if t == ROOK or t == QUEEN else 0
        if pc <= 6:
            wall += 1
            wp += pawn
            wn += knight
            wb += bishop
            wother += heavy
        else:
            ball += 1
            bp += pawn
            bn += knight
            bb += bishop
            bother += heavy
    if wp + wother + bp + bother > 0:
        return False
    same_color_bishops = light == 0 or dark == 0
    if wn > 0:
        white_short = wall <= 2 and bn + bb == 0
    else:
        white_short = wb == 0 or (same_color_bishops and bn == 0)
    if bn > 0:
        black_short = ball <= 2 and wn + wb == 0
    else:
        black_short = bb == 0 or (same_color_bishops and wn == 0)
    return white_short and black_short


# ------------------------------------------------------------------ phases
@kernel_fn
def back_rank(f):
    if f == 0 or f == 7:
        return ROOK
    if f == 1 or f == 6:
        return KNIGHT
    if f == 2 or f == 5:
        return BISHOP
    return QUEEN if f == 3 else KING


@kernel_fn
def new_game(s, p, e):
    for f in range(8):
        s.board[e, f] = back_rank(f)
        s.board[e, 8 + f] = PAWN
        for r in range(2, 6):
            s.board[e, r * 8 + f] = 0
        s.board[e, 48 + f] = PAWN + 6
        s.board[e, 56 + f] = back_rank(f) + 6
    s.king[e, 0] = 4
    s.king[e, 1] = 60
    s.rights[e] = 15
    s.ep[e] = -1
    s.ep_legal[e] = -1
    s.clock[e] = 0
    s.moves[e] = 0
    store_key(s, e, 0, 0, 15, -1)
    s.win_len[e] = 1
    s.win_dup[e] = 0
    s.current_player[e] = 0


@kernel_fn
def play(s, p, e):
    """The mover's move; then mate, a draw PettingZoo's env rules on, or the other player's turn."""
    mover = s.current_player[e]
    action = s.act_player[e, mover]
    if action < 0 or action >= NUM_ACTIONS or s.mask_player[e, mover, action] == 0:
        lose_by_illegal_move(s, e, mover)
        return
    fr, to, promo = decode(s, e, mover, action)
    before = s.rights[e]
    irreversible = s.ep_legal[e] >= 0  # python-chess's is_irreversible: zeroing, rights lost, en passant given up
    if commit(s, e, mover, fr, to, promo) or s.rights[e] != before:
        irreversible = True
    side = 1 - mover
    s.moves[e] += 1
    s.ep_legal[e] = legal_ep_file(s, e, side)
    if irreversible:
        s.win_len[e] = 0
        s.win_dup[e] = 0
    slot = min(s.win_len[e], WINDOW - 1)
    store_key(s, e, slot, side, s.rights[e], s.ep_legal[e])
    seen = matches(s, e, slot, slot)  # earlier occurrences
    s.win_len[e] = slot + 1
    if seen > 0:
        s.win_dup[e] |= 1 << side
    at = (s.moves[e] - 1) % HISTORY
    for i in range(64):
        s.hist[e, at * 64 + i] = s.board[e, i]
    s.hist_ep[e, at] = s.ep[e]
    s.hist_rep[e, at] = 1 if seen > 0 else 0
    n = legal_moves(s, e, side, 0, LIST)
    if n == 0:
        if in_check(s, e, side):
            win(s, e, mover)
        else:
            s.over[e] = 1
    elif insufficient_material(s, e) or fifty_moves(s, e, side, n) or seen >= 2 or threefold_next(s, e, side, n):
        s.over[e] = 1
    s.current_player[e] = side


@kernel_fn
def mask_legal_moves(s, p, e, a):
    """The legal moves of the position for the player to move (after a drawn end too, as PettingZoo's); zeros else."""
    for k in range(NUM_ACTIONS):
        s.mask_player[e, a, k] = 0
    if s.current_player[e] != a:
        return
    n = legal_moves(s, e, a, 0, LIST)
    for i in range(n):
        s.mask_player[e, a, encode(a, s.mlist[e, i])] = 1


@kernel_fn
def plane(s, p, e, a, j):
    """Element ``j`` of agent ``a``'s ``(8, 8, 111)`` observation, as PettingZoo's ``observe`` builds it."""
    cell = j // PLANES
    ch = j - cell * PLANES
    row, col = cell >> 3, cell & 7
    sq = ((7 - row) << 3 | col) if a == 0 else (row << 3 | col)  # black's view is mirrored
    if ch < 7:
        if ch < 4:
            return _ONE if s.rights[e] & (1 << (ch ^ (2 * a))) else _ZERO  # the observer's rights first
        if ch == 4:
            return _ONE if a == 1 else _ZERO
        if ch == 5:
            return _ONE if sq == s.clock[e] >> 1 else _ZERO
        return _ONE
    k = (ch - 7) // 13
    c = ch - 7 - 13 * k
    move = s.moves[e] - k  # the move whose board these planes show (1-based)
    if move < 1:
        return _ZERO
    at = (move - 1) % HISTORY
    if c == 12:
        return _ONE if s.hist_rep[e, at] else _ZERO
    color = (1 if c >= 6 else 0) ^ a  # the observer's pieces first
    t = c - 6 if c >= 6 else c
    ep = s.hist_ep[e, at]
    if t == 0 and ep > 0 and (ep < 32) == (color == 0):  # the pawn just pushed two squares shows on its back rank
        if sq == (ep + 8 if color == 0 else ep - 8):
            return _ZERO
        if sq == (ep & 7 if color == 0 else 56 + (ep & 7)):
            return _ONE
    return _ONE if s.hist[e, at * 64 + sq] == t + 1 + 6 * color else _ZERO


# ------------------------------------------------------------------ render
def render(state: dict, p: ChessParams) -> np.ndarray:
    """The board, white at the bottom: ``screen_height`` pixels square, pieces as discs sized by their kind."""
    size = int(p.screen_height)
    tile = size / 8
    image = np.empty((size, size, 3), np.uint8)
    for r in range(8):
        for f in range(8):
            y0, x0 = int((7 - r) * tile), int(f * tile)
            dark = (r + f) % 2 == 0
            image[y0:int((8 - r) * tile), x0:int((f + 1) * tile)] = (181, 136, 99) if dark else (240, 217, 181)
    board = state["board"]
    for kind in range(1, 7):
        for color, (fill, rim) in enumerate((((250, 250, 250), (30, 30, 30)), ((30, 30, 30), (250, 250, 250)))):
            centres = [((sq % 8 + 0.5) * tile, (7 - sq // 8 + 0.5) * tile) for sq in range(64)
                       if board[sq] == kind + 6 * color]
            radius = tile * (0.22 if kind == PAWN else 0.38)
            discs(image, centres, radius + max(1.0, tile / 40), rim)
            discs(image, centres, radius, fill)
            if kind != PAWN:
                discs(image, centres, tile * 0.045 * (kind - 1), rim)
    return image


SPEC = EnvSpec(
    id="chess_v6",
    params=ChessParams,
    groups=groups,
    fields=fields,
    reset=(PerEnv(new_game),),
    step=(PerEnv(play),),
    observe=(PerAgent(mask_legal_moves), PerObs()),
    render=render,
    module=__name__,
    play="turns",
)
