"""MPE simple_spread: N agents cover N landmarks together without bumping into each other.

The same environment as MPE2's ``simple_spread_v3``, with the same agent names, observation
layout, action meanings, physics and rewards, run as a Numba kernel on the particle world that
every MPE scenario shares (`gpu_zoo.mpe.particles`). The state is double precision, as in MPE2,
so trajectories match MPE2's step for step.

## Rules
``N`` agents (``agent_0 ..``, size 0.15, colliding, action scale 5, no speed limit) and ``N``
landmarks (size 0.05, passed through). Each step every agent's force is its action times 5,
plus the soft contact force of every other agent it overlaps; it then integrates as every MPE
agent does (``dt = 0.1``, damping 0.25).

Rewards mix a shared part and a local one: ``global * (1 - local_ratio) + local * local_ratio``.
The shared part is minus the sum over landmarks of the distance from each landmark to its
nearest agent; an agent's local part is -1 for every other agent it collides with (closer than
0.3). Episodes are truncated after ``max_cycles`` steps; with ``terminate_on_success`` they end
earlier, once every landmark has an agent within 0.1 of it.

Starts: agents and landmarks uniform in [-1, 1]^2, at rest (MPE2's ranges, drawn from gpu_zoo's
counter-based generator rather than NumPy's).

## Observations
``self_vel (2), self_pos (2), landmark_rel_pos (2 per landmark), other_rel_pos (2 per other
agent, in agent order), other_comm (2 per other agent: zeros, as every agent is silent)``,
float32. With ``num_landmark_neighbors`` or ``num_agent_neighbors``, as in MPE2, only that many
of the nearest landmarks or other agents are observed, nearest first, the missing slots zeros.

## Actions
Discrete(5): no-op, left, right, down, up. With ``continuous_actions=True``, ``Box(0, 1, (5,))``
whose force is ``(a[2] - a[1], a[4] - a[3])`` times 5.

## Version history
- v3: matches MPE2's ``simple_spread_v3`` (without its ``curriculum`` stages).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerEnv, PerObs, Tuning, kernel_fn
from gpu_zoo.core.api.params import check_count
from gpu_zoo.mpe import particles
from gpu_zoo.mpe.particles import (
    DIM_C,
    add_contact_forces,
    distance,
    integrate,
    is_collision,
    landmark_relative,
    move_continuous,
    move_discrete,
    other_agent,
    own,
    place_landmarks,
    relative,
    spawn,
)
from gpu_zoo.mpe.scenario import check_common, check_neighbors, move_space

AGENT_SIZE, LANDMARK_SIZE = 0.15, 0.05
CAPTURE_RADIUS = 0.1
AGENT_COLOR, LANDMARK_COLOR = particles.rgb((0.35, 0.35, 0.85)), particles.rgb((0.25, 0.25, 0.25))


@dataclass(frozen=True)
class SimpleSpreadParams:
    """MPE2's ``simple_spread_v3`` constructor arguments."""

    N: int = 3
    local_ratio: float = 0.5
    max_cycles: int = 25
    continuous_actions: bool = False
    dynamic_rescaling: bool = True
    benchmark_data: bool = False
    curriculum: bool = False
    terminate_on_success: bool = False
    num_agent_neighbors: int | None = None
    num_landmark_neighbors: int | None = None

    def __post_init__(self):
        check_common(self)
        check_count("N", self.N)
        if not 0.0 <= self.local_ratio <= 1.0:
            raise ValueError(f"local_ratio is a proportion: it must be in [0, 1], got {self.local_ratio!r}")
        check_neighbors(self)
        if self.curriculum:
            raise NotImplementedError("simple_spread_v3: curriculum=True (MPE2's stages advanced by method calls) is "
                                      "not supported; pass curriculum=False")


def observed_landmarks(p: SimpleSpreadParams) -> int:
    return p.N if p.num_landmark_neighbors is None else p.num_landmark_neighbors


def observed_agents(p: SimpleSpreadParams) -> int:
    return p.N - 1 if p.num_agent_neighbors is None else p.num_agent_neighbors


