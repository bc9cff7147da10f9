"""MPE simple_world_comm: predators led by a speaking leader hunt prey that eat and hide in forests.

The same environment as MPE2's ``simple_world_comm_v3``, with the same agent names,
observation layout, action meanings, physics and rewards, run as a Numba kernel on the particle
world that every MPE scenario shares (`gpu_zoo.mpe.particles`). The state is double precision,
as in MPE2, so trajectories match MPE2's step for step.

## Rules
``num_adversaries`` predators (size 0.075, action scale 3, top speed 1): the first,
``leadadversary_0``, also speaks a 4-dimensional word each step that every predator hears; the
others are ``adversary_0 ...``. ``num_good`` prey (``agent_0 ...``, size 0.045, action scale 4,
top speed 1.3). Agents collide with each other and with ``num_obstacles`` obstacles (size 0.2);
``num_food`` food (size 0.03) and ``num_forests`` forests (size 0.3) are passed through.

A prey is paid -5 for each predator touching it, minus twice MPE2's boundary penalty per axis
(0 inside 0.9, then rising linearly to 1 at the edge, then ``exp(2|x| - 2)`` up to 10), +2 for
each food it touches, and minus 0.05 times its distance to the nearest food. A predator is paid
minus 0.1 times its distance to the nearest prey, plus 5 for every (prey, predator) pair in
contact. Episodes are truncated after ``max_cycles`` steps.

Forests hide: an agent sees another's position (and a prey's velocity) only if both are in one
forest, or neither is in any forest; the leader sees everyone. What it cannot see reads 0.

Starts: agents uniform in [-1, 1]^2, at rest; obstacles, food and forests in [-0.9, 0.9]^2
(MPE2's ranges, drawn from gpu_zoo's counter-based generator rather than NumPy's).

## Observations
Predators (the leader too): ``self_vel (2), self_pos (2), landmark_rel_pos (2 per obstacle,
food and forest), other_rel_pos (2 per other agent), prey_vel (2 per prey), in_forest (1 per
forest: 1 or -1), leader_comm (4)``. Prey: ``self_vel, self_pos, landmark_rel_pos,
other_rel_pos, in_forest, other_prey_vel (2 per other prey)``; float32.

## Actions
Discrete(5): no-op, left, right, down, up; the leader's Discrete(20) is ``word * 5 + move``.
With ``continuous_actions=True``, ``Box(0, 1, (5,))`` whose force is ``(a[2] - a[1], a[4] -
a[3])`` times the agent's scale; the leader's ``Box(0, 1, (9,))`` adds its word.

## Version history
- v3: matches MPE2's ``simple_world_comm_v3``.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium
import numpy as np

from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerEnv, PerObs, Tuning, kernel_fn
from gpu_zoo.core.api.params import check_count
from gpu_zoo.mpe import particles
from gpu_zoo.mpe.particles import (
    add_contact_forces,
    bound_penalty,
    continuous_force,
    discrete_force,
    distance,
    integrate,
    is_collision,
    move_continuous,
    move_discrete,
    own,
    place,
    relative,
    spawn,
)
from gpu_zoo.mpe.scenario import check_common, move_space

DIM_C = 4  # the leader's word length
MOVES = 5
ADVERSARY_SIZE, GOOD_SIZE = 0.075, 0.045
OBSTACLE_SIZE, FOOD_SIZE, FOREST_SIZE = 0.2, 0.03, 0.3


@dataclass(frozen=True)
class SimpleWorldCommParams:
    """MPE2's ``simple_world_comm_v3`` constructor arguments."""

    num_good: int = 2
    num_adversaries: int = 4
    num_obstacles: int = 1
    num_food: int = 2
    max_cycles: int = 25
    num_forests: int = 2
    continuous_actions: bool = False
    dynamic_rescaling: bool = True
    benchmark_data: bool = False

    def __post_init__(self):
        check_common(self)
        for name, low in (("num_good", 1), ("num_adversaries", 1), ("num_obstacles", 0), ("num_food", 1),
                          ("num_forests", 0)):
            check_count(name, getattr(self, name), low)


def _landmarks(p: SimpleWorldCommParams) -> int:
    return p.num_obstacles + p.num_food + p.num_forests


