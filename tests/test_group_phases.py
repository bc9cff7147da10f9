"""Phases bound to a group (`PerAgent(fn, group=...)`, `PerObs(fn, group=...)`): each gets its own agents."""

import dataclasses

import pytest
import torch

import gpu_zoo
from gpu_zoo.core import PerAgent, PerObs
from gpu_zoo.core.compiler.layout import Layout
from gpu_zoo.core.compiler.plan import stages
from gpu_zoo.core.runtime.batched import BatchedEnv
from tests import group_phases_env as gp


def _expected(start, chaser_acts, runner_acts):
    pos = start.clone()
    pos[:, :3] += chaser_acts.float() - 1
    pos[:, 3:] += runner_acts[..., 0] - 2 * runner_acts[..., 1]
    return pos


def _play(spec, target, num_envs, cuda_device, steps=4):
    """Reset, then yield (the actions taken on the host, the env, the positions before) for each step."""
    device = "cpu" if target == "cpu" else cuda_device
    env = BatchedEnv(spec, num_envs, device=device, target=target)
    env.reset(seed=1)
    gen = torch.Generator().manual_seed(0)
    for _ in range(steps):
        pos = env.state.pos.clone().cpu()
        acts = {g: a.cpu() for g, a in env.sample_actions(gen).items()}
        env.step({g: a.to(env.device) for g, a in acts.items()})
        yield acts, env, pos


@pytest.mark.parametrize("target,num_envs", [("cpu", 3), ("cpu", 12), ("cuda", 3)],
                         ids=["cpu_serial", "cpu_parallel", "cuda_target"])
def test_each_role_moves_by_its_own_action(target, num_envs, cuda_device):
    for acts, env, before in _play(gp.SPEC, target, num_envs, cuda_device):
        pos = _expected(before, acts["chaser"], acts["runner"])
        assert torch.equal(env.state.pos.cpu(), pos)
        assert torch.equal(env.obs["runner"][..., 0].cpu(), pos[:, 3:])
        assert torch.equal(env.obs["chaser"][..., 0].cpu(), 2 * pos[:, :3])


@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_one_function_bound_to_adjacent_groups_reads_each_groups_actions(target, cuda_device):
    for acts, env, before in _play(gp.SHARED_SPEC, target, 3, cuda_device):
        pos = _expected(before, torch.cat([acts["chaser"], acts["hunter"]], 1), acts["runner"])
        assert torch.equal(env.state.pos.cpu(), pos)


def test_one_function_bound_to_adjacent_groups_is_one_call_on_a_gpu():
    from gpu_zoo.core.compiler.compile import generate_source
    from gpu_zoo.core.compiler.launch_shape import layout_launch_shape

    layout = Layout(gp.SHARED_SPEC, gp.SHARED_SPEC.make_params())
    source = generate_source(layout, "cuda", layout_launch_shape(layout, 64, False, 128, None, None, None))
    step = source[source.index("def drive("):]
    assert step.count("__chase(") == 1 and step.count("__run(") == 1
    assert "= f_act_chaser[e, a - 0]" in step and "= f_act_hunter[e, a - 2]" in step


def test_phases_bound_to_different_groups_share_a_stage():
    kinds = [kind for kind, _, _ in stages(Layout(gp.SPEC, gp.SPEC.make_params()))[0].items]
    grouped = [fn for kind, fn, _ in stages(Layout(gp.SPEC, gp.SPEC.make_params()))[0].items if kind == "grouped"]
    assert kinds.count("grouped") == 1 and [g for *_, g in grouped[0]] == ["chaser", "runner"]


def test_a_phase_bound_to_an_unknown_group_is_refused():
    spec = dataclasses.replace(gp.SPEC, id="group_phases_bad_v0", step=(PerAgent(gp.chase, group="chasers"),))
    with pytest.raises(ValueError, match="group 'chasers', which is not one of its groups \\['chaser', 'runner'\\]"):
        BatchedEnv(spec, 2, device="cpu")


@pytest.mark.parametrize("observe,message", [
    ((PerObs(gp.observe_chaser, group="chaser"),), "must name each of the groups \\['chaser', 'runner'\\] once"),
    ((PerObs(gp.observe_chaser, group="chaser"), PerObs(gp.observe_runner, group="chaser")), "got groups"),
    ((PerObs(gp.observe_chaser, group="chaser"), PerObs(gp.observe_runner)), "1 unbound"),
    ((PerObs(gp.observe_chaser, group="chaser"), PerObs(gp.observe_runner, group="runner", zeros_out_of_game=False)),
     "must agree on by_block and zeros_out_of_game"),
], ids=["one_missing", "one_twice", "one_unbound", "kinds_differ"])
def test_group_bound_observations_cover_every_group_once_and_alike(observe, message):
    spec = dataclasses.replace(gp.SPEC, id="group_phases_bad_obs_v0", observe=observe)
    with pytest.raises(ValueError, match=message):
        BatchedEnv(spec, 2, device="cpu")


@pytest.mark.parametrize("bad", [3, "", ("chaser",)])
def test_a_group_must_be_named_by_a_str(bad):
    with pytest.raises(TypeError, match="PerAgent group must be a group's name"):
        PerAgent(gp.chase, group=bad)
    with pytest.raises(TypeError, match="PerObs group must be a group's name"):
        PerObs(gp.observe_runner, group=bad)




def test_group_bound_phases_compile_for_a_gpu(monkeypatch):
    from gpu_zoo.testing import compile_kernels, nvvm_available

    if not nvvm_available():
        pytest.skip("needs NVVM: pip install nvidia-cuda-nvcc-cu12 nvidia-cuda-nvrtc-cu12")
    # registered for this test alone: the registry-wide tests must not meet it
    monkeypatch.setitem(gpu_zoo.registry._ENTRIES, "group_phases_v0", "tests.group_phases_env:SPEC")
    assert "drive" in compile_kernels("group_phases_v0")