def groups(p: SimpleSpreadParams) -> tuple[Group, ...]:
    L, K = observed_landmarks(p), observed_agents(p)
    obs = (ObsBlock("self_vel", 2), ObsBlock("self_pos", 2), ObsBlock("landmark_rel_pos", 2 * L),
           ObsBlock("other_rel_pos", 2 * K), ObsBlock("other_comm", DIM_C * K))
    return (Group("agent", p.N, obs, move_space(p.continuous_actions)),)


def world(p: SimpleSpreadParams) -> particles.World:
    return particles.World(sizes=(AGENT_SIZE,) * p.N + (LANDMARK_SIZE,) * p.N, collides=(1,) * p.N + (0,) * p.N,
                           accels=(None,) * p.N)


def fields(p: SimpleSpreadParams) -> tuple[Field, ...]:
    return (*world(p).fields(),
            Field("shared_rew", "f64", (), "this step's shared reward, before the mix with each agent's own"))


def constants(p: SimpleSpreadParams) -> dict:
    return {**world(p).constants(), "observed_landmarks": observed_landmarks(p),
            "observed_agents": observed_agents(p), "nearest_landmarks": p.num_landmark_neighbors is not None,
            "nearest_agents": p.num_agent_neighbors is not None}


# ------------------------------------------------------------------ phases
@kernel_fn
def _nearest_agent_distance(s, p, e, j):
    best = distance(s, e, 0, j)
    for a in range(1, p.num_agents):
        d = distance(s, e, a, j)
        if d < best:
            best = d
    return best


@kernel_fn
def shared_reward(s, p, e):
    """Minus the sum over landmarks of their nearest agent's distance (MPE2's ``global_reward``)."""
    r = 0.0
    for j in range(p.num_agents, p.num_entities):
        r -= _nearest_agent_distance(s, p, e, j)
    s.shared_rew[e] = r


@kernel_fn
def reward(s, p, e, a):
    own_rew = 0.0
    for b in range(p.num_agents):
        if b != a and is_collision(s, p, e, b, a):
            own_rew -= 1.0
    ratio = np.float64(p.local_ratio)
    s.rew[e, a] = np.float32(s.shared_rew[e] * (1 - ratio) + own_rew * ratio)


@kernel_fn
def check_success(s, p, e):
    """With terminate_on_success: the game ends once every landmark has an agent within the capture radius."""
    if not p.terminate_on_success or s.t[e] >= p.max_cycles:
        return
    for j in range(p.num_agents, p.num_entities):
        if _nearest_agent_distance(s, p, e, j) >= CAPTURE_RADIUS:
            return
    s.over[e] = 1


@kernel_fn
def observe(s, p, e, a, i):
    """Element i of MPE2's observation of agent a."""
    if i < 4:
        return own(s, e, a, i)
    k = i - 4
    if k < 2 * p.observed_landmarks:
        return landmark_relative(s, p, e, a, k)
    k -= 2 * p.observed_landmarks
    if k < 2 * p.observed_agents:
        j = other_agent(s, p, e, a, k // 2)
        if j < 0:
            return np.float32(0.0)
        return relative(s, e, a, j, k % 2)
    return np.float32(0.0)  # the others' messages: every agent is silent


def render(state: dict, p: SimpleSpreadParams, size: int = 320) -> np.ndarray:
    return particles.render(state, (AGENT_COLOR,) * p.N + (LANDMARK_COLOR,) * p.N, world(p).sizes, size,
                            p.max_cycles)


SPEC = EnvSpec(
    id="simple_spread_v3",
    params=SimpleSpreadParams,
    groups=groups,
    fields=fields,
    reset=(PerAgent(spawn), PerEnv(place_landmarks)),
    step=lambda p: (PerAgent(move_continuous if p.continuous_actions else move_discrete, group="agent"),
                    PerAgent(add_contact_forces), PerAgent(integrate), PerEnv(shared_reward), PerAgent(reward),
                    PerEnv(check_success)),
    observe=(PerObs(observe),),
    constants=constants,
    render=render,
    module=__name__,
    tuning=Tuning(launch=lambda p, num_envs: {"max_registers": 64}),
)
