"""The batched API's contract: shapes, buffers, auto-reset, seeds, and errors for bad input."""

import numpy as np
import pytest
import torch

import gpu_zoo
from tests.helpers import TAG_SMALL, noop_actions, tag_env


@pytest.fixture(scope="module")
def env():
    return tag_env(num_envs=4)


def test_shapes_dtypes_and_spaces(env):
    obs = env.reset(seed=0)
    for g in env.groups:
        n, space = env.group_size(g), env.single_observation_space(g)
        assert obs[g].shape == (4, n, space.shape[0]) and obs[g].dtype == torch.float32
        assert env.single_observation_space(g) is space
        assert env.actions[g].shape == (4, n, 2)
        assert space.contains(obs[g][0, 0].numpy())


def test_outputs_are_reused_buffers(env):
    env.reset(seed=0)
    first = env.step(noop_actions(env))
    second = env.step(noop_actions(env))
    for a, b in zip(first[:4], second[:4], strict=True):
        for g in env.groups:
            assert a[g] is b[g]


def test_auto_reset_keeps_final_obs_and_draws_a_new_start(env):
    env.reset(seed=3)
    start = env.state.pos_x.clone()
    gen = torch.Generator().manual_seed(0)
    for _ in range(TAG_SMALL["max_cycles"]):
        obs, rew, term, trunc, info = env.step(env.sample_actions(gen))
    assert info["done"].all()
    assert trunc["tagger"].all()
    # final_obs holds the last observation of the finished episode: time = 1.
    time_idx = env.layout.groups["tagger"].obs_offsets["time"][0]
    assert torch.allclose(info["final_obs"]["tagger"][..., time_idx], torch.ones(4, 2))
    assert torch.allclose(obs["tagger"][..., time_idx], torch.zeros(4, 2))
    assert not torch.equal(env.state.pos_x, start), "the next episode must start afresh"
    assert (env.state.episode == 1).all() and (env.state.ep_count == 1).all()
    assert (env.episode_stats()["length"] == TAG_SMALL["max_cycles"]).all()


def test_seeds_replay_and_differ(env):
    env.reset(seed=7)
    a = env.state.pos_x.clone()
    env.reset(seed=7)
    assert torch.equal(a, env.state.pos_x)
    env.reset(seed=8)
    assert not torch.equal(a, env.state.pos_x)
    assert not torch.equal(a[0], a[1]), "envs of one batch start differently"
    env.reset()
    assert not torch.equal(a, env.state.pos_x), "reset() without a seed starts a new episode"


def test_a_reset_can_start_the_episode_counts(env):
    env.reset(seed=7, episode_counts=torch.tensor([3, 0, 5, 1]))
    assert env.state.ep_count.tolist() == [3, 0, 5, 1]
    env.reset(seed=7)
    assert env.state.ep_count.tolist() == [0, 0, 0, 0]
    for bad, match in ((torch.tensor([1, 2]), r"shape \(4,\)"), (torch.ones(4), "integers"),
                       (torch.tensor([0, -1, 0, 0]), ">= 0")):
        with pytest.raises(ValueError, match=match):
            env.reset(seed=7, episode_counts=bad)


def test_a_reset_can_start_each_envs_first_episode_later(env):
    cycles, starts = TAG_SMALL["max_cycles"], [0, 1, 3, TAG_SMALL["max_cycles"] - 1]
    obs = env.reset(seed=7, start_steps=torch.tensor(starts))
    time_idx = env.layout.groups["tagger"].obs_offsets["time"][0]
    # The first observation already sees the step each env starts at.
    assert torch.allclose(obs["tagger"][:, 0, time_idx], torch.tensor(starts) / cycles)
    gen = torch.Generator().manual_seed(0)
    ended, lengths = [], []
    for _ in range(2 * cycles):
        info = env.step(env.sample_actions(gen))[4]
        ended.append(info["done"].clone())
        lengths.append(env.state.last_len.clone())
    ended, lengths = torch.stack(ended), torch.stack(lengths)  # (steps, envs)
    for e, start in enumerate(starts):
        steps = ended[:, e].nonzero().flatten().tolist()
        # The first episode is cut short by its start; the next runs in full. Each records the steps it ran.
        assert steps[:2] == [cycles - start - 1, 2 * cycles - start - 1], (e, steps)
        assert lengths[steps[:2], e].tolist() == [cycles - start, cycles], (e, lengths[:, e])
    assert env.state.start_t.tolist() == [0, 0, 0, 0]  # the auto-reset's episodes start at step 0
    env.reset(seed=7)
    assert env.state.t.tolist() == [0, 0, 0, 0]
    for bad, match in ((torch.tensor([0, 1]), r"shape \(4,\)"), (torch.zeros(4), "integers"),
                       (torch.tensor([0, 0, cycles, 0]), rf"in \[0, {cycles}\)"),
                       (torch.tensor([-1, 0, 0, 0]), rf"in \[0, {cycles}\)")):
        with pytest.raises(ValueError, match=match):
            env.reset(seed=7, start_steps=bad)


