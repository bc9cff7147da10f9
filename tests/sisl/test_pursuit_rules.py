"""Pursuit's refusals (arguments out of range, bad actions) and its batched face, on the comparisons' kernel."""

import numpy as np
import pytest
import torch

from gpu_zoo.sisl import pursuit_v5
from tests.helpers import PZ_CONFIGS

SMALL = PZ_CONFIGS["pursuit_v5"]
FIELDS = ("px", "py", "ex", "ey", "ev_alive", "pcount", "ecount", "rew", "t")


@pytest.mark.parametrize("bad, expected", [
    (dict(obs_range=4), "obs_range must be odd"),
    (dict(obs_range=0), "obs_range must be a positive int"),
    (dict(x_size=0), "x_size must be a positive int"),
    (dict(y_size=-3), "y_size must be a positive int"),
    (dict(x_size=16.0), "x_size"),
    (dict(n_catch=0), "n_catch must be a positive int"),
    (dict(n_evaders=0), "n_evaders must be a positive int"),
    (dict(n_pursuers=0), "n_pursuers must be a positive int"),
    (dict(max_cycles=0), "max_cycles must be a positive int"),
    (dict(constraint_window=0.0), r"constraint_window must be in \(0, 1\]"),
    (dict(constraint_window=1.5), r"constraint_window must be in \(0, 1\]"),
    (dict(constraint_window=0.05), "span at least one cell"),
    (dict(surround=1), "surround"),
    (dict(tag_reward=float("nan")), "tag_reward"),
])
def test_arguments_out_of_range_are_refused_by_name(bad, expected):
    for make in (pursuit_v5.parallel_env, pursuit_v5.env, pursuit_v5.raw_env):
        with pytest.raises(ValueError, match=expected):
            make(**bad)


def test_pettingzoo_controllers_are_not_arguments():
    with pytest.raises(TypeError, match="evader_controller"):
        pursuit_v5.parallel_env(evader_controller=None)


def snapshot(batched):
    return {name: getattr(batched.state, name).clone() for name in FIELDS}


def assert_unchanged(before, batched):
    for name, value in before.items():
        assert torch.equal(value, getattr(batched.state, name)), name


@pytest.mark.parametrize("action", [5, -1, 1.5, np.array([1, 2]), "up", None, True])
def test_bad_actions_are_refused_and_change_nothing(action):
    par = pursuit_v5.parallel_env(**SMALL)
    par.reset(seed=0)
    before = snapshot(par.unwrapped.batched)
    with pytest.raises((ValueError, AssertionError)):
        par.step({"pursuer_0": 0, "pursuer_1": action, "pursuer_2": 0})
    assert_unchanged(before, par.unwrapped.batched)

    raw = pursuit_v5.raw_env(**SMALL)
    raw.reset(seed=0)
    before = snapshot(raw.batched)
    with pytest.raises(ValueError, match="pursuer_0"):
        raw.step(action)
    assert raw.agent_selection == "pursuer_0"
    assert_unchanged(before, raw.batched)


@pytest.mark.parametrize("actions", [
    {"pursuer": torch.zeros(1, 2, dtype=torch.int64)},  # one pursuer short
    {"pursuer": torch.zeros(1, 3, dtype=torch.float32)},  # not integers
    {"pursuer": torch.full((1, 3), 5, dtype=torch.int64)},  # out of Discrete(5)
    {"evader": torch.zeros(1, 3, dtype=torch.int64)},  # evaders take no actions
])
def test_the_batched_face_refuses_bad_action_tensors(actions):
    env = pursuit_v5.batched_env(1, device="cpu", **SMALL)
    env.reset(seed=1)
    before = snapshot(env)
    with pytest.raises(ValueError, match="actions"):
        env.step(actions)
    assert_unchanged(before, env)


def test_the_batched_face_plays_a_cycle_a_step_and_auto_resets():
    env = pursuit_v5.batched_env(1, device="cpu", **dict(SMALL, max_cycles=3))
    obs = env.reset(seed=2)
    assert obs["pursuer"].shape == (1, 3, 5 * 5 * 3)
    f = env.state
    assert int(f.pcount.sum()) == 3 and int(f.ecount.sum()) == int(f.left[0]) == 4
    assert int(f.mover[0]) == -1, "the core's mover: every pursuer's move at each launch (a whole cycle)"
    for _ in range(3):
        _, rew, term, trunc, info = env.step({"pursuer": torch.full((1, 3), 4, dtype=torch.int64)})  # all stay
        assert rew["pursuer"].shape == (1, 3)
    assert bool(info["done"].all()) and (trunc["pursuer"] | term["pursuer"]).all()
    assert int(f.t[0]) == 0 and int(f.ev_alive.sum()) == 4, "auto-reset: a new episode, every evader back"
