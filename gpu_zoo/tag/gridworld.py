"""Tag (gridworld): taggers chase runners on a square grid of integer cells.

After WarpDrive's ``tag_gridworld``, written once for the CPU and the GPU.

## Rules
Agents stand on integer cells ``(x, y)`` with ``0 <= x, y <= grid_length``, as in WarpDrive.
Every step each agent in the game moves one cell or stays. A move off the grid is clipped back,
and the agent pays ``wall_hit_penalty`` for each axis it crossed. A runner is tagged when a tagger
stands on its cell after the moves.

If any runner was tagged this step, every tagger gets ``tag_reward_for_tagger`` for each runner
tagged. Otherwise every tagger pays ``step_cost_for_tagger``. A tagged runner gets
``-tag_penalty_for_runner`` and leaves the game. A runner still in the game and untagged gets
``step_cost_for_tagger``.

The episode ends when every runner is tagged (every agent is terminated) or after
``max_cycles`` steps (every agent still in the game is truncated). With the default single
runner, this means the episode ends at the tag, as in WarpDrive. Starts are drawn uniformly over
the cells, per env and per episode, from the seed. ``random_start=False`` gives WarpDrive's fixed
start instead: taggers in the centre, runners in the corner ``(0, 0)``.

## Observations
Full (``use_full_observation=True``), every value divided by ``grid_length`` (time by max_cycles):

| block | size | meaning |
| --- | --- | --- |
| x, y | A each | every agent's position |
| is_runner | A | 1 for runners |
| is_self | A | one-hot of the observing agent |
| alive | A | 1 if in the game, or tagged at this step (only when ``num_runners > 1``) |
| time | 1 | t / max_cycles |

Partial: ``own_x, own_y``, then ``target_x, target_y``: the nearest runner still in the game for
a tagger, the nearest tagger for a runner. Then ``is_runner`` and ``time``. As in WarpDrive, a
runner tagged at this step is still in sight in this step's observations (a tagger's target at
the tag is that runner). A runner out of the game observes zeros from the step after it was
tagged.

## Actions
``Discrete(5)``: stay, +x, -x, +y, -y.

## Version history
- v0: initial release.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium
import numpy as np

from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerEnv, PerObs, kernel_fn
from gpu_zoo.core.api.params import check_count
from gpu_zoo.core.api.rng import randint
from gpu_zoo.core.compiler.episode import observing

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
DRAW_X, DRAW_Y = 0, 1  # an agent's random draws at a random start (`gpu_zoo.core.api.rng`)


@dataclass(frozen=True)
class GridTagParams:
    """Constructor arguments of Tag (gridworld). Defaults follow WarpDrive's training config."""

    num_taggers: int = 4
    num_runners: int = 1
    grid_length: int = 100
    max_cycles: int = 100
    wall_hit_penalty: float = 0.1
    tag_reward_for_tagger: float = 10.0
    tag_penalty_for_runner: float = 2.0
    step_cost_for_tagger: float = 0.01
    use_full_observation: bool = True
    random_start: bool = True

    def __post_init__(self):
        for name in ("num_taggers", "num_runners", "grid_length", "max_cycles"):
            check_count(name, getattr(self, name))


def groups(p: GridTagParams) -> tuple[Group, ...]:
    A = p.num_taggers + p.num_runners
    if p.use_full_observation:
        names = ["x", "y", "is_runner", "is_self"] + (["alive"] if p.num_runners > 1 else [])
        obs = (*(ObsBlock(n, A) for n in names), ObsBlock("time", 1))
    else:
        obs = tuple(ObsBlock(n, 1) for n in ("own_x", "own_y", "target_x", "target_y", "is_runner", "time"))
    act = gymnasium.spaces.Discrete(5)
    return (Group("tagger", p.num_taggers, obs, act, 0.0, 1.0), Group("runner", p.num_runners, obs, act, 0.0, 1.0))


def fields(p: GridTagParams) -> tuple[Field, ...]:
    A = p.num_taggers + p.num_runners
    return (
        Field("x", "i32", (A,), "x cell"),
        Field("y", "i32", (A,), "y cell"),
        Field("tagged", "u8", (A,), "runner tagged this step"),
        Field("target", "i32", (A,), "agent shown in the partial observation, -1 if none"),
        Field("num_tagged", "i32", (), "runners tagged this step"),
        Field("runners_left", "i32", (), "runners still in the game"),
    )


# ------------------------------------------------------------------ phases
@kernel_fn
def spawn(s, p, e, a):
    if p.random_start:
        s.x[e, a] = randint(s, e, a, DRAW_X, p.grid_length + 1)
        s.y[e, a] = randint(s, e, a, DRAW_Y, p.grid_length + 1)
    elif a < p.tagger_hi:
        s.x[e, a] = p.grid_length // 2
        s.y[e, a] = p.grid_length // 2
    else:
        s.x[e, a] = 0
        s.y[e, a] = 0
    s.tagged[e, a] = 0
    s.target[e, a] = -1


@kernel_fn
def start(s, p, e):
    s.runners_left[e] = p.num_runners
    s.num_tagged[e] = 0


