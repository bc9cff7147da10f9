"""Tag (continuous): taggers chase runners around a square arena.

After WarpDrive's ``tag_continuous``, written once for the CPU and the GPU.

## Rules
Taggers and runners move in a square arena of side ``grid_length``. Each agent has a position,
a speed, an acceleration and a heading. Every step each agent in the game picks an acceleration
change and a turn. Its acceleration grows by the change, its heading turns, and its speed becomes
``clip(speed + acceleration, 0, max_speed * skill)``. Acceleration resets to 0 when the speed
reaches either limit. The agent then moves by its speed along its heading. A position outside
the arena is clipped back to the edge, and the agent pays ``edge_hit_penalty``.

A runner is tagged when its nearest tagger is closer than ``tagging_distance * grid_length``.
The runner gets ``tag_penalty_for_runner`` and that tagger ``tag_reward_for_tagger``. A tagger
that tags two runners in one step is credited twice. By default a tagged runner leaves the game:
it is terminated (its terminal observation is a real one).
Taggers pay ``step_penalty_for_tagger`` and runners get ``step_reward_for_runner`` every step
they are in the game. Runners still in the game at ``max_cycles`` get
``end_of_game_reward_for_runner``.

As in WarpDrive, a step's observations are taken after the moves and before the tags: a runner
tagged at this step still shows as in the game, at its speed, in every observation of the step
(its own terminal one included, and among the others' nearest). From the next step it stands
still where it was tagged, at speed 0 and heading 0.

The episode ends when no runner is left (every agent is terminated) or after ``max_cycles``
steps (every agent still in the game is truncated). Start positions (uniform in the arena) and
headings (one of the four axis directions) are drawn per env and per episode from the seed.

## Observations
Every agent sees the other agents, in agent order (``use_full_observation=True``) or the
``num_other_agents_observed`` nearest agents still in the game, nearest first, zero-padded
(``use_full_observation=False``; 2 when unset, as in WarpDrive; refused under full observation,
which WarpDrive's constructor would silently ignore).
The vector is feature-major: block ``rel_x`` holds every observed agent's x offset, then
``rel_y``, and so on:

| block | meaning |
| --- | --- |
| rel_x, rel_y | offset of the other agent / (sqrt(2) * grid_length) |
| rel_speed, rel_acceleration | difference / max_speed |
| rel_heading | heading difference / (2 pi) |
| is_tagger | 1 for a tagger |
| alive | 1 if the other agent is in the game |
| time | t / max_cycles |
| own (only with ``observe_own_state=True``) | own x and y / grid_length, speed / max_speed, cos and sin of heading |

The nearest agents are found through a grid of ``neighbour_grid`` x ``neighbour_grid`` cells
over the arena, searched ring by ring outward from the observer's cell until no unvisited
cell can hold anything nearer: the same agents, in the same order, as a scan over all of them
(ties go to the lower agent index). Each observer then looks at the agents of a few cells near
it instead of all of them; sorting the agents into cells reads every agent once per cell. The
default grid has about k agents per cell; ``neighbour_grid=1`` scans everyone.

From the step after it left, an agent out of the game observes zeros, except that with full
observations it still sees the others' ``is_tagger`` and ``alive`` blocks, as in WarpDrive
(`tests/tag/test_tag_vs_warpdrive.py` steps both side by side). WarpDrive's observation is
the table without ``own``: every feature is relative to the observer, so the offsets to the
others are in the arena's frame while the observer's own heading is unknown, and a policy
without memory cannot tell which way to turn. ``observe_own_state=True`` adds what is missing.

## Actions
``MultiDiscrete([num_acceleration_levels + 1, num_turn_levels + 1])``. Index 0 keeps acceleration
(or heading) unchanged. Index ``i >= 1`` adds level ``i - 1`` of ``num_*_levels`` values evenly
spaced from the minimum to the maximum.

## Version history
- v0: initial release; ``observe_own_state`` added (off by default: the observation stays WarpDrive's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import gymnasium
import numpy as np

from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerEnv, PerItem, PerObs, Tuning, kernel_fn
from gpu_zoo.core.api.floats import mul_rn
from gpu_zoo.core.api.params import check_count, is_int
from gpu_zoo.core.api.rng import randint, uniform
from gpu_zoo.core.compiler.episode import observing

_TWO_PI = np.float32(2.0 * math.pi)
_HALF_PI = np.float32(0.5 * math.pi)
_SQRT2 = np.float32(math.sqrt(2.0))
_EPS = np.float32(1e-10)
_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_SEARCH_MARGIN = np.float32(1.0 - 1e-3)
DRAW_X, DRAW_Y, DRAW_HEADING = 0, 1, 2  # an agent's random draws at its spawn (`gpu_zoo.core.api.rng`)
FEATURES = ("rel_x", "rel_y", "rel_speed", "rel_acceleration", "rel_heading", "is_tagger", "alive")


@dataclass(frozen=True)
class TagParams:
    """Constructor arguments of Tag (continuous). Names follow WarpDrive's ``TagContinuous``."""

    num_taggers: int = 2
    num_runners: int = 10
    max_cycles: int = 100
    grid_length: float = 10.0
    max_speed: float = 1.0
    skill_level_tagger: float = 1.0
    skill_level_runner: float = 1.0
    max_acceleration: float = 1.0
    min_acceleration: float = -1.0
    max_turn: float = math.pi / 2
    min_turn: float = -math.pi / 2
    num_acceleration_levels: int = 10
    num_turn_levels: int = 10
    edge_hit_penalty: float = 0.0
    use_full_observation: bool = True
    # the k of the k-nearest observation: refused under full observation, where every other agent is
    # seen (WarpDrive's constructor ignores it there); unset with use_full_observation=False it is 2, as WarpDrive's
    num_other_agents_observed: int | None = None
    tagging_distance: float = 0.01
    tag_reward_for_tagger: float = 1.0
    step_penalty_for_tagger: float = 0.0
    tag_penalty_for_runner: float = -1.0
    step_reward_for_runner: float = 0.0
    end_of_game_reward_for_runner: float = 1.0
    runner_exits_game_after_tagged: bool = True
    observe_own_state: bool = False
    neighbour_grid: int = 0  # cells per side of the nearest-agent search grid; 0 picks sqrt(agents / k)

    def __post_init__(self):
        if self.use_full_observation and self.num_other_agents_observed is not None:
            raise ValueError(f"num_other_agents_observed={self.num_other_agents_observed!r} applies only with "
                             "use_full_observation=False (full observation sees every other agent): leave it unset, "
                             "or set use_full_observation=False")
        if not self.use_full_observation and self.num_other_agents_observed is None:
            object.__setattr__(self, "num_other_agents_observed", 2)
        counts = ("num_taggers", "num_runners", "max_cycles", "num_acceleration_levels", "num_turn_levels")
        for name in counts + (() if self.use_full_observation else ("num_other_agents_observed",)):
            check_count(name, getattr(self, name))
        for name in ("grid_length", "max_speed"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("skill_level_tagger", "skill_level_runner"):  # a multiplier of the agent's acceleration
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        for lo, hi in (("min_acceleration", "max_acceleration"), ("min_turn", "max_turn")):
            if not getattr(self, lo) <= getattr(self, hi):
                raise ValueError(f"{lo} must be at most {hi}, got {getattr(self, lo)!r} > {getattr(self, hi)!r}")
        if not self.use_full_observation and self.num_other_agents_observed > self.num_agents - 1:
            raise ValueError(f"num_other_agents_observed must be at most num_agents - 1 = {self.num_agents - 1}, "
                             f"got {self.num_other_agents_observed}")
        g = self.neighbour_grid
        if not is_int(g) or not 0 <= g <= 64:
            raise ValueError(f"neighbour_grid must be an int in [0, 64] (0 picks one), got {g!r}")
        if not 0 <= self.tagging_distance <= 1:
            raise ValueError(f"tagging_distance is a fraction of grid_length in [0, 1], got {self.tagging_distance}")

    @property
    def num_agents(self) -> int:
        return self.num_taggers + self.num_runners

    @property
    def num_observed(self) -> int:
        return self.num_agents - 1 if self.use_full_observation else self.num_other_agents_observed

    @property
    def search_grid(self) -> int:
        """Cells per side of the neighbour search grid (k-nearest mode): about k agents per cell."""
        if self.neighbour_grid:
            return self.neighbour_grid
        return max(1, min(64, math.isqrt(self.num_agents // self.num_other_agents_observed)))


def groups(p: TagParams) -> tuple[Group, ...]:
    k = p.num_observed
    obs = (*(ObsBlock(n, k, fill=fill) for n, fill in zip(FEATURES, _FILLS, strict=True)),
           ObsBlock("time", 1, fill=elapsed))
    if p.observe_own_state:
        obs += (ObsBlock("own", 5, "own x and y / grid_length, speed / max_speed, cos and sin of heading", own_state),)
    act = gymnasium.spaces.MultiDiscrete([p.num_acceleration_levels + 1, p.num_turn_levels + 1])
    return (Group("tagger", p.num_taggers, obs, act), Group("runner", p.num_runners, obs, act))


def fields(p: TagParams) -> tuple[Field, ...]:
    A, k = p.num_agents, p.num_observed
    out = [
        Field("pos_x", "f32", (A,), "x position"),
        Field("pos_y", "f32", (A,), "y position"),
        Field("speed", "f32", (A,), "speed"),
        Field("acceleration", "f32", (A,), "acceleration"),
        Field("heading", "f32", (A,), "heading in [0, 2 pi)"),
        Field("tagged_by", "i32", (A,), "tagger that tagged this runner this step, else -1"),
        Field("tags", "i32", (A,), "runners this tagger tagged this step"),
        Field("runners_left", "i32", (), "runners still in the game"),
    ]
    # Declared (empty) in full mode too: the kernels type both branches of observe.
    knn = not p.use_full_observation
    kk, aa, cc = (k, A, p.search_grid ** 2 + 1) if knn else (0, 0, 0)
    out += [Field("nbr_idx", "i32", (A, kk), "nearest others in the game, nearest first"),
            Field("nbr_count", "i32", (A,), "how many nbr_idx lists"),
            Field("nbr_d2", "f32", (kk,), "search scratch: squared distances of the list so far"),
            Field("nbr_j", "i32", (kk,), "search scratch: indices of the list so far"),
            Field("cell_of", "i32", (aa,), "search grid: cell of each agent in the game, else -1"),
            Field("cell_start", "i32", (cc,), "search grid: where each cell's agents start in cell_agents"),
            Field("cell_agents", "i32", (aa,), "search grid: agents in the game by cell, by index within one")]
    return tuple(out)


def constants(p: TagParams) -> dict:
    return {"num_observed": p.num_observed, "cells": p.search_grid if not p.use_full_observation else 1}


# ------------------------------------------------------------------ phases
@kernel_fn
def _level(idx, lo, hi, levels):
    """Index 0 -> no change; index i -> value i-1 of `levels` evenly spaced in [lo, hi].

    Rounded as WarpDrive's levels, ``np.linspace`` of float32 bounds, are: in float32, step
    first, the last level exactly ``hi``, the product rounded before the add on both targets
    (`mul_rn`). A level one rounding off can flip, steps later, whether a speed lands exactly on
    0 and with it whether the acceleration resets, or whether a heading wraps to 2 pi.
    """
    if idx <= 0:
        return _ZERO
    lo32, hi32 = np.float32(lo), np.float32(hi)
    if levels <= 1:
        return lo32
    if idx >= levels:
        return hi32
    step = (hi32 - lo32) / np.float32(levels - 1)
    return mul_rn(np.float32(idx - 1), step) + lo32


@kernel_fn
def spawn(s, p, e, a):
    L = p.grid_length
    s.pos_x[e, a] = uniform(s, e, a, DRAW_X) * L
    s.pos_y[e, a] = uniform(s, e, a, DRAW_Y) * L
    s.heading[e, a] = np.float32(randint(s, e, a, DRAW_HEADING, 4)) * _HALF_PI
    s.speed[e, a] = _ZERO
    s.acceleration[e, a] = _ZERO
    s.tagged_by[e, a] = -1
    s.tags[e, a] = 0


@kernel_fn
def start(s, p, e):
    s.runners_left[e] = p.num_runners


@kernel_fn
def move(s, p, e, a, act):
    """One agent's move, ``act`` its (acceleration index, turn index); bound to both groups.

    One function for both roles, which differ only in constants: a warp's taggers and runners
    stay on one path (`gpu_zoo.core.compiler.codegen_cuda`: one call for a function bound to adjacent groups).
    """
    if not s.alive[e, a]:
        # Out of the game: stopped where it was tagged, facing heading 0 (as WarpDrive's step
        # multiplies heading and speed by its still-in-the-game flag).
        s.speed[e, a], s.acceleration[e, a], s.heading[e, a] = _ZERO, _ZERO, _ZERO
        return
    acc_idx, turn_idx = act[0], act[1]
    is_tagger = a < p.tagger_hi
    skill = p.skill_level_tagger if is_tagger else p.skill_level_runner
    top = p.max_speed * skill
    acc = s.acceleration[e, a] + _level(acc_idx, p.min_acceleration, p.max_acceleration, p.num_acceleration_levels)
    h = s.heading[e, a] + _level(turn_idx, p.min_turn, p.max_turn, p.num_turn_levels)
    # Python's and NumPy's float modulo, as WarpDrive takes it: a heading just below 0 wraps to
    # float32(2 pi) itself, not to 0.
    h = h - _TWO_PI * np.float32(math.floor(h / _TWO_PI))
    v = min(top, max(_ZERO, s.speed[e, a] + acc))
    if v <= _ZERO or v >= top:
        acc = _ZERO
    x = s.pos_x[e, a] + v * np.float32(math.cos(h))
    y = s.pos_y[e, a] + v * np.float32(math.sin(h))
    L = p.grid_length
    r = p.step_penalty_for_tagger if is_tagger else p.step_reward_for_runner
    if x < _ZERO or x > L or y < _ZERO or y > L:
        x = min(max(x, _ZERO), L)
        y = min(max(y, _ZERO), L)
        r += p.edge_hit_penalty
    s.pos_x[e, a], s.pos_y[e, a] = x, y
    s.speed[e, a], s.acceleration[e, a], s.heading[e, a] = v, acc, h
    s.rew[e, a] += r


@kernel_fn
def find_tagger(s, p, e, a, act):
    """A runner in the game finds its nearest tagger (lowest index on ties) and checks the tag."""
    s.tagged_by[e, a] = -1
    if not s.alive[e, a]:
        return
    x, y = s.pos_x[e, a], s.pos_y[e, a]
    best, best_d2 = -1, _ZERO
    for j in range(p.tagger_lo, p.tagger_hi):
        dx, dy = s.pos_x[e, j] - x, s.pos_y[e, j] - y
        d2 = dx * dx + dy * dy
        if best < 0 or d2 < best_d2:
            best, best_d2 = j, d2
    reach = p.tagging_distance * p.grid_length
    if best_d2 < reach * reach:
        s.tagged_by[e, a] = best


@kernel_fn
def count_tags(s, p, e, a, act):
    """A tagger counts the runners it tagged this step, and is paid for each."""
    n = 0
    for r in range(p.runner_lo, p.runner_hi):
        if s.tagged_by[e, r] == a:
            n += 1
    s.tags[e, a] = n
    s.rew[e, a] += np.float32(n) * p.tag_reward_for_tagger


@kernel_fn
def take_tag(s, p, e, a, act):
    """A tagged runner takes its penalty (and leaves the game where the env says so); a survivor's end reward."""
    if s.tagged_by[e, a] >= 0:
        s.rew[e, a] += p.tag_penalty_for_runner
        if p.runner_exits_game_after_tagged:
            s.alive[e, a] = 0
            s.term[e, a] = 1
    if s.alive[e, a] and s.t[e] >= p.max_cycles:
        s.rew[e, a] += p.end_of_game_reward_for_runner


@kernel_fn
def count_runners(s, p, e):
    if not p.runner_exits_game_after_tagged:
        return
    n = 0
    for j in range(p.tagger_lo, p.tagger_hi):
        n += s.tags[e, j]
    s.runners_left[e] -= n
    if s.runners_left[e] <= 0:
        s.over[e] = 1


@kernel_fn
def _cell(s, p, e, a):
    """(column, row) of agent a's cell in the search grid."""
    width = p.grid_length / np.float32(p.cells)
    cx = min(int(s.pos_x[e, a] / width), p.cells - 1)
    cy = min(int(s.pos_y[e, a] / width), p.cells - 1)
    return cx, cy


@kernel_fn
def bin_agent(s, p, e, a):
    """k-nearest mode: agent a, if visible (in the game, or leaving it at this step), takes its place in the grid."""
    if observing(s, e, a):
        cx, cy = _cell(s, p, e, a)
        s.cell_of[e, a] = cy * p.cells + cx
    else:
        s.cell_of[e, a] = -1


@kernel_fn
def count_cell(s, p, e, c):
    """How many agents in the game cell c holds, into ``cell_start[c + 1]`` (a counting sort's first pass).

    One lane per cell, each scanning every agent: reads only, in parallel. One thread sorting
    the whole env would wait on a store-then-load round trip through the cache per agent.
    """
    n = 0
    for a in range(p.num_agents):
        if s.cell_of[e, a] == c:
            n += 1
    s.cell_start[e, c + 1] = n


@kernel_fn
def cell_offsets(s, p, e):
    """Counts to offsets: ``cell_start[c]`` is where cell c's agents begin in ``cell_agents``."""
    s.cell_start[e, 0] = 0
    run = 0
    for c in range(1, p.cells * p.cells + 1):
        run += s.cell_start[e, c]
        s.cell_start[e, c] = run


@kernel_fn
def fill_cell(s, p, e, c):
    """Cell c lists its agents in ``cell_agents``, by index (so the sort is stable)."""
    at = s.cell_start[e, c]
    for a in range(p.num_agents):
        if s.cell_of[e, a] == c:
            s.cell_agents[e, at] = a
            at += 1


@kernel_fn
def _offer(d2s, js, j, d2, n, k):
    """Inserts candidate j at squared distance d2 into the sorted list of n (at most k) in d2s, js.

    Order is by distance, then by agent index, so the result does not depend on visiting order.
    """
    i = n if n < k else k - 1
    while i > 0 and (d2s[i - 1] > d2 or (d2s[i - 1] == d2 and js[i - 1] > j)):
        d2s[i] = d2s[i - 1]
        js[i] = js[i - 1]
        i -= 1
    d2s[i] = d2
    js[i] = j
    return n + 1 if n < k else n


@kernel_fn
def _scan(s, e, a, x, y, lo, hi, d2s, js, n, k, worst_d2, worst_j):
    """Offers the list of agent a, at (x, y), the agents ``cell_agents[e, lo:hi]``; returns (n, worst_d2, worst_j)."""
    for at in range(lo, hi):
        j = s.cell_agents[e, at]
        if j == a:
            continue
        ddx, ddy = s.pos_x[e, j] - x, s.pos_y[e, j] - y
        d2 = ddx * ddx + ddy * ddy
        if n == k and (d2 > worst_d2 or (d2 == worst_d2 and j > worst_j)):
            continue
        n = _offer(d2s, js, j, d2, n, k)
        worst_d2, worst_j = d2s[n - 1], js[n - 1]
    return n, worst_d2, worst_j


@kernel_fn
def _nearest(s, p, e, a, d2s, js):
    """Lists in ``nbr_idx`` the k nearest other visible agents of agent a; returns how many.

    Squares of cells around a's own, growing by a ring: once the square reaches r cells out, every
    agent not yet seen is farther than r cell widths, so the search stops when the k-th nearest is
    closer than that (with a margin for rounding in the cell assignment). It starts with the 3 x 3
    square, whose rows (like a ring's top and bottom rows) are contiguous runs of ``cell_agents``:
    one loop each. The list is kept sorted in the scratch ``d2s``, ``js`` and its k-th entry in
    registers, so most candidates are rejected with one comparison.
    """
    k, G = p.num_observed, p.cells
    x, y = s.pos_x[e, a], s.pos_y[e, a]
    cx, cy = _cell(s, p, e, a)
    width = p.grid_length / np.float32(G)
    last = max(max(cx, G - 1 - cx), max(cy, G - 1 - cy))
    n, worst_d2, worst_j = 0, _ZERO, -1
    r = min(1, last)
    while True:
        for dy in range(-r, r + 1):
            row = cy + dy
            if row < 0 or row >= G:
                continue
            base = row * G
            if r <= 1 or dy == -r or dy == r:  # a whole row: of the first square, or a ring's top or bottom
                lo = s.cell_start[e, base + max(cx - r, 0)]
                hi = s.cell_start[e, base + min(cx + r, G - 1) + 1]
                n, worst_d2, worst_j = _scan(s, e, a, x, y, lo, hi, d2s, js, n, k, worst_d2, worst_j)
                continue
            for col in (cx - r, cx + r):  # a ring's inner rows: its two end cells
                if 0 <= col < G:
                    c = base + col
                    n, worst_d2, worst_j = _scan(s, e, a, x, y, s.cell_start[e, c], s.cell_start[e, c + 1], d2s,
                                                 js, n, k, worst_d2, worst_j)
        reach = np.float32(r) * width
        if r >= last or (n == k and worst_d2 < reach * reach * _SEARCH_MARGIN):
            break
        r += 1
    for i in range(n):
        s.nbr_idx[e, a, i] = js[i]
    return n


@kernel_fn
def clear_neighbours(s, p, e, a):
    """k-nearest mode: no neighbours listed yet; the visible agents list theirs in `find_neighbours_by_cell`."""
    s.nbr_count[e, a] = 0


@kernel_fn
def find_neighbours_by_cell(s, p, e, k, d2s, js):
    """k-nearest mode: the k-th visible agent, in cell order, lists the nearest other visible agents.

    Taking observers in cell order rather than by index gives neighbouring GPU threads observers
    in one cell: they search the same cells, so their loops run alike and their reads coincide.
    """
    if k < s.cell_start[e, p.cells * p.cells]:
        a = s.cell_agents[e, k]
        s.nbr_count[e, a] = _nearest(s, p, e, a, d2s, js)


@kernel_fn
def _shown(s, p, e, a, slot, hide):
    """Whether agent a's observation slot ``slot`` shows an agent (else the slot's values are zeros).

    A nearest-agents slot past the list is empty. With full observations, an agent out of the
    game still sees who the others are and whether they are in the game (``hide=False``), and
    zeros for the rest, as in WarpDrive.
    """
    if p.use_full_observation:
        return not hide or observing(s, e, a)
    return slot < s.nbr_count[e, a]


@kernel_fn
def _other(s, p, e, a, slot):
    """The agent in a shown slot: the slot-th other agent (full observations), or the slot-th nearest.

    Read before the slot is known to be shown (a nearest-list entry past the list is a stale
    index, never used): the seven fills of a slot then compute it in one place, where the
    compiler shares it between them, instead of once behind each fill's own check.
    """
    if p.use_full_observation:
        return slot if slot < a else slot + 1
    return s.nbr_idx[e, a, slot]


# One fill function per block (`FEATURES` order, then time and own). Scales are reciprocals of
# params, which the compiler computes once outside the element loop: a division per element
# costs several instructions on a GPU. The blocks of one slot are computed together (a run of
# equal-size blocks), so the slot's agent is looked up once for all seven. Each returns early
# for an empty slot rather than taking a -1 for one: the index it reads is then known not to be
# negative, which spares every load the check for a negative index (`benchmarks/tuning_records.py`).
@kernel_fn
def rel_x(s, p, e, a, slot):
    j = _other(s, p, e, a, slot)
    if not _shown(s, p, e, a, slot, True):
        return _ZERO
    return (s.pos_x[e, j] - s.pos_x[e, a]) * (_ONE / (_SQRT2 * p.grid_length))


@kernel_fn
def rel_y(s, p, e, a, slot):
    j = _other(s, p, e, a, slot)
    if not _shown(s, p, e, a, slot, True):
        return _ZERO
    return (s.pos_y[e, j] - s.pos_y[e, a]) * (_ONE / (_SQRT2 * p.grid_length))


@kernel_fn
def rel_speed(s, p, e, a, slot):
    j = _other(s, p, e, a, slot)
    if not _shown(s, p, e, a, slot, True):
        return _ZERO
    return (s.speed[e, j] - s.speed[e, a]) * (_ONE / (p.max_speed + _EPS))


@kernel_fn
def rel_acceleration(s, p, e, a, slot):
    j = _other(s, p, e, a, slot)
    if not _shown(s, p, e, a, slot, True):
        return _ZERO
    return (s.acceleration[e, j] - s.acceleration[e, a]) * (_ONE / (p.max_speed + _EPS))


@kernel_fn
def rel_heading(s, p, e, a, slot):
    j = _other(s, p, e, a, slot)
    if not _shown(s, p, e, a, slot, True):
        return _ZERO
    return (s.heading[e, j] - s.heading[e, a]) * (_ONE / _TWO_PI)


@kernel_fn
def is_tagger(s, p, e, a, slot):
    j = _other(s, p, e, a, slot)
    if not _shown(s, p, e, a, slot, False):
        return _ZERO
    return _ONE if j < p.tagger_hi else _ZERO


@kernel_fn
def alive(s, p, e, a, slot):
    j = _other(s, p, e, a, slot)
    if not _shown(s, p, e, a, slot, False):
        return _ZERO
    return _ONE if observing(s, e, j) else _ZERO


@kernel_fn
def elapsed(s, p, e, a, j):
    """The time block, t / max_cycles; zero for an agent out of the game.

    Only full observations reach an agent out of the game (`_observation`); with the nearest
    agents the core already writes its zeros, and the constant test folds the check away.
    """
    if p.use_full_observation and not observing(s, e, a):
        return _ZERO
    return np.float32(s.t[e]) / np.float32(p.max_cycles)


@kernel_fn
def own_state(s, p, e, a, o):
    """observe_own_state: what the relative features leave out (zeros out of the game, as in `elapsed`)."""
    if p.use_full_observation and not observing(s, e, a):
        return _ZERO
    if o == 0:
        return s.pos_x[e, a] / np.float32(p.grid_length)
    if o == 1:
        return s.pos_y[e, a] / np.float32(p.grid_length)
    if o == 2:
        return s.speed[e, a] / np.float32(p.max_speed)
    h = s.heading[e, a]
    return np.float32(math.cos(h)) if o == 3 else np.float32(math.sin(h))


_FILLS = (rel_x, rel_y, rel_speed, rel_acceleration, rel_heading, is_tagger, alive)


def _observation(p: TagParams) -> PerObs:
    # With full observations an agent out of the game is not all zeros (see `_shown`).
    return PerObs(zeros_out_of_game=not p.use_full_observation)


def launch(p: TagParams, num_envs: int) -> dict:
    """The GPU launch of full observations of 32 to 127 others: 512 threads per env.

    Such observations are most of a step, and the lanes a step's other phases leave idle write them.
    """
    if p.use_full_observation and 32 <= p.num_observed < 128:
        return {"threads_per_env": 512}
    return {}


# Block by block: a lane computes slot j of every feature block at once, so what the slot shares
# (the other agent's index, its nearest-list entry) is found once for seven values.
TUNING = Tuning(launch=launch, observe_by_block=True)


_SCRATCH = ("nbr_d2", "nbr_j")


def observe_phases(p: TagParams) -> tuple:
    if p.use_full_observation:
        return (_observation(p),)
    cells = p.search_grid ** 2
    return (PerAgent(bin_agent), PerItem(count_cell, cells), PerEnv(cell_offsets), PerItem(fill_cell, cells),
            PerAgent(clear_neighbours), PerItem(find_neighbours_by_cell, p.num_agents, _SCRATCH),
            _observation(p))


# ------------------------------------------------------------------ render
def render(state: dict, p: TagParams, size: int = 320) -> np.ndarray:
    """Top view: taggers red, runners blue, tagged runners grey."""
    from gpu_zoo.core.api.render import Canvas, tag_color

    c = Canvas(size, (p.grid_length, p.grid_length))
    for a in range(p.num_agents):
        tagger = a < p.num_taggers
        color = tag_color(tagger, bool(state["alive"][a]))
        x, y, h = float(state["pos_x"][a]), float(state["pos_y"][a]), float(state["heading"][a])
        c.disc(x, y, 0.028 * p.grid_length * (1.4 if tagger else 1.0), color)
        c.heading(x, y, h, 0.06 * p.grid_length, color)
    c.text_bar(int(state["t"]) / p.max_cycles)
    return c.image


SPEC = EnvSpec(
    id="tag_continuous_v0",
    params=TagParams,
    groups=groups,
    fields=fields,
    reset=(PerAgent(spawn), PerEnv(start)),
    # take_tag follows find_tagger in a stage of its own (the same group again): count_tags, beside it, reads
    # every runner's tagged_by
    step=(PerAgent(move, group="tagger"), PerAgent(move, group="runner"), PerAgent(find_tagger, group="runner"),
          PerAgent(take_tag, group="runner"), PerAgent(count_tags, group="tagger"), PerEnv(count_runners)),
    observe=observe_phases,
    constants=constants,
    render=render,
    module=__name__,
    tuning=TUNING,
)