def test_trajectories_replay_exactly(env):
    def run():
        env.reset(seed=5)
        gen = torch.Generator().manual_seed(1)
        out = []
        for _ in range(10):
            obs, rew, *_ = env.step(env.sample_actions(gen))
            out.append((obs["runner"].clone(), rew["tagger"].clone()))
        return out

    for (o1, r1), (o2, r2) in zip(run(), run(), strict=True):
        assert torch.equal(o1, o2) and torch.equal(r1, r2)


@pytest.mark.parametrize(
    "bad, match",
    [
        (lambda e: {"tagger": e.actions["tagger"].clone()}, "exactly the groups"),
        (lambda e: {**noop_actions(e), "dog": torch.zeros(1)}, "exactly the groups"),
        (lambda e: {**noop_actions(e), "tagger": torch.zeros(4, 2)}, "shape"),
        (lambda e: {**noop_actions(e), "tagger": torch.zeros(4, 2, 2)}, "integer dtype"),
        (lambda e: {**noop_actions(e), "tagger": torch.full((4, 2, 2), 11)}, "out of range"),
        (lambda e: {**noop_actions(e), "tagger": torch.full((4, 2, 2), -1)}, "out of range"),
        (lambda e: {**noop_actions(e), "tagger": np.zeros((4, 2, 2), np.int64)}, "torch.Tensor"),
        (lambda e: [1, 2], "dict"),
    ],
)
def test_bad_actions_raise_and_leave_the_env_usable(env, bad, match):
    env.reset(seed=0)
    before = env.state.pos_x.clone()
    with pytest.raises(ValueError, match=match):
        env.step(bad(env))
    assert torch.equal(before, env.state.pos_x), "a rejected step must not change state"
    env.step(noop_actions(env))
    assert (env.state.t == 1).all()


def test_a_step_refused_for_one_group_writes_no_groups_actions(env):
    env.reset(seed=0)
    for a in env.actions.values():
        a.zero_()
    before = {g: a.clone() for g, a in env.actions.items()}
    good = {g: torch.ones_like(a) for g, a in env.actions.items()}
    last = list(env.groups)[-1]
    with pytest.raises(ValueError, match="out of range"):
        env.step({**good, last: torch.full_like(env.actions[last], 99)})
    assert all(torch.equal(env.actions[g], before[g]) for g in env.groups), "a refused step wrote actions"


def test_bad_construction_arguments():
    with pytest.raises(TypeError, match="unknown argument"):
        gpu_zoo.make("tag_continuous_v0", num_envs=1, device="cpu", num_taggerz=3)
    with pytest.raises(ValueError, match="num_taggers"):
        gpu_zoo.make("tag_continuous_v0", num_envs=1, device="cpu", num_taggers=0)
    with pytest.raises(ValueError, match="num_envs"):
        gpu_zoo.make("tag_continuous_v0", num_envs=0, device="cpu")
    with pytest.raises(ValueError, match="unknown env id"):
        gpu_zoo.make("tag_v9")
    with pytest.raises(ValueError, match="num_other_agents_observed"):
        gpu_zoo.make("tag_continuous_v0", device="cpu", use_full_observation=False, num_other_agents_observed=99)


def test_the_k_nearest_is_refused_under_full_observation_and_two_when_partial_and_unset():
    spec = gpu_zoo.get_spec("tag_continuous_v0")
    # full observation sees every other agent: a k there would be silently ignored
    with pytest.raises(ValueError, match="num_other_agents_observed=3 applies only with use_full_observation=False"):
        spec.make_params(num_other_agents_observed=3)
    with pytest.raises(ValueError, match="applies only with use_full_observation=False"):
        gpu_zoo.make("tag_continuous_v0", device="cpu", use_full_observation=True, num_other_agents_observed=2)
    full = spec.make_params()
    assert full.num_other_agents_observed is None and full.num_observed == full.num_agents - 1
    assert spec.make_params(use_full_observation=False).num_other_agents_observed == 2  # WarpDrive's default
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="num_other_agents_observed"):
            spec.make_params(use_full_observation=False, num_other_agents_observed=bad)


