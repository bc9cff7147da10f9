"""MPE2's collect_treasure: collectors pick up treasures and carry them to the deposit of their type.

The same environment as MPE2's ``collect_treasure_v1``, with the same agent names, observation
layout, action meanings, physics and rewards, run as a Numba kernel on the particle world that
every MPE scenario shares (`gpu_zoo.mpe.particles`). The state is double precision, as in MPE2,
so trajectories match MPE2's step for step.

## Rules
``num_collectors`` collectors (size 0.05, mass 1) and ``num_deposits`` deposits (size 0.075,
mass 2.25), all with action scale 1.5 and top speed 1, passing through each other; deposit d
accepts treasures of type d. ``num_treasures`` treasures (size 0.025), each of a uniformly drawn
type. After every move: each live treasure, in order, is picked up by the first collector in
order that holds nothing and touches it (+5 to the shared reward), leaving the map; a treasure
off the map comes back at a fresh place with a fresh type; then each collector holding a
treasure that touches its type's deposit delivers it (+5 to the shared reward).

Every agent is paid the shared reward of the step plus its own shaping: a collector -5 for each
other collector it touches and minus 0.1 times its distance to the nearest live treasure (to
its type's deposit while it holds one); a deposit minus 0.1 times its distance to the nearest
collector holding its type, or to the collectors' centroid when none does. Episodes are
truncated after ``max_cycles`` steps.

Starts: agents uniform in [-1, 1]^2, at rest, holding nothing; treasures in [-0.95, 0.95]^2
(MPE2's ranges, drawn from gpu_zoo's counter-based generator rather than NumPy's, and so are
the treasures' returns).

## Observations
A collector: ``self_pos (2), self_vel (2), holding (1 per type: one-hot, all zero when empty),
others (per other agent, nearest first: relative position 2, velocity 2, the deposit's type
one-hot then what a collector holds one-hot), treasures (per treasure, nearest live first:
relative position 2, type one-hot; zeros for those off the map)``. A deposit: the same without
``holding``; float32.

## Actions
Discrete(5): no-op, left, right, down, up. With ``continuous_actions=True``, ``Box(0, 1, (5,))``
whose force is ``(a[2] - a[1], a[4] - a[3])`` times 1.5.

## Version history
- v1: matches MPE2's ``collect_treasure_v1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerEnv, PerObs, kernel_fn
from gpu_zoo.core.api.params import check_count
from gpu_zoo.core.api.rng import randint
from gpu_zoo.mpe import particles
from gpu_zoo.mpe.particles import (
    DRAW_Y,
    distance,
    integrate_with_mass,
    is_collision,
    move_continuous,
    move_discrete,
    nearest,
    place,
    relative,
    spawn,
)
from gpu_zoo.mpe.scenario import check_common, move_space

COLLECTOR_SIZE, DEPOSIT_SIZE, TREASURE_SIZE = 0.05, 0.075, 0.025
COLLECTOR_MASS, DEPOSIT_MASS = 1.0, 2.25
ACCEL, MAX_SPEED = 1.5, 1.0
TREASURE_BOUND = 0.95
OFF_MAP = -999.0  # where MPE2 keeps a picked-up treasure until it returns
_FAR = 1e6  # MPE2 sorts treasures off the map by this, after every live one
DRAW_TYPE = DRAW_Y + 1  # a treasure's type: its draw after those of its place
TYPE_COLORS = ((0.212, 0.408, 0.776), (0.945, 0.553, 0.000), (0.169, 0.627, 0.173), (0.839, 0.149, 0.157),
               (0.580, 0.404, 0.741), (0.549, 0.337, 0.294))


@dataclass(frozen=True)
class CollectTreasureParams:
    """MPE2's ``collect_treasure_v1`` constructor arguments."""

    num_collectors: int = 6
    num_deposits: int = 2
    num_treasures: int = 6
    max_cycles: int = 25
    continuous_actions: bool = False
    dynamic_rescaling: bool = True
    benchmark_data: bool = False

    def __post_init__(self):
        check_common(self)
        for name in ("num_collectors", "num_deposits", "num_treasures"):
            check_count(name, getattr(self, name))
        if self.num_deposits > len(TYPE_COLORS):
            raise ValueError(f"num_deposits must be at most {len(TYPE_COLORS)} (MPE2's palette), "
                             f"got {self.num_deposits}")


def _other_size(p: CollectTreasureParams) -> int:
    return 4 + 2 * p.num_deposits


