"""`BatchedEnv.reset(envs=mask)`: the marked envs start their next episode as auto-reset would, the others stay."""

import pytest
import torch

import gpu_zoo
from tests.helpers import GRID_SMALL, PZ_CONFIGS

# What a reset rewrites that an auto-reset leaves from the episode's last step (its flags, rewards, final
# observations), and the flag telling the two apart.
STEP_REPORT = {"done", "term", "trunc", "rew", "active", "finished", "autoreset"}


def make(env_id, **kw):
    return gpu_zoo.make(env_id, num_envs=4, device="cpu", **PZ_CONFIGS[env_id], **kw)


def rows(env, envs) -> dict[str, torch.Tensor]:
    """Every field of the envs in ``envs``, copied."""
    return {name: view[envs].clone() for name, view in env.buffers.raw.items()}


@pytest.mark.parametrize("env_id", gpu_zoo.registered_envs())
def test_resetting_finished_envs_gives_what_auto_reset_gives(env_id):
    auto, manual = make(env_id), make(env_id, autoreset=False)
    auto.reset(seed=5)
    manual.reset(seed=5)
    gen = torch.Generator().manual_seed(0)
    ends = 0
    for _ in range(2 * PZ_CONFIGS[env_id]["max_cycles"] + 1):
        actions = auto.sample_actions(gen)
        auto.step(actions)
        _, _, _, _, info = manual.step(actions)
        done = info["done"].clone()
        ends += int(done.sum())
        manual.reset(envs=done)
        for name, view in auto.buffers.raw.items():
            if name not in STEP_REPORT and not name.startswith("final_obs"):
                assert torch.equal(view, manual.buffers.raw[name]), f"{env_id}: {name} differs from auto-reset's"
    assert ends >= 8, "every env finished twice: the comparison crossed episode ends"


def test_a_partial_reset_leaves_the_other_envs_exactly_as_they_were():
    env = gpu_zoo.make("tag_gridworld_v0", num_envs=4, device="cpu", **GRID_SMALL)
    env.reset(seed=2)
    gen = torch.Generator().manual_seed(1)
    for _ in range(3):
        env.step(env.sample_actions(gen))
    mask = torch.tensor([False, True, False, True])
    kept = rows(env, ~mask)
    obs = env.reset(envs=mask)
    for name, before in kept.items():
        assert torch.equal(env.buffers.raw[name][~mask], before), f"{name} changed in an env not reset"
    assert env.state.t[mask].tolist() == [0, 0] and env.state.t[~mask].tolist() == [3, 3]
    assert env.state.episode.tolist() == [0, 1, 0, 1]
    assert obs is env.obs


def test_a_mid_episode_reset_starts_the_episode_a_full_reset_would_start_next():
    """The marked envs' next episode is episode 1 of the seed: what reset() after reset(seed) starts."""
    env = gpu_zoo.make("tag_gridworld_v0", num_envs=4, device="cpu", **GRID_SMALL)
    oracle = gpu_zoo.make("tag_gridworld_v0", num_envs=4, device="cpu", **GRID_SMALL)
    env.reset(seed=9)
    env.step(env.sample_actions(torch.Generator().manual_seed(0)))
    oracle.reset(seed=9)
    oracle.reset()
    mask = torch.tensor([True, False, False, True])
    env.reset(envs=mask)
    for name in ("x", "y", "tagged", "alive", "episode", "t"):
        assert torch.equal(env.buffers.raw[name][mask], oracle.buffers.raw[name][mask]), name
    for g in env.groups:
        assert torch.equal(env.obs[g][mask], oracle.obs[g][mask])
        assert not env.final_obs[g][mask].any(), "nothing of the cut episode stays visible"
        assert not env.rewards[g][mask].any() and not env.terminated[g][mask].any()


def test_episode_statistics_keep_counting_and_a_cut_episode_is_not_counted():
    env = gpu_zoo.make("tag_gridworld_v0", num_envs=4, device="cpu", autoreset=False, **GRID_SMALL)
    env.reset(seed=4)
    gen = torch.Generator().manual_seed(2)
    while not env.info["done"].all():
        env.step(env.sample_actions(gen))
    stats = {k: v.clone() for k, v in env.episode_stats().items()}
    env.reset(envs=torch.tensor([True, True, False, False]))
    env.step(env.sample_actions(gen))
    env.reset(envs=torch.tensor([True, False, False, False]))  # cut after one step
    for k, v in env.episode_stats().items():
        assert torch.equal(v, stats[k]), f"{k} changed"
    assert (stats["episodes"] == 1).all()


def test_bad_partial_resets_are_refused_and_change_nothing():
    env = gpu_zoo.make("tag_gridworld_v0", num_envs=4, device="cpu", **GRID_SMALL)
    with pytest.raises(RuntimeError, match="reset\\(\\) on every env"):
        env.reset(envs=torch.ones(4, dtype=torch.bool))
    env.reset(seed=1)
    env.step(env.sample_actions(torch.Generator().manual_seed(0)))
    before = env.buffers.storage.clone()
    ok = torch.tensor([True, False, False, False])
    for bad, match in ((torch.ones(3, dtype=torch.bool), r"shape \(4,\), got torch.bool of shape \(3,\)"),
                       (torch.ones(4, dtype=torch.int64), "bool mask"), (torch.ones(4, 1, dtype=torch.bool), "bool"),
                       ("all", "bool mask"), (object(), "got object")):
        with pytest.raises(ValueError, match=match):
            env.reset(envs=bad)
    for kw in (dict(seed=3), dict(episode_counts=torch.zeros(4, dtype=torch.int64)),
               dict(start_steps=torch.zeros(4, dtype=torch.int64))):
        with pytest.raises(ValueError, match=f"{next(iter(kw))} apply to a reset of every env"):
            env.reset(envs=ok, **kw)
    assert torch.equal(env.buffers.storage, before)
    env.reset(envs=[True, False, False, False])  # any bool array will do
    assert env.state.episode.tolist() == [1, 0, 0, 0]
