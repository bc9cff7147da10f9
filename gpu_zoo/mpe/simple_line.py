"""MPE simple_line: N agents spread evenly along the line between two landmarks.

The same environment as MPE2's ``simple_line_v1``, with the same agent names, observation
layout, action meanings, physics and reward, run as a Numba kernel on the particle world that
every MPE scenario shares (`gpu_zoo.mpe.particles`). The state is double precision, as in MPE2,
so trajectories match MPE2's step for step.

## Rules
N agents (size 0.03, colliding with each other, action scale 5, no speed limit) and two
landmarks (size 0.02, passed through) 1.25 apart. The line's N target points are fixed at the
reset, evenly spaced from the first landmark to the second. After each step the agents are
matched to the points one to one at the least total distance (`gpu_zoo.mpe.targets`), and every
agent is paid minus the mean matched distance, each clipped to 2. Episodes are truncated after
``max_cycles`` steps; with ``terminate_on_success=True`` they end once every matched distance
is under 0.05.

Starts: agents uniform in [-1, 1]^2, at rest; the first landmark uniform in [-0.25, 0.25]^2,
the second 1.25 away from it in a uniform direction, turned by 5 degrees at a time until it lies
inside (-1, 1)^2 (MPE2's ranges, drawn from gpu_zoo's counter-based generator rather than
NumPy's).

## Observations
``self_vel (2), self_pos (2), landmark_rel_pos (4)``; float32.

## Actions
Discrete(5): no-op, left, right, down, up. With ``continuous_actions=True``, ``Box(0, 1, (5,))``
whose force is ``(a[2] - a[1], a[4] - a[3])`` times 5.

## Version history
- v1: matches MPE2's ``simple_line_v1``.
"""

from __future__ import annotations

import math

import numpy as np

from gpu_zoo.core import EnvSpec, PerAgent, PerEnv, PerObs, kernel_fn
from gpu_zoo.core.api.rng import uniform
from gpu_zoo.mpe import targets
from gpu_zoo.mpe.particles import place, spawn
from gpu_zoo.mpe.targets import ShapeParams

AGENT_SIZE, LANDMARK_SIZE = 0.03, 0.02
TOTAL_SEP = 1.25  # the landmarks' distance
TURN = np.float64(math.radians(5))  # MPE2's np.radians(5)
DRAW_ANGLE = 0  # the second landmark's draw (it is not placed): its direction from the first


def groups(p: ShapeParams):
    return targets.groups(p, 2)


def world(p: ShapeParams):
    return targets.world(p, AGENT_SIZE, LANDMARK_SIZE, 2)


def fields(p: ShapeParams):
    return targets.fields(p, world(p))


def constants(p: ShapeParams) -> dict:
    return world(p).constants()


@kernel_fn
def place_line(s, p, e):
    """The first landmark, the second 1.25 away inside the square, and the target points between them."""
    first, second = p.num_agents, p.num_agents + 1
    place(s, e, first, 0.25)
    x0, y0 = s.pos_x[e, first], s.pos_y[e, first]
    theta = 2 * np.pi * np.float64(uniform(s, e, second, DRAW_ANGLE))
    dx, dy = math.cos(theta), math.sin(theta)
    while not (abs(x0 + TOTAL_SEP * dx) < 1.0 and abs(y0 + TOTAL_SEP * dy) < 1.0):
        theta += TURN
        dx, dy = math.cos(theta), math.sin(theta)
    s.pos_x[e, second], s.pos_y[e, second] = x0 + TOTAL_SEP * dx, y0 + TOTAL_SEP * dy
    sep = TOTAL_SEP / (p.num_agents - 1) if p.num_agents > 1 else 0.0
    for j in range(p.num_agents):
        s.target_x[e, j] = x0 + j * sep * dx
        s.target_y[e, j] = y0 + j * sep * dy


def render(state: dict, p: ShapeParams, size: int = 320):
    return targets.render(state, p, world(p), size)


SPEC = EnvSpec(
    id="simple_line_v1",
    params=ShapeParams,
    groups=groups,
    fields=fields,
    reset=(PerAgent(spawn), PerEnv(place_line)),
    step=lambda p: targets.step(p),
    observe=(PerObs(),),
    constants=constants,
    render=render,
    module=__name__,
)
