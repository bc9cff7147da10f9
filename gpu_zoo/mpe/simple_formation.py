"""MPE simple_formation: N agents form a circle round a landmark.

The same environment as MPE2's ``simple_formation_v1``, with the same agent names, observation
layout, action meanings, physics and reward, run as a Numba kernel on the particle world that
every MPE scenario shares (`gpu_zoo.mpe.particles`). The state is double precision, as in MPE2,
so trajectories match MPE2's step for step.

## Rules
N agents (size 0.05, colliding with each other, action scale 5, no speed limit) and one landmark
(size 0.03, passed through). After each step the formation's N target points are placed evenly
on the circle of radius 0.5 round the landmark, the first at the smallest angle (in [0, 2 pi))
at which an agent sees the landmark's far side, that is of ``agent - landmark``; the agents are
matched to the points one to one at the least total distance (`gpu_zoo.mpe.targets`). Every
agent is paid minus the mean matched distance, each clipped to 2. Episodes are truncated after
``max_cycles`` steps; with ``terminate_on_success=True`` they end once every matched distance
is under 0.05.

Starts: agents uniform in [-1, 1]^2 and the landmark in [-0.5, 0.5]^2, at rest (MPE2's ranges,
drawn from gpu_zoo's counter-based generator rather than NumPy's).

## Observations
``self_vel (2), self_pos (2), landmark_rel_pos (2)``; float32.

## Actions
Discrete(5): no-op, left, right, down, up. With ``continuous_actions=True``, ``Box(0, 1, (5,))``
whose force is ``(a[2] - a[1], a[4] - a[3])`` times 5.

## Version history
- v1: matches MPE2's ``simple_formation_v1``.
"""

from __future__ import annotations

import math

from gpu_zoo.core import EnvSpec, PerAgent, PerEnv, PerObs, kernel_fn
from gpu_zoo.mpe import targets
from gpu_zoo.mpe.particles import place, spawn
from gpu_zoo.mpe.targets import ShapeParams

AGENT_SIZE, LANDMARK_SIZE = 0.05, 0.03
TARGET_RADIUS = 0.5


def groups(p):
    return targets.groups(p, 1)


def world(p):
    return targets.world(p, AGENT_SIZE, LANDMARK_SIZE, 1)


def fields(p):
    return targets.fields(p, world(p))


def constants(p) -> dict:
    return world(p).constants()


@kernel_fn
def place_landmark(s, p, e):
    place(s, e, p.num_agents, 0.5)


@kernel_fn
def _angle(dx, dy):
    """MPE2's ``_find_angle``: the angle of (dx, dy) in [0, 2 pi)."""
    angle = math.atan2(dy, dx)
    if angle < 0:
        angle += 2 * math.pi
    return angle


@kernel_fn
def place_targets(s, p, e):
    """The circle's points round the landmark, the first at the smallest of the agents' angles."""
    lx, ly = s.pos_x[e, p.num_agents], s.pos_y[e, p.num_agents]
    theta = _angle(s.pos_x[e, 0] - lx, s.pos_y[e, 0] - ly)
    for a in range(1, p.num_agents):
        theta = min(theta, _angle(s.pos_x[e, a] - lx, s.pos_y[e, a] - ly))
    sep = (2 * math.pi) / p.num_agents
    for j in range(p.num_agents):
        s.target_x[e, j] = lx + TARGET_RADIUS * math.cos(theta + j * sep)
        s.target_y[e, j] = ly + TARGET_RADIUS * math.sin(theta + j * sep)


def render(state: dict, p, size: int = 320):
    return targets.render(state, p, world(p), size)


SPEC = EnvSpec(
    id="simple_formation_v1",
    params=ShapeParams,
    groups=groups,
    fields=fields,
    reset=(PerAgent(spawn), PerEnv(place_landmark)),
    step=lambda p: targets.step(p, place_targets),
    observe=(PerObs(),),
    constants=constants,
    render=render,
    module=__name__,
)
