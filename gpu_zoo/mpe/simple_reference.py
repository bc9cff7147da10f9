"""MPE simple_reference: two agents, each knowing only where the other must go, tell each other.

The same environment as MPE2's ``simple_reference_v3``, with the same agent names, observation
layout, action meanings, physics and rewards, run as a Numba kernel on the particle world that
every MPE scenario shares (`gpu_zoo.mpe.particles`). The state is double precision, as in MPE2,
so trajectories match MPE2's step for step.

## Rules
Two agents (``agent_0``, ``agent_1``, size 0.05, passing through each other, action scale 5, no
speed limit) and three landmarks (size 0.05: red, green and blue). At each reset every agent is
given a goal landmark *for the other agent*, drawn uniformly: agent 0 knows where agent 1 should
go and the reverse. Both move and speak at once; what an agent says (a 10-dimensional
communication state) is heard by the other on the next observation.

Agent a's own reward is minus the distance from the other agent to the landmark a knows of; the
shared reward is the mean of the two. Each is paid ``local_ratio`` of its own plus
``1 - local_ratio`` of the shared one. Episodes are truncated after ``max_cycles`` steps.

Starts: agents and landmarks uniform in [-1, 1]^2, at rest, silent (MPE2's ranges, drawn from
gpu_zoo's counter-based generator rather than NumPy's).

## Observations
``self_vel (2), landmark_rel_pos (6), goal_color (3), other_comm (10)``: the goal colour is the
colour of the landmark the agent knows of (its own channel 0.75, the others 0.25); float32.

## Actions
Discrete(50): ``say * 5 + move``, a move (no-op, left, right, down, up) and one of ten one-hot
words. With ``continuous_actions=True``, ``Box(0, 1, (15,))``: the move's five values (force
``(a[2] - a[1], a[4] - a[3])`` times 5), then the message itself.

## Version history
- v3: matches MPE2's ``simple_reference_v3``.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium
import numpy as np

from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerEnv, PerObs, Tuning, kernel_fn
from gpu_zoo.core.api.rng import randint
from gpu_zoo.mpe import particles
from gpu_zoo.mpe.particles import (
    continuous_force,
    discrete_force,
    distance,
    integrate,
    place_landmarks,
    relative,
    spawn,
)
from gpu_zoo.mpe.scenario import check_common

DIM_C = 10  # this scenario's message length
NUM_AGENTS, NUM_LANDMARKS = 2, 3
SIZE = 0.05  # every entity's: MPE2's default
MOVES = 5
_DIM, _LIT = 0.25, 0.75  # a landmark's colour: its own channel lit, the others dim


@dataclass(frozen=True)
class SimpleReferenceParams:
    """MPE2's ``simple_reference_v3`` constructor arguments."""

    local_ratio: float = 0.5
    max_cycles: int = 25
    continuous_actions: bool = False
    dynamic_rescaling: bool = True
    benchmark_data: bool = False

    def __post_init__(self):
        check_common(self)
        if not 0.0 <= self.local_ratio <= 1.0:
            raise ValueError(f"local_ratio is a proportion: it must be in [0, 1], got {self.local_ratio!r}")


def groups(p: SimpleReferenceParams) -> tuple[Group, ...]:
    act = (gymnasium.spaces.Box(0.0, 1.0, (MOVES + DIM_C,), np.float32) if p.continuous_actions
           else gymnasium.spaces.Discrete(MOVES * DIM_C))
    obs = (ObsBlock("self_vel", 2), ObsBlock("landmark_rel_pos", 2 * NUM_LANDMARKS), ObsBlock("goal_color", 3),
           ObsBlock("other_comm", DIM_C))
    return (Group("agent", NUM_AGENTS, obs, act),)


def world(p: SimpleReferenceParams) -> particles.World:
    return particles.World(sizes=(SIZE,) * (NUM_AGENTS + NUM_LANDMARKS), collides=(0,) * (NUM_AGENTS + NUM_LANDMARKS),
                           accels=(None,) * NUM_AGENTS)


