"""The TorchRL face: specs, rollouts and a collector equal to the batched face's steps, resets, refusals."""

import importlib
import multiprocessing
import subprocess
import sys

import gymnasium
import pytest
import torch

import gpu_zoo
from tests.helpers import GRID_SMALL, PZ_CONFIGS, reference

_START_METHOD = multiprocessing.get_start_method(allow_none=True)
reference("torchrl", reason="the torchrl extra is not installed: pip install -e '.[torchrl]'")

from tensordict import TensorDict  # noqa: E402
from torchrl.collectors import Collector  # noqa: E402
from torchrl.data import Bounded, Categorical, MultiCategorical, MultiOneHot, OneHot, Unbounded  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

# Importing torchrl makes "spawn" the process's multiprocessing start method; this file's collectors
# are single-process, and the suite's SuperSuit workers (collected into the same process) fork.
multiprocessing.set_start_method(_START_METHOD, force=True)

from gpu_zoo.torchrl import GpuZooEnv  # noqa: E402

NUM_ENVS = 4


def make(env_id="tag_gridworld_v0", **kw) -> GpuZooEnv:
    return GpuZooEnv(env_id, num_envs=NUM_ENVS, device="cpu", **PZ_CONFIGS[env_id], **kw)


def scripted(obs: torch.Tensor, space) -> torch.Tensor:
    """A deterministic policy of the observation: any observation that differs soon changes the actions."""
    key = (obs * 997.0).sum(-1).floor().long().abs()
    if isinstance(space, gymnasium.spaces.Discrete):
        return key % int(space.n)
    nvec = torch.as_tensor(space.nvec)
    return (key[..., None] + 7 * torch.arange(len(nvec))) % nvec


def scripted_policy(batched):
    def policy(td):
        for g in batched.groups:
            td.set((g, "action"), scripted(td.get((g, "observation")), batched.single_action_space(g)))
        return td
    return policy


def test_every_registered_env_has_a_small_configuration_here():
    assert set(PZ_CONFIGS) == set(gpu_zoo.registered_envs())


@pytest.mark.parametrize("categorical", [True, False], ids=["categorical", "one_hot"])
@pytest.mark.parametrize("env_id", sorted(PZ_CONFIGS))
def test_check_env_specs(env_id, categorical):
    env = make(env_id, categorical_actions=categorical)
    check_env_specs(env, seed=0)
    check_env_specs(env, break_when_any_done="both")


def test_specs_follow_the_spaces_in_torchrls_multi_agent_layout():
    grid = make("tag_gridworld_v0")
    assert grid.batch_size == (NUM_ENVS,)
    assert grid.group_map == {"tagger": ["tagger_0", "tagger_1"], "runner": ["runner_0", "runner_1"]}
    obs = grid.full_observation_spec
    assert isinstance(obs["tagger", "observation"], Bounded) and obs["tagger", "observation"].shape == (4, 2, 21)
    assert obs["state"].shape == (4, grid.batched.state_size) and obs["state"].dtype == torch.float32
    action = grid.full_action_spec["runner", "action"]
    assert isinstance(action, Categorical) and action.shape == (4, 2) and action.dtype == torch.int64
    assert action.space.n == 5
    assert grid.full_reward_spec["tagger", "reward"].shape == (4, 2, 1)
    done = grid.full_done_spec
    assert {k for k in done.keys(True, True)} == {"done", "terminated", "truncated",
                                                  *((g, k) for g in ("tagger", "runner")
                                                    for k in ("done", "terminated", "truncated"))}
    assert done["done"].shape == (4, 1) and done["runner", "truncated"].shape == (4, 2, 1)

    tag = make("tag_continuous_v0")
    assert isinstance(tag.full_observation_spec["runner", "observation"], Unbounded)
    assert isinstance(tag.full_action_spec["tagger", "action"], MultiCategorical)
    assert tag.full_action_spec["tagger", "action"].shape == (4, 2, 2)

    econ = make("gather_trade_build_v0", categorical_actions=False)
    assert econ.full_observation_spec["worker", "action_mask"].shape == (4, 4, 50)
    assert econ.full_observation_spec["planner", "action_mask"].shape == (4, 1, 154)
    assert isinstance(econ.full_action_spec["worker", "action"], OneHot)
    assert isinstance(econ.full_action_spec["planner", "action"], MultiOneHot)
    assert "action_mask" not in grid.full_observation_spec["tagger"].keys()
    assert "state" not in make(return_state=False).full_observation_spec.keys()


