"""The particle world every MPE scenario shares: entities, contact forces, integration, collisions.

MPE2's ``World.step`` and the parts of its ``SimpleEnv`` that act on it, as kernel functions a
scenario's phases call. Entities are the agents, in agent order, then the landmarks. A scenario
describes them with a `World` (each entity's size and whether it collides, each agent's
acceleration, speed limit and mass), which the kernels take as compile-time constants; the state
(positions, velocities, forces) is double precision, as in MPE2, and every sum runs in MPE2's
order, so trajectories match MPE2's bit for bit.

A step, as MPE2 takes it: each agent's action becomes a force (`discrete_force`,
`continuous_force`: the move times the agent's ``accel``, 5 when it has none); every pair of
colliding entities pushes each other apart with a soft contact force
(``contact_force * delta / dist * log(1 + exp(-(dist - size_sum) / margin)) * margin``), summed
in entity order (`add_contact_forces`); then each agent integrates (`integrate`):
position += velocity * dt, velocity *= (1 - damping), velocity += force / mass * dt, the speed clipped
to the agent's ``max_speed`` where it has one. Landmarks never move.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpu_zoo.core import Field, kernel_fn
from gpu_zoo.core.api.rng import randint, uniform

# MPE2's World attributes (not arguments of any scenario)
DT = 0.1
DAMPING = 0.25
CONTACT_FORCE = 100.0
CONTACT_MARGIN = 1e-3
SENSITIVITY = 5.0
"""An agent's action scale when it has no ``accel`` of its own (MPE2's ``_set_action``)."""
DIM_C = 2
"""Length of a communication vector in the scenarios that carry one, spoken or not."""

# Random draws (`gpu_zoo.core.api.rng`): an entity's place takes its draws DRAW_X and DRAW_Y; the env's
# own draws (at agent index num_entities, past every entity) start with the goal landmark's.
DRAW_X, DRAW_Y = 0, 1
DRAW_GOAL = 0


@dataclass(frozen=True)
class World:
    """The entities of a scenario: ``len(sizes)`` of them, of which the first ``len(accels)`` are agents.

    ``sizes`` and ``collides`` per entity; ``accels`` and ``max_speeds`` per agent (None for
    MPE2's None: the default sensitivity, no speed limit); ``masses`` per agent (None: all 1,
    for `integrate`; else `integrate_with_mass`). These never change during an episode, so they
    are compile-time tables of the kernels (``p.size[j]``, ``p.collide[j]``, ``p.accel[a]``,
    ``p.max_speed[a]``, ``p.mass[a]``), constant data every env shares, not per-env fields.
    """

    sizes: tuple
    collides: tuple
    accels: tuple
    max_speeds: tuple | None = None
    masses: tuple | None = None

    def __post_init__(self):
        N, A = len(self.sizes), len(self.accels)
        if len(self.collides) != N or not 0 < A <= N:
            raise ValueError(f"World: {N} sizes need {N} collide flags and 1 to {N} accels (one per agent), got "
                             f"{len(self.collides)} and {A}")
        for name in ("max_speeds", "masses"):
            v = getattr(self, name)
            if v is not None and len(v) != A:
                raise ValueError(f"World: {name} takes one value per agent ({A}), got {len(v)}")

    def fields(self) -> tuple[Field, ...]:
        """The particle state: positions of every entity; velocities and forces of the agents (float64, as MPE2)."""
        N, A = len(self.sizes), len(self.accels)
        return (
            Field("pos_x", "f64", (N,), "x of agents, then landmarks"),
            Field("pos_y", "f64", (N,), "y of agents, then landmarks"),
            Field("vel_x", "f64", (A,), "x velocity of each agent"),
            Field("vel_y", "f64", (A,), "y velocity of each agent"),
            Field("force_x", "f64", (A,), "x force of the last step (action, then contacts)"),
            Field("force_y", "f64", (A,), "y force of the last step (action, then contacts)"),
        )

    def constants(self) -> dict:
        """The entity tables, as the kernels' constants (float64, so every sum is MPE2's)."""
        A = len(self.accels)
        out = {"num_entities": len(self.sizes),
               "size": tuple(np.float64(v) for v in self.sizes),
               "collide": tuple(bool(v) for v in self.collides), "collide_all": all(self.collides),
               "accel": tuple(np.float64(SENSITIVITY if v is None else v) for v in self.accels),
               "max_speed": tuple(np.float64(0.0 if v is None else v) for v in (self.max_speeds or (None,) * A))}
        if self.masses is not None:
            out["mass"] = tuple(np.float64(v) for v in self.masses)
        return out


# ------------------------------------------------------------------ starts
@kernel_fn
def place(s, e, j, half_width):
    """Entity j uniform in [-half_width, half_width]^2, at rest (MPE2's ``np_random.uniform``, another stream)."""
    s.pos_x[e, j] = 2.0 * half_width * np.float64(uniform(s, e, j, DRAW_X)) - half_width
    s.pos_y[e, j] = 2.0 * half_width * np.float64(uniform(s, e, j, DRAW_Y)) - half_width


@kernel_fn
def rest(s, e, a):
    s.vel_x[e, a] = 0.0
    s.vel_y[e, a] = 0.0


@kernel_fn
def spawn(s, p, e, a):
    """Reset phase of every MPE2 scenario: agent a uniform in [-1, 1]^2, at rest."""
    place(s, e, a, 1.0)
    rest(s, e, a)


@kernel_fn
def place_landmarks(s, p, e):
    """Reset phase: every landmark uniform in [-1, 1]^2."""
    for j in range(p.num_agents, p.num_entities):
        place(s, e, j, 1.0)


@kernel_fn
def place_landmarks_and_goal(s, p, e):
    """`place_landmarks`, and one landmark drawn uniformly as ``s.goal`` (its entity index)."""
    s.goal[e] = p.num_agents + randint(s, e, p.num_entities, DRAW_GOAL, p.num_entities - p.num_agents)
    place_landmarks(s, p, e)


# ------------------------------------------------------------------ actions
@kernel_fn
def discrete_force(s, p, e, a, k):
    """MPE2's ``_set_action`` for movement k of Discrete(5): no-op, -x, +x, -y, +y, times the agent's accel."""
    scale = p.accel[a]
    s.force_x[e, a] = (-1.0 if k == 1 else (1.0 if k == 2 else 0.0)) * scale
    s.force_y[e, a] = (-1.0 if k == 3 else (1.0 if k == 4 else 0.0)) * scale


@kernel_fn
def continuous_force(s, p, e, a, ux, uy):
    """MPE2's ``_set_action`` for Box(0, 1, (5,)): ``ux = a[2] - a[1]``, ``uy = a[4] - a[3]`` (float32), times accel."""
    scale = p.accel[a]
    s.force_x[e, a] = np.float64(ux) * scale
    s.force_y[e, a] = np.float64(uy) * scale


@kernel_fn
def move_discrete(s, p, e, a, k):
    """A group-bound action reader (`PerAgent(move_discrete, group=...)`) for a Discrete(5) move."""
    discrete_force(s, p, e, a, k)


@kernel_fn
def move_continuous(s, p, e, a, u):
    """A group-bound action reader for a Box(0, 1, (5,)) move."""
    continuous_force(s, p, e, a, u[2] - u[1], u[4] - u[3])


# ------------------------------------------------------------------ physics
@kernel_fn
def _log1p_exp(v):
    """np.logaddexp(0, v), computed as NumPy does."""
    if v == 0.0:
        return math.log(2.0)
    if v < 0.0:
        return math.log1p(math.exp(v))
    return v + math.log1p(math.exp(-v))


@kernel_fn
def add_contact_forces(s, p, e, a):
    """Adds to agent a's force the contact force of every other colliding entity, in entity order, as MPE2 sums them."""
    if not (p.collide_all or p.collide[a]):
        return
    fx, fy = s.force_x[e, a], s.force_y[e, a]
    for j in range(p.num_entities):
        if j == a or not (p.collide_all or p.collide[j]):
            continue
        dx, dy = s.pos_x[e, a] - s.pos_x[e, j], s.pos_y[e, a] - s.pos_y[e, j]
        dist = math.sqrt(dx * dx + dy * dy)
        pen = _log1p_exp(-(dist - (p.size[a] + p.size[j])) / CONTACT_MARGIN) * CONTACT_MARGIN
        fx = CONTACT_FORCE * dx / dist * pen + fx
        fy = CONTACT_FORCE * dy / dist * pen + fy
    s.force_x[e, a], s.force_y[e, a] = fx, fy


@kernel_fn
def integrate(s, p, e, a):
    """MPE2's ``integrate_state`` for agent a of unit mass: move, damp, accelerate, clip the speed."""
    _integrate(s, p, e, a, 1.0)


@kernel_fn
def integrate_with_mass(s, p, e, a):
    """`integrate` for a world whose agents have masses of their own (`World`'s ``masses``)."""
    _integrate(s, p, e, a, p.mass[a])


@kernel_fn
def _integrate(s, p, e, a, mass):
    s.pos_x[e, a] += s.vel_x[e, a] * DT
    s.pos_y[e, a] += s.vel_y[e, a] * DT
    vx = s.vel_x[e, a] * (1 - DAMPING) + (s.force_x[e, a] / mass) * DT
    vy = s.vel_y[e, a] * (1 - DAMPING) + (s.force_y[e, a] / mass) * DT
    top = p.max_speed[a]
    if top > 0.0:
        speed = math.sqrt(vx * vx + vy * vy)
        if speed > top:
            vx = vx / speed * top
            vy = vy / speed * top
    s.vel_x[e, a], s.vel_y[e, a] = vx, vy


# ------------------------------------------------------------------ geometry
@kernel_fn
def distance(s, e, i, j):
    """|pos_i - pos_j|, as MPE2's ``np.sqrt(np.sum(np.square(delta)))``."""
    dx, dy = s.pos_x[e, i] - s.pos_x[e, j], s.pos_y[e, i] - s.pos_y[e, j]
    return math.sqrt(dx * dx + dy * dy)


@kernel_fn
def is_collision(s, p, e, i, j):
    """MPE2's scenarios' ``is_collision``: closer than the sum of the two sizes."""
    return distance(s, e, i, j) < p.size[i] + p.size[j]


@kernel_fn
def nearest(s, e, a, lo, hi, k):
    """The entity of ``[lo, hi)`` other than ``a`` that is the k-th nearest to ``a`` (0: nearest), or -1.

    MPE2's partial observability sorts by distance (``np.argsort``, which keeps the order of
    equal distances for so few entities); ties here go to the lower index likewise.
    """
    for j in range(lo, hi):
        if j == a:
            continue
        dj = distance(s, e, a, j)
        rank = 0
        for m in range(lo, hi):
            if m != a and m != j:
                dm = distance(s, e, a, m)
                if dm < dj or (dm == dj and m < j):
                    rank += 1
        if rank == k:
            return j
    return -1


@kernel_fn
def other_agent(s, p, e, a, j):
    """The j-th agent other than a (by distance where ``p.nearest_agents``), or -1 where there is none."""
    if p.nearest_agents:
        return nearest(s, e, a, 0, p.num_agents, j)
    return j + 1 if j >= a else j


@kernel_fn
def relative(s, e, a, j, axis):
    """Coordinate ``axis`` of entity j's position relative to agent a, as an observation (float32)."""
    if axis == 0:
        return np.float32(s.pos_x[e, j] - s.pos_x[e, a])
    return np.float32(s.pos_y[e, j] - s.pos_y[e, a])


@kernel_fn
def landmark_relative(s, p, e, a, k):
    """Element k of an observation's landmark block: landmark k // 2 relative to agent a.

    With MPE2's partial observability (``p.nearest_landmarks``) the slot holds the (k // 2)-th
    nearest landmark instead, and zero past their count.
    """
    j = p.num_agents + k // 2
    if p.nearest_landmarks:
        j = nearest(s, e, a, p.num_agents, p.num_entities, k // 2)
        if j < 0:
            return np.float32(0.0)
    return relative(s, e, a, j, k % 2)


@kernel_fn
def own(s, e, a, i):
    """Element i of ``[vel_x, vel_y, pos_x, pos_y]`` of agent a (the start of most observations)."""
    if i == 0:
        return np.float32(s.vel_x[e, a])
    if i == 1:
        return np.float32(s.vel_y[e, a])
    if i == 2:
        return np.float32(s.pos_x[e, a])
    return np.float32(s.pos_y[e, a])


# Fill functions of the observation blocks most scenarios share (`ObsBlock.fill`): element j of
# the block for agent a. simple and simple_spread keep their own observation functions, which ran
# faster (`benchmarks/tuning_records.py`).
@kernel_fn
def own_vel(s, p, e, a, j):
    """``self_vel``: the agent's velocity."""
    return np.float32(s.vel_x[e, a] if j == 0 else s.vel_y[e, a])


@kernel_fn
def own_pos(s, p, e, a, j):
    """``self_pos``: the agent's position."""
    return np.float32(s.pos_x[e, a] if j == 0 else s.pos_y[e, a])


@kernel_fn
def landmarks_relative(s, p, e, a, k):
    """``landmark_rel_pos`` of a scenario that sees every landmark: landmark k // 2 relative to agent a."""
    return relative(s, e, a, p.num_agents + k // 2, k % 2)


@kernel_fn
def others_relative(s, p, e, a, k):
    """``other_pos`` of a scenario that sees every other agent: the (k // 2)-th agent other than a, in agent order."""
    j = k // 2
    if j >= a:
        j += 1
    return relative(s, e, a, j, k % 2)


@kernel_fn
def goal_relative(s, p, e, a, k):
    """``goal_rel_pos`` of a scenario whose state names one goal entity per env (``s.goal``)."""
    return relative(s, e, a, s.goal[e], k)


@kernel_fn
def bound_penalty(x):
    """MPE2's penalty for a good agent at |coordinate| x: 0 below 0.9, linear to 1, then exponential up to 10."""
    if x < 0.9:
        return 0.0
    if x < 1.0:
        return (x - 0.9) * 10
    return min(math.exp(2 * x - 2), 10.0)


# ------------------------------------------------------------------ render
def render(state: dict, colors, radii, size: int = 320, max_cycles: int | None = None) -> np.ndarray:
    """MPE's view: each entity a disc of its radius and colour (``colors``: one RGB each), the camera on them all."""
    from gpu_zoo.core.api.render import Canvas

    xs, ys = state["pos_x"], state["pos_y"]
    cam = max(1.0, float(np.max(np.abs(np.concatenate([xs, ys])))) + 0.2)
    c = Canvas(size, (2 * cam, 2 * cam))
    order = list(range(len(colors) - 1, -1, -1))  # landmarks under the agents, as MPE2 draws them
    for j in order:
        c.disc(float(xs[j]) + cam, float(ys[j]) + cam, float(radii[j]), colors[j])
    if max_cycles:
        c.text_bar(int(state["t"]) / max_cycles)
    return c.image


def rgb(color) -> tuple[int, int, int]:
    """An MPE2 colour as 8-bit RGB (MPE2 lets some channels pass 1, the listener's for one: clipped)."""
    return tuple(min(255, int(round(255 * float(v)))) for v in color)
