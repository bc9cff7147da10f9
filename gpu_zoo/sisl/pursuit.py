"""Pursuit: pursuers chase randomly moving evaders on a grid with a building in the middle. PettingZoo's ``pursuit_v5``.

A drop-in for `pettingzoo.sisl.pursuit_v5` (SISL): the same arguments (but the Python
controllers), agents, spaces, observations, rewards, terminations and truncations, compared over
whole episodes with PettingZoo's env in the tests. PettingZoo's pursuers act one after another
and the world advances after the last one; its parallel form sums each cycle's rewards. The
batched face (and ``parallel_env``) plays a whole cycle per step, applying the pursuers' moves in
agent order; the AEC face (``env()``, ``play="sequential"``) applies each pursuer's move at its
own step, with that sub-step's observations and rewards, as PettingZoo's AEC env does.

## Rules
The map is ``x_size`` by ``y_size`` cells; cells ``(x, y)`` with ``0.3 < x / x_size < 0.7`` and
``0.2 < y / y_size < 0.8`` are a building no agent enters. ``n_pursuers`` pursuers and
``n_evaders`` evaders start on open cells of a window covering ``constraint_window`` of each side
(drawn uniformly in the map), no two of a kind on the same or neighbouring cells. Each cycle:

1. Every pursuer moves in turn (left, right, up, down, stay: ``x-1``, ``x+1``, ``y+1``,
   ``y-1``; a move off the map or into the building stays). After each pursuer's move, every
   pursuer gets ``tag_reward / n_pursuers`` for each evader on its four neighbouring cells
   (PettingZoo clips the neighbours to the map: at an edge a pursuer counts its own cell). A
   cycle's reward sums these ``n_pursuers`` sub-steps.
2. Then evaders are caught: with ``surround``, an evader whose open neighbouring cells all hold
   a pursuer (PettingZoo's count of them); without, one with at least ``n_catch`` pursuers on its
   cell. Each pursuer that took part in a catch (on such a neighbour, or on the cell) gets
   ``catch_reward`` once, and the caught evaders leave the game.
3. Every evader left moves uniformly at random (it stays with ``freeze_evaders``), and every
   pursuer gets ``urgency_reward``.

With ``shared_reward`` every pursuer gets the mean of the pursuers' rewards. The episode
terminates when every evader is caught, and is truncated after ``max_cycles`` cycles (a
truncation then wins over the termination, as in PettingZoo).

## Observations
``(obs_range, obs_range, 3)`` float32 around the pursuer, indexed ``[dy, dx, channel]`` as
PettingZoo's: the building (1, and 1 outside the map), the number of pursuers and the number of
evaders in each cell. `pettingzoo_state` gives PettingZoo's ``state()``, ``(y_size, x_size, 3)``
of the same channels over the whole map.

## Actions
``Discrete(5)``: left, right, up, down, stay.

## Differences from PettingZoo
Starts and the evaders' moves come from gpu_zoo's counter-based generator, not NumPy's (the
tests hand ours to PettingZoo's env). Where no start cell is left for an agent (PettingZoo would
then draw forever) the agent takes an open cell of the window, or of the map, next to others.
The faces have no ``state()`` (the core's faces of games played in sequence offer none):
`pettingzoo_state` computes PettingZoo's from one env's fields.

## Version history
- v5: PettingZoo 1.27's pursuit.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium
import numpy as np

from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerEnv, PerItem, PerObs, kernel_fn
from gpu_zoo.core.api.params import check_count
from gpu_zoo.core.api.rng import randint, uniform
from gpu_zoo.core.api.sequential import cycle_ends, moves, whole_cycle
from gpu_zoo.sisl.pursuit_view import building, pettingzoo_state, render

__all__ = ["SPEC", "PursuitParams", "building", "pettingzoo_state", "render"]

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
STAY = 4
TRIES = 8  # random draws of a start cell before counting the free ones (the same distribution: uniform)


@dataclass(frozen=True)
class PursuitParams:
    """Constructor arguments of pursuit, PettingZoo's (its Python controllers aside)."""

    x_size: int = 16
    y_size: int = 16
    max_cycles: int = 500
    shared_reward: bool = True
    n_evaders: int = 30
    n_pursuers: int = 8
    obs_range: int = 7
    n_catch: int = 2
    freeze_evaders: bool = False
    tag_reward: float = 0.01
    catch_reward: float = 5.0
    urgency_reward: float = -0.1
    surround: bool = True
    constraint_window: float = 1.0
    """the share of each side of the map the starts are drawn in (a window placed at random)"""

    def __post_init__(self):
        for name in ("x_size", "y_size", "max_cycles", "n_evaders", "n_pursuers", "obs_range", "n_catch"):
            check_count(name, getattr(self, name))
        if self.obs_range % 2 == 0:
            raise ValueError(f"obs_range must be odd (the pursuer at its centre), got {self.obs_range}")
        cw = self.constraint_window
        if not 0.0 < cw <= 1.0 or self.x_size * cw < 1.0 or self.y_size * cw < 1.0:
            raise ValueError("constraint_window must be in (0, 1] and span at least one cell of each side "
                             f"(x_size * constraint_window >= 1 and y_size * constraint_window >= 1), got {cw}")