def batched_steps(env_id, steps, reset_at=None, reset_mask=None):
    """The batched face's own steps under the scripted policy: obs before, next obs, rewards, dones."""
    b = gpu_zoo.make(env_id, num_envs=NUM_ENVS, device="cpu", **PZ_CONFIGS[env_id])
    obs = b.reset(seed=3)
    out = []
    for t in range(steps):
        if t == reset_at:
            obs = b.reset(envs=reset_mask)
        before = {g: obs[g].clone() for g in b.groups}
        obs, rew, _, _, info = b.step({g: scripted(obs[g], b.single_action_space(g)) for g in b.groups})
        done = info["done"].clone()
        last = {g: torch.where(done.view(-1, 1, 1), info["final_obs"][g], obs[g]) for g in b.groups}
        out.append({"obs": before, "next": last, "reward": {g: rew[g].clone() for g in b.groups}, "done": done})
    return out


def assert_same_steps(data, expected, groups):
    for t, step in enumerate(expected):
        assert torch.equal(data["next", "done"][:, t, 0], step["done"]), f"step {t}: done"
        for g in groups:
            assert torch.equal(data[g, "observation"][:, t], step["obs"][g]), f"step {t}: {g} observation"
            assert torch.equal(data["next", g, "observation"][:, t], step["next"][g]), f"step {t}: {g} next"
            assert torch.equal(data["next", g, "reward"][:, t, :, 0], step["reward"][g]), f"step {t}: {g} reward"
    assert int(data["next", "done"].sum()) >= NUM_ENVS, "the steps crossed episode ends"


@pytest.mark.parametrize("autoreset", [True, False], ids=["autoreset", "reset_by_torchrl"])
@pytest.mark.parametrize("env_id", sorted(PZ_CONFIGS))
def test_a_rollout_equals_the_batched_faces_steps(env_id, autoreset):
    """Across episode ends, and after a partial reset that sets the envs' episodes apart."""
    cut, mask = 2, torch.tensor([False, True, True, False])
    steps = 2 * PZ_CONFIGS[env_id]["max_cycles"] + 2
    expected = batched_steps(env_id, steps, reset_at=cut, reset_mask=mask)
    env = make(env_id, autoreset=autoreset)
    policy = scripted_policy(env.batched)
    env.set_seed(3)
    head = env.rollout(cut, policy, break_when_any_done=False)
    td = env.step_mdp(head[..., -1])
    td.set("_reset", mask.unsqueeze(-1) | td["done"])  # and any env that ended at the cut, as a collector would
    td = env.reset(td)
    tail = env.rollout(steps - cut, policy, break_when_any_done=False, auto_reset=False, tensordict=td)
    assert_same_steps(torch.cat([head, tail], dim=1), expected, env.batched.groups)


@pytest.mark.parametrize("autoreset", [True, False], ids=["autoreset", "reset_by_torchrl"])
def test_a_collector_gathers_the_batched_faces_steps(autoreset):
    steps = 3 * GRID_SMALL["max_cycles"] + 1
    expected = batched_steps("tag_gridworld_v0", steps)
    env = make(autoreset=autoreset)
    env.set_seed(3)
    collector = Collector(env, scripted_policy(env.batched), frames_per_batch=NUM_ENVS * steps,
                          total_frames=NUM_ENVS * steps)
    (data,) = list(collector)
    collector.shutdown()
    assert_same_steps(data, expected, env.batched.groups)


def test_an_auto_reset_is_served_not_repeated_and_its_final_observation_kept():
    env = make("simple_tag_v3", autoreset=True)  # its episodes end at the time limit only
    b = env.batched
    td = env.reset()
    for _ in range(PZ_CONFIGS["simple_tag_v3"]["max_cycles"]):
        data, td = env.step_and_maybe_reset(env.rand_action(td))
    assert data["next", "truncated"].all() and not td["done"].any()
    for g in b.groups:
        assert torch.equal(data["next", g, "observation"], b.final_obs[g]), "the final observation, not the next start"
        assert torch.equal(td[g, "observation"], b.obs[g]) and not torch.equal(b.obs[g], b.final_obs[g])
    assert b.state.episode.tolist() == [1] * NUM_ENVS, "the started episode served, none started after it"


