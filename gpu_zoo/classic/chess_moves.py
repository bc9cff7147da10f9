"""Chess moves inside the kernels: attacks, legal-move generation, making moves, AlphaZero's 4672 encoding.

The board is the int32 state field ``board``, one cell per square in python-chess's numbering
(``rank * 8 + file``, a1 = 0, h8 = 63): 0 empty, 1 to 6 a white pawn, knight, bishop, rook, queen,
king, 7 to 12 the black ones. Side 0 is white (``player_0``), side 1 black. ``king`` keeps each
side's king square, ``rights`` the castling rights (bits `WK`, `WQ`, `BK`, `BQ`), ``ep`` python-chess's
``ep_square`` (set after every double pawn push, -1 otherwise).

A move is ``from | to << 6 | promotion << 12`` (a piece type, 0 for none); legal moves are written
to the scratch field ``mlist`` from an offset, so a nested search can keep the outer list.
"""

from __future__ import annotations

from gpu_zoo.core import kernel_fn

PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING = 1, 2, 3, 4, 5, 6
WK, WQ, BK, BQ = 1, 2, 4, 8  # castling rights: white's h1 and a1 rooks, black's h8 and a8
NUM_ACTIONS = 8 * 8 * 73
LIST = 256  # more than the most legal moves a position has (218); mlist holds two lists


# ------------------------------------------------------------------ geometry
@kernel_fn
def queen_dx(c):
    """File step of PettingZoo's queen direction ``c`` (0..7: (-1,-1), (-1,0), (-1,1), (0,-1), (0,1), (1,-1), ...)."""
    idx = c + 1 if c >= 4 else c
    return idx // 3 - 1


@kernel_fn
def queen_dy(c):
    idx = c + 1 if c >= 4 else c
    return idx % 3 - 1


@kernel_fn
def knight_dx(k):
    """File step of PettingZoo's knight move ``k`` (0..7: (-2,-1), (-2,1), (-1,-2), (-1,2), (1,-2), ...)."""
    mag = 2 if k < 2 or k >= 6 else 1
    return mag if k >= 4 else -mag


@kernel_fn
def knight_dy(k):
    dx = knight_dx(k)
    mag = 3 - (dx if dx > 0 else -dx)
    return mag if (k & 1) == 1 else -mag


@kernel_fn
def corner_right(sq):
    """The castling right a rook on corner ``sq`` carries; 0 elsewhere."""
    if sq == 7:
        return WK
    if sq == 0:
        return WQ
    if sq == 63:
        return BK
    if sq == 56:
        return BQ
    return 0


@kernel_fn
def own(pc, side):
    """Whether ``pc`` is one of ``side``'s pieces."""
    return pc > 6 * side and pc <= 6 * side + 6


# ------------------------------------------------------------------ attacks
@kernel_fn
def slider_hits(s, e, f, r, dx, dy, a, b):
    """The first piece from (f, r) along (dx, dy) is ``a`` or ``b``."""
    f += dx
    r += dy
    while 0 <= f < 8 and 0 <= r < 8:
        pc = s.board[e, r * 8 + f]
        if pc != 0:
            return pc == a or pc == b
        f += dx
        r += dy
    return False


@kernel_fn
def attacked(s, e, sq, by):
    """Whether a piece of side ``by`` attacks square ``sq``."""
    f, r = sq & 7, sq >> 3
    off = 6 * by
    pr = r - 1 if by == 0 else r + 1  # where a pawn of ``by`` attacking sq stands
    if 0 <= pr < 8:
        for k in range(2):
            pf = f + 2 * k - 1
            if 0 <= pf < 8 and s.board[e, pr * 8 + pf] == PAWN + off:
                return True
    for k in range(8):
        nf, nr = f + knight_dx(k), r + knight_dy(k)
        if 0 <= nf < 8 and 0 <= nr < 8 and s.board[e, nr * 8 + nf] == KNIGHT + off:
            return True
    for c in range(8):
        dx, dy = queen_dx(c), queen_dy(c)
        nf, nr = f + dx, r + dy
        if 0 <= nf < 8 and 0 <= nr < 8 and s.board[e, nr * 8 + nf] == KING + off:
            return True
        slider = BISHOP if dx != 0 and dy != 0 else ROOK
        if slider_hits(s, e, f, r, dx, dy, slider + off, QUEEN + off):
            return True
    return False


@kernel_fn
def in_check(s, e, side):
    return attacked(s, e, s.king[e, side], 1 - side)


# ------------------------------------------------------------------ legal moves
@kernel_fn
def safe_after(s, e, side, fr, to, ep_cap):
    """Whether ``side``'s king is safe after moving ``fr`` to ``to`` (capturing en passant on ``ep_cap`` >= 0)."""
    moved, captured = s.board[e, fr], s.board[e, to]
    s.board[e, to] = moved
    s.board[e, fr] = 0
    taken = 0
    if ep_cap >= 0:
        taken = s.board[e, ep_cap]
        s.board[e, ep_cap] = 0
    ksq = to if moved == KING + 6 * side else s.king[e, side]
    safe = not attacked(s, e, ksq, 1 - side)
    s.board[e, fr] = moved
    s.board[e, to] = captured
    if ep_cap >= 0:
        s.board[e, ep_cap] = taken
    return safe


