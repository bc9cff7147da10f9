"""MPE simple_tag: fast good agents flee slower adversaries among obstacles.

The same environment as MPE2's ``simple_tag_v3``, with the same agent names, observation
layout, action meanings, physics and rewards, run as a Numba kernel. Positions and velocities
are kept in double precision, as in MPE2, so trajectories match MPE2's step for step.

## Rules
Agents ``adversary_0 ..`` (red, size 0.075, accel 3, max speed 1) and ``agent_0 ..`` (green,
size 0.05, accel 4, max speed 1.3) move in the plane among fixed obstacles (size 0.2). Each step
every agent's force is its action times its acceleration, plus a soft contact force from every
entity it overlaps: ``contact_force * delta / dist * log(1 + exp(-(dist - size_sum) / margin)) *
margin``, with ``contact_force = 100`` and ``margin = 1e-3``. Each agent then integrates
(``dt = 0.1``): position += velocity * dt, velocity *= (1 - 0.25), velocity += force * dt.
Finally its speed is clipped to its max speed.

Rewards follow each step. Every adversary gets +10 for each colliding (good, adversary) pair.
A good agent gets -10 for each adversary colliding with it, and pays ``bound(|x|) + bound(|y|)``
for leaving the area, where ``bound(v) = 0`` below 0.9, ``10 (v - 0.9)`` below 1, and
``min(exp(2v - 2), 10)`` beyond. Two agents collide when their distance is below the sum of
their sizes. Episodes are truncated after ``max_cycles`` steps. With ``terminate_on_success``,
they end earlier, once every good agent collides with an adversary at the same time.

Starts: agents uniform in [-1, 1]^2, obstacles uniform in [-0.9, 0.9]^2, velocities 0. These are
the same ranges as MPE2, drawn from gpu_zoo's counter-based generator rather than NumPy's.

## Observations
``self_vel (2), self_pos (2), landmark_rel_pos (2 per obstacle), other_rel_pos (2 per other
agent, in agent order), other_good_vel (2 per other good agent)``, float32. With MPE2's partial
observability, ``num_landmark_neighbors`` slots of the nearest obstacles and
``num_agent_neighbors`` of the nearest other agents (nearest first, zeros past the count), and a
velocity slot for each agent slot (zeros for adversaries).

## Actions
Discrete(5): no-op, left, right, down, up. With ``continuous_actions=True``, ``Box(0, 1, (5,))``
whose force is ``(a[2] - a[1], a[4] - a[3])`` times the agent's acceleration.

## Version history
- v3: matches MPE2's ``simple_tag_v3``, partial observability included.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium
import numpy as np

from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerEnv, PerObs, kernel_fn
from gpu_zoo.core.api.params import check_count
from gpu_zoo.mpe import particles
from gpu_zoo.mpe.particles import (
    add_contact_forces,
    bound_penalty,
    integrate,
    is_collision,
    landmark_relative,
    move_continuous,
    move_discrete,
    nearest,
    place,
    relative,
    spawn,
)
from gpu_zoo.mpe.scenario import check_common, check_neighbors

# MPE2's make_world: sizes, accelerations and speed limits (attributes, not arguments).
ADVERSARY_SIZE, AGENT_SIZE, OBSTACLE_SIZE = 0.075, 0.05, 0.2
ADVERSARY_ACCEL, AGENT_ACCEL = 3.0, 4.0
ADVERSARY_MAX_SPEED, AGENT_MAX_SPEED = 1.0, 1.3
COLORS = {"agent": (89, 217, 89), "adversary": (217, 89, 89), "obstacle": (64, 64, 64)}


@dataclass(frozen=True)
class SimpleTagParams:
    """MPE2's ``simple_tag_v3`` constructor arguments."""

    num_good: int = 1
    num_adversaries: int = 3
    num_obstacles: int = 2
    max_cycles: int = 25
    continuous_actions: bool = False
    terminate_on_success: bool = False
    dynamic_rescaling: bool = True
    benchmark_data: bool = False
    curriculum: bool = False
    num_agent_neighbors: int | None = None
    num_landmark_neighbors: int | None = None

    def __post_init__(self):
        for name, least in (("num_good", 1), ("num_adversaries", 1), ("num_obstacles", 0), ("max_cycles", 1)):
            check_count(name, getattr(self, name), least)
        check_neighbors(self)
        check_common(self)
        if self.curriculum:
            raise NotImplementedError("simple_tag_v3: curriculum=True (MPE2's stages advanced by method calls) is not "
                                      "supported; pass curriculum=False")