def observation_space(p: PursuitParams) -> gymnasium.spaces.Box:
    return gymnasium.spaces.Box(low=0, high=max(p.n_pursuers, p.n_evaders), shape=(p.obs_range, p.obs_range, 3),
                                dtype=np.float32)


def groups(p: PursuitParams) -> tuple[Group, ...]:
    r = p.obs_range
    window = ObsBlock("window", r * r * 3, f"({r}, {r}, 3) around the pursuer, [dy, dx]: building, pursuers, evaders",
                      fill=window_value)
    return (Group("pursuer", p.n_pursuers, (window,), gymnasium.spaces.Discrete(5), obs_low=0.0,
                  obs_high=float(max(p.n_pursuers, p.n_evaders)), obs_space=observation_space(p)),)


def fields(p: PursuitParams) -> tuple[Field, ...]:
    P, E, C = p.n_pursuers, p.n_evaders, p.x_size * p.y_size
    return (
        Field("px", "i32", (P,), "pursuer x"),
        Field("py", "i32", (P,), "pursuer y"),
        Field("ex", "i32", (E,), "evader x"),
        Field("ey", "i32", (E,), "evader y"),
        Field("ev_alive", "u8", (E,), "evader still in the game"),
        Field("caught", "u8", (E,), "evader caught at this step"),
        Field("ev_move", "i32", (E,), "the move each evader drew at this step (4, stay, for none)"),
        Field("pcount", "i32", (C,), "pursuers on each cell, [x * y_size + y]"),
        Field("ecount", "i32", (C,), "evaders in the game on each cell, [x * y_size + y]"),
        Field("blocked", "u8", (C,), "start cells taken or next to a taken one (the group being placed)"),
        Field("local", "f32", (P,), "each pursuer's own reward of the step, before sharing"),
        Field("left", "i32", (), "evaders still in the game"),
    )


