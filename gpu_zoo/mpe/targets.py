"""What MPE2's shape scenarios (simple_formation, simple_line) share: agents matched to target points.

Each step the scenario places N target points (a circle round a landmark, a line between two);
the agents are matched to them one to one at the least total distance, as MPE2's
``scipy.optimize.linear_sum_assignment`` does, and every agent is paid minus the mean matched
distance, each clipped to 2. With ``terminate_on_success`` the game ends once every matched
distance is under 0.05. The params, spaces, observations and phases here are the scenarios'
own, less where their targets come from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpu_zoo.core import Field, Group, ObsBlock, PerAgent, PerEnv, PerItem, kernel_fn
from gpu_zoo.core.api.params import check_count
from gpu_zoo.mpe import particles
from gpu_zoo.mpe.particles import (
    add_contact_forces,
    integrate,
    move_continuous,
    move_discrete,
)
from gpu_zoo.mpe.scenario import check_common, move_space

DIST_THRESHOLD = 0.05  # every matched distance under it: success
CLIP = 2.0  # a matched distance counts at most this much
_INF = np.float64(1e300)
AGENT_COLOR, LANDMARK_COLOR = particles.rgb((0.35, 0.35, 0.85)), particles.rgb((0.25, 0.25, 0.25))
SCRATCH = ("match_cost", "match_u", "match_v", "match_minv", "match_row", "match_way", "match_used")


@dataclass(frozen=True)
class ShapeParams:
    """MPE2's constructor arguments of ``simple_formation_v1`` and ``simple_line_v1``."""

    N: int = 4
    max_cycles: int = 25
    continuous_actions: bool = False
    dynamic_rescaling: bool = True
    benchmark_data: bool = False
    terminate_on_success: bool = False

    def __post_init__(self):
        check_common(self)
        check_count("N", self.N)


def groups(p: ShapeParams, num_landmarks: int) -> tuple[Group, ...]:
    obs = (ObsBlock("self_vel", 2, fill=particles.own_vel), ObsBlock("self_pos", 2, fill=particles.own_pos),
           ObsBlock("landmark_rel_pos", 2 * num_landmarks, fill=particles.landmarks_relative))
    return (Group("agent", p.N, obs, move_space(p.continuous_actions)),)


def world(p: ShapeParams, agent_size: float, landmark_size: float, num_landmarks: int) -> particles.World:
    return particles.World(sizes=(agent_size,) * p.N + (landmark_size,) * num_landmarks,
                           collides=(1,) * p.N + (0,) * num_landmarks, accels=(None,) * p.N)


def fields(p: ShapeParams, world: particles.World) -> tuple[Field, ...]:
    N = p.N
    return (
        *world.fields(),
        Field("target_x", "f64", (N,), "x of each target point"),
        Field("target_y", "f64", (N,), "y of each target point"),
        Field("joint_rew", "f64", (), "minus the mean matched distance (each clipped), every agent's reward"),
        Field("success", "u8", (), "whether every matched distance is under the threshold"),
        Field("match_cost", "f64", (N * N,), "scratch: agent i's distance to target j at i * N + j"),
        Field("match_u", "f64", (N + 1,), "scratch: the assignment's row potentials"),
        Field("match_v", "f64", (N + 1,), "scratch: the assignment's column potentials"),
        Field("match_minv", "f64", (N + 1,), "scratch: the assignment's slack per column"),
        Field("match_row", "i32", (N + 1,), "scratch: 1 + the row matched to column j - 1"),
        Field("match_way", "i32", (N + 1,), "scratch: the assignment's augmenting path"),
        Field("match_used", "u8", (N + 1,), "scratch: the columns the assignment's search has reached"),
    )


# ------------------------------------------------------------------ the assignment
@kernel_fn
def optimal_assignment(n, cost, u, v, minv, row, way, used):
    """Rows matched to columns at the least total ``cost[i * n + j]``: afterwards ``row[j + 1] - 1`` is column j's.

    The Hungarian method with potentials, O(n^3), in fixed arrays of n + 1 (index 0 is the
    search's virtual start).
    """
    for j in range(n + 1):
        u[j] = 0.0
        v[j] = 0.0
        row[j] = 0
        way[j] = 0
    for i in range(1, n + 1):
        row[0] = i
        j0 = 0
        for j in range(n + 1):
            minv[j] = _INF
            used[j] = 0
        while True:
            used[j0] = 1
            i0 = row[j0]
            delta = _INF
            j1 = 0
            for j in range(1, n + 1):
                if not used[j]:
                    cur = cost[(i0 - 1) * n + j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta = minv[j]
                        j1 = j
            for j in range(n + 1):
                if used[j]:
                    u[row[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if row[j0] == 0:
                break
        while True:  # flip the augmenting path
            j1 = way[j0]
            row[j0] = row[j1]
            j0 = j1
            if j0 == 0:
                break


@kernel_fn
def match_targets(s, p, e, k, cost, u, v, minv, row, way, used):
    """Matches the agents to the targets; the joint reward and success of MPE2's ``_compute_*`` (one item per env)."""
    n = p.num_agents
    for i in range(n):
        for j in range(n):
            dx, dy = s.pos_x[e, i] - s.target_x[e, j], s.pos_y[e, i] - s.target_y[e, j]
            cost[i * n + j] = math.sqrt(dx * dx + dy * dy)
    optimal_assignment(n, cost, u, v, minv, row, way, used)
    for j in range(n):  # way becomes each row's column, to sum in row order as MPE2 does
        way[row[j + 1] - 1] = j
    total = 0.0
    success = True
    for i in range(n):
        d = cost[i * n + way[i]]
        success = success and d < DIST_THRESHOLD
        total += min(d, CLIP)
    s.joint_rew[e] = -(total / n)
    s.success[e] = success


# ------------------------------------------------------------------ phases
@kernel_fn
def reward(s, p, e, a):
    s.rew[e, a] = np.float32(s.joint_rew[e])


@kernel_fn
def check_success(s, p, e):
    if p.terminate_on_success and s.t[e] < p.max_cycles and s.success[e]:
        s.over[e] = 1


def step(p: ShapeParams, place_targets=None) -> tuple:
    """A step: actions, contacts, moves, then (``place_targets``, a `PerEnv`, if the targets move) the match."""
    return (PerAgent(move_continuous if p.continuous_actions else move_discrete, group="agent"),
            PerAgent(add_contact_forces), PerAgent(integrate), *((PerEnv(place_targets),) if place_targets else ()),
            PerItem(match_targets, 1, scratch=SCRATCH), PerAgent(reward), PerEnv(check_success))


def render(state: dict, p: ShapeParams, world: particles.World, size: int = 320) -> np.ndarray:
    landmarks = len(world.sizes) - p.N
    return particles.render(state, (AGENT_COLOR,) * p.N + (LANDMARK_COLOR,) * landmarks, world.sizes, size,
                            p.max_cycles)