@kernel_fn
def add(s, e, side, fr, to, ep_cap, promote, base, n):
    """Appends the move if legal (its four promotions when ``promote``); returns the new count."""
    if not safe_after(s, e, side, fr, to, ep_cap):
        return n
    m = fr | (to << 6)
    if promote:
        for t in range(KNIGHT, KING):
            s.mlist[e, base + n] = m | (t << 12)
            n += 1
        return n
    s.mlist[e, base + n] = m
    return n + 1


@kernel_fn
def castle_moves(s, e, side, base, n):
    """Castling as python-chess allows it: the right, empty squares between, king not passing an attacked square."""
    home = 56 * side
    other = 1 - side
    king_side, queen_side = (WK, WQ) if side == 0 else (BK, BQ)
    if s.rights[e] & (king_side | queen_side) == 0 or attacked(s, e, home + 4, other):
        return n
    if s.rights[e] & king_side and s.board[e, home + 5] == 0 and s.board[e, home + 6] == 0 \
            and not attacked(s, e, home + 5, other) and not attacked(s, e, home + 6, other):
        s.mlist[e, base + n] = (home + 4) | ((home + 6) << 6)
        n += 1
    if s.rights[e] & queen_side and s.board[e, home + 1] == 0 and s.board[e, home + 2] == 0 \
            and s.board[e, home + 3] == 0 and not attacked(s, e, home + 3, other) \
            and not attacked(s, e, home + 2, other):
        s.mlist[e, base + n] = (home + 4) | ((home + 2) << 6)
        n += 1
    return n


@kernel_fn
def pawn_moves(s, e, side, fr, base, n):
    f, r = fr & 7, fr >> 3
    fwd = 1 if side == 0 else -1
    r1 = r + fwd
    promote = r1 == 7 or r1 == 0
    to = r1 * 8 + f
    if s.board[e, to] == 0:
        n = add(s, e, side, fr, to, -1, promote, base, n)
        if r == (1 if side == 0 else 6) and s.board[e, to + 8 * fwd] == 0:
            n = add(s, e, side, fr, to + 8 * fwd, -1, False, base, n)
    for k in range(2):
        f2 = f + 2 * k - 1
        if 0 <= f2 < 8:
            to = r1 * 8 + f2
            target = s.board[e, to]
            if target != 0 and own(target, 1 - side):
                n = add(s, e, side, fr, to, -1, promote, base, n)
            elif target == 0 and to == s.ep[e]:
                n = add(s, e, side, fr, to, to - 8 * fwd, False, base, n)
    return n


@kernel_fn
def piece_moves(s, e, side, fr, t, base, n):
    """A knight's, bishop's, rook's, queen's or king's moves (castling apart)."""
    f, r = fr & 7, fr >> 3
    for c in range(8):
        if t == KNIGHT:
            dx, dy = knight_dx(c), knight_dy(c)
        else:
            dx, dy = queen_dx(c), queen_dy(c)
            diagonal = dx != 0 and dy != 0
            if (t == BISHOP and not diagonal) or (t == ROOK and diagonal):
                continue
        nf, nr = f + dx, r + dy
        while 0 <= nf < 8 and 0 <= nr < 8:
            to = nr * 8 + nf
            target = s.board[e, to]
            if target != 0 and own(target, side):
                break
            n = add(s, e, side, fr, to, -1, False, base, n)
            if target != 0 or t == KNIGHT or t == KING:
                break
            nf += dx
            nr += dy
    return n


@kernel_fn
def legal_moves(s, e, side, base, limit):
    """``side``'s legal moves into ``mlist[e, base:]``; returns how many (stopping soon after ``limit``)."""
    n = 0
    off = 6 * side
    for fr in range(64):
        pc = s.board[e, fr]
        if pc <= off or pc > off + 6:
            continue
        t = pc - off
        if t == PAWN:
            n = pawn_moves(s, e, side, fr, base, n)
        else:
            n = piece_moves(s, e, side, fr, t, base, n)
            if t == KING:
                n = castle_moves(s, e, side, base, n)
        if n >= limit:
            return n
    return n


@kernel_fn
def legal_ep_file(s, e, side):
    """The file of a legal en passant capture for ``side`` (python-chess's ``has_legal_en_passant``), or -1."""
    ep = s.ep[e]
    if ep < 0:
        return -1
    f = ep & 7
    fwd = 1 if side == 0 else -1
    r = (ep >> 3) - fwd
    for k in range(2):
        pf = f + 2 * k - 1
        if 0 <= pf < 8 and s.board[e, r * 8 + pf] == PAWN + 6 * side \
                and safe_after(s, e, side, r * 8 + pf, ep, ep - 8 * fwd):
            return f
    return -1