def fields(p: SimpleReferenceParams) -> tuple[Field, ...]:
    return (*world(p).fields(),
            Field("goal", "i32", (NUM_AGENTS,), "entity index of the landmark each agent knows of (the other's goal)"),
            Field("message", "f32", (NUM_AGENTS, DIM_C), "each agent's word of the last step (float32 holds"
                                                     " each exactly: action values or a one-hot)"))


def constants(p: SimpleReferenceParams) -> dict:
    return world(p).constants()


# ------------------------------------------------------------------ phases
@kernel_fn
def spawn_silent(s, p, e, a):
    spawn(s, p, e, a)
    for c in range(DIM_C):
        s.message[e, a, c] = 0.0


@kernel_fn
def draw_goals(s, p, e):
    """Each agent's landmark for the other, then the landmarks' places (MPE2's order of draws)."""
    for a in range(p.num_agents):
        s.goal[e, a] = p.num_agents + randint(s, e, p.num_entities, a, NUM_LANDMARKS)
    place_landmarks(s, p, e)


@kernel_fn
def read_discrete_action(s, p, e, a, k):
    """Discrete(MOVES x DIM_C): move k % MOVES, word k // MOVES."""
    discrete_force(s, p, e, a, k % MOVES)
    word = k // MOVES
    for c in range(DIM_C):
        s.message[e, a, c] = 1.0 if c == word else 0.0


@kernel_fn
def read_continuous_action(s, p, e, a, u):
    """Box(0, 1, (MOVES + DIM_C,)): a move's five values, then the word."""
    continuous_force(s, p, e, a, u[2] - u[1], u[4] - u[3])
    for c in range(DIM_C):
        s.message[e, a, c] = u[MOVES + c]


@kernel_fn
def reward(s, p, e, a):
    """``local_ratio`` of minus the other's distance to the landmark a knows of, plus the rest of the mean of both."""
    own0 = -distance(s, e, 1, s.goal[e, 0])
    own1 = -distance(s, e, 0, s.goal[e, 1])
    shared = (own0 + own1) / NUM_AGENTS
    ratio = np.float64(p.local_ratio)
    s.rew[e, a] = np.float32(shared * (1 - ratio) + (own0 if a == 0 else own1) * ratio)


@kernel_fn
def observe(s, p, e, a, i):
    """Element i of MPE2's observation of agent a.

    One function rather than the blocks' fills: the landmarks and the velocity share one load path
    here (the fills' form ran slower: `benchmarks/tuning_records.py`).
    """
    if i < 2:
        return np.float32(s.vel_x[e, a] if i == 0 else s.vel_y[e, a])
    k = i - 2
    if k < 2 * NUM_LANDMARKS:
        return relative(s, e, a, p.num_agents + k // 2, k % 2)
    k -= 2 * NUM_LANDMARKS
    if k < 3:
        return np.float32(_LIT if k == s.goal[e, a] - p.num_agents else _DIM)
    return np.float32(s.message[e, 1 - a, k - 3])


def _landmark_color(j: int) -> tuple[float, float, float]:
    return tuple(_LIT if c == j else _DIM for c in range(3))


def render(state: dict, p: SimpleReferenceParams, size: int = 320) -> np.ndarray:
    # MPE2 paints each agent the colour of the landmark it should reach: the one the other knows of
    goals = [int(g) - NUM_AGENTS for g in state["goal"]]
    agents = (particles.rgb(_landmark_color(goals[1])), particles.rgb(_landmark_color(goals[0])))
    landmarks = tuple(particles.rgb(_landmark_color(j)) for j in range(NUM_LANDMARKS))
    return particles.render(state, agents + landmarks, world(p).sizes, size, p.max_cycles)


SPEC = EnvSpec(
    id="simple_reference_v3",
    params=SimpleReferenceParams,
    groups=groups,
    fields=fields,
    reset=(PerAgent(spawn_silent), PerEnv(draw_goals)),
    step=lambda p: (PerAgent(read_continuous_action if p.continuous_actions else read_discrete_action, group="agent"),
                    PerAgent(integrate), PerAgent(reward)),
    observe=(PerObs(observe),),
    constants=constants,
    render=render,
    module=__name__,
    tuning=Tuning(launch=lambda p, num_envs: {"threads_per_env": 8 if num_envs <= 2048 else 4}),
)