def groups(p: CollectTreasureParams) -> tuple[Group, ...]:
    n, others = p.num_deposits, p.num_collectors + p.num_deposits - 1
    tail = (ObsBlock("others", others * _other_size(p)), ObsBlock("treasures", p.num_treasures * (2 + n)))
    me = (ObsBlock("self_pos", 2), ObsBlock("self_vel", 2))
    act = move_space(p.continuous_actions)
    return (Group("collector", p.num_collectors, (*me, ObsBlock("holding", n), *tail), act),
            Group("deposit", p.num_deposits, (*me, *tail), act))


def world(p: CollectTreasureParams) -> particles.World:
    C, D, T = p.num_collectors, p.num_deposits, p.num_treasures
    return particles.World(sizes=(COLLECTOR_SIZE,) * C + (DEPOSIT_SIZE,) * D + (TREASURE_SIZE,) * T,
                           collides=(0,) * (C + D + T), accels=(ACCEL,) * (C + D), max_speeds=(MAX_SPEED,) * (C + D),
                           masses=(COLLECTOR_MASS,) * C + (DEPOSIT_MASS,) * D)


def fields(p: CollectTreasureParams) -> tuple[Field, ...]:
    C, T = p.num_collectors, p.num_treasures
    return (*world(p).fields(),
            Field("holding", "i32", (C,), "the type of the treasure each collector carries, -1 for none"),
            Field("treasure_type", "i32", (T,), "each treasure's type (the deposit that accepts it)"),
            Field("treasure_alive", "u8", (T,), "1 while a treasure is on the map"),
            Field("shared_rew", "f64", (), "this step's +5 per pickup and per delivery"))


def constants(p: CollectTreasureParams) -> dict:
    return world(p).constants()


# ------------------------------------------------------------------ phases
@kernel_fn
def spawn_empty_handed(s, p, e, a):
    spawn(s, p, e, a)
    if a < p.num_collectors:
        s.holding[e, a] = -1


@kernel_fn
def _drop_treasure(s, p, e, t):
    """Treasure t at a fresh place with a fresh type (MPE2 draws the place, then the type)."""
    j = p.num_agents + t
    place(s, e, j, TREASURE_BOUND)
    s.treasure_type[e, t] = randint(s, e, j, DRAW_TYPE, p.num_deposits)
    s.treasure_alive[e, t] = 1


@kernel_fn
def place_treasures(s, p, e):
    for t in range(p.num_treasures):
        _drop_treasure(s, p, e, t)
    s.shared_rew[e] = 0.0


@kernel_fn
def pick_up_and_deliver(s, p, e):
    """MPE2's ``post_step``: pickups in treasure order, returns, then deliveries in collector order."""
    C = p.num_collectors
    rew = 0.0
    for t in range(p.num_treasures):
        j = p.num_agents + t
        if s.treasure_alive[e, t]:
            for c in range(C):
                if s.holding[e, c] < 0 and is_collision(s, p, e, j, c):
                    rew += 5.0
                    s.treasure_alive[e, t] = 0
                    s.holding[e, c] = s.treasure_type[e, t]
                    s.pos_x[e, j] = OFF_MAP
                    s.pos_y[e, j] = OFF_MAP
                    break
        else:
            _drop_treasure(s, p, e, t)
    delivered = 0.0
    for c in range(C):
        kind = s.holding[e, c]
        if kind >= 0 and is_collision(s, p, e, c, C + kind):
            delivered += 5.0
            s.holding[e, c] = -1
    s.shared_rew[e] = rew + delivered


@kernel_fn
def reward(s, p, e, a):
    C = p.num_collectors
    rew = 0.0
    if a < C:
        for o in range(C):
            if o != a and is_collision(s, p, e, a, o):
                rew -= 5.0
        kind = s.holding[e, a]
        if kind < 0:
            best = _FAR
            found = False
            for t in range(p.num_treasures):
                if s.treasure_alive[e, t]:
                    d = distance(s, e, p.num_agents + t, a)
                    best = d if not found else min(best, d)
                    found = True
            if found:
                rew -= 0.1 * best
        else:
            rew -= 0.1 * distance(s, e, C + kind, a)
    else:
        kind = a - C
        best = _FAR
        found = False
        for c in range(C):
            if s.holding[e, c] == kind:
                d = distance(s, e, c, a)
                best = d if not found else min(best, d)
                found = True
        if found:
            rew -= 0.1 * best
        else:
            cx, cy = 0.0, 0.0
            for c in range(C):
                cx += s.pos_x[e, c]
                cy += s.pos_y[e, c]
            dx, dy = cx / C - s.pos_x[e, a], cy / C - s.pos_y[e, a]
            rew -= 0.1 * math.sqrt(dx * dx + dy * dy)
    s.rew[e, a] = np.float32(rew + s.shared_rew[e])


