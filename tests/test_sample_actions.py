"""`BatchedEnv.sample_actions`: valid, uniform draws, written in place with ``out=`` exactly as returned without it."""

import gymnasium
import numpy as np
import pytest
import torch

import gpu_zoo
from tests.helpers import PZ_CONFIGS


def make(env_id, **kw):
    return gpu_zoo.make(env_id, num_envs=6, device="cpu", **PZ_CONFIGS[env_id], **kw)


@pytest.mark.parametrize("env_id", gpu_zoo.registered_envs())
def test_draws_are_valid_and_out_writes_what_a_new_tensor_would_hold(env_id):
    env = make(env_id)
    env.reset(seed=1)
    for t in range(3):
        new = env.sample_actions(torch.Generator().manual_seed(t))
        written = env.sample_actions(torch.Generator().manual_seed(t), out=env.actions)
        for g, a in new.items():
            assert written[g] is env.actions[g], "out= returns the tensors it wrote"
            assert torch.equal(a, env.actions[g]), f"{env_id}: {g} drawn into out= differs from a new draw"
            space, mask = env.single_action_space(g), env.action_masks.get(g)
            for row in a.reshape(-1, *space.shape).numpy():
                assert space.contains(row.astype(space.dtype)), f"{env_id}: {g} drew {row} outside {space}"
            if mask is not None:
                chosen = a if a.dim() == mask.dim() else a.unsqueeze(-1)
                sizes = space.nvec if isinstance(space, gymnasium.spaces.MultiDiscrete) else [space.n]
                offsets = np.cumsum([0, *sizes[:-1]])
                idx = chosen + torch.as_tensor(offsets, dtype=chosen.dtype)
                # an agent whose mask allows nothing (a player waiting for its turn) is not asked to choose
                choosing = mask.any(-1, keepdim=True).expand_as(idx) if not isinstance(
                    space, gymnasium.spaces.MultiDiscrete) else torch.ones_like(idx, dtype=torch.bool)
                allowed = mask.gather(-1, idx.long())
                assert bool((allowed | ~choosing).all()), f"{env_id}: {g} drew an action its mask forbids"
        env.step()


def test_discrete_and_box_draws_are_uniform():
    env = gpu_zoo.make("simple_spread_v3", num_envs=2000, device="cpu", max_cycles=25)
    counts = torch.bincount(env.sample_actions(torch.Generator().manual_seed(0))["agent"].flatten(), minlength=5)
    expected = env.num_envs * 3 / 5
    assert counts.numel() == 5 and bool(((counts - expected).abs() < 5 * expected ** 0.5).all()), counts
    cont = gpu_zoo.make("simple_spread_v3", num_envs=2000, device="cpu", max_cycles=25, continuous_actions=True)
    u = cont.sample_actions(torch.Generator().manual_seed(0))["agent"]
    space = cont.single_action_space("agent")
    assert isinstance(space, gymnasium.spaces.Box) and u.dtype == cont.actions["agent"].dtype
    assert abs(float(u.mean()) - float((space.low + space.high).mean() / 2)) < 0.01
    assert float(u.min()) >= float(space.low.min()) and float(u.max()) <= float(space.high.max())


def test_a_refused_out_names_what_it_expects_and_changes_nothing():
    env = make("simple_spread_v3")
    env.reset(seed=0)
    before = env.actions["agent"].clone()
    with pytest.raises(ValueError, match="must have shape"):
        env.sample_actions(out={"agent": torch.zeros(2, 2, dtype=torch.int32)})
    with pytest.raises(ValueError, match="out has no tensor for group 'agent'"):
        env.sample_actions(out={})
    with pytest.raises(ValueError, match="unknown group 'runner'"):
        env.sample_actions(groups=["runner"])
    with pytest.raises(ValueError, match="integer dtype"):
        env.sample_actions(out={"agent": torch.zeros(env.actions["agent"].shape)})
    assert torch.equal(env.actions["agent"], before)


@pytest.mark.parametrize("env_id,kw", [("simple_spread_v3", {}), ("simple_spread_v3", dict(continuous_actions=True)),
                                       ("tag_continuous_v0", {}), ("gather_trade_build_v0", {})],
                         ids=["discrete", "box", "multidiscrete", "masked"])
def test_a_generator_on_another_device_draws_there_and_the_draws_are_copied_over(env_id, kw, cuda_device):
    if cuda_device.type == "cpu":
        pytest.skip("a CPU generator is on another device only for an env on a GPU")
    gpu = gpu_zoo.make(env_id, num_envs=6, device=cuda_device, **PZ_CONFIGS[env_id], **kw)
    cpu = make(env_id, **kw)
    gpu.reset(seed=1)
    cpu.reset(seed=1)
    for t in range(2):
        want = cpu.sample_actions(torch.Generator().manual_seed(t))
        new = gpu.sample_actions(torch.Generator().manual_seed(t))
        written = gpu.sample_actions(torch.Generator().manual_seed(t), out=gpu.actions)
        for g, a in want.items():
            assert new[g].device == gpu.actions[g].device and written[g] is gpu.actions[g]
            assert torch.equal(new[g].cpu(), a) and torch.equal(gpu.actions[g].cpu(), a), g
        cpu.step(want)
        gpu.step()