def constants(p: PursuitParams) -> dict:
    return {"wall": tuple(int(v) for v in building(p.x_size, p.y_size).ravel()), "cells": p.x_size * p.y_size,
            "offset": (p.obs_range - 1) // 2, "dx": (-1, 1, 0, 0, 0), "dy": (0, 0, 1, -1, 0)}


# ------------------------------------------------------------------ reset
@kernel_fn
def free(s, p, x, y, e):
    """Whether (x, y) may take the next start: open, and neither taken nor next to a taken cell."""
    k = x * p.y_size + y
    return p.wall[k] == 0 and s.blocked[e, k] == 0


@kernel_fn
def place(s, p, e, xlo, xhi, ylo, yhi, k):
    """A start cell uniform over the free ones of the window (PettingZoo's draws until one is free).

    Returns ``x * y_size + y``, then ``k``, the next draw index. Where none is free (PettingZoo
    would draw forever), an open cell of the window, else of the map.
    """
    env_agent = p.num_agents
    w, h = xhi - xlo, yhi - ylo
    for _ in range(TRIES):
        x = xlo + randint(s, e, env_agent, k, w)
        y = ylo + randint(s, e, env_agent, k + 1, h)
        k += 2
        if free(s, p, x, y, e):
            return x * p.y_size + y, k
    for rule in range(3):  # 0: free cells of the window; 1: open cells of the window; 2: open cells of the map
        x0, x1, y0, y1 = (xlo, xhi, ylo, yhi) if rule < 2 else (0, p.x_size, 0, p.y_size)
        n = 0
        for x in range(x0, x1):
            for y in range(y0, y1):
                if free(s, p, x, y, e) if rule == 0 else p.wall[x * p.y_size + y] == 0:
                    n += 1
        if n == 0:
            continue
        r = randint(s, e, env_agent, k, n)
        k += 1
        for x in range(x0, x1):
            for y in range(y0, y1):
                if free(s, p, x, y, e) if rule == 0 else p.wall[x * p.y_size + y] == 0:
                    if r == 0:
                        return x * p.y_size + y, k
                    r -= 1
    return 0, k


@kernel_fn
def block(s, p, e, x, y):
    """The cell and its four neighbours are no start for the rest of the group."""
    s.blocked[e, x * p.y_size + y] = 1
    if x > 0:
        s.blocked[e, (x - 1) * p.y_size + y] = 1
    if x < p.x_size - 1:
        s.blocked[e, (x + 1) * p.y_size + y] = 1
    if y > 0:
        s.blocked[e, x * p.y_size + y - 1] = 1
    if y < p.y_size - 1:
        s.blocked[e, x * p.y_size + y + 1] = 1


@kernel_fn
def start(s, p, e):
    """PettingZoo's reset: the window, then the pursuers, then the evaders, each group apart."""
    cw = p.constraint_window
    wx = uniform(s, e, p.num_agents, 0) * (_ONE - cw)
    wy = uniform(s, e, p.num_agents, 1) * (_ONE - cw)
    xlo = min(max(np.int32(np.float32(p.x_size) * wx), 0), p.x_size - 1)
    ylo = min(max(np.int32(np.float32(p.y_size) * wy), 0), p.y_size - 1)
    xhi = min(max(np.int32(np.float32(p.x_size) * (wx + cw)), xlo + 1), p.x_size)
    yhi = min(max(np.int32(np.float32(p.y_size) * (wy + cw)), ylo + 1), p.y_size)
    k = 2
    for c in range(p.cells):
        s.blocked[e, c] = 0
    for i in range(p.n_pursuers):
        cell, k = place(s, p, e, xlo, xhi, ylo, yhi, k)
        s.px[e, i] = cell // p.y_size
        s.py[e, i] = cell % p.y_size
        block(s, p, e, s.px[e, i], s.py[e, i])
    for c in range(p.cells):
        s.blocked[e, c] = 0
    for j in range(p.n_evaders):
        cell, k = place(s, p, e, xlo, xhi, ylo, yhi, k)
        s.ex[e, j] = cell // p.y_size
        s.ey[e, j] = cell % p.y_size
        block(s, p, e, s.ex[e, j], s.ey[e, j])
        s.ev_alive[e, j] = 1
        s.caught[e, j] = 0
        s.ev_move[e, j] = STAY
    s.left[e] = p.n_evaders


# ------------------------------------------------------------------ step
@kernel_fn
def moved(p, x, y, m):
    """Cell ``x * y_size + y`` after move ``m``: a move off the map or into the building stays."""
    nx, ny = x + p.dx[m], y + p.dy[m]
    if nx < 0 or nx >= p.x_size or ny < 0 or ny >= p.y_size or p.wall[nx * p.y_size + ny] != 0:
        return x * p.y_size + y
    return nx * p.y_size + ny


@kernel_fn
def evaders_near(s, p, e, x, y):
    """PettingZoo's tag count: evaders on the four neighbours, each clipped to the map (an edge counts its own cell)."""
    n = 0
    for m in range(4):
        nx = min(max(x + p.dx[m], 0), p.x_size - 1)
        ny = min(max(y + p.dy[m], 0), p.y_size - 1)
        n += s.ecount[e, nx * p.y_size + ny]
    return n


@kernel_fn
def pursue(s, p, e, a, act):
    """The pursuer's move, if this launch applies it, and its tag rewards over the launch's sub-steps.

    Evaders stand still through the pursuers' turns, so over a whole cycle pursuer ``a`` is
    counted at its old cell after the ``a`` moves before its own, and at its new one after the
    others. A launch of one pursuer's move (the AEC face) is one sub-step: every pursuer is
    counted where it stands after it.
    """
    before = evaders_near(s, p, e, s.px[e, a], s.py[e, a])
    if moves(s, e, a):
        cell = moved(p, s.px[e, a], s.py[e, a], act)
        s.px[e, a] = cell // p.y_size
        s.py[e, a] = cell % p.y_size
    after = evaders_near(s, p, e, s.px[e, a], s.py[e, a])
    tags = np.float32(after)
    if whole_cycle(s, e):
        tags = np.float32(a * before + (p.n_pursuers - a) * after)
    s.local[e, a] = p.tag_reward * tags / np.float32(p.n_pursuers)


@kernel_fn
def count_agents(s, p, e):
    """Pursuers and evaders in the game on each cell."""
    for c in range(p.cells):
        s.pcount[e, c] = 0
        s.ecount[e, c] = 0
    for i in range(p.n_pursuers):
        s.pcount[e, s.px[e, i] * p.y_size + s.py[e, i]] += 1
    for j in range(p.n_evaders):
        if s.ev_alive[e, j]:
            s.ecount[e, s.ex[e, j] * p.y_size + s.ey[e, j]] += 1


@kernel_fn
def count_pursuers(s, p, e):
    for c in range(p.cells):
        s.pcount[e, c] = 0
    for i in range(p.n_pursuers):
        s.pcount[e, s.px[e, i] * p.y_size + s.py[e, i]] += 1


@kernel_fn
def catch(s, p, e, j):
    """PettingZoo's ``remove_agents`` for evader ``j``, before the evaders move (at the cycle's end)."""
    s.caught[e, j] = 0
    if not s.ev_alive[e, j] or not cycle_ends(s, p, e):
        return
    x, y = s.ex[e, j], s.ey[e, j]
    if not p.surround:
        s.caught[e, j] = 1 if s.pcount[e, x * p.y_size + y] >= p.n_catch else 0
        return
    # PettingZoo's need_to_surround: 4, less one for an x edge and one for a y edge, less the building
    # among the neighbours strictly inside the map; caught when that many neighbours hold a pursuer.
    need = 4
    if x == 0 or x == p.x_size - 1:
        need -= 1
    if y == 0 or y == p.y_size - 1:
        need -= 1
    held = 0
    for m in range(4):
        nx, ny = x + p.dx[m], y + p.dy[m]
        inside = 0 <= nx < p.x_size and 0 <= ny < p.y_size
        if inside and s.pcount[e, nx * p.y_size + ny] > 0:
            held += 1
        if 0 < nx < p.x_size and 0 < ny < p.y_size and p.wall[nx * p.y_size + ny] != 0:
            need -= 1
    s.caught[e, j] = 1 if held == need else 0


@kernel_fn
def credit(s, p, e, a):
    """catch_reward once for a pursuer that took part in a catch (on the evader's cell or a neighbour), and urgency.

    Both come at the cycle's end: a sub-step before it rewards the tags alone.
    """
    if not cycle_ends(s, p, e):
        return
    x, y = s.px[e, a], s.py[e, a]
    took_part = False
    for j in range(p.n_evaders):
        if s.caught[e, j]:
            d = abs(s.ex[e, j] - x) + abs(s.ey[e, j] - y)
            if d == (1 if p.surround else 0):
                took_part = True
    r = s.local[e, a] + p.urgency_reward
    if took_part:
        r = s.local[e, a] + p.catch_reward + p.urgency_reward
    s.local[e, a] = r


@kernel_fn
def share(s, p, e, a):
    if not p.shared_reward:
        s.rew[e, a] = s.local[e, a]
        return
    total = _ZERO
    for i in range(p.n_pursuers):
        total += s.local[e, i]
    s.rew[e, a] = total / np.float32(p.n_pursuers)


@kernel_fn
def evade(s, p, e, j):
    """A caught evader leaves; every other one moves at random (or stays, frozen)."""
    s.ev_move[e, j] = STAY
    if not cycle_ends(s, p, e):
        return
    if s.caught[e, j]:
        s.ev_alive[e, j] = 0
        return
    if not s.ev_alive[e, j]:
        return
    m = STAY if p.freeze_evaders else randint(s, e, p.num_agents, j, 5)
    s.ev_move[e, j] = m
    cell = moved(p, s.ex[e, j], s.ey[e, j], m)
    s.ex[e, j] = cell // p.y_size
    s.ey[e, j] = cell % p.y_size


@kernel_fn
def finish(s, p, e):
    """The evaders' cells; the game ends when none is left, unless the time limit truncates it at the same step."""
    if not cycle_ends(s, p, e):  # the evaders stand still through the pursuers' turns
        return
    for c in range(p.cells):
        s.ecount[e, c] = 0
    n = 0
    for j in range(p.n_evaders):
        if s.ev_alive[e, j]:
            s.ecount[e, s.ex[e, j] * p.y_size + s.ey[e, j]] += 1
            n += 1
    s.left[e] = n
    if n == 0 and s.t[e] < p.max_cycles:
        s.over[e] = 1


# ------------------------------------------------------------------ observations
@kernel_fn
def window_value(s, p, e, a, j):
    """Element ``j`` of the pursuer's window, ``[dy, dx, channel]``: building (1 off the map), pursuers, evaders."""
    channel = j % 3
    cell = j // 3
    x = s.px[e, a] - p.offset + cell % p.obs_range
    y = s.py[e, a] - p.offset + cell // p.obs_range
    if x < 0 or x >= p.x_size or y < 0 or y >= p.y_size:
        return _ONE if channel == 0 else _ZERO
    k = x * p.y_size + y
    if channel == 0:
        return np.float32(p.wall[k])
    if channel == 1:
        return np.float32(s.pcount[e, k])
    return np.float32(s.ecount[e, k])


def step_phases(p: PursuitParams) -> tuple:
    return (PerAgent(pursue, group="pursuer"), PerEnv(count_pursuers), PerItem(catch, p.n_evaders), PerAgent(credit),
            PerAgent(share), PerItem(evade, p.n_evaders), PerEnv(finish))


SPEC = EnvSpec(
    id="pursuit_v5",
    params=PursuitParams,
    groups=groups,
    fields=fields,
    reset=(PerEnv(start), PerEnv(count_agents)),
    step=step_phases,
    observe=(PerObs(),),
    constants=constants,
    render=render,
    module=__name__,
    play="sequential",
)
