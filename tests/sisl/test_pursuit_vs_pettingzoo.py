"""Pursuit against PettingZoo's ``pursuit_v5``: same starts, same evader moves, same actions, whole episodes.

The two draw from different generators, so ours hands its draws to PettingZoo's env: after each
reset, our start cells are written into PettingZoo's layers (and its ``model_state``); at each
cycle, ours steps first and PettingZoo's evader controller is replaced by one handing out, in
PettingZoo's order (the evaders left after the catches, in index order), the moves ours drew. Both
then take the same random actions. Observations and PettingZoo's ``state()`` match exactly, and
rewards to float32 rounding (PettingZoo sums each cycle's sub-steps in double precision). The
parallel envs are compared after each cycle, the AEC envs (``env()``) after each agent's step.

Three structural configurations (one kernel each) cover every argument: PettingZoo's defaults; a
small non-square grid without ``surround``, ``n_catch=1``, ``shared_reward=False`` and
``obs_range=5``; a grid narrower than ``obs_range=9`` with frozen evaders. Float arguments and
``max_cycles`` are run-time values, swept over the same kernels.
"""

import numpy as np
import pytest

from gpu_zoo.sisl import pursuit_v5
from gpu_zoo.sisl.pursuit import PursuitParams, building, pettingzoo_state
from tests.helpers import PZ_CONFIGS, reference

DEFAULT = {}
SMALL = PZ_CONFIGS["pursuit_v5"]  # a small non-square grid, no surround, n_catch=1, rewards not shared, obs_range=5
FROZEN = dict(x_size=5, y_size=9, n_pursuers=4, n_evaders=3, obs_range=9, freeze_evaders=True, max_cycles=60)
CASES = {  # name: (arguments, episodes)
    "default": (DEFAULT, 2),
    "small": (SMALL, 4),
    "small_rewards": (dict(SMALL, max_cycles=40, tag_reward=0.5, catch_reward=2.0, urgency_reward=-0.3,
                           constraint_window=0.8), 3),
    "frozen": (FROZEN, 3),
    "frozen_window": (dict(FROZEN, max_cycles=25, constraint_window=0.8, tag_reward=0.25), 3),
}
# The windows leave room for every start: where one cannot (4 evaders in 3 by 2 cells) PettingZoo draws forever.


def pettingzoo(face="parallel_env"):
    return getattr(reference("pettingzoo.sisl.pursuit_v5", "PettingZoo's SISL pursuit"), face)


class Handout:
    """An evader controller handing out the moves ours drew, in order."""

    def __init__(self, moves):
        self.moves = list(moves)

    def act(self, state):
        return self.moves.pop(0)


def fields(ours):
    f = ours.unwrapped.batched.state
    return {name: getattr(f, name)[0].cpu().numpy() for name in
            ("px", "py", "ex", "ey", "ev_alive", "ev_move", "pcount", "ecount")}


def hand_start(ref, ours):
    """Our start cells into PettingZoo's layers and ``model_state``."""
    world, f = ref.unwrapped.env, fields(ours)
    for i in range(world.n_pursuers):
        world.pursuer_layer.set_position(i, int(f["px"][i]), int(f["py"][i]))
    for j in range(world.n_evaders):
        world.evader_layer.set_position(j, int(f["ex"][j]), int(f["ey"][j]))
    world.model_state[1] = world.pursuer_layer.get_state_matrix()
    world.model_state[2] = world.evader_layer.get_state_matrix()


def hand_moves(ref, ours):
    """The moves ours drew this cycle, for PettingZoo's evaders left after the catches."""
    f = fields(ours)
    ref.unwrapped.env.evader_controller = Handout(int(m) for m, on in zip(f["ev_move"], f["ev_alive"], strict=True)
                                                  if on)


def assert_same_world(ref, ours, params, where):
    np.testing.assert_array_equal(pettingzoo_state(fields(ours), params), ref.unwrapped.state(), err_msg=where)