def groups(p: SimpleWorldCommParams) -> tuple[Group, ...]:
    A, G, R = p.num_adversaries, p.num_good, p.num_forests
    seen = (ObsBlock("self_vel", 2), ObsBlock("self_pos", 2), ObsBlock("landmark_rel_pos", 2 * _landmarks(p)),
            ObsBlock("other_rel_pos", 2 * (A + G - 1)))
    hunter = (*seen, ObsBlock("prey_vel", 2 * G), ObsBlock("in_forest", R), ObsBlock("leader_comm", DIM_C))
    prey = (*seen, ObsBlock("in_forest", R), ObsBlock("other_prey_vel", 2 * (G - 1)))
    speak = (gymnasium.spaces.Box(0.0, 1.0, (MOVES + DIM_C,), np.float32) if p.continuous_actions
             else gymnasium.spaces.Discrete(MOVES * DIM_C))
    move = move_space(p.continuous_actions)
    out = [Group("leadadversary", 1, hunter, speak)]
    if A > 1:
        out.append(Group("adversary", A - 1, hunter, move))
    out.append(Group("agent", G, prey, move))
    return tuple(out)


def world(p: SimpleWorldCommParams) -> particles.World:
    A, G = p.num_adversaries, p.num_good
    sizes = ((ADVERSARY_SIZE,) * A + (GOOD_SIZE,) * G + (OBSTACLE_SIZE,) * p.num_obstacles + (FOOD_SIZE,) * p.num_food
             + (FOREST_SIZE,) * p.num_forests)
    collides = (1,) * (A + G + p.num_obstacles) + (0,) * (p.num_food + p.num_forests)
    return particles.World(sizes=sizes, collides=collides, accels=(3.0,) * A + (4.0,) * G,
                           max_speeds=(1.0,) * A + (1.3,) * G)


def fields(p: SimpleWorldCommParams) -> tuple[Field, ...]:
    return (*world(p).fields(), Field("message", "f32", (DIM_C,), "the leader's word of the last step (float32 "
                                                                  "holds each exactly: action values or a one-hot)"))


def constants(p: SimpleWorldCommParams) -> dict:
    food = p.num_adversaries + p.num_good + p.num_obstacles
    return {**world(p).constants(), "food_lo": food, "forest_lo": food + p.num_food,
            "num_landmarks": _landmarks(p)}


# ------------------------------------------------------------------ phases
@kernel_fn
def spawn_silent(s, p, e, a):
    spawn(s, p, e, a)
    if a == 0:
        for c in range(DIM_C):
            s.message[e, c] = 0.0


@kernel_fn
def place_landmarks(s, p, e):
    """Obstacles, food and forests uniform in [-0.9, 0.9]^2."""
    for j in range(p.num_agents, p.num_entities):
        place(s, e, j, 0.9)


# Action readers, one per role (`PerAgent(..., group=...)`): each gets its agent's own action. With
# num_adversaries=1 there is no follower group, so no reader for it either.
@kernel_fn
def lead_discrete(s, p, e, a, k):
    """The leader's Discrete(20): ``say * 5 + move``, the word heard by every adversary."""
    discrete_force(s, p, e, a, k % MOVES)
    for c in range(DIM_C):
        s.message[e, c] = 1.0 if c == k // MOVES else 0.0


@kernel_fn
def lead_continuous(s, p, e, a, u):
    """The leader's Box(9): the move's five values, then the message itself."""
    continuous_force(s, p, e, a, u[2] - u[1], u[4] - u[3])
    for c in range(DIM_C):
        s.message[e, c] = u[MOVES + c]


@kernel_fn
def reward(s, p, e, a):
    A = p.num_adversaries
    rew = 0.0
    if a >= A:  # prey
        for b in range(A):
            if is_collision(s, p, e, b, a):
                rew -= 5
        rew -= 2 * bound_penalty(abs(s.pos_x[e, a]))
        rew -= 2 * bound_penalty(abs(s.pos_y[e, a]))
        nearest = distance(s, e, p.food_lo, a)
        for j in range(p.food_lo, p.forest_lo):
            if is_collision(s, p, e, a, j):
                rew += 2
            nearest = min(nearest, distance(s, e, j, a))
        rew -= 0.05 * nearest
    else:
        nearest = distance(s, e, A, a)
        for g in range(A + 1, p.num_agents):
            nearest = min(nearest, distance(s, e, g, a))
        rew -= 0.1 * nearest
        for g in range(A, p.num_agents):
            for b in range(A):
                if is_collision(s, p, e, g, b):
                    rew += 5
    s.rew[e, a] = np.float32(rew)