def test_an_agent_out_of_the_game_stays_done_until_its_env_ends():
    env = GpuZooEnv("tag_gridworld_v0", num_envs=32, device="cpu", **GRID_SMALL)
    env.set_seed(0)
    torch.manual_seed(0)
    data = env.rollout(4 * GRID_SMALL["max_cycles"], break_when_any_done=False)["next"]
    runner, env_done = data["runner", "terminated"][..., 0], data["done"][..., 0]  # (E, T, n), (E, T)
    left_early = runner[:, :-1] & ~env_done[:, :-1, None]
    assert left_early.any(), "some runner was tagged while its episode went on"
    assert runner[:, 1:][left_early].all(), "it stays terminated at the next step"
    assert not data["runner", "reward"][:, 1:, :, 0][left_early].any()
    game_over = env_done & ~data["truncated"][..., 0]
    assert game_over.any() and data["terminated"][..., 0][game_over].all()
    assert runner[game_over].all() and data["tagger", "terminated"][..., 0][game_over].all()
    time_limit = data["truncated"][..., 0]
    assert time_limit.any() and not data["terminated"][..., 0][time_limit].any()
    assert data["tagger", "truncated"][..., 0][time_limit].all()


@pytest.mark.parametrize("autoreset", [True, False], ids=["autoreset", "reset_by_torchrl"])
def test_a_partial_reset_resets_exactly_the_masked_envs(autoreset):
    env = make("simple_tag_v3", autoreset=autoreset)
    td = env.reset()
    for _ in range(2):
        td = env.step_mdp(env.step(env.rand_action(td)))
    b, mask = env.batched, torch.tensor([True, False, False, True])
    kept = {name: view[~mask].clone() for name, view in b.buffers.raw.items()}
    before = td.clone()
    td.set("_reset", mask.unsqueeze(-1))
    out = env.reset(td)
    for name, rows in kept.items():
        assert torch.equal(b.buffers.raw[name][~mask], rows), f"{name} changed in an env not reset"
    assert b.state.t.tolist() == [0, 2, 2, 0] and b.state.episode.tolist() == [1, 0, 0, 1]
    for g in b.groups:
        assert torch.equal(out[g, "observation"][mask], b.obs[g][mask])
        assert torch.equal(out[g, "observation"][~mask], before[g, "observation"][~mask])
    assert not out["done"].any()


def test_set_seed_replays_exactly():
    env = make("tag_continuous_v0")

    def rollout(seed):
        env.set_seed(seed)
        torch.manual_seed(0)
        return env.rollout(2 * PZ_CONFIGS["tag_continuous_v0"]["max_cycles"], break_when_any_done=False)

    first, again, other = rollout(5), rollout(5), rollout(6)
    assert (first == again).all()
    assert not torch.equal(first["tagger", "observation"], other["tagger", "observation"])
    b = gpu_zoo.make("tag_continuous_v0", num_envs=NUM_ENVS, device="cpu", **PZ_CONFIGS["tag_continuous_v0"])
    assert torch.equal(first["tagger", "observation"][:, 0], b.reset(seed=5)["tagger"])


def test_random_actions_keep_inside_the_action_masks():
    env = make("gather_trade_build_v0")
    td = env.reset()
    for _ in range(5):
        td = env.rand_action(td)
        mask, action = td["worker", "action_mask"], td["worker", "action"]
        assert mask.gather(-1, action.unsqueeze(-1)).all()
        data, td = env.step_and_maybe_reset(td)


def state_of(env):
    return env.batched.buffers.storage.clone(), env._restarted.clone(), env._seeded_start


def assert_unchanged(env, state):
    storage, restarted, seeded = state
    assert torch.equal(env.batched.buffers.storage, storage) and torch.equal(env._restarted, restarted)
    assert env._seeded_start == seeded


