"""Tag (gridworld) rules: WarpDrive's own reference cases, and the multi-runner extension."""

import numpy as np
import pytest
import torch

import gpu_zoo

# WarpDrive's reference configuration: 4 taggers, 1 runner, grid_length 4, episode 10.
WD = dict(num_taggers=4, grid_length=4, max_cycles=10, wall_hit_penalty=0.1, tag_reward_for_tagger=10.0,
          tag_penalty_for_runner=2.0, step_cost_for_tagger=0.01)


def make(**kw):
    return gpu_zoo.make("tag_gridworld_v0", num_envs=1, device="cpu", **{**WD, **kw})


def place(env, xs, ys):
    env.state.x[0] = torch.tensor(xs, dtype=torch.int32)
    env.state.y[0] = torch.tensor(ys, dtype=torch.int32)


def act(env, actions):
    acts = torch.tensor(actions, dtype=torch.int32)
    return env.step({"tagger": acts[None, :4], "runner": acts[None, 4:]})


def all_obs(obs):
    return torch.cat([obs["tagger"][0], obs["runner"][0]]).numpy()


def expected_full_obs(xs, ys, t, L=4, T=10):
    """WarpDrive's full observation: x block, y block, agent types (runner 1), one-hot self, time."""
    A = len(xs)
    rows = []
    for a in range(A):
        onehot = np.eye(A)[a]
        rows.append(np.concatenate([np.array(xs) / L, np.array(ys) / L, [0, 0, 0, 0, 1], onehot, [t / T]]))
    return np.array(rows)


def test_warpdrive_case_1_tag_with_wall_hits():
    env = make()
    env.reset(seed=0)
    place(env, [0, 0, 0, 0, 1], [0, 0, 0, 0, 1])
    obs, rew, term, trunc, info = act(env, [2, 0, 3, 4, 2])
    r = torch.cat([rew["tagger"][0], rew["runner"][0]]).tolist()
    assert r == pytest.approx([9.9, 10.0, 10.0, 9.9, -2.0])
    assert bool(info["done"][0]) and term["runner"][0].all() and term["tagger"][0].all()
    np.testing.assert_allclose(all_obs(info["final_obs"]), expected_full_obs([0, 0, 0, 0, 0], [0, 0, 1, 0, 1], 1),
                               atol=1e-6)


def test_warpdrive_case_2_two_steps():
    env = make()
    env.reset(seed=0)
    place(env, [1, 3, 3, 1, 0], [1, 1, 3, 3, 1])
    obs, rew, term, trunc, info = act(env, [1, 3, 2, 4, 1])
    r = torch.cat([rew["tagger"][0], rew["runner"][0]]).tolist()
    assert r == pytest.approx([-0.01, -0.01, -0.01, -0.01, 0.01])
    assert not bool(info["done"][0])
    np.testing.assert_allclose(all_obs(obs), expected_full_obs([2, 3, 2, 1, 1], [1, 2, 3, 2, 1], 1), atol=1e-6)
    obs, rew, term, trunc, info = act(env, [2, 1, 0, 4, 0])
    r = torch.cat([rew["tagger"][0], rew["runner"][0]]).tolist()
    assert r == pytest.approx([10.0, 10.0, 10.0, 10.0, -2.0])
    assert bool(info["done"][0])
    np.testing.assert_allclose(all_obs(info["final_obs"]), expected_full_obs([1, 4, 2, 1, 1], [1, 2, 3, 1, 1], 2),
                               atol=1e-6)


def test_wall_penalty_per_axis_and_truncation():
    env = make(max_cycles=2)
    env.reset(seed=0)
    place(env, [4, 0, 2, 2, 1], [2, 2, 4, 0, 3])
    _, rew, *_ = act(env, [1, 2, 3, 4, 0])
    assert rew["tagger"][0].tolist() == pytest.approx([-0.11, -0.11, -0.11, -0.11])
    _, rew, term, trunc, info = act(env, [0, 0, 0, 0, 0])
    assert trunc["tagger"][0].all() and trunc["runner"][0].all() and not term["runner"].any()


def test_partial_observation_targets_nearest():
    env = make(use_full_observation=False)
    env.reset(seed=0)
    place(env, [0, 2, 4, 4, 4], [0, 3, 0, 4, 3])
    obs, *_ = act(env, [0, 0, 0, 0, 0])
    # tagger 1 sees itself and the runner; the runner sees its nearest tagger (tagger 3 at distance 1)
    assert obs["tagger"][0, 1].tolist() == pytest.approx([0.5, 0.75, 1.0, 0.75, 0.0, 0.1])
    assert obs["runner"][0, 0].tolist() == pytest.approx([1.0, 0.75, 1.0, 1.0, 1.0, 0.1])


def test_several_runners_leave_one_by_one():
    env = gpu_zoo.make("tag_gridworld_v0", num_envs=1, device="cpu", num_taggers=2, num_runners=2, grid_length=4,
                       max_cycles=10)
    env.reset(seed=0)
    env.state.x[0] = torch.tensor([1, 3, 1, 0], dtype=torch.int32)
    env.state.y[0] = torch.tensor([1, 3, 2, 0], dtype=torch.int32)
    _, rew, term, _, info = env.step({"tagger": torch.tensor([[3, 0]]), "runner": torch.tensor([[0, 0]])})
    assert rew["tagger"][0].tolist() == pytest.approx([10.0, 10.0])
    assert rew["runner"][0].tolist() == pytest.approx([-2.0, 0.01])
    assert term["runner"][0].tolist() == [True, False] and not bool(info["done"][0])
    obs, rew, term, _, info = env.step({"tagger": torch.tensor([[0, 0]]), "runner": torch.tensor([[0, 0]])})
    assert rew["runner"][0].tolist() == pytest.approx([0.0, 0.01])
    assert not obs["runner"][0, 0].any()
    alive_block = env.layout.groups["tagger"].obs_offsets["alive"]
    assert obs["tagger"][0, 0, alive_block[0]:sum(alive_block)].tolist() == [1.0, 1.0, 0.0, 1.0]


def test_fixed_start_is_warpdrives():
    env = make(random_start=False)
    env.reset(seed=0)
    assert env.state.x[0].tolist() == [2, 2, 2, 2, 0] and env.state.y[0].tolist() == [2, 2, 2, 2, 0]


def test_random_starts_stay_on_the_grid():
    env = gpu_zoo.make("tag_gridworld_v0", num_envs=64, device="cpu", **WD)
    env.reset(seed=1)
    assert env.state.x.min() >= 0 and env.state.x.max() <= 4
    assert len({tuple(r) for r in env.state.x.tolist()}) > 32
