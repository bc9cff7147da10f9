"""BenchMARL on gpu_zoo envs: every env is a task whose specs match its env, and BenchMARL's MAPPO and IPPO train."""

import multiprocessing

import pytest
import torch

import gpu_zoo
from tests.helpers import PZ_CONFIGS, reference

_START_METHOD = multiprocessing.get_start_method(allow_none=True)
reference("benchmarl", reason="the benchmarl extra is not installed: pip install -e '.[benchmarl]'")

from benchmarl.algorithms import IppoConfig, MappoConfig  # noqa: E402
from benchmarl.experiment import Callback, Experiment, ExperimentConfig  # noqa: E402
from benchmarl.models import MlpConfig  # noqa: E402

multiprocessing.set_start_method(_START_METHOD, force=True)  # as in test_torchrl: this file's collectors are serial

from gpu_zoo.benchmarl import GpuZooClass, GpuZooTask, gpu_zoo_task  # noqa: E402
from gpu_zoo.torchrl import GpuZooEnv  # noqa: E402


def test_every_registered_env_is_a_task():
    assert [t.name.lower() for t in GpuZooTask] == list(gpu_zoo.registered_envs())
    assert GpuZooTask.env_name() == "gpu_zoo"


@pytest.mark.parametrize("env_id", gpu_zoo.registered_envs())
def test_a_tasks_specs_are_its_envs(env_id):
    task = getattr(GpuZooTask, env_id.upper()).get_task(config=dict(PZ_CONFIGS[env_id]))
    assert isinstance(task, GpuZooClass) and task.supports_discrete_actions()
    env = task.get_env_fun(num_envs=3, continuous_actions=False, seed=4, device="cpu")()
    b = env.batched
    assert isinstance(env, GpuZooEnv) and env.batch_size == torch.Size([3])
    assert task.group_map(env) == {g: [f"{g}_{i}" for i in range(b.group_size(g))] for g in b.groups}
    assert task.max_steps(env) == PZ_CONFIGS[env_id]["max_cycles"]
    obs = task.observation_spec(env)
    assert set(obs.keys()) == set(b.groups)
    for g in b.groups:
        assert list(obs[g].keys()) == ["observation"]
        assert obs[g, "observation"].shape == (b.group_size(g), *b.single_observation_space(g).shape)
        assert task.action_spec(env)[g, "action"].shape == (b.group_size(g), *b.single_action_space(g).shape)
    masks = task.action_mask_spec(env)
    assert (masks is None) == (not b.action_masks)
    if masks is not None:
        assert set(masks.keys()) == set(b.action_masks)
    assert task.state_spec(env)["state"].shape == (b.state_size,)
    assert task.info_spec(env) is None
    # seeded: the env starts as the batched face's reset(seed=4)
    twin = gpu_zoo.make(env_id, num_envs=3, device="cpu", **PZ_CONFIGS[env_id])
    twin.reset(seed=4)
    td = env.reset()
    for g in b.groups:
        torch.testing.assert_close(td[g, "observation"], twin.obs[g], rtol=0, atol=0)


def test_continuous_actions_follow_benchmarls_choice():
    task = gpu_zoo_task("simple_v3", max_cycles=25)
    assert task.supports_continuous_actions() and task.supports_discrete_actions()
    assert not gpu_zoo_task("tag_gridworld_v0").supports_continuous_actions()
    continuous = task.get_env_fun(num_envs=2, continuous_actions=True, seed=0, device="cpu")()
    discrete = task.get_env_fun(num_envs=2, continuous_actions=False, seed=0, device="cpu")()
    assert continuous.batched.params.continuous_actions and not discrete.batched.params.continuous_actions
    assert continuous.full_action_spec["agent", "action"].dtype == torch.float32
    assert discrete.full_action_spec["agent", "action"].dtype == torch.int64


