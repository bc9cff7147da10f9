"""Observations filled block by block (`ObsBlock.fill`, `PerObs()`): each block its own function, no offsets."""

import dataclasses

import pytest
import torch

from gpu_zoo.core import Group, ObsBlock, PerObs, Tuning
from gpu_zoo.core.runtime.batched import BatchedEnv
from tests import obs_fill_env as of


def _expected(env):
    pos, t = env.state.pos.cpu(), env.state.t.cpu().float()
    n = env.num_envs
    walkers = torch.arange(3).float()
    watchers = torch.arange(3, 5).float()
    digits = lambda agents: (10 * agents[:, None] + torch.arange(3)).expand(n, -1, -1)  # noqa: E731
    walker = torch.cat([pos[:, :3, None], digits(walkers), t[:, None, None].expand(n, 3, 1)], dim=2)
    watcher = torch.cat([digits(watchers), 2 * pos[:, 3:, None]], dim=2)
    return {"walker": walker, "watcher": watcher}


@pytest.mark.parametrize("by_block", [False, True], ids=["by_element", "by_block"])
@pytest.mark.parametrize("target,num_envs", [("cpu", 3), ("cpu", 12), ("cuda", 3)],
                         ids=["cpu_serial", "cpu_parallel", "cuda_target"])
def test_each_block_is_filled_by_its_own_function(target, num_envs, by_block, cuda_device):
    device = "cpu" if target == "cpu" else cuda_device
    spec = of.SPEC if not by_block else dataclasses.replace(of.SPEC, id="obs_fill_by_block_v0",
                                                            tuning=Tuning(observe_by_block=True))
    env = BatchedEnv(spec, num_envs, device=device, target=target)
    env.reset(seed=1)
    gen = torch.Generator().manual_seed(0)
    for _ in range(4):
        for g, want in _expected(env).items():
            assert torch.equal(env.obs[g].cpu(), want), g
        env.step({g: a.to(env.device) for g, a in env.sample_actions(gen).items()})
    assert env.state.pos.cpu().abs().sum() > 0


def test_a_group_without_observations_compiles():
    def groups(p):
        return (*of.groups(p), Group("mute", 1, (ObsBlock("nothing", 0, fill=of.place),), of.groups(p)[0].action_space))

    params = dataclasses.replace(of.SPEC, id="obs_fill_mute_v0", groups=groups)
    env = BatchedEnv(params, 2, device="cpu")
    env.reset(seed=0)
    assert env.obs["mute"].shape == (2, 1, 0)


def test_a_block_without_a_fill_function_is_named():
    def groups(p):
        blocks = (ObsBlock("place", 1, fill=of.place), ObsBlock("speed", 2))
        return (Group("walker", p.num_walkers, blocks, of.groups(p)[0].action_space),
                of.groups(p)[1])

    spec = dataclasses.replace(of.SPEC, id="obs_fill_missing_v0", groups=groups)
    with pytest.raises(ValueError, match=r"these blocks have none: \[\('walker', 'speed'\)\]"):
        BatchedEnv(spec, 2, device="cpu")


@pytest.mark.parametrize("observe", [(PerObs(), PerObs(of.place)), (PerObs(group="walker"),)],
                         ids=["beside_another", "bound_to_a_group"])
def test_the_fill_observation_stands_alone(observe):
    spec = dataclasses.replace(of.SPEC, id="obs_fill_alone_v0", observe=observe)
    with pytest.raises(ValueError, match="observes every group, alone"):
        BatchedEnv(spec, 2, device="cpu")


@pytest.mark.parametrize("kw,error,message", [
    (dict(name="", size=1), ValueError, "non-empty str"),
    (dict(name="x", size=-1), ValueError, "size must be a non-negative int"),
    (dict(name="x", size=2.0), ValueError, "size must be a non-negative int"),
    (dict(name="x", size=1, fill="place"), TypeError, "fill must be a kernel_fn"),
], ids=["empty_name", "negative_size", "float_size", "fill_not_callable"])
def test_a_malformed_block_is_refused(kw, error, message):
    with pytest.raises(error, match=message):
        ObsBlock(**kw)


def test_a_fill_that_is_not_a_kernel_fn_is_refused():
    def groups(p):
        return (Group("walker", p.num_walkers, (ObsBlock("place", 1, fill=lambda s, p, e, a, j: 0.0),),
                      of.groups(p)[0].action_space), of.groups(p)[1])

    spec = dataclasses.replace(of.SPEC, id="obs_fill_plain_v0", groups=groups)
    with pytest.raises(TypeError, match="must be decorated with numba.njit"):
        BatchedEnv(spec, 2, device="cpu")


def test_the_layout_of_fills_is_chosen_on_the_spec_not_on_the_phase():
    with pytest.raises(TypeError, match=r"EnvSpec\(tuning=Tuning\(observe_by_block=True\)\)"):
        PerObs(by_block=True)
    with pytest.raises(TypeError, match="by_block must be a bool"):
        PerObs(of.place, by_block="yes")