def observed_landmarks(p: SimpleTagParams) -> int:
    return p.num_obstacles if p.num_landmark_neighbors is None else p.num_landmark_neighbors


def observed_agents(p: SimpleTagParams) -> int | None:
    """Other agents in the observation's slots with partial observability, None without (every other agent)."""
    return p.num_agent_neighbors


def groups(p: SimpleTagParams) -> tuple[Group, ...]:
    A, L = p.num_good + p.num_adversaries, p.num_obstacles
    if p.continuous_actions:
        act = gymnasium.spaces.Box(0.0, 1.0, (5,), np.float32)
    else:
        act = gymnasium.spaces.Discrete(5)

    L = observed_landmarks(p)
    K = observed_agents(p)

    def obs(good_others: int):
        # partial observability: K slots of the nearest others, a velocity slot each (zeros for adversaries)
        others, vels = (A - 1, good_others) if K is None else (K, K)
        return (ObsBlock("self_vel", 2), ObsBlock("self_pos", 2), ObsBlock("landmark_rel_pos", 2 * L),
                ObsBlock("other_rel_pos", 2 * others), ObsBlock("other_good_vel", 2 * vels))

    return (Group("adversary", p.num_adversaries, obs(p.num_good), act),
            Group("agent", p.num_good, obs(p.num_good - 1), act))


def world(p: SimpleTagParams) -> particles.World:
    A, G, L = p.num_adversaries, p.num_good, p.num_obstacles
    return particles.World(sizes=(ADVERSARY_SIZE,) * A + (AGENT_SIZE,) * G + (OBSTACLE_SIZE,) * L,
                           collides=(1,) * (A + G + L), accels=(ADVERSARY_ACCEL,) * A + (AGENT_ACCEL,) * G,
                           max_speeds=(ADVERSARY_MAX_SPEED,) * A + (AGENT_MAX_SPEED,) * G)


def fields(p: SimpleTagParams) -> tuple[Field, ...]:
    return world(p).fields()


def constants(p: SimpleTagParams) -> dict:
    out = world(p).constants()
    if p.num_agent_neighbors is not None or p.num_landmark_neighbors is not None:
        out.update(observed_landmarks=observed_landmarks(p), observed_agents=observed_agents(p) or 0,
                   nearest_landmarks=p.num_landmark_neighbors is not None,
                   nearest_agents=p.num_agent_neighbors is not None)
    return out


# ------------------------------------------------------------------ phases
@kernel_fn
def place_obstacles(s, p, e):
    """Obstacles uniform in [-0.9, 0.9]^2."""
    for j in range(p.num_agents, p.num_entities):
        place(s, e, j, 0.9)


@kernel_fn
def reward_adversary(s, p, e, a, act):
    """10 for every collision of a good agent with any adversary (shared by the adversaries)."""
    r = 0.0
    for g in range(p.agent_lo, p.agent_hi):
        for v in range(p.adversary_lo, p.adversary_hi):
            if is_collision(s, p, e, g, v):
                r += 10
    s.rew[e, a] = np.float32(r)


@kernel_fn
def reward_agent(s, p, e, a, act):
    """-10 for each adversary touching it, and the penalty for leaving the arena."""
    r = 0.0
    for v in range(p.adversary_lo, p.adversary_hi):
        if is_collision(s, p, e, v, a):
            r -= 10
    r -= bound_penalty(abs(s.pos_x[e, a]))
    r -= bound_penalty(abs(s.pos_y[e, a]))
    s.rew[e, a] = np.float32(r)


