"""Action masks in the trainer.

Infeasible actions get probability zero and are never sampled, and the update recomputes
log-probabilities under the masks stored with the rollout.
"""

import dataclasses

import gymnasium
import pytest
import torch

import gpu_zoo
from tests.helpers import GRID_SMALL
from trainers.config import Args
from trainers.policy import GroupPolicy
from trainers.ppo import Trainer


def test_a_masked_discrete_action_has_zero_probability_and_is_never_sampled():
    torch.manual_seed(0)
    pol = GroupPolicy(6, gymnasium.spaces.Discrete(5), hidden=16)
    obs = torch.randn(4000, 6)
    mask = torch.ones(4000, 5, dtype=torch.bool)
    mask[:, 1] = False
    mask[::2, 3] = False  # masks differ between rows
    action, logp, _, _ = pol.act(obs, mask=mask)
    assert not mask.gather(1, action.unsqueeze(1)).squeeze(1).logical_not().any()
    _, logp_again, _, _ = pol.act(obs, action, mask=mask)
    assert torch.equal(logp, logp_again)
    _, logp_infeasible, entropy, _ = pol.act(obs, torch.full((4000,), 1), mask=mask)
    assert torch.all(logp_infeasible.exp() == 0) and torch.isfinite(entropy).all()
    _, logp_unmasked, _, _ = pol.act(obs, action)
    assert (logp_unmasked < logp).all()  # the mask moved the infeasible mass onto feasible actions


def test_multidiscrete_masks_split_per_dimension():
    torch.manual_seed(0)
    pol = GroupPolicy(3, gymnasium.spaces.MultiDiscrete([3, 4]), hidden=16)
    obs = torch.randn(2000, 3)
    mask = torch.ones(2000, 7, dtype=torch.bool)
    mask[:, [0, 2]] = False  # dimension 0: only action 1
    mask[:, 3 + 3] = False  # dimension 1: never action 3
    action, logp, _, _ = pol.act(obs, mask=mask)
    assert (action[:, 0] == 1).all() and (action[:, 1] != 3).all() and (action[:, 1] == 0).any()
    _, logp_again, _, _ = pol.act(obs, action, mask=mask)
    assert torch.equal(logp, logp_again)
    greedy, *_ = pol.act(obs, mask=mask, greedy=True)
    assert (greedy[:, 0] == 1).all() and (greedy[:, 1] != 3).all()


def test_trainer_samples_and_updates_under_the_env_masks(tmp_path):
    env = gpu_zoo.make("tag_gridworld_v0", num_envs=8, device="cpu", validate=False, **GRID_SMALL)
    mask = torch.ones(8, GRID_SMALL["num_taggers"], 5, dtype=torch.bool)
    mask[..., 2] = False
    mask[:4, :, 4] = False
    env.action_masks["tagger"] = mask  # the env's mask dict, as a masked env fills it
    # One minibatch, one epoch: the update's ratios are exactly 1 if it recomputes under the same masks.
    args = Args(env_id="tag_gridworld_v0", env_kwargs=GRID_SMALL, num_envs=8, num_steps=16, device="cpu",
                out=str(tmp_path), train_groups="tagger", update_epochs=1, num_minibatches=1)
    trainer = Trainer(args, env=env)
    trainer.rollout()
    b = trainer.buf["tagger"]
    assert torch.equal(b["action_mask"], mask.expand_as(b["action_mask"]))
    acts = b["act"]
    assert not (acts == 2).any() and not (acts[:, :4] == 4).any() and (acts[:, 4:] == 4).any()
    pol = trainer.policies["tagger"]
    with torch.no_grad():
        _, logp, _, _ = pol.act(b["obs"], b["act"], mask=b["action_mask"])
        _, logp_unmasked, _, _ = pol.act(b["obs"], b["act"])
    assert torch.allclose(logp, b["logp"], atol=1e-6)
    assert not torch.allclose(logp_unmasked, b["logp"], atol=1e-3)
    trainer.update()
    metrics = trainer.read_metrics()
    assert abs(metrics["loss/tagger/approx_kl"]) < 1e-6 and metrics["loss/tagger/clipfrac"] == 0


def test_envs_without_masks_train_unmasked(tmp_path):
    args = Args(env_id="tag_gridworld_v0", env_kwargs=GRID_SMALL, num_envs=4, num_steps=4, device="cpu",
                out=str(tmp_path))
    trainer = Trainer(args)
    assert trainer.masked == () and all("action_mask" not in b for b in trainer.buf.values())