# ------------------------------------------------------------------ making moves
@kernel_fn
def rights_after(s, e, side, fr, to):
    """The castling rights after ``side`` moves ``fr`` to ``to``: python-chess's update."""
    rights = s.rights[e] & ~(corner_right(fr) | corner_right(to))
    if s.board[e, fr] == KING + 6 * side:
        rights &= ~((WK | WQ) if side == 0 else (BK | BQ))
    return rights


@kernel_fn
def zeroing(s, e, side, fr, to):
    """A pawn move or a capture: the fifty-move clock restarts."""
    return s.board[e, fr] == PAWN + 6 * side or s.board[e, to] != 0


@kernel_fn
def shift(s, e, fr, to):
    """A non-capturing, non-pawn move on the board alone (castling moves the rook too)."""
    pc = s.board[e, fr]
    s.board[e, to] = pc
    s.board[e, fr] = 0
    if (pc == KING or pc == KING + 6) and (to - fr == 2 or fr - to == 2):
        rook_from, rook_to = (fr + 3, fr + 1) if to > fr else (fr - 4, fr - 1)
        s.board[e, rook_to] = s.board[e, rook_from]
        s.board[e, rook_from] = 0


@kernel_fn
def unshift(s, e, fr, to):
    pc = s.board[e, to]
    s.board[e, fr] = pc
    s.board[e, to] = 0
    if (pc == KING or pc == KING + 6) and (to - fr == 2 or fr - to == 2):
        rook_from, rook_to = (fr + 3, fr + 1) if to > fr else (fr - 4, fr - 1)
        s.board[e, rook_from] = s.board[e, rook_to]
        s.board[e, rook_to] = 0


@kernel_fn
def commit(s, e, side, fr, to, promo):
    """Plays a legal move: board, king square, castling rights, en passant square and fifty-move clock."""
    off = 6 * side
    pc = s.board[e, fr]
    resets = zeroing(s, e, side, fr, to)
    s.rights[e] = rights_after(s, e, side, fr, to)
    if pc == PAWN + off and s.board[e, to] == 0 and (to & 7) != (fr & 7):  # en passant
        s.board[e, to - 8 if side == 0 else to + 8] = 0
    if promo != 0:
        s.board[e, fr] = promo + off
    if pc == KING + off:
        s.king[e, side] = to
    shift(s, e, fr, to)  # over any captured piece
    double = pc == PAWN + off and (to - fr == 16 or fr - to == 16)
    s.ep[e] = (fr + to) >> 1 if double else -1
    s.clock[e] = 0 if resets else s.clock[e] + 1
    return resets


# ------------------------------------------------------------------ PettingZoo's action encoding
@kernel_fn
def encode(side, m):
    """Move ``m`` of ``side`` as PettingZoo's action: the board seen from the mover (black's mirrored)."""
    fr, to, promo = m & 63, (m >> 6) & 63, m >> 12
    if side == 1:
        fr ^= 56
        to ^= 56
    f, r = fr & 7, fr >> 3
    dx, dy = (to & 7) - f, (to >> 3) - r
    adx, ady = (dx if dx > 0 else -dx), (dy if dy > 0 else -dy)
    if adx + ady == 3 and 1 <= adx <= 2:
        plane = 56 + ((dx + 2) * 2 if dx < 0 else (dx + 1) * 2) + (1 if dy > 0 else 0)
    elif promo != 0 and promo != QUEEN:
        plane = 64 + 3 * (dx + 1) + promo - KNIGHT
    else:
        dist = adx if adx > ady else ady
        sx = 1 if dx > 0 else (-1 if dx < 0 else 0)
        sy = 1 if dy > 0 else (-1 if dy < 0 else 0)
        idx = (sx + 1) * 3 + sy + 1
        plane = (dist - 1) * 8 + (idx if idx < 4 else idx - 1)
    return (f * 8 + r) * 73 + plane


@kernel_fn
def decode(s, e, side, action):
    """PettingZoo's action as ``(from, to, promotion)`` on the board (a pawn reaching the last rank: a queen)."""
    cell = action // 73
    plane = action - cell * 73
    f, r = cell >> 3, cell & 7
    promo = 0
    if plane < 56:
        dist = (plane >> 3) + 1
        dx, dy = queen_dx(plane & 7) * dist, queen_dy(plane & 7) * dist
    elif plane < 64:
        dx, dy = knight_dx(plane - 56), knight_dy(plane - 56)
    else:
        u = plane - 64
        dx, dy = u // 3 - 1, 1
        promo = KNIGHT + u % 3
    fr, to = r * 8 + f, (r + dy) * 8 + f + dx
    if side == 1:
        fr ^= 56
        to ^= 56
    if promo == 0 and r == 6 and s.board[e, fr] == PAWN + 6 * side:
        promo = QUEEN
    return fr, to, promo