def test_bad_tasks_are_refused_before_any_env_is_made():
    with pytest.raises(ValueError, match="unknown env id 'nope_v0'"):
        gpu_zoo_task("nope_v0")
    with pytest.raises(ValueError, match="num_envs.*on/off_policy_n_envs_per_worker"):
        gpu_zoo_task("simple_v3", num_envs=8)
    with pytest.raises(ValueError, match="categorical_actions"):
        GpuZooTask.SIMPLE_V3.get_task(config={"categorical_actions": False})
    with pytest.raises((TypeError, ValueError), match="max_cycles"):
        gpu_zoo_task("simple_v3", max_cycles=-1)
    with pytest.raises(TypeError, match="no_such_arg"):
        gpu_zoo_task("simple_v3", no_such_arg=1)


class EvalReturns(Callback):
    """Each evaluation's mean episode return (the sum of the agent's rewards over an episode)."""

    def __init__(self, group: str):
        super().__init__()
        self.group, self.returns = group, []

    def on_evaluation_end(self, rollouts):
        self.returns.append(float(torch.stack([r["next", self.group, "reward"].sum() for r in rollouts]).mean()))


def experiment_config(tmp_path, num_envs: int, steps: int, iterations: int) -> ExperimentConfig:
    cfg = ExperimentConfig.get_from_yaml()
    cfg.sampling_device = cfg.train_device = cfg.buffer_device = "cpu"
    cfg.max_n_frames, cfg.max_n_iters = None, iterations
    cfg.on_policy_n_envs_per_worker = num_envs
    cfg.on_policy_collected_frames_per_batch = num_envs * steps
    cfg.on_policy_n_minibatch_iters = 8
    cfg.on_policy_minibatch_size = num_envs * steps // 4
    cfg.evaluation_interval = num_envs * steps * iterations
    cfg.evaluation_episodes = 200
    cfg.prefer_continuous_actions = False
    # BenchMARL evaluates only where it logs: after the first iteration and every evaluation_interval frames
    cfg.loggers, cfg.render, cfg.create_json, cfg.save_folder = ["csv"], False, False, str(tmp_path)
    return cfg


def random_return(env_id: str, episodes: int, max_cycles: int) -> float:
    """The mean episode return of uniformly random actions: what training must beat."""
    env = gpu_zoo.make(env_id, num_envs=episodes, device="cpu", max_cycles=max_cycles)
    env.reset(seed=11)
    total = torch.zeros(episodes)
    for _ in range(max_cycles):
        _, rew, *_ = env.step(env.sample_actions(torch.Generator().manual_seed(_)))
        total += rew["agent"].sum(-1)
    return float(total.mean())


def test_mappo_learns_simple_through_benchmarl(tmp_path):
    cfg = experiment_config(tmp_path, num_envs=128, steps=25, iterations=20)
    cfg.lr = 1e-3
    returns = EvalReturns("agent")
    exp = Experiment(task=GpuZooTask.SIMPLE_V3.get_task(config={"max_cycles": 25}),
                     algorithm_config=MappoConfig.get_from_yaml(), model_config=MlpConfig.get_from_yaml(), seed=0,
                     config=cfg, callbacks=[returns])
    exp.run()
    assert exp.total_frames == 20 * 128 * 25
    baseline = random_return("simple_v3", 200, 25)
    # random actions score about -40 here; 20 iterations of MAPPO reach about -10
    assert len(returns.returns) == 2 and returns.returns[-1] > max(baseline, returns.returns[0]) + 15, \
        (returns.returns, baseline)


def test_ippo_trains_the_groups_of_simple_tag(tmp_path):
    cfg = experiment_config(tmp_path, num_envs=16, steps=10, iterations=2)
    exp = Experiment(task=gpu_zoo_task("simple_tag_v3", max_cycles=10), algorithm_config=IppoConfig.get_from_yaml(),
                     model_config=MlpConfig.get_from_yaml(), seed=0, config=cfg)
    before = {g: [p.detach().clone() for p in exp.algorithm.get_parameters(g)["loss_objective"]]
              for g in exp.group_map}
    exp.run()
    assert set(exp.group_map) == {"adversary", "agent"} and exp.total_frames == 2 * 16 * 10
    for g, params in before.items():
        after = exp.algorithm.get_parameters(g)["loss_objective"]
        assert any(not torch.equal(a, b) for a, b in zip(after, params, strict=True)), f"{g}'s policy did not change"
