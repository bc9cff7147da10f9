"""A group observing bytes (``Group(obs_dtype="u8")``): uint8 buffers, written alike on both targets."""

import gymnasium
import numpy as np
import pytest
import torch

import gpu_zoo
from gpu_zoo.core import Group, ObsBlock
from gpu_zoo.core.faces.pettingzoo import GpuZooParallelEnv
from gpu_zoo.core.runtime.batched import BatchedEnv
from gpu_zoo.testing import check_env, nvvm_available
from gpu_zoo.testing.cuda_compile import compile_kernels
from tests import u8_obs_env as u8
from tests.helpers import PZ_CONFIGS


def _expected(env) -> dict[str, torch.Tensor]:
    pos, t, n = env.state.pos.cpu(), env.state.t.cpu(), env.num_envs
    digits = lambda agents: (10 * agents[:, None] + torch.arange(3)).expand(n, -1, -1).float()  # noqa: E731
    high = 200 + 5 * torch.arange(3)[None, :, None] + torch.arange(u8.ROW)[None, None, :] + t[:, None, None]
    eye = torch.cat([pos[:, :3, None], digits(torch.arange(3)), high.float()], dim=2)
    ear = torch.cat([digits(torch.arange(3, 5)), 0.5 * pos[:, 3:, None]], dim=2)
    return {"eye": eye.to(torch.uint8), "ear": ear}


SPECS = {"fills": u8.SPEC, "by_block": u8.SPEC_BY_BLOCK, "one_loop": u8.SPEC_ROW}


@pytest.mark.parametrize("layout", list(SPECS))
@pytest.mark.parametrize("target,num_envs", [("cpu", 3), ("cpu", 12), ("cuda", 3)],
                         ids=["cpu_serial", "cpu_parallel", "cuda_target"])
def test_a_byte_group_is_stored_as_uint8(target, num_envs, layout, cuda_device):
    device = "cpu" if target == "cpu" else cuda_device
    env = BatchedEnv(SPECS[layout], num_envs, device=device, target=target)
    assert env.single_observation_space("eye").dtype == np.uint8
    assert env.single_observation_space("ear").dtype == np.float32
    for d in (env.obs, env.final_obs):
        assert d["eye"].dtype == torch.uint8 and d["ear"].dtype == torch.float32
    assert env.state.alive.dtype == torch.bool, "flags stay bools"
    env.reset(seed=1)
    gen = torch.Generator().manual_seed(0)
    for step in range(u8.Params.max_cycles):
        for g, want in _expected(env).items():
            assert torch.equal(env.obs[g].cpu(), want), (g, step)
        assert env.global_state().dtype == torch.float32
        _, _, _, _, info = env.step({g: a.to(env.device) for g, a in env.sample_actions(gen).items()})
    assert info["done"].all(), "truncated at max_cycles, then auto-reset"
    final = info["final_obs"]["eye"].cpu()
    assert final.dtype == torch.uint8
    assert torch.equal(final[:, :, 4:], (200 + 5 * torch.arange(3)[:, None] + torch.arange(u8.ROW) + 6)
                       .to(torch.uint8).expand_as(final[:, :, 4:])), "the last step's bytes, 255 at the top"
    assert int(final.max()) == 255


@pytest.mark.skipif(not nvvm_available(), reason="needs NVVM")
@pytest.mark.parametrize("layout", list(SPECS))
def test_the_uint8_stores_compile_for_a_gpu(layout, monkeypatch):
    spec = SPECS[layout]
    attr = {"fills": "SPEC", "by_block": "SPEC_BY_BLOCK", "one_loop": "SPEC_ROW"}[layout]
    monkeypatch.setitem(gpu_zoo.registry._ENTRIES, spec.id, f"tests.u8_obs_env:{attr}")
    assert compile_kernels(spec.id, num_envs=64)


def test_the_pettingzoo_face_gives_bytes_in_the_space():
    env = GpuZooParallelEnv(u8.SPEC)
    obs, _ = env.reset(seed=3)
    for agent, o in obs.items():
        assert env.observation_space(agent).contains(o), agent
    assert obs["eye_0"].dtype == np.uint8 and obs["ear_0"].dtype == np.float32
    assert env.state().dtype == np.float32


@pytest.mark.parametrize("kwargs,match", [
    (dict(obs_dtype="f16"), "obs_dtype must be one of"),
    (dict(obs_dtype="u8"), "obs_low >= 0 and obs_high <= 255"),  # the default bounds are infinite
    (dict(obs_dtype="u8", obs_low=-1.0, obs_high=1.0), "obs_low >= 0"),
    (dict(obs_dtype="u8", obs_low=0.0, obs_high=256.0), "obs_high <= 255"),
])
def test_bad_obs_dtypes_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Group("g", 1, (ObsBlock("x", 1),), gymnasium.spaces.Discrete(2), **kwargs)


def test_torchrl_specs_follow_the_space():
    torchrl = pytest.importorskip("gpu_zoo.torchrl")
    assert torchrl.box_spec(gymnasium.spaces.Box(0, 1, (3,), np.uint8)).dtype == torch.uint8
    assert torchrl.box_spec(gymnasium.spaces.Box(0, 1, (3,), np.float32)).dtype == torch.float32


BOARDS = ("tictactoe_v3", "connect_four_v3", "go_v5", "chess_v6")


@pytest.mark.parametrize("env_id", BOARDS)
def test_the_board_games_observe_bytes(env_id):
    """Their 0/1 planes as bytes (their PettingZoo faces, parity and bad input are tested per game)."""
    env = gpu_zoo.make(env_id, num_envs=2, device="cpu", **PZ_CONFIGS[env_id])
    assert env.obs["player"].dtype == torch.uint8 and env.single_observation_space("player").dtype == np.uint8
    env.reset(seed=0)
    obs = env.step(env.sample_actions())[0]["player"]
    assert obs.dtype == torch.uint8 and obs.max() <= 1 and obs.any()


def test_a_board_game_observing_bytes_passes_every_check():
    outcome = check_env("tictactoe_v3", **PZ_CONFIGS["tictactoe_v3"])  # the kernels the other tests compile
    assert all(v == "ok" for k, v in outcome.items() if k != "cuda compile"), outcome