def test_step_before_reset_and_unknown_group():
    e = tag_env(num_envs=1)
    with pytest.raises(RuntimeError, match="reset"):
        e.step(noop_actions(e))
    with pytest.raises(ValueError, match="unknown group"):
        e.single_action_space("dog")
    with pytest.raises(ValueError, match="runtime param"):
        e.set_params(num_taggers=3.0)


def test_render_is_an_rgb_frame(env):
    env.reset(seed=0)
    frame = env.render(1)
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    assert len(np.unique(frame.reshape(-1, 3), axis=0)) > 3


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without a GPU refuses device='cuda'")
def test_cuda_without_a_gpu_is_refused_with_the_fix():
    with pytest.raises(RuntimeError, match=r"gpu_zoo\[cuda\].*device='cpu'"):
        gpu_zoo.make("tag_continuous_v0", num_envs=2, device="cuda", **TAG_SMALL)


@pytest.mark.parametrize("env_id, kw, error, match", [
    ("tag_continuous_v0", dict(use_full_observation="no"), TypeError, "use_full_observation must be a bool"),
    ("tag_continuous_v0", dict(num_taggers=True), TypeError, "num_taggers must be an int"),
    ("tag_continuous_v0", dict(num_taggers=2.0), TypeError, "num_taggers must be an int"),
    ("tag_continuous_v0", dict(grid_length=float("nan")), TypeError, "grid_length must be a finite number"),
    ("tag_continuous_v0", dict(skill_level_runner=-0.5), ValueError, "skill_level_runner must be >= 0"),
    ("tag_continuous_v0", dict(min_acceleration=2.0), ValueError, "min_acceleration must be at most"),
    ("gather_trade_build_v0", dict(disable_taxes="yes"), TypeError, "disable_taxes must be a bool"),
    ("gather_trade_build_v0", dict(resource_regen_prob=2.0), ValueError, "resource_regen_prob must be in"),
    ("gather_trade_build_v0", dict(energy_cost=float("nan")), TypeError, "energy_cost must be a finite number"),
    ("gather_trade_build_v0", dict(starting_agent_coin=-1.0), ValueError, "starting_agent_coin must be >= 0"),
    ("gather_trade_build_v0", dict(build_payment=0.0), ValueError, "build_payment must be > 0"),
    ("tag_gridworld_v0", dict(wall_hit_penalty=3.5e38), TypeError, "within float32's range"),
    ("simple_tag_v3", dict(continuous_actions=1), TypeError, "continuous_actions must be a bool"),
    ("simple_tag_v3", dict(autoreset="no"), TypeError, "autoreset must be a bool"),
])
def test_params_of_the_wrong_type_or_range_are_refused_before_any_compile(env_id, kw, error, match):
    with pytest.raises(error, match=match):
        gpu_zoo.make(env_id, num_envs=2, device="cpu", **kw)


def test_numpy_scalars_are_params_as_the_python_values_they_hold():
    env = gpu_zoo.make("tag_continuous_v0", num_envs=2, device="cpu", **{**TAG_SMALL, "num_taggers": np.int64(2),
                                                                          "grid_length": np.float32(5.0)})
    assert type(env.params.num_taggers) is int and env.params.grid_length == 5.0


def test_set_params_takes_the_constructors_checks_and_a_refusal_changes_nothing(env):
    before, old = env.state.params.clone(), env.params.grid_length
    for kw, error in ((dict(grid_length=0.0), ValueError), (dict(grid_length=float("nan")), TypeError),
                      (dict(tagging_distance=-1.0), ValueError), (dict(grid_length="big"), TypeError)):
        with pytest.raises(error, match=next(iter(kw))):
            env.set_params(**kw)
        assert torch.equal(env.state.params, before) and env.params.grid_length == old
    env.set_params(grid_length=old * 2)
    assert env.params.grid_length == old * 2
    env.set_params(grid_length=old)
    assert torch.equal(env.state.params, before)


def test_a_missing_reference_package_fails_under_make_test_and_skips_elsewhere(monkeypatch):
    from tests.helpers import reference

    monkeypatch.setenv("GPU_ZOO_REQUIRE_REFERENCES", "1")
    with pytest.raises(ImportError):
        reference("no_such_reference_package")
    monkeypatch.delenv("GPU_ZOO_REQUIRE_REFERENCES")
    with pytest.raises(pytest.skip.Exception):
        reference("no_such_reference_package")