@kernel_fn
def check_success(s, p, e):
    """With terminate_on_success: the game ends once every good agent is caught at once."""
    if not p.terminate_on_success or s.t[e] >= p.max_cycles:
        return
    for g in range(p.agent_lo, p.agent_hi):
        caught = False
        for v in range(p.adversary_lo, p.adversary_hi):
            if is_collision(s, p, e, v, g):
                caught = True
        if not caught:
            return
    s.over[e] = 1


@kernel_fn
def observe(s, p, e, a, i):
    """Element i of MPE2's observation of agent a."""
    if i < 2:
        return np.float32(s.vel_x[e, a] if i == 0 else s.vel_y[e, a])
    if i < 4:
        return np.float32(s.pos_x[e, a] if i == 2 else s.pos_y[e, a])
    k = i - 4
    if k < 2 * p.num_obstacles:
        j = p.num_agents + k // 2
    else:
        k -= 2 * p.num_obstacles
        if k < 2 * (p.num_agents - 1):
            j = k // 2
            j = j if j < a else j + 1
        else:
            k -= 2 * (p.num_agents - 1)
            j = p.agent_lo + k // 2  # the (k//2)-th good agent other than a
            if a >= p.agent_lo and j >= a:
                j += 1
            return np.float32(s.vel_x[e, j] if k % 2 == 0 else s.vel_y[e, j])
    if k % 2 == 0:
        return np.float32(s.pos_x[e, j] - s.pos_x[e, a])
    return np.float32(s.pos_y[e, j] - s.pos_y[e, a])


@kernel_fn
def observe_nearest(s, p, e, a, i):
    """Element i of MPE2's observation of agent a with partial observability (``num_*_neighbors``).

    The nearest landmarks and other agents, nearest first (ties to the lower index, as MPE2's
    ``np.argsort``), slots past the count zero; a velocity slot per agent slot, zero for
    adversaries. Without ``num_agent_neighbors`` every other agent is observed as in `observe`.
    """
    if i < 4:
        return observe(s, p, e, a, i)
    k = i - 4
    if k < 2 * p.observed_landmarks:
        return landmark_relative(s, p, e, a, k)
    k -= 2 * p.observed_landmarks
    if not p.nearest_agents:  # every other agent, as in `observe`
        return observe(s, p, e, a, 4 + 2 * p.num_obstacles + k)
    if k < 2 * p.observed_agents:
        j = nearest(s, e, a, 0, p.num_agents, k // 2)
        return np.float32(0.0) if j < 0 else relative(s, e, a, j, k % 2)
    k -= 2 * p.observed_agents
    j = nearest(s, e, a, 0, p.num_agents, k // 2)
    if j < p.agent_lo:  # no agent in the slot (-1), or an adversary
        return np.float32(0.0)
    return np.float32(s.vel_x[e, j] if k % 2 == 0 else s.vel_y[e, j])


# ------------------------------------------------------------------ render
def render(state: dict, p: SimpleTagParams, size: int = 320) -> np.ndarray:
    """MPE's view: adversaries red, good agents green, obstacles dark grey."""
    colors = ((COLORS["adversary"],) * p.num_adversaries + (COLORS["agent"],) * p.num_good
              + (COLORS["obstacle"],) * p.num_obstacles)
    return particles.render(state, colors, world(p).sizes, size, p.max_cycles)


def _readers(p: SimpleTagParams) -> tuple:
    move = move_continuous if p.continuous_actions else move_discrete
    return PerAgent(move, group="adversary"), PerAgent(move, group="agent")


SPEC = EnvSpec(
    id="simple_tag_v3",
    params=SimpleTagParams,
    groups=groups,
    fields=fields,
    reset=(PerAgent(spawn), PerEnv(place_obstacles)),
    step=lambda p: (*_readers(p), PerAgent(add_contact_forces), PerAgent(integrate),
                    PerAgent(reward_adversary, group="adversary"), PerAgent(reward_agent, group="agent"),
                    PerEnv(check_success)),
    observe=lambda p: (PerObs(observe if p.num_agent_neighbors is None and p.num_landmark_neighbors is None
                              else observe_nearest),),
    constants=constants,
    render=render,
    module=__name__,
)