def assert_same_obs(o1, o2, where):
    assert set(o1) == set(o2), where
    for a in o1:
        assert o2[a].dtype == o1[a].dtype and o2[a].shape == o1[a].shape, f"{a}, {where}"
        np.testing.assert_array_equal(o2[a], o1[a], err_msg=f"obs of {a}, {where}")


def parallel_episode(ref, ours, params, rng, label):
    """One episode of both parallel envs; returns (cycles, whether it ended by termination)."""
    cycles = 0
    while ref.agents:
        actions = {a: int(rng.integers(5)) for a in ref.agents}
        o2, r2, te2, tr2, i2 = ours.step(actions)
        hand_moves(ref, ours)
        o1, r1, te1, tr1, i1 = ref.step(actions)
        cycles += 1
        where = f"{label}, cycle {cycles}"
        assert ref.unwrapped.env.evader_controller.moves == [], f"evaders left differ, {where}"
        assert_same_obs(o1, o2, where)
        assert set(r1) == set(r2), where
        for a in r1:
            assert r2[a] == pytest.approx(r1[a], rel=1e-5, abs=1e-6), f"reward of {a}, {where}: {r2} {r1}"
        assert te2 == te1 and tr2 == tr1 and i2 == i1, where
        assert ours.agents == ref.agents, where
        assert_same_world(ref, ours, params, where)
    return cycles, any(te1.values())


@pytest.mark.parametrize("case", sorted(CASES))
def test_parallel_episodes_match(case):
    kw, episodes = CASES[case]
    params = PursuitParams(**kw)
    ref, ours = pettingzoo()(**kw), pursuit_v5.parallel_env(**kw)
    assert ours.possible_agents == ref.possible_agents
    for a in ref.possible_agents:
        assert ours.observation_space(a) == ref.observation_space(a)
        assert ours.action_space(a) == ref.action_space(a)
    rng = np.random.default_rng(len(case))
    ends = []
    for seed in range(episodes):
        o2, i2 = ours.reset(seed=seed)
        ref.reset(seed=seed)
        hand_start(ref, ours)
        assert_same_obs({a: ref.aec_env.observe(a) for a in ref.agents}, o2, f"{case}, reset {seed}")
        assert i2 == {a: {} for a in ref.agents}
        assert_same_world(ref, ours, params, f"{case}, reset {seed}")
        ends.append(parallel_episode(ref, ours, params, rng, f"{case}, episode {seed}"))
    if case == "small":  # catches are quick here: every evader is caught before the time limit
        assert {terminated for _, terminated in ends} == {True}, ends
    if case in ("default", "frozen_window"):
        assert ends == [(params.max_cycles, False)] * episodes


@pytest.mark.parametrize("window", [0.8, 0.6])
def test_the_starts_follow_pettingzoo_rules(window):
    """Starts on open cells of one window, no two pursuers (or two evaders) on the same or neighbouring cells.

    With a window of 0.6, some draws leave no room for every pursuer (PettingZoo then draws forever):
    the last ones still start, on open cells.
    """
    kw = dict(FROZEN, constraint_window=window)
    ours, p = pursuit_v5.parallel_env(**kw), PursuitParams(**kw)
    wall = building(p.x_size, p.y_size)
    crowded = 0
    for seed in range(20):
        ours.reset(seed=seed)
        f = fields(ours)
        for xs, ys in ((f["px"], f["py"]), (f["ex"], f["ey"])):
            assert not wall[xs, ys].any()
            cells = list(zip(xs.tolist(), ys.tolist(), strict=True))
            apart = all(abs(u - x) + abs(v - y) > 1 for i, (x, y) in enumerate(cells) for (u, v) in cells[:i])
            crowded += not apart
            assert apart or window < 0.8, (seed, cells)
        for coords, size in ((np.concatenate([f["px"], f["ex"]]), p.x_size),
                             (np.concatenate([f["py"], f["ey"]]), p.y_size)):
            assert coords.max() - coords.min() < int(size * window) + 1, (seed, coords)
    assert (crowded > 0) == (window < 0.8)


