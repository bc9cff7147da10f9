"""CPU target vs CUDA target (the simulator in CI, the GPU with GPU_ZOO_REAL_CUDA=1).

Same seed, same actions: integer and boolean state must match exactly, floats within a tight
tolerance (the GPU fuses multiply-adds), through auto-resets.
"""

import pytest
import torch

import gpu_zoo
from gpu_zoo.core.runtime.batched import BatchedEnv
from gpu_zoo.testing.check import assert_same_state
from tests.helpers import ECON_FIXED, ECON_SAEZ, GRID_SMALL, PZ_CONFIGS, SAEZ_INCOME

# Counts and modes (compile-time) match configurations other tests compile anyway, where that loses
# nothing: a cold test run then compiles fewer kernels (max_cycles and float params are run-time values).
CASES = {
    "tag_full": ("tag_continuous_v0", dict(num_taggers=2, num_runners=3, max_cycles=6, tagging_distance=0.15)),
    "tag_knn": ("tag_continuous_v0", dict(num_taggers=2, num_runners=3, max_cycles=5, tagging_distance=0.2,
                                          use_full_observation=False, num_other_agents_observed=2)),
    "tag_own_state": ("tag_continuous_v0", dict(num_taggers=2, num_runners=3, max_cycles=4, tagging_distance=0.2,
                                                observe_own_state=True)),  # 34 values: a warp per row
    # The step as three kernels (split_observe): the observations after the episode ends, in a kernel of their own
    # (16 lanes an env for the observations, 8 and two envs a block for the phases around them)
    "tag_full_split": ("tag_continuous_v0", dict(num_taggers=2, num_runners=3, max_cycles=6, tagging_distance=0.15,
                                                 split_observe=True, threads_per_env=16)),
    "tag_knn_split": ("tag_continuous_v0", dict(num_taggers=2, num_runners=3, max_cycles=5, tagging_distance=0.2,
                                                use_full_observation=False, num_other_agents_observed=2,
                                                split_observe=True)),
    "grid_full": ("tag_gridworld_v0", GRID_SMALL),
    "grid_partial": ("tag_gridworld_v0", dict(num_taggers=2, num_runners=1, grid_length=4, max_cycles=4,
                                              use_full_observation=False)),
    "simple_tag": ("simple_tag_v3", dict(num_good=2, num_adversaries=2, num_obstacles=1, max_cycles=5)),
    "simple_tag_box": ("simple_tag_v3", dict(max_cycles=4, continuous_actions=True)),
    # 2 lanes for 4 agents: each lane takes a second pass through the per-agent phases, 4 envs share a block
    "simple_tag_narrow": ("simple_tag_v3", dict(max_cycles=4, threads_per_env=2)),
    "simple": ("simple_v3", dict(max_cycles=5, continuous_actions=True)),
    "spread": ("simple_spread_v3", dict(N=4, local_ratio=0.25, num_agent_neighbors=2, num_landmark_neighbors=5,
                                        terminate_on_success=True, max_cycles=5)),
    "adversary": ("simple_adversary_v3", dict(N=3, num_agent_neighbors=2, num_landmark_neighbors=4, max_cycles=5)),
    "push": ("simple_push_v3", dict(max_cycles=5, continuous_actions=True)),
    "speaker_listener": ("simple_speaker_listener_v4", dict(max_cycles=5)),
    "reference": ("simple_reference_v3", dict(local_ratio=0.3, max_cycles=5, continuous_actions=True)),
    "crypto": ("simple_crypto_v3", dict(max_cycles=5)),
    "formation": ("simple_formation_v1", dict(N=6, max_cycles=5, terminate_on_success=True)),
    "line": ("simple_line_v1", dict(N=7, max_cycles=5, terminate_on_success=True)),
    "world_comm": ("simple_world_comm_v3", dict(max_cycles=5, continuous_actions=True)),
    "treasure": ("collect_treasure_v1", dict(num_collectors=3, num_deposits=3, num_treasures=12, max_cycles=5)),
    "economy": ("gather_trade_build_v0", PZ_CONFIGS["gather_trade_build_v0"]),
    "economy_fixed": ("gather_trade_build_v0", ECON_FIXED),
    "economy_saez": ("gather_trade_build_v0", ECON_SAEZ),
    # a short limit on connect four: games cut short (truncated) beside won and illegal ones
    "connect_four": ("connect_four_v3", dict(max_cycles=12)),
    "tictactoe": ("tictactoe_v3", PZ_CONFIGS["tictactoe_v3"]),
    "go": ("go_v5", dict(board_size=9, max_cycles=12)),
    "rps": ("rps_v2", dict(num_actions=5, max_cycles=4)),
    # the comparisons' small grid, with a few catches and a termination in 12 cycles
    "pursuit": ("pursuit_v5", dict(PZ_CONFIGS["pursuit_v5"], max_cycles=6)),
    "chess": ("chess_v6", dict(max_cycles=12)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_cpu_and_cuda_targets_agree(case, cuda_device):
    env_id, kw = CASES[case]
    spec = gpu_zoo.get_spec(env_id)
    num_envs = 2 if env_id == "gather_trade_build_v0" else 3  # the simulator interprets every thread: keep it short
    cpu = BatchedEnv(spec, num_envs, device="cpu", **kw)
    gpu = BatchedEnv(spec, num_envs, device=cuda_device, target="cuda", **kw)
    cpu.reset(seed=11)
    gpu.reset(seed=11)
    assert_same_state(cpu, gpu, "after reset")
    gen = torch.Generator().manual_seed(3)
    for t in range(max(12, kw.get("max_cycles", 0) + 2)):
        acts = cpu.sample_actions(gen)
        if case == "economy_saez":  # random workers earn nothing so soon: hand them incomes, some past the top cutoff
            coin = torch.rand(num_envs, 4, generator=gen, dtype=torch.float64) * SAEZ_INCOME
            cpu.state.coin[:, :4] += coin
            gpu.state.coin[:, :4] += coin.to(cuda_device)
        cpu.step(acts)
        gpu.step({g: a.to(cuda_device) for g, a in acts.items()})
        assert_same_state(cpu, gpu, f"step {t}")
    assert int(cpu.state.ep_count.sum()) >= num_envs, "the run should include auto-resets"
    if case == "economy_saez":  # the formula ran, and fitted the elasticity
        assert (cpu.state.saez_count == ECON_SAEZ["saez_buffer_size"]).all() and (cpu.state.saez_elas != 0.5).all()


@pytest.mark.parametrize("case", ["tag_full", "tag_full_split", "simple_tag"])
def test_an_env_finished_without_autoreset_stays_as_it_ended(case, cuda_device):
    """Without auto-reset a finished env's later steps change nothing and report nothing, on both targets."""
    env_id, kw = CASES[case]
    spec = gpu_zoo.get_spec(env_id)
    envs = [BatchedEnv(spec, 3, device="cpu", autoreset=False, **kw),
            BatchedEnv(spec, 3, device=cuda_device, target="cuda", autoreset=False, **kw)]
    quiet = ("rew", "term", "trunc", "active", "done")
    gen = torch.Generator().manual_seed(5)
    for env in envs:
        env.reset(seed=2)
    for _ in range(kw["max_cycles"]):
        acts = envs[0].sample_actions(gen)
        for env in envs:
            env.step({g: a.to(env.device) for g, a in acts.items()})
    assert envs[0].state.finished.all() and int(envs[0].state.ep_count.sum()) == 3
    ended = {n: v.clone() for n, v in envs[0].buffers.raw.items()}
    for _ in range(3):
        acts = envs[0].sample_actions(gen)
        for env in envs:
            env.step({g: a.to(env.device) for g, a in acts.items()})
        assert_same_state(envs[0], envs[1], "a step after the end")
    for name, now in envs[0].buffers.raw.items():
        if name in quiet:
            assert not now.any(), f"{name} reported after the end"
        elif name not in envs[0].layout.scratch_fields and not name.startswith("act_"):
            assert torch.equal(now, ended[name]), f"{name} changed after the end"
    for env in envs:
        env.reset(seed=2)
        env.step(env.sample_actions(torch.Generator(env.device).manual_seed(0)))
        assert (env.state.t == 1).all() and not env.state.finished.any()


def test_sub_steps_of_a_game_played_in_sequence_agree_on_both_targets(cuda_device):
    """Pursuit one pursuer's move a launch (its AEC face's steps, the core's ``mover``), each env at its own turn."""
    env_id, kw = CASES["pursuit"]
    spec = gpu_zoo.get_spec(env_id)
    envs = [BatchedEnv(spec, 3, device="cpu", **kw), BatchedEnv(spec, 3, device=cuda_device, target="cuda", **kw)]
    for env in envs:
        env.reset(seed=5)
    n = envs[0].layout.num_agents
    gen = torch.Generator().manual_seed(4)
    for t in range(n * (kw["max_cycles"] + 2)):
        acts = envs[0].sample_actions(gen)
        mover = (torch.arange(3, dtype=torch.int32) + t) % n
        for env in envs:
            env.state.mover.copy_(mover.to(env.device))
            env.step({g: a.to(env.device) for g, a in acts.items()})
        assert_same_state(*envs, f"launch {t}")
    assert int(envs[0].state.ep_count.sum()) >= 3, "the run should include auto-resets"


def test_every_registered_env_has_a_parity_case():
    assert {env_id for env_id, _ in CASES.values()} == set(gpu_zoo.registered_envs())


def test_late_starts_and_episode_counts_agree_on_both_targets(cuda_device):
    """reset(episode_counts=, start_steps=) on the CUDA target: the economy's periods run on each episode's clock."""
    env_id, kw = CASES["economy_fixed"]
    spec = gpu_zoo.get_spec(env_id)
    envs = [BatchedEnv(spec, 3, device="cpu", **kw), BatchedEnv(spec, 3, device=cuda_device, target="cuda", **kw)]
    counts, starts = torch.tensor([0, 5, 2]), torch.tensor([0, 1, kw["max_cycles"] - 1])
    for env in envs:
        env.reset(seed=4, episode_counts=counts, start_steps=starts)
    assert_same_state(*envs, "after a late start")
    gen = torch.Generator().manual_seed(8)
    for t in range(kw["max_cycles"] + 2):
        acts = envs[0].sample_actions(gen)
        for env in envs:
            env.step({g: a.to(env.device) for g, a in acts.items()})
        assert_same_state(*envs, f"step {t}")
    # the economy's episodes end on the clock alone: the first after max_cycles - start steps, then every max_cycles
    m, steps = kw["max_cycles"], kw["max_cycles"] + 2
    ended = [(steps - (m - int(s))) // m + 1 for s in starts]
    assert envs[0].state.ep_count.tolist() == [int(c) + e for c, e in zip(counts, ended, strict=True)]


def test_infeasible_economy_actions_agree_on_both_targets(cuda_device):
    """Actions drawn over the whole space, masks ignored: what the AI Economist treats as no-ops, both targets alike."""
    env_id, kw = CASES["economy"]
    spec = gpu_zoo.get_spec(env_id)
    envs = [BatchedEnv(spec, 2, device="cpu", **kw), BatchedEnv(spec, 2, device=cuda_device, target="cuda", **kw)]
    for env in envs:
        env.reset(seed=6)
    gen = torch.Generator().manual_seed(9)
    bounds = {g: envs[0].single_action_space(g) for g in envs[0].groups}
    infeasible = 0
    for t in range(12):
        acts = {}
        for g, sp in bounds.items():
            high = torch.as_tensor(sp.nvec if hasattr(sp, "nvec") else sp.n)
            acts[g] = (torch.rand(envs[0].actions[g].shape, generator=gen) * high).to(envs[0].actions[g].dtype)
            if g in envs[0].action_masks and not hasattr(sp, "nvec"):
                allowed = envs[0].action_masks[g].gather(-1, acts[g].long().unsqueeze(-1)).squeeze(-1)
                infeasible += int((~allowed).sum())
        for env in envs:
            env.step({g: a.to(env.device) for g, a in acts.items()})
        assert_same_state(*envs, f"step {t}")
    assert infeasible > 0, "the draws should include actions the masks forbid"