@kernel_fn
def move(s, p, e, a, act):
    if not s.alive[e, a]:
        return
    # 0 stay, 1 +x, 2 -x, 3 +y, 4 -y
    x = s.x[e, a] + (1 if act == 1 else (-1 if act == 2 else 0))
    y = s.y[e, a] + (1 if act == 3 else (-1 if act == 4 else 0))
    r = _ZERO
    if x < 0 or x > p.grid_length:
        x = min(max(x, 0), p.grid_length)
        r -= p.wall_hit_penalty
    if y < 0 or y > p.grid_length:
        y = min(max(y, 0), p.grid_length)
        r -= p.wall_hit_penalty
    s.x[e, a], s.y[e, a] = x, y
    s.rew[e, a] += r


@kernel_fn
def detect_tags(s, p, e, a, act):
    """A runner in the game is tagged when a tagger shares its cell."""
    s.tagged[e, a] = 0
    if not s.alive[e, a]:
        return
    for j in range(p.tagger_lo, p.tagger_hi):
        if s.x[e, j] == s.x[e, a] and s.y[e, j] == s.y[e, a]:
            s.tagged[e, a] = 1
            return


@kernel_fn
def count_tags(s, p, e):
    n = 0
    for r in range(p.runner_lo, p.runner_hi):
        n += s.tagged[e, r]
    s.num_tagged[e] = n
    s.runners_left[e] -= n
    if s.runners_left[e] <= 0:
        s.over[e] = 1


@kernel_fn
def reward_tagger(s, p, e, a, act):
    n = s.num_tagged[e]
    if n > 0:
        s.rew[e, a] += np.float32(n) * p.tag_reward_for_tagger
    else:
        s.rew[e, a] -= p.step_cost_for_tagger


@kernel_fn
def reward_runner(s, p, e, a, act):
    if s.tagged[e, a]:
        s.rew[e, a] -= p.tag_penalty_for_runner
        s.alive[e, a] = 0
        s.term[e, a] = 1
    elif s.alive[e, a]:
        s.rew[e, a] += p.step_cost_for_tagger


@kernel_fn
def find_target(s, p, e, a):
    """Partial observation: a tagger sees the nearest runner in sight, a runner the nearest tagger.

    One function for both roles, which differ only in the range searched: on a GPU an env's
    taggers and runner share a warp, and one body keeps them on one path.
    """
    if p.use_full_observation:
        return
    lo, hi = (p.runner_lo, p.runner_hi) if a < p.tagger_hi else (p.tagger_lo, p.tagger_hi)
    s.target[e, a] = nearest_in_sight(s, e, a, lo, hi)


@kernel_fn
def nearest_in_sight(s, e, a, lo, hi):
    """The agent of [lo, hi) nearest to a, or -1.

    In sight: in the game, or tagged at this very step, which WarpDrive's observation still shows.
    """
    best, best_d = -1, 0
    for j in range(lo, hi):
        if not observing(s, e, j):
            continue
        dx, dy = s.x[e, j] - s.x[e, a], s.y[e, j] - s.y[e, a]
        d = dx * dx + dy * dy
        if best < 0 or d < best_d:
            best, best_d = j, d
    return best


@kernel_fn
def observe(s, p, e, a, i):
    # Multiplying by a reciprocal: a division per element costs several instructions on a GPU.
    inv = _ONE / np.float32(p.grid_length)
    if i == p.obs_size - 1:
        return np.float32(s.t[e]) * (_ONE / np.float32(p.max_cycles))
    if p.use_full_observation:
        A = p.num_agents  # blocks of A values; subtracting is cheaper than dividing on a GPU
        if i < A:
            return np.float32(s.x[e, i]) * inv
        if i < 2 * A:
            return np.float32(s.y[e, i - A]) * inv
        if i < 3 * A:
            return _ONE if i - 2 * A >= p.runner_lo else _ZERO
        if i < 4 * A:
            return _ONE if i - 3 * A == a else _ZERO
        return _ONE if observing(s, e, i - 4 * A) else _ZERO
    if i == 0:
        return np.float32(s.x[e, a]) * inv
    if i == 1:
        return np.float32(s.y[e, a]) * inv
    if i == 4:
        return _ONE if a >= p.runner_lo else _ZERO
    j = s.target[e, a]
    if j < 0:
        return _ZERO
    return np.float32(s.x[e, j] if i == 2 else s.y[e, j]) * inv


def constants(p: GridTagParams) -> dict:
    return {"obs_size": groups(p)[0].obs_size}


# ------------------------------------------------------------------ render
def render(state: dict, p: GridTagParams, size: int = 320) -> np.ndarray:
    """Top view: taggers red, runners blue, tagged runners grey."""
    from gpu_zoo.core.api.render import Canvas, tag_color

    side = float(p.grid_length + 1)
    c = Canvas(size, (side, side))
    for a in range(p.num_taggers + p.num_runners):
        tagger = a < p.num_taggers
        color = tag_color(tagger, bool(state["alive"][a]))
        radius = max(0.45, 0.012 * side) * (1.0 if tagger else 0.8)
        c.disc(float(state["x"][a]) + 0.5, float(state["y"][a]) + 0.5, radius, color)
    c.text_bar(int(state["t"]) / p.max_cycles)
    return c.image


SPEC = EnvSpec(
    id="tag_gridworld_v0",
    params=GridTagParams,
    groups=groups,
    fields=fields,
    reset=(PerAgent(spawn), PerEnv(start)),
    step=(PerAgent(move, group="tagger"), PerAgent(move, group="runner"), PerAgent(detect_tags, group="runner"),
          PerEnv(count_tags), PerAgent(reward_tagger, group="tagger"), PerAgent(reward_runner, group="runner")),
    observe=(PerAgent(find_target), PerObs(observe)),
    constants=constants,
    render=render,
    module=__name__,
)