def test_equal_heads_batched_match_independent_heads():
    """MultiDiscrete heads of one size share one batched distribution; its numbers are the per-head sums."""
    torch.manual_seed(0)
    pol = GroupPolicy(5, gymnasium.spaces.MultiDiscrete([4, 4, 4]), hidden=16)
    obs = torch.randn(3000, 5)
    mask = torch.rand(3000, 12) < 0.7
    mask[:, [0, 4, 8]] = True  # every head keeps a feasible action
    action, logp, entropy, _ = pol.act(obs, mask=mask)
    assert action.shape == (3000, 3)
    assert mask.view(3000, 3, 4).gather(2, action.unsqueeze(-1)).all()
    logits = pol.actor(obs).masked_fill(~mask, -1e9).view(3000, 3, 4)
    heads = [torch.distributions.Categorical(logits=logits[:, h]) for h in range(3)]
    assert torch.allclose(logp, sum(d.log_prob(action[:, h]) for h, d in enumerate(heads)), atol=1e-5)
    assert torch.allclose(entropy, sum(d.entropy() for d in heads), atol=1e-5)
    counts = torch.bincount(action[:, 1], minlength=4).float() / 3000
    expected = torch.stack([h.probs for h in heads])[1].mean(0)
    assert torch.allclose(counts, expected, atol=0.03)  # sampled from each head's own distribution


def test_steps_a_mask_forces_are_no_decisions_for_gae(tmp_path, monkeypatch):
    from trainers import ppo

    env = gpu_zoo.make("tag_gridworld_v0", num_envs=4, device="cpu", validate=False, **GRID_SMALL)
    mask = torch.ones(4, GRID_SMALL["num_taggers"], 5, dtype=torch.bool)
    mask[:2, :, 1:] = False  # envs 0 and 1: the taggers' one action is 0
    env.action_masks["tagger"] = mask
    seen = []
    real = ppo.compute_gae
    monkeypatch.setattr(ppo, "compute_gae", lambda *a, choice=None: seen.append(choice) or real(*a, choice=choice))
    for skip in (True, False):
        args = Args(env_id="tag_gridworld_v0", env_kwargs=GRID_SMALL, num_envs=4, num_steps=4, device="cpu",
                    out=str(tmp_path), train_groups="tagger", gae_skip_forced=skip)
        trainer = Trainer(args, env=env)
        trainer.rollout()
        trainer.update()
    choice, unused = seen
    assert choice.shape == trainer.buf["tagger"]["rew"].shape and unused is None
    assert not choice[:, :2].any() and choice[:, 2:].all()


def test_random_opponents_play_their_own_moves_and_are_left_out_of_the_update(tmp_path):
    args = Args(env_id="tictactoe_v3", num_envs=8, num_steps=9, device="cpu", out=str(tmp_path), seed=3,
                random_opponent_share=0.5, update_epochs=1, num_minibatches=1)
    trainer = Trainer(args)
    seat = trainer.opponent_seats["player"]
    # the first half of the envs, the random player in either seat in turn
    assert seat.tolist() == [[True, False], [False, True]] * 2 + [[False, False]] * 4
    b, env = trainer.buf["player"], trainer.env
    differs = torch.zeros_like(seat)
    for t in range(args.num_steps):
        with torch.no_grad():
            trainer._rollout_step()
        played, chosen = env.actions["player"].long(), b["act"][t].long()
        assert torch.equal(played[~seat], chosen[~seat])  # the learners play the policy's moves
        differs |= played != chosen
    assert differs[seat].any()  # the random players their own
    trainer._value_final_observations()
    trainer.update()
    assert (b["mask"][:, seat] == 0).all() and (b["mask"][:, ~seat] > 0).all()
    assert Trainer(dataclasses.replace(args, random_opponent_share=0.0)).opponent_seats == {}


def test_random_opponent_share_is_checked():
    for bad in (-0.1, 1.5, True, "half"):
        with pytest.raises(ValueError, match="random_opponent_share must be a number in \\[0, 1\\]"):
            Args(env_id="tictactoe_v3", random_opponent_share=bad)
    env = gpu_zoo.make("simple_v3", num_envs=2, device="cpu", validate=False, max_cycles=25)
    with pytest.raises(ValueError, match="needs groups of two agents or more"):
        Trainer(Args(env_id="simple_v3", env_kwargs=dict(max_cycles=25), num_envs=2, device="cpu",
                     random_opponent_share=1.0), env=env)
