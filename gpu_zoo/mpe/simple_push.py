"""MPE simple_push: an agent heads for its goal landmark while an adversary pushes it away.

The same environment as MPE2's ``simple_push_v3``, with the same agent names, observation
layout, action meanings, physics and rewards, run as a Numba kernel on the particle world that
every MPE scenario shares (`gpu_zoo.mpe.particles`). The state is double precision, as in MPE2,
so trajectories match MPE2's step for step.

## Rules
One adversary (``adversary_0``) and one good agent (``agent_0``), both of size 0.05 and
colliding (each pushes the other with MPE's soft contact force), action scale 5, no speed
limit; two landmarks (size 0.05, passed through), one of them the goal, drawn at each reset.

The good agent's reward is minus its distance to the goal. The adversary's is the good agent's
distance to the goal minus its own: it wants to sit on the goal and keep the agent off it,
without knowing which landmark the goal is. Episodes are truncated after ``max_cycles`` steps.

Starts: agents and landmarks uniform in [-1, 1]^2, at rest, the goal uniform among the two
landmarks (MPE2's ranges, drawn from gpu_zoo's counter-based generator rather than NumPy's).

## Observations
The good agent: ``self_vel (2), goal_rel_pos (2), self_color (3), landmark_rel_pos (4),
landmark_color (6), other_rel_pos (2)``: landmark i is grey with its channel i + 1 raised (0.9),
and the agent is grey with the goal's channel raised (0.75), so its colour tells it the goal.
The adversary: ``self_vel (2), landmark_rel_pos (4), other_rel_pos (2)``; float32.

## Actions
Discrete(5): no-op, left, right, down, up. With ``continuous_actions=True``, ``Box(0, 1, (5,))``
whose force is ``(a[2] - a[1], a[4] - a[3])`` times 5.

## Version history
- v3: matches MPE2's ``simple_push_v3``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerEnv, PerObs, kernel_fn
from gpu_zoo.mpe import particles
from gpu_zoo.mpe.particles import (
    add_contact_forces,
    distance,
    goal_relative,
    integrate,
    landmarks_relative,
    move_continuous,
    move_discrete,
    others_relative,
    own_vel,
    place_landmarks_and_goal,
    spawn,
)
from gpu_zoo.mpe.scenario import check_common, move_space

SIZE = 0.05  # every entity's: MPE2's default
NUM_LANDMARKS = 2
ADVERSARY_COLOR = particles.rgb((0.75, 0.25, 0.25))


@dataclass(frozen=True)
class SimplePushParams:
    """MPE2's ``simple_push_v3`` constructor arguments."""

    max_cycles: int = 25
    continuous_actions: bool = False
    dynamic_rescaling: bool = True
    benchmark_data: bool = False

    def __post_init__(self):
        check_common(self)


def groups(p: SimplePushParams) -> tuple[Group, ...]:
    act = move_space(p.continuous_actions)
    vel = ObsBlock("self_vel", 2, fill=own_vel)
    landmarks = ObsBlock("landmark_rel_pos", 2 * NUM_LANDMARKS, fill=landmarks_relative)
    other = ObsBlock("other_rel_pos", 2, fill=others_relative)
    return (Group("adversary", 1, (vel, landmarks, other), act),
            Group("agent", 1, (vel, ObsBlock("goal_rel_pos", 2, fill=goal_relative),
                               ObsBlock("self_color", 3, fill=self_color), landmarks,
                               ObsBlock("landmark_color", 3 * NUM_LANDMARKS, fill=landmark_color), other), act))


def world(p: SimplePushParams) -> particles.World:
    return particles.World(sizes=(SIZE,) * (2 + NUM_LANDMARKS), collides=(1, 1) + (0,) * NUM_LANDMARKS,
                           accels=(None, None))


def fields(p: SimplePushParams) -> tuple[Field, ...]:
    return (*world(p).fields(), Field("goal", "i32", (), "entity index of the goal landmark"))


def constants(p: SimplePushParams) -> dict:
    return world(p).constants()


# ------------------------------------------------------------------ phases
@kernel_fn
def reward_adversary(s, p, e, a, act):
    """The good agent's distance to the goal, minus its own."""
    g = s.goal[e]
    s.rew[e, a] = np.float32(distance(s, e, p.agent_lo, g) - distance(s, e, g, a))


@kernel_fn
def reward_agent(s, p, e, a, act):
    """Minus its distance to the goal."""
    s.rew[e, a] = np.float32(-distance(s, e, a, s.goal[e]))


def step(p: SimplePushParams) -> tuple:
    move = move_continuous if p.continuous_actions else move_discrete
    return (PerAgent(move, group="adversary"), PerAgent(move, group="agent"), PerAgent(add_contact_forces),
            PerAgent(integrate), PerAgent(reward_adversary, group="adversary"), PerAgent(reward_agent, group="agent"))


@kernel_fn
def _channel(base, raised, c, lit):
    """Channel c of MPE2's colour ``base`` (grey) with channel ``lit`` raised by ``raised``."""
    return np.float32(base + raised) if c == lit else np.float32(base)


@kernel_fn
def self_color(s, p, e, a, c):
    """The good agent's colour: grey with the goal landmark's channel raised."""
    return _channel(0.25, 0.5, c, s.goal[e] - p.num_agents + 1)


@kernel_fn
def landmark_color(s, p, e, a, k):
    """The landmarks' colours: landmark i lights channel i + 1."""
    return _channel(0.1, 0.8, k % 3, k // 3 + 1)


def render(state: dict, p: SimplePushParams, size: int = 320) -> np.ndarray:
    goal = int(state["goal"]) - 2
    agent = particles.rgb([0.25 + (0.5 if c == goal + 1 else 0.0) for c in range(3)])
    landmarks = tuple(particles.rgb([0.1 + (0.8 if c == i + 1 else 0.0) for c in range(3)]) for i in range(2))
    return particles.render(state, (ADVERSARY_COLOR, agent, *landmarks), world(p).sizes, size, p.max_cycles)


SPEC = EnvSpec(
    id="simple_push_v3",
    params=SimplePushParams,
    groups=groups,
    fields=fields,
    reset=(PerAgent(spawn), PerEnv(place_landmarks_and_goal)),
    step=step,
    observe=(PerObs(),),
    constants=constants,
    render=render,
    module=__name__,
)