AEC_CASES = {  # name: (arguments, episodes); the parallel comparisons' kernels, with shorter episodes
    "small": (SMALL, 3),
    "small_rewards": CASES["small_rewards"],
    "default": (dict(DEFAULT, max_cycles=15), 1),  # surround and shared rewards
    "frozen_window": CASES["frozen_window"],
}


def assert_same_aec(ref, ours, where):
    """Everything PettingZoo's AEC env shows between two agent steps."""
    assert ours.agent_selection == ref.agent_selection and ours.agents == ref.agents, where
    assert ours.terminations == ref.terminations and ours.truncations == ref.truncations, where
    assert ours.infos == ref.infos, where
    for name in ("rewards", "_cumulative_rewards"):
        theirs, mine = getattr(ref.unwrapped, name), getattr(ours.unwrapped, name)
        assert set(mine) == set(theirs), f"{name}, {where}"
        for a in theirs:
            assert mine[a] == pytest.approx(theirs[a], rel=1e-5, abs=1e-6), f"{name} of {a}, {where}: {mine} {theirs}"
    for a in ref.agents:
        np.testing.assert_array_equal(ours.observe(a), ref.observe(a), err_msg=f"obs of {a}, {where}")
    if ref.agents:
        (o1, r1, te1, tr1, i1), (o2, r2, te2, tr2, i2) = ref.last(), ours.last()
        np.testing.assert_array_equal(o2, o1, err_msg=f"last(), {where}")
        assert r2 == pytest.approx(r1, rel=1e-5, abs=1e-6) and (te2, tr2, i2) == (te1, tr1, i1), where


@pytest.mark.parametrize("case", sorted(AEC_CASES))
def test_aec_episodes_match_after_every_agent_step(case):
    """``env()`` against PettingZoo's ``env()`` after each agent's step, over whole episodes and their dead steps.

    Each pursuer's move shows at once, in every agent's observation and in the sub-step's
    rewards (tags; catches and urgency after the last pursuer's), as PettingZoo's does.
    """
    kw, episodes = AEC_CASES[case]
    params = PursuitParams(**kw)
    ref, ours = pettingzoo("env")(**kw), pursuit_v5.env(**kw)
    rng = np.random.default_rng(len(case) + 100)
    ends = set()
    for seed in range(episodes):
        ours.reset(seed=seed)
        ref.reset(seed=seed)
        hand_start(ref, ours)
        assert_same_aec(ref, ours, f"{case}, reset {seed}")
        turns = 0
        for agent in ref.agent_iter():
            _, _, term, trunc, _ = ref.last()
            action = None if term or trunc else int(rng.integers(5))
            ours.step(action)
            if agent == ref.possible_agents[-1] and action is not None:
                hand_moves(ref, ours)
            ref.step(action)
            turns += 1
            where = f"{case}, episode {seed}, turn {turns} ({agent} played {action})"
            assert_same_aec(ref, ours, where)
            assert_same_world(ref, ours, params, where)
        assert ours.agents == [] and turns > params.n_pursuers
        ends.add((term, trunc))
    if case in ("default", "frozen_window"):
        assert ends == {(False, True)}


def test_aec_refuses_a_bad_move_and_changes_nothing():
    ours = pursuit_v5.raw_env(**SMALL)
    ours.reset(seed=3)
    ours.step(1)
    before = ({a: ours.observe(a) for a in ours.agents}, dict(ours._cumulative_rewards), ours.agent_selection)
    for bad in (5, -1, 1.0, True, "2", None):
        with pytest.raises(ValueError):
            ours.step(bad)
    after = ({a: ours.observe(a) for a in ours.agents}, dict(ours._cumulative_rewards), ours.agent_selection)
    assert after[1:] == before[1:]
    for a in before[0]:
        np.testing.assert_array_equal(after[0][a], before[0][a])
    assert int(ours.batched.state.t[0]) == 0