@pytest.mark.parametrize("categorical", [True, False], ids=["categorical", "one_hot"])
def test_bad_actions_are_refused_and_change_nothing(categorical):
    env, fresh = make(categorical_actions=categorical), make(categorical_actions=categorical)
    env.set_seed(1)
    fresh.set_seed(1)
    good = env.rand_action(env.reset())
    fresh.reset()
    width = () if categorical else (5,)
    bad = [(torch.full((4, 2, *width), 5), "out of range" if categorical else "exactly one 1"),
           (torch.zeros((4, 2, *width)), "integer dtype" if categorical else "one-hot"),
           (torch.zeros((4, 3, *width), dtype=torch.int64), r"shape \(4, 2"),
           (None, r"no \('runner', 'action'\) entry")]
    if not categorical:
        bad.append((torch.ones((4, 2, 5), dtype=torch.int64), "exactly one 1"))
    for value, match in bad:
        before = state_of(env)
        attempt = good.clone()
        if value is None:
            del attempt["runner", "action"]
        else:  # a group of its own: TensorDict refuses to put a tensor of another shape into the env's
            attempt.set("runner", TensorDict({"action": value}, batch_size=value.shape[:2]))
        with pytest.raises(ValueError, match=match):
            env.step(attempt)
        assert_unchanged(env, before)
    ours, theirs = env.step(good.clone()), fresh.step(good.clone())
    assert (ours["next"] == theirs["next"]).all(), "the refused steps left a trace"


def test_bad_resets_and_seeds_are_refused_and_change_nothing():
    env = make()
    td = env.step_mdp(env.step(env.rand_action(env.reset())))
    before = state_of(env)
    for mask in (torch.ones(4, 1, dtype=torch.int64), torch.ones(4, 2, dtype=torch.bool)):
        with pytest.raises(ValueError, match=r"'_reset' must be a bool mask of shape \(4, 1\)"):
            env.reset(td.clone().set("_reset", mask))
        assert_unchanged(env, before)
    for seed, match in ((-1, "non-negative"), (1.5, "int or None")):
        with pytest.raises((TypeError, ValueError), match=match):
            env.set_seed(seed)
        assert_unchanged(env, before)


def test_bad_construction_is_refused():
    batched = gpu_zoo.make("tag_gridworld_v0", num_envs=2, device="cpu", **GRID_SMALL)
    with pytest.raises(TypeError, match="wraps the env as it is"):
        GpuZooEnv(batched, num_envs=2)
    with pytest.raises(TypeError, match="registered env id or a BatchedEnv"):
        GpuZooEnv(3)
    with pytest.raises(TypeError, match="categorical_actions must be a bool"):
        GpuZooEnv(batched, categorical_actions="yes")
    with pytest.raises(ValueError, match="unknown env id"):
        GpuZooEnv("no_such_env_v0")
    wrapped = GpuZooEnv(batched)
    assert wrapped.batched is batched and wrapped.batch_size == (2,)
    assert wrapped.to("cpu") is wrapped
    with pytest.raises(ValueError, match="runs on cpu"):
        wrapped.to("cuda")


def test_without_torchrl_the_import_error_names_the_fix(monkeypatch):
    monkeypatch.delitem(sys.modules, "gpu_zoo.torchrl")
    for name in [m for m in sys.modules if m.split(".")[0] in ("torchrl", "tensordict")]:
        monkeypatch.delitem(sys.modules, name)
    for name in ("torchrl", "tensordict"):
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed: importing them raises ImportError
    with pytest.raises(ImportError, match=r"pip install gpu_zoo\[torchrl\]"):
        importlib.import_module("gpu_zoo.torchrl")


def test_the_core_package_imports_nothing_of_torchrl():
    code = ("import sys, gpu_zoo, gpu_zoo.core.runtime.batched, gpu_zoo.core.faces.pettingzoo, gpu_zoo.testing\n"
            "[gpu_zoo.get_spec(e) for e in gpu_zoo.registered_envs()]\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torchrl', 'tensordict')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.cuda
def test_tensors_stay_on_the_gpu():
    env = GpuZooEnv("tag_gridworld_v0", num_envs=NUM_ENVS, device="cuda", **GRID_SMALL)
    data = env.rollout(2 * GRID_SMALL["max_cycles"], break_when_any_done=False)
    td = env.step_mdp(data[..., -1])
    td.set("_reset", torch.tensor([True, False, True, False], device=env.device).unsqueeze(-1))
    for out in (data, env.reset(td)):
        assert {v.device for v in out.values(True, True)} == {env.batched.device}
