"""The particle world every MPE scenario shares: entities, contact forces, integration, collisions.

MPE2's ``World.step`` and the parts of its ``SimpleEnv`` that act on it, as kernel functions a
scenario's phases call. Entities are the agents, in agent order, then the landmarks. A scenario
gives each entity's properties as constant tables (`world_fields`), written once into every
environment; the state is double precision, as in MPE2, and every sum runs in MPE2's order, so
trajectories match MPE2's bit for bit.

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

import numpy as np

from gpu_zoo.core import Field, kernel_fn
from gpu_zoo.core.rng import randint, uniform

# MPE2's World attributes (not arguments of any scenario)
DT = 0.1
DAMPING = 0.25
CONTACT_FORCE = 100.0
CONTACT_MARGIN = 1e-3
SENSITIVITY = 5.0
"""An agent's action scale when it has no ``accel`` of its own (MPE2's ``_set_action``)."""
DIM_C = 2
"""Length of a communication vector in the scenarios that carry one, spoken or not."""


def world_fields(sizes, collides, accels=None, max_speeds=None, masses=None) -> tuple[Field, ...]:
    """The particle state of ``len(sizes)`` entities of which the first ``len(accels)`` are agents.

    ``sizes`` and ``collides`` per entity; ``accels`` and ``max_speeds`` per agent (None for
    MPE2's None: the default sensitivity, no speed limit); ``masses`` per agent where they are
    not all 1, for `integrate_with_mass`.
    """
    N, A = len(sizes), len(accels)
    mass = () if masses is None else (Field("mass", "f64", (A,), "mass of each agent",
                                            init=tuple(float(v) for v in masses)),)
    return (*mass,
        Field("pos_x", "f64", (N,), "x of agents, then landmarks"),
        Field("pos_y", "f64", (N,), "y of agents, then landmarks"),
        Field("vel_x", "f64", (A,), "x velocity of each agent"),
        Field("vel_y", "f64", (A,), "y velocity of each agent"),
        Field("force_x", "f64", (A,), "x force of the last step (action, then contacts)"),
        Field("force_y", "f64", (A,), "y force of the last step (action, then contacts)"),
        Field("size", "f64", (N,), "radius of each entity", init=tuple(float(v) for v in sizes)),
        Field("collide", "u8", (N,), "whether each entity takes part in contacts",
              init=tuple(int(v) for v in collides)),
        Field("accel", "f64", (A,), "action scale of each agent",
              init=tuple(SENSITIVITY if v is None else float(v) for v in accels)),
        Field("max_speed", "f64", (A,), "speed limit of each agent (0: none)",
              init=tuple(0.0 if v is None else float(v) for v in (max_speeds or [None] * A))),
    )


# ------------------------------------------------------------------ starts
@kernel_fn
def place(s, e, j, half_width):
    """Entity j uniform in [-half_width, half_width]^2, at rest (MPE2's ``np_random.uniform``, another stream)."""
    s.pos_x[e, j] = 2.0 * half_width * np.float64(uniform(s, e, j, 0)) - half_width
    s.pos_y[e, j] = 2.0 * half_width * np.float64(uniform(s, e, j, 1)) - half_width


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
    s.goal[e] = p.num_agents + randint(s, e, p.num_entities, 0, p.num_entities - p.num_agents)
    place_landmarks(s, p, e)


# ------------------------------------------------------------------ actions
@kernel_fn
def discrete_force(s, e, a, k):
    """MPE2's ``_set_action`` for movement k of Discrete(5): no-op, -x, +x, -y, +y, times the agent's accel."""
    scale = s.accel[e, a]
    s.force_x[e, a] = (-1.0 if k == 1 else (1.0 if k == 2 else 0.0)) * scale
    s.force_y[e, a] = (-1.0 if k == 3 else (1.0 if k == 4 else 0.0)) * scale


@kernel_fn
def continuous_force(s, e, a, ux, uy):
    """MPE2's ``_set_action`` for Box(0, 1, (5,)): ``ux = a[2] - a[1]``, ``uy = a[4] - a[3]`` (float32), times accel."""
    scale = s.accel[e, a]
    s.force_x[e, a] = np.float64(ux) * scale
    s.force_y[e, a] = np.float64(uy) * scale


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
    if not s.collide[e, a]:
        return
    fx, fy = s.force_x[e, a], s.force_y[e, a]
    for j in range(p.num_entities):
        if j == a or not s.collide[e, j]:
            continue
        dx, dy = s.pos_x[e, a] - s.pos_x[e, j], s.pos_y[e, a] - s.pos_y[e, j]
        dist = math.sqrt(dx * dx + dy * dy)
        pen = _log1p_exp(-(dist - (s.size[e, a] + s.size[e, j])) / CONTACT_MARGIN) * CONTACT_MARGIN
        fx = CONTACT_FORCE * dx / dist * pen + fx
        fy = CONTACT_FORCE * dy / dist * pen + fy
    s.force_x[e, a], s.force_y[e, a] = fx, fy


@kernel_fn
def integrate(s, p, e, a):
    """MPE2's ``integrate_state`` for agent a of unit mass: move, damp, accelerate, clip the speed."""
    _integrate(s, e, a, 1.0)


@kernel_fn
def integrate_with_mass(s, p, e, a):
    """`integrate` for a world whose agents have masses of their own (a ``mass`` field, one per agent)."""
    _integrate(s, e, a, s.mass[e, a])


@kernel_fn
def _integrate(s, e, a, mass):
    s.pos_x[e, a] += s.vel_x[e, a] * DT
    s.pos_y[e, a] += s.vel_y[e, a] * DT
    vx = s.vel_x[e, a] * (1 - DAMPING) + (s.force_x[e, a] / mass) * DT
    vy = s.vel_y[e, a] * (1 - DAMPING) + (s.force_y[e, a] / mass) * DT
    top = s.max_speed[e, a]
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
def is_collision(s, e, i, j):
    """MPE2's scenarios' ``is_collision``: closer than the sum of the two sizes."""
    return distance(s, e, i, j) < s.size[e, i] + s.size[e, j]


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
def relative(s, e, a, j, axis):
    """Coordinate ``axis`` of entity j's position relative to agent a, as an observation (float32)."""
    if axis == 0:
        return np.float32(s.pos_x[e, j] - s.pos_x[e, a])
    return np.float32(s.pos_y[e, j] - s.pos_y[e, a])


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


# ------------------------------------------------------------------ render
def render(state: dict, colors, size: int = 320, max_cycles: int | None = None) -> np.ndarray:
    """MPE's view: each entity a disc of its size and colour (``colors``: one RGB each), the camera on them all."""
    from gpu_zoo.core.render import Canvas

    xs, ys, radii = state["pos_x"], state["pos_y"], state["size"]
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