@kernel_fn
def _treasure_key(s, p, e, a, t):
    return distance(s, e, a, p.num_agents + t) if s.treasure_alive[e, t] else _FAR


@kernel_fn
def _kth_treasure(s, p, e, a, k):
    """The treasure MPE2's stable sort puts k-th for agent a: live ones nearest first, then the rest in order."""
    for t in range(p.num_treasures):
        key = _treasure_key(s, p, e, a, t)
        rank = 0
        for m in range(p.num_treasures):
            if m != t:
                other = _treasure_key(s, p, e, a, m)
                if other < key or (other == key and m < t):
                    rank += 1
        if rank == k:
            return t
    return -1


@kernel_fn
def _encoding(s, p, e, o, c):
    """Element c of MPE2's ``_get_agent_encoding`` of agent o: its deposit type one-hot, then what it holds."""
    n = p.num_deposits
    if c < n:
        return np.float32(1.0 if o >= p.num_collectors and o - p.num_collectors == c else 0.0)
    return np.float32(1.0 if o < p.num_collectors and s.holding[e, o] == c - n else 0.0)


@kernel_fn
def observe(s, p, e, a, i):
    """Element i of MPE2's observation of agent a."""
    if i < 4:
        if i < 2:
            return np.float32(s.pos_x[e, a] if i == 0 else s.pos_y[e, a])
        return np.float32(s.vel_x[e, a] if i == 2 else s.vel_y[e, a])
    k = i - 4
    n = p.num_deposits
    if a < p.num_collectors:
        if k < n:
            return np.float32(1.0 if s.holding[e, a] == k else 0.0)
        k -= n
    size = 4 + 2 * n
    if k < (p.num_agents - 1) * size:
        o = nearest(s, e, a, 0, p.num_agents, k // size)
        m = k % size
        if m < 2:
            return relative(s, e, a, o, m)
        if m < 4:
            return np.float32(s.vel_x[e, o] if m == 2 else s.vel_y[e, o])
        return _encoding(s, p, e, o, m - 4)
    k -= (p.num_agents - 1) * size
    t = _kth_treasure(s, p, e, a, k // (2 + n))
    m = k % (2 + n)
    if not s.treasure_alive[e, t]:
        return np.float32(0.0)
    if m < 2:
        return relative(s, e, a, p.num_agents + t, m)
    return np.float32(1.0 if s.treasure_type[e, t] == m - 2 else 0.0)


def render(state: dict, p: CollectTreasureParams, size: int = 320) -> np.ndarray:
    C, D = p.num_collectors, p.num_deposits
    colors = [np.array([0.85] * 3) if int(h) < 0 else 0.85 * np.array(TYPE_COLORS[int(h)]) for h in state["holding"]]
    colors += [0.35 * np.array(TYPE_COLORS[d]) for d in range(D)]
    colors += [np.array(TYPE_COLORS[int(k)]) for k in state["treasure_type"]]
    shown = dict(state)  # treasures off the map are not drawn, nor framed by the camera
    gone = np.flatnonzero(np.asarray(state["treasure_alive"]) == 0) + C + D
    radii = np.array(world(p).sizes, dtype=np.float64)
    radii[gone] = 0.0
    for name in ("pos_x", "pos_y"):
        shown[name] = np.array(state[name], dtype=np.float64)
        shown[name][gone] = 0.0
    return particles.render(shown, [particles.rgb(c) for c in colors], radii, size, p.max_cycles)


def step(p: CollectTreasureParams) -> tuple:
    move = move_continuous if p.continuous_actions else move_discrete
    return (PerAgent(move, group="collector"), PerAgent(move, group="deposit"), PerAgent(integrate_with_mass),
            PerEnv(pick_up_and_deliver), PerAgent(reward))


SPEC = EnvSpec(
    id="collect_treasure_v1",
    params=CollectTreasureParams,
    groups=groups,
    fields=fields,
    reset=(PerAgent(spawn_empty_handed), PerEnv(place_treasures)),
    step=step,
    observe=(PerObs(observe),),
    constants=constants,
    render=render,
    module=__name__,
)
