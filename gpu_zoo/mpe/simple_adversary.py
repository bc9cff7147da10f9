"""MPE simple_adversary: good agents hide which landmark is the goal from an adversary that seeks it.

The same environment as MPE2's ``simple_adversary_v3``, with the same agent names, observation
layout, action meanings, physics and rewards, run as a Numba kernel on the particle world that
every MPE scenario shares (`gpu_zoo.mpe.particles`). The state is double precision, as in MPE2,
so trajectories match MPE2's step for step.

## Rules
One adversary (``adversary_0``) and ``N`` good agents (``agent_0 ..``), all of size 0.15, passing
through each other (no contacts), action scale 5, no speed limit; ``N`` landmarks (size 0.08),
one of them the goal, drawn at each reset. Every agent moves and integrates as every MPE agent
does (``dt = 0.1``, damping 0.25).

The adversary's reward is minus its distance to the goal. A good agent's is minus the distance
from the goal to the nearest good agent, plus the adversary's distance to the goal: the good
agents want one of them on the goal and the adversary away from it, and since the adversary
does not see which landmark is the goal, they spread over all of them to deceive it. Episodes
are truncated after ``max_cycles`` steps.

Starts: agents and landmarks uniform in [-1, 1]^2, at rest, the goal uniform among the
landmarks (MPE2's ranges, drawn from gpu_zoo's counter-based generator rather than NumPy's).

## Observations
A good agent: ``goal_rel_pos (2), landmark_rel_pos (2 per landmark), other_rel_pos (2 per other
agent, the adversary first, in agent order)``. The adversary: ``landmark_rel_pos,
other_rel_pos``; float32. With ``num_landmark_neighbors`` or ``num_agent_neighbors``, as in
MPE2, only that many of the nearest landmarks or other agents are observed, nearest first, the
missing slots zeros (the goal is always observed).

## Actions
Discrete(5): no-op, left, right, down, up. With ``continuous_actions=True``, ``Box(0, 1, (5,))``
whose force is ``(a[2] - a[1], a[4] - a[3])`` times 5.

## Version history
- v3: matches MPE2's ``simple_adversary_v3``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerEnv, PerObs, kernel_fn
from gpu_zoo.core.api.params import check_count
from gpu_zoo.mpe import particles
from gpu_zoo.mpe.particles import (
    distance,
    integrate,
    landmark_relative,
    move_continuous,
    move_discrete,
    other_agent,
    place_landmarks_and_goal,
    relative,
    spawn,
)
from gpu_zoo.mpe.scenario import check_common, check_neighbors, move_space

AGENT_SIZE, LANDMARK_SIZE = 0.15, 0.08
ADVERSARY_COLOR, AGENT_COLOR = particles.rgb((0.85, 0.35, 0.35)), particles.rgb((0.35, 0.35, 0.85))
LANDMARK_COLOR, GOAL_COLOR = particles.rgb((0.15, 0.15, 0.15)), particles.rgb((0.15, 0.65, 0.15))


@dataclass(frozen=True)
class SimpleAdversaryParams:
    """MPE2's ``simple_adversary_v3`` constructor arguments."""

    N: int = 2
    max_cycles: int = 25
    continuous_actions: bool = False
    dynamic_rescaling: bool = True
    benchmark_data: bool = False
    num_agent_neighbors: int | None = None
    num_landmark_neighbors: int | None = None

    def __post_init__(self):
        check_common(self)
        check_count("N", self.N)
        check_neighbors(self)


def observed(p: SimpleAdversaryParams) -> tuple[int, int]:
    """(landmarks, other agents) each agent observes."""
    return (p.N if p.num_landmark_neighbors is None else p.num_landmark_neighbors,
            p.N if p.num_agent_neighbors is None else p.num_agent_neighbors)


def groups(p: SimpleAdversaryParams) -> tuple[Group, ...]:
    L, K = observed(p)
    seen = (ObsBlock("landmark_rel_pos", 2 * L), ObsBlock("other_rel_pos", 2 * K))
    act = move_space(p.continuous_actions)
    return (Group("adversary", 1, seen, act), Group("agent", p.N, (ObsBlock("goal_rel_pos", 2), *seen), act))


def world(p: SimpleAdversaryParams) -> particles.World:
    A = p.N + 1
    return particles.World(sizes=(AGENT_SIZE,) * A + (LANDMARK_SIZE,) * p.N, collides=(0,) * (A + p.N),
                           accels=(None,) * A)


def fields(p: SimpleAdversaryParams) -> tuple[Field, ...]:
    return (*world(p).fields(), Field("goal", "i32", (), "entity index of the goal landmark"))


def constants(p: SimpleAdversaryParams) -> dict:
    L, K = observed(p)
    return {**world(p).constants(), "observed_landmarks": L, "observed_agents": K,
            "nearest_landmarks": p.num_landmark_neighbors is not None,
            "nearest_agents": p.num_agent_neighbors is not None}


# ------------------------------------------------------------------ phases
@kernel_fn
def reward_adversary(s, p, e, a, act):
    """Minus its distance to the goal."""
    s.rew[e, a] = np.float32(-distance(s, e, p.adversary_lo, s.goal[e]))


@kernel_fn
def reward_agent(s, p, e, a, act):
    """Minus the nearest good agent's distance to the goal, plus the adversary's."""
    g = s.goal[e]
    best = distance(s, e, p.agent_lo, g)
    for b in range(p.agent_lo + 1, p.agent_hi):
        d = distance(s, e, b, g)
        if d < best:
            best = d
    s.rew[e, a] = np.float32(-best + distance(s, e, p.adversary_lo, g))


@kernel_fn
def observe(s, p, e, a, i):
    """Element i of MPE2's observation of agent a.

    One function rather than the blocks' fills: every block is an entity's relative position, so the
    blocks pick the entity and share one load (the fills' form ran slower: `benchmarks/tuning_records.py`).
    """
    k = i
    if a >= p.agent_lo:
        if k < 2:
            return relative(s, e, a, s.goal[e], k)
        k -= 2
    if k < 2 * p.observed_landmarks:
        return landmark_relative(s, p, e, a, k)
    k -= 2 * p.observed_landmarks
    j = other_agent(s, p, e, a, k // 2)
    if j < 0:
        return np.float32(0.0)
    return relative(s, e, a, j, k % 2)


def step(p: SimpleAdversaryParams) -> tuple:
    move = move_continuous if p.continuous_actions else move_discrete
    return (PerAgent(move, group="adversary"), PerAgent(move, group="agent"), PerAgent(integrate),
            PerAgent(reward_adversary, group="adversary"), PerAgent(reward_agent, group="agent"))


def render(state: dict, p: SimpleAdversaryParams, size: int = 320) -> np.ndarray:
    landmarks = [GOAL_COLOR if p.N + 1 + i == int(state["goal"]) else LANDMARK_COLOR for i in range(p.N)]
    return particles.render(state, (ADVERSARY_COLOR,) + (AGENT_COLOR,) * p.N + tuple(landmarks), world(p).sizes, size,
                            p.max_cycles)


SPEC = EnvSpec(
    id="simple_adversary_v3",
    params=SimpleAdversaryParams,
    groups=groups,
    fields=fields,
    reset=(PerAgent(spawn), PerEnv(place_landmarks_and_goal)),
    step=step,
    observe=(PerObs(observe),),
    constants=constants,
    render=render,
    module=__name__,
)
