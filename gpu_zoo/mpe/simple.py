"""MPE simple: one agent learns to reach a landmark.

The same environment as MPE2's ``simple_v3``, with the same agent name, observation layout,
action meanings, physics and reward, run as a Numba kernel on the particle world that every MPE
scenario shares (`gpu_zoo.mpe.particles`). The state is double precision, as in MPE2, so
trajectories match MPE2's step for step.

## Rules
One agent (``agent_0``, size 0.05, no collisions, action scale 5, no speed limit) and one
landmark. Each step the agent's force is its action times 5; it integrates as every MPE agent
does (``dt = 0.1``, damping 0.25). Its reward is minus its squared distance to the landmark.
Episodes are truncated after ``max_cycles`` steps.

Starts: the agent and the landmark uniform in [-1, 1]^2, at rest (MPE2's ranges, drawn from
gpu_zoo's counter-based generator rather than NumPy's).

## Observations
``self_vel (2), landmark_rel_pos (2)``, float32.

## Actions
Discrete(5): no-op, left, right, down, up. With ``continuous_actions=True``, ``Box(0, 1, (5,))``
whose force is ``(a[2] - a[1], a[4] - a[3])`` times 5.

## Version history
- v3: matches MPE2's ``simple_v3``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpu_zoo.core import EnvSpec, Group, ObsBlock, PerAgent, PerEnv, PerObs, kernel_fn
from gpu_zoo.mpe import particles
from gpu_zoo.mpe.particles import integrate, move_continuous, move_discrete, place_landmarks, relative, spawn
from gpu_zoo.mpe.scenario import check_common, move_space

AGENT_SIZE = LANDMARK_SIZE = 0.05
COLORS = (particles.rgb((0.25, 0.25, 0.25)), particles.rgb((0.75, 0.25, 0.25)))


@dataclass(frozen=True)
class SimpleParams:
    """MPE2's ``simple_v3`` constructor arguments."""

    max_cycles: int = 25
    continuous_actions: bool = False
    dynamic_rescaling: bool = True
    benchmark_data: bool = False

    def __post_init__(self):
        check_common(self)


def groups(p: SimpleParams) -> tuple[Group, ...]:
    return (Group("agent", 1, (ObsBlock("self_vel", 2), ObsBlock("landmark_rel_pos", 2)),
                  move_space(p.continuous_actions)),)


def world(p: SimpleParams) -> particles.World:
    return particles.World(sizes=(AGENT_SIZE, LANDMARK_SIZE), collides=(0, 0), accels=(None,))


def fields(p: SimpleParams):
    return world(p).fields()


def constants(p: SimpleParams) -> dict:
    return world(p).constants()


@kernel_fn
def reward(s, p, e, a):
    """Minus the squared distance to the landmark (MPE2's ``np.sum(np.square(...))``)."""
    dx, dy = s.pos_x[e, a] - s.pos_x[e, 1], s.pos_y[e, a] - s.pos_y[e, 1]
    s.rew[e, a] = np.float32(-(dx * dx + dy * dy))


@kernel_fn
def observe(s, p, e, a, i):
    if i == 0:
        return np.float32(s.vel_x[e, a])
    if i == 1:
        return np.float32(s.vel_y[e, a])
    return relative(s, e, a, 1, i - 2)


def render(state: dict, p: SimpleParams, size: int = 320) -> np.ndarray:
    return particles.render(state, COLORS, world(p).sizes, size, p.max_cycles)


SPEC = EnvSpec(
    id="simple_v3",
    params=SimpleParams,
    groups=groups,
    fields=fields,
    reset=(PerAgent(spawn), PerEnv(place_landmarks)),
    step=lambda p: (PerAgent(move_continuous if p.continuous_actions else move_discrete, group="agent"),
                    PerAgent(integrate), PerAgent(reward)),
    observe=(PerObs(observe),),
    constants=constants,
    render=render,
    module=__name__,
)