@kernel_fn
def _visible(s, p, e, a, o):
    """Whether agent a sees agent o: in one forest together, both outside every forest, or a leads."""
    a_in = False
    o_in = False
    for f in range(p.forest_lo, p.num_entities):
        fa = is_collision(s, p, e, a, f)
        fo = is_collision(s, p, e, o, f)
        if fa and fo:
            return True
        a_in = a_in or fa
        o_in = o_in or fo
    return (not a_in and not o_in) or a == 0


@kernel_fn
def _velocity(s, e, o, axis):
    return np.float32(s.vel_x[e, o] if axis == 0 else s.vel_y[e, o])


@kernel_fn
def observe(s, p, e, a, i):
    """Element i of MPE2's observation of agent a."""
    if i < 4:
        return own(s, e, a, i)
    k = i - 4
    if k < 2 * p.num_landmarks:
        return relative(s, e, a, p.num_agents + k // 2, k % 2)
    k -= 2 * p.num_landmarks
    if k < 2 * (p.num_agents - 1):
        o = k // 2
        if o >= a:
            o += 1
        return relative(s, e, a, o, k % 2) if _visible(s, p, e, a, o) else np.float32(0.0)
    k -= 2 * (p.num_agents - 1)
    A, R = p.num_adversaries, p.num_forests
    if a < A:  # prey_vel, in_forest, leader_comm
        if k < 2 * p.num_good:
            o = A + k // 2
            return _velocity(s, e, o, k % 2) if _visible(s, p, e, a, o) else np.float32(0.0)
        k -= 2 * p.num_good
        if k < R:
            return np.float32(1.0 if is_collision(s, p, e, a, p.forest_lo + k) else -1.0)
        return s.message[e, k - R]
    if k < R:  # in_forest, other_prey_vel
        return np.float32(1.0 if is_collision(s, p, e, a, p.forest_lo + k) else -1.0)
    k -= R
    o = A + k // 2
    if o >= a:
        o += 1
    return _velocity(s, e, o, k % 2) if _visible(s, p, e, a, o) else np.float32(0.0)


def render(state: dict, p: SimpleWorldCommParams, size: int = 320) -> np.ndarray:
    A, G = p.num_adversaries, p.num_good
    agents = ([(0.65, 0.15, 0.15)] + [(0.95, 0.45, 0.45)] * (A - 1) + [(0.45, 0.95, 0.45)] * G)
    landmarks = ([(0.25, 0.25, 0.25)] * p.num_obstacles + [(0.15, 0.15, 0.65)] * p.num_food
                 + [(0.6, 0.9, 0.6)] * p.num_forests)
    return particles.render(state, [particles.rgb(c) for c in agents + landmarks], world(p).sizes, size,
                            p.max_cycles)


def _readers(p: SimpleWorldCommParams) -> tuple:
    lead, move = (lead_continuous, move_continuous) if p.continuous_actions else (lead_discrete, move_discrete)
    movers = ("adversary", "agent") if p.num_adversaries > 1 else ("agent",)
    return (PerAgent(lead, group="leadadversary"), *(PerAgent(move, group=g) for g in movers))


def launch(p: SimpleWorldCommParams, num_envs: int) -> dict:
    """Lanes an env for worlds of up to 8 agents (chosen on the default world of 6: `benchmarks/tuning_records.py`)."""
    if p.num_good + p.num_adversaries > 8:
        return {}
    return {"threads_per_env": 32 if num_envs <= 2048 else 4}


TUNING = Tuning(launch=launch)


SPEC = EnvSpec(
    id="simple_world_comm_v3",
    params=SimpleWorldCommParams,
    groups=groups,
    fields=fields,
    reset=(PerAgent(spawn_silent), PerEnv(place_landmarks)),
    step=lambda p: (*_readers(p), PerAgent(add_contact_forces), PerAgent(integrate), PerAgent(reward)),
    observe=(PerObs(observe),),
    constants=constants,
    render=render,
    module=__name__,
    tuning=TUNING,
)
