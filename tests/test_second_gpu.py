"""An env on a GPU other than the current one steps there, and replays what the current GPU gives.

Needs two real GPUs (``GPU_ZOO_REAL_CUDA=1`` on a host with two or more); skipped otherwise.
"""

import pytest
import torch

import gpu_zoo

pytestmark = pytest.mark.cuda

CASES = {
    "tag_continuous_v0": dict(num_taggers=2, num_runners=6, max_cycles=8),
    "gather_trade_build_v0": dict(max_cycles=12, tax_period=4),
}


@pytest.fixture
def two_gpus():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    torch.cuda.set_device(0)


@pytest.mark.parametrize("env_id", sorted(CASES))
@pytest.mark.parametrize("cuda_graph", [True, False])
def test_an_env_on_the_second_gpu_replays_the_first(env_id, cuda_graph, two_gpus):
    envs = [gpu_zoo.make(env_id, num_envs=4, device=f"cuda:{i}", cuda_graph=cuda_graph, **CASES[env_id])
            for i in (0, 1)]
    assert torch.cuda.current_device() == 0
    first = [env.reset(seed=5) for env in envs]
    for group, obs in first[0].items():
        assert torch.equal(obs.cpu(), first[1][group].cpu()), f"reset, obs of group {group}"
    gen = torch.Generator(device=envs[0].device).manual_seed(1)
    for t in range(20):
        acts = envs[0].sample_actions(gen)
        outs = [env.step({g: a.to(env.device) for g, a in acts.items()}) for env in envs]
        for what, (mine, theirs) in (("obs", (outs[0][0], outs[1][0])), ("reward", (outs[0][1], outs[1][1]))):
            for group, x in mine.items():
                assert theirs[group].device == torch.device("cuda", 1)
                assert torch.equal(x.cpu(), theirs[group].cpu()), f"step {t}, {what} of group {group}"


def test_the_trainer_trains_on_the_second_gpu_after_a_capture_on_the_first(tmp_path, two_gpus):
    from trainers.config import Args
    from trainers.loop import train

    with torch.cuda.graph(torch.cuda.CUDAGraph()):  # torch's default capture stream now lives on GPU 0
        torch.zeros(1, device="cuda:0").add_(1)
    args = Args(env_id="tag_continuous_v0", env_kwargs=CASES["tag_continuous_v0"], num_envs=8, num_steps=8,
                total_env_steps=128, device="cuda:1", out=str(tmp_path), eval_episodes=0)
    trainer = train(args)
    assert trainer.iteration == 2
    assert all(p.device == torch.device("cuda", 1) for pol in trainer.policies.values() for p in pol.parameters())
    for g, buf in trainer.buf.items():  # every step of the rollout ran (a graph captured off its GPU runs none)
        obs = buf["obs"]
        assert all(not torch.equal(obs[t], obs[t + 1]) for t in range(args.num_steps - 1)), g
