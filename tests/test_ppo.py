"""PPO's pure parts against hand-computed values, and the trainer end to end on a tiny budget."""

import dataclasses

import pytest
import torch

import gpu_zoo
from tests.helpers import GRID_SMALL
from trainers.config import Args
from trainers.evaluate import compare
from trainers.loop import train
from trainers.ppo import Trainer, compute_gae, ppo_loss

R, V, NV = [1.0, 0.0, 2.0], [0.5, 0.4, 0.3], [0.4, 0.3, 0.9]


def gae(term, ended):
    t = lambda x: torch.tensor(x).unsqueeze(-1)  # noqa: E731
    adv, ret = compute_gae(t(R), t(V), t(NV), t(term), t(ended), gamma=0.9, lam=0.8)
    return adv.squeeze(-1).tolist(), ret.squeeze(-1).tolist()


def test_gae_truncation_bootstraps_from_the_final_value():
    adv, ret = gae([0.0, 0.0, 0.0], [0.0, 0.0, 1.0])
    assert adv == pytest.approx([2.067584, 1.6772, 2.51])
    assert ret == pytest.approx([2.567584, 2.0772, 2.81])


def test_gae_termination_cuts_the_chain_and_the_bootstrap():
    adv, _ = gae([0.0, 1.0, 0.0], [0.0, 1.0, 0.0])
    assert adv == pytest.approx([0.572, -0.4, 2.51])


def test_gae_runs_through_steps_without_a_choice_at_lambda_one():
    t = lambda x: torch.tensor(x).unsqueeze(-1)  # noqa: E731
    args = (t(R), t(V), t(NV), t([0.0, 0.0, 0.0]), t([0.0, 0.0, 1.0]))
    adv, _ = compute_gae(*args, gamma=0.9, lam=0.8, choice=t([True, False, True]))
    # step 1 was forced: step 0's advantage takes its TD error whole (0.86 + 0.9 * 1.6772)
    assert adv.squeeze(-1).tolist() == pytest.approx([2.36948, 1.6772, 2.51])
    every, _ = compute_gae(*args, gamma=0.9, lam=0.8, choice=t([True, True, True]))
    assert every.squeeze(-1).tolist() == pytest.approx([2.067584, 1.6772, 2.51])  # the usual GAE


def test_ppo_loss_by_hand():
    adv = torch.tensor([1.0, -2.0, 5.0])
    logp = torch.zeros(3)
    value, ret = torch.tensor([0.0, 1.0, 9.0]), torch.tensor([1.0, 1.0, 0.0])
    mask = torch.tensor([1.0, 1.0, 0.0])  # the third agent was out of the game
    loss, st = ppo_loss(logp, logp, adv, value, value, ret, torch.full((3,), 0.5), mask, 0.2, 0.5, 0.01)
    assert float(st["pg"]) == pytest.approx(0.5)  # mean of -adv over the two agents in the game
    assert float(st["vf"]) == pytest.approx(0.25)
    assert float(loss) == pytest.approx(0.5 + 0.5 * 0.25 - 0.01 * 0.5)
    assert float(st["approx_kl"]) == 0.0 and float(st["clipfrac"]) == 0.0


def test_ppo_loss_clips_the_ratio():
    adv = torch.tensor([1.0])
    new, old = torch.log(torch.tensor([2.0])), torch.zeros(1)
    _, st = ppo_loss(new, old, adv, torch.zeros(1), torch.zeros(1), torch.zeros(1), torch.zeros(1), torch.ones(1),
                     0.2, 0.5, 0.0)
    assert float(st["pg"]) == pytest.approx(-1.2)
    assert float(st["clipfrac"]) == 1.0
    assert float(st["approx_kl"]) == pytest.approx(1.0 - torch.log(torch.tensor(2.0)).item())


def test_the_value_moves_as_far_as_vf_clip_allows():
    """A value 100 below its return: the clipped loss stops pulling once it moved clip from the rollout's."""
    old, ret = torch.zeros(1), torch.full((1,), 100.0)
    zero = torch.zeros(1)

    def value_grad(new_value, **kw):
        new = torch.tensor([new_value], requires_grad=True)
        _, st = ppo_loss(zero, zero, zero, new, old, ret, zero, torch.ones(1), 0.2, 1.0, 0.0, **kw)
        st["vf"].backward()
        return float(new.grad)

    assert value_grad(0.1) < 0 and value_grad(0.3) == 0.0  # the usual PPO: clip_coef, 0.2
    assert value_grad(30.0, vf_clip=50.0) < 0 and value_grad(60.0, vf_clip=50.0) == 0.0
    assert value_grad(90.0, vf_clip=0.0) == pytest.approx(-10.0)  # no limit: the plain squared error


def test_vf_clip_is_checked_and_may_differ_per_group():
    with pytest.raises(ValueError, match="vf_clip"):
        Args(vf_clip=-1.0)
    args = Args(group_settings={"planner": {"vf_clip": 50.0}})
    assert args.for_group("planner").vf_clip == 50.0 and args.for_group("worker").vf_clip is None


def test_the_entropy_weight_follows_its_schedule():
    args = Args(ent_coef=2.0, ent_coef_final=0.125, ent_anneal_env_steps=100)
    assert [args.ent_coef_at(s) for s in (0, 50, 100, 10**6)] == pytest.approx([2.0, 1.0625, 0.125, 0.125])
    assert Args(ent_coef=0.3).ent_coef_at(10**6) == 0.3  # no schedule: constant
    with pytest.raises(ValueError, match="ent_anneal_env_steps"):
        Args(ent_coef_final=0.1)


def tiny_args(tmp_path, **kw):
    base = dict(env_id="tag_gridworld_v0", env_kwargs=GRID_SMALL, num_envs=8, num_steps=8, total_env_steps=128,
                device="cpu", out=str(tmp_path), eval_episodes=0)
    return Args(**{**base, **kw})


def test_derived_sizes_are_computed():
    args = tiny_args("x", total_env_steps=1000)
    assert args.env_steps_per_iteration == 64 and args.iterations == 15
    assert Args(env_id="simple_tag_v3").out_dir == "runs/simple_tag_v3"


def test_continuous_and_multidiscrete_groups_train(tmp_path):
    for env_id, kw in (("simple_tag_v3", dict(max_cycles=5, continuous_actions=True)),
                       ("tag_continuous_v0", dict(num_taggers=2, num_runners=3, max_cycles=6))):
        args = Args(env_id=env_id, env_kwargs=kw, num_envs=4, num_steps=4, total_env_steps=16, device="cpu",
                    out=str(tmp_path / env_id), eval_episodes=0)
        assert train(args).iteration == 1


def test_a_tagger_learns_to_catch_a_random_runner(tmp_path):
    """Tag gridworld, 1 tagger vs 1 random runner on a 4x4 grid: trained beats random on the same episodes."""
    kw = dict(num_taggers=1, num_runners=1, grid_length=4, max_cycles=20)
    args = Args(env_id="tag_gridworld_v0", env_kwargs=kw, num_envs=256, num_steps=32, total_env_steps=200_000,
                train_groups="tagger", device="cpu", out=str(tmp_path), eval_episodes=0, learning_rate=1e-3)
    trainer = train(args)
    result = compare(args, trainer.policies, episodes=256, seed=7)
    trained, random = result.trained.returns["tagger"].mean(), result.random.returns["tagger"].mean()
    assert trained > random + 3.0, (trained, random)


def test_a_warm_start_copies_the_groups_the_checkpoint_trained(tmp_path):
    first = train(tiny_args(tmp_path / "a", train_groups="tagger"))
    second = Trainer(tiny_args(tmp_path / "b", init_from=str(tmp_path / "a" / "checkpoint.pt"), seed=1))
    for name, value in first.policies["tagger"].state_dict().items():
        assert torch.equal(second.policies["tagger"].state_dict()[name], value), name
    fresh = Trainer(tiny_args(tmp_path / "c", seed=1))
    for name, value in fresh.policies["runner"].state_dict().items():  # not in the checkpoint: as if new
        assert torch.equal(second.policies["runner"].state_dict()[name], value), name


def test_a_warm_start_without_a_shared_group_is_refused(tmp_path):
    train(tiny_args(tmp_path / "a", train_groups="tagger"))
    with pytest.raises(ValueError, match="none of the groups"):
        Trainer(tiny_args(tmp_path / "b", train_groups="runner", init_from=str(tmp_path / "a" / "checkpoint.pt")))


def test_unknown_train_group_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not groups"):
        Trainer(tiny_args(tmp_path, train_groups="wolf"))


def test_group_settings_train_each_group_with_its_own(tmp_path, monkeypatch):
    from trainers import ppo
    from trainers.evaluate import load_checkpoint

    settings = {"runner": {"learning_rate": 1e-2, "ent_coef": 0.5, "hidden": 16, "gae_lambda": 0.5, "vf_clip": 3.0}}
    args = tiny_args(tmp_path, group_settings=settings, anneal_lr=True)
    assert args.for_group("runner").ent_coef == 0.5 and args.for_group("tagger") is args
    trainer = Trainer(args)
    assert trainer.policies["runner"].actor[0].out_features == 16
    assert trainer.policies["tagger"].actor[0].out_features == args.hidden
    assert [trainer.opts[g].param_groups[0]["lr"] for g in ("tagger", "runner")] == [args.learning_rate, 1e-2]

    seen, lambdas = [], []
    real_loss, real_gae = ppo.ppo_loss, ppo.compute_gae
    monkeypatch.setattr(ppo, "ppo_loss", lambda *a: seen.append((round(float(a[-2]), 6), a[-1])) or real_loss(*a))
    monkeypatch.setattr(ppo, "compute_gae", lambda *a, **k: lambdas.append(a[-1]) or real_gae(*a, **k))
    trainer.rollout()
    trainer.iteration = args.iterations // 2
    trainer.update()
    assert set(seen) == {(args.ent_coef, None), (0.5, 3.0)}  # each group's entropy weight and value clip
    assert lambdas == [args.gae_lambda, 0.5]  # and its own credit horizon
    assert ([trainer.opts[g].param_groups[0]["lr"] for g in ("tagger", "runner")]
            == pytest.approx([args.learning_rate / 2, 1e-2 / 2]))

    trainer.save(tmp_path / "ck.pt")  # a checkpoint rebuilds each group at its own width
    _, policies = load_checkpoint(tmp_path / "ck.pt", device="cpu")
    assert policies["runner"].critic[0].out_features == 16


def test_a_group_can_take_fewer_passes_over_the_batch(tmp_path):
    """The AI Economist's planner: one pass in two minibatches while the other groups keep theirs."""
    args = tiny_args(tmp_path, update_epochs=3, num_minibatches=4,
                     group_settings={"runner": {"update_epochs": 1, "num_minibatches": 2}})
    trainer = Trainer(args)
    before = {g: [p.detach().clone() for p in pol.parameters()] for g, pol in trainer.policies.items()}
    trainer.rollout()
    trainer.update()
    steps = dict(zip(trainer.policies, trainer.updates_since_log, strict=True))
    assert steps == {"tagger": 3 * 4, "runner": 1 * 2}
    for g, pol in trainer.policies.items():  # both groups still learn
        assert any(not torch.equal(a, b) for a, b in zip(before[g], pol.parameters(), strict=True)), g


def test_a_checkpoint_without_env_state_resumes_with_fresh_episodes(tmp_path):
    args = tiny_args(tmp_path, total_env_steps=512)
    first = Trainer(args)
    for _ in range(3):  # episodes of GRID_SMALL end within these steps: the counts are not all zero
        first.rollout()
        first.update()
        first.iteration += 1
    first.save(tmp_path / "slim.pt", env_state=False)
    saved = torch.load(tmp_path / "slim.pt", weights_only=False)
    assert "env_state" not in saved and int(saved["episode_counts"].sum()) > 0

    second = Trainer(args)
    second.load(tmp_path / "slim.pt")
    assert second.iteration == 3
    assert torch.equal(second.env.state.ep_count, first.env.state.ep_count)
    for a, b in zip(first.policies.parameters(), second.policies.parameters(), strict=True):
        assert torch.equal(a, b)
    starts = [torch.cat([t.env.state.x, t.env.state.y]) for t in (second, Trainer(args))]
    assert not torch.equal(*starts), "episodes restart unlike the run's first"
    second.rollout()  # and the run goes on
    second.update()


def test_env_state_resumes_only_into_the_layout_it_was_saved_from(tmp_path):
    args = tiny_args(tmp_path)
    first = Trainer(args)
    first.rollout()
    first.iteration = 2
    first.save(tmp_path / "full.pt")
    saved = torch.load(tmp_path / "full.pt", weights_only=False)
    second = Trainer(args)
    second.load(tmp_path / "full.pt")
    assert torch.equal(second.env.buffers.storage, first.env.buffers.storage) and second.iteration == 2

    with pytest.raises(ValueError, match="holds 8 envs, this env has 16"):
        Trainer(dataclasses.replace(args, num_envs=16)).load(tmp_path / "full.pt")
    fields = saved["env_layout"]["fields"]
    edits = {  # each as another version of the env would have saved it
        "lacks fields \\['t'\\]": [f for f in fields if f[0] != "t"],
        "has fields this env lacks \\['extra'\\]": [*fields, ["extra", "u8", [], 0]],
        "stores \\['t'\\] with other dtypes": [[n, "u8" if n == "t" else d, sh, off] for n, d, sh, off in fields],
        "other byte offsets": [[n, d, sh, off + 128] for n, d, sh, off in fields],
    }
    fresh = Trainer(args)
    kept = [p.clone() for p in fresh.policies.parameters()], fresh.env.buffers.storage.clone(), fresh.iteration
    for match, edited in edits.items():
        torch.save({**saved, "env_layout": {**saved["env_layout"], "fields": edited}}, tmp_path / "edited.pt")
        with pytest.raises(ValueError, match=match):
            fresh.load(tmp_path / "edited.pt")
    torch.save({k: v for k, v in saved.items() if k != "env_layout"}, tmp_path / "unrecorded.pt")
    with pytest.raises(ValueError, match="does not say which layout.*--init-from"):
        fresh.load(tmp_path / "unrecorded.pt")
    # A refused checkpoint changed nothing: not the policies, not the env, not the count of iterations.
    assert all(torch.equal(a, b) for a, b in zip(kept[0], fresh.policies.parameters(), strict=True))
    assert torch.equal(kept[1], fresh.env.buffers.storage) and fresh.iteration == kept[2]
    fresh.rollout()


def test_staggered_starts_spread_the_first_episodes_and_replay_from_the_seed(tmp_path):
    cycles = GRID_SMALL["max_cycles"]
    args = tiny_args(tmp_path, num_envs=64, stagger_starts=True, total_env_steps=512)
    first = Trainer(args)
    starts = first.env.state.t.clone()
    assert int(starts.min()) >= 0 and int(starts.max()) < cycles and len(set(starts.tolist())) > 1
    assert torch.equal(Trainer(args).env.state.t, starts), "the starts are drawn from the run's seed"
    assert not torch.equal(Trainer(dataclasses.replace(args, seed=1)).env.state.t, starts)
    assert not Trainer(tiny_args(tmp_path, num_envs=64)).env.state.t.any(), "off by default"
    first.rollout()  # within one rollout the envs end their episodes at different steps
    ended = first.buf["tagger"]["ended"][..., 0]  # (steps, envs)
    assert len({tuple(col.nonzero().flatten().tolist()) for col in ended.T}) > 1
    first.update()
    first.iteration += 1
    first.save(tmp_path / "slim.pt", env_state=False)
    second = Trainer(args)
    second.load(tmp_path / "slim.pt")  # fresh episodes after a resume are staggered too, drawn afresh
    assert len(set(second.env.state.t.tolist())) > 1 and not torch.equal(second.env.state.t, starts)


@pytest.mark.parametrize("settings, match", [
    ({"runner": {"num_steps": 4}}, "cannot differ per group"),
    ({"runner": {"update_epochs": 0}}, r"group_settings\['runner'\]: update_epochs"),
    ({"runner": {"hidden": 0}}, r"group_settings\['runner'\]: hidden must be a positive int"),
    ({"runner": 0.1}, "must map group names to dicts"),
])
def test_bad_group_settings_are_refused(tmp_path, settings, match):
    with pytest.raises(ValueError, match=match):
        tiny_args(tmp_path, group_settings=settings)


def test_group_settings_for_a_group_not_trained_are_refused(tmp_path):
    with pytest.raises(ValueError, match="does not train"):
        Trainer(tiny_args(tmp_path, train_groups="tagger", group_settings={"runner": {"ent_coef": 0.1}}))


@pytest.mark.parametrize("env_id, kw", [("tag_continuous_v0", dict(num_taggers=2, num_runners=3, max_cycles=6)),
                                        ("simple_tag_v3", dict(max_cycles=5, continuous_actions=True))])
def test_rollout_and_update_never_read_a_tensor_on_the_host(tmp_path, monkeypatch, env_id, kw):
    """On a GPU each such read is a device sync that stalls the rollout: none in the loop's hot path."""
    args = Args(env_id=env_id, env_kwargs=kw, num_envs=4, num_steps=8, total_env_steps=64, device="cpu",
                out=str(tmp_path), eval_episodes=0)
    trainer = Trainer(args)

    names = ("__bool__", "item", "tolist", "__float__", "__int__")
    originals = {name: getattr(torch.Tensor, name) for name in names}

    def host_read(self, *a, **k):
        raise AssertionError("a tensor was read on the host")

    def guard(on: bool):
        for name in names:
            setattr(torch.Tensor, name, host_read if on else originals[name])

    # Adam reads its step counter, which it keeps on the CPU even for a GPU model: no device sync.
    def unguarded(step):
        def unguarded_step(*a, **k):
            guard(False)
            try:
                return step(*a, **k)
            finally:
                guard(True)
        return unguarded_step

    for opt in trainer.opts.values():
        monkeypatch.setattr(opt, "step", unguarded(opt.step))
    guard(True)
    try:
        trainer.rollout()
        trainer.update()
    finally:
        guard(False)
    assert trainer.read_metrics()["loss/tagger/entropy" if env_id == "tag_continuous_v0" else "loss/agent/entropy"] > 0


def _replay_matches(trainer, fresh, steps: int):
    """The storage of ``trainer``'s last rollout is what ``fresh`` (same seed, eager) does with its actions."""
    for t in range(steps):
        for g, pol in trainer.policies.items():
            b = trainer.buf[g]
            assert torch.equal(b["obs"][t], fresh.obs[g]), (g, t)
            _, logp, _, value = pol.act(b["obs"][t], b["act"][t])
            torch.testing.assert_close(logp, b["logp"][t])
            torch.testing.assert_close(value, b["value"][t])
        _, rew, term, _, info = fresh.step({g: pol.to_env(trainer.buf[g]["act"][t])
                                            for g, pol in trainer.policies.items()})
        for g in trainer.policies:
            assert torch.equal(trainer.buf[g]["rew"][t], rew[g].float()), (g, t)
            assert torch.equal(trainer.buf[g]["term"][t], term[g].float()), (g, t)
            assert torch.equal(trainer.buf[g]["mask"][t], info["active"][g].float()), (g, t)


@pytest.mark.cuda
@pytest.mark.parametrize("env_id,kw", [("tag_continuous_v0", {"num_taggers": 2, "num_runners": 3, "max_cycles": 6}),
                                       ("tag_gridworld_v0", GRID_SMALL)])
@torch.no_grad()
def test_graphed_rollout_is_a_faithful_rollout(tmp_path, env_id, kw):
    """A replayed CUDA graph writes each step at its own index, from the live env and weights."""
    from trainers.ppo import make_env

    args = tiny_args(tmp_path, env_id=env_id, env_kwargs=kw, num_envs=16, num_steps=9, device="cuda")
    trainer = Trainer(args)
    fresh = make_env(args)
    fresh.reset(seed=args.seed)
    for _ in range(2):  # the second rollout replays the graph for every step, episodes end across both
        trainer.rollout()
        assert "rollout" in trainer._graphs
        _replay_matches(trainer, fresh, args.num_steps)
        for p in trainer.policies.parameters():  # the graph reads the weights where the optimiser writes them
            p.add_(0.01)
    episodes = trainer.read_metrics()["episodes"]
    assert episodes == float(fresh.episode_stats()["episodes"].sum())


@pytest.mark.parametrize("norm_adv", [True, False])
def test_advantages_are_normalised_unless_the_group_says_not(tmp_path, monkeypatch, norm_adv):
    from trainers import ppo

    args = tiny_args(tmp_path, group_settings={"tagger": {"norm_adv": norm_adv}}, train_groups="tagger")
    trainer = Trainer(args)
    monkeypatch.setattr(ppo, "compute_gae", lambda rew, *a, **k: (torch.full_like(rew, 5.0), torch.zeros_like(rew)))
    seen = []
    real_loss = ppo.ppo_loss
    monkeypatch.setattr(ppo, "ppo_loss", lambda *a: seen.append(a[2]) or real_loss(*a))
    trainer.rollout()
    trainer.update()
    advantages = torch.cat(seen)
    assert bool((advantages == (0.0 if norm_adv else 5.0)).all())  # constant advantages normalise to zero


def test_a_checkpoint_of_one_optimiser_for_all_groups_resumes_into_one_per_group(tmp_path):
    """Checkpoints written before each group had its own Adam hold one over every policy's parameters."""
    from trainers import checkpoint

    args = tiny_args(tmp_path, group_settings={"runner": {"learning_rate": 1e-2}})
    first = Trainer(args)
    first.rollout()
    first.update()
    legacy = torch.optim.Adam([{"params": pol.parameters(), "lr": args.for_group(g).learning_rate}
                               for g, pol in first.policies.items()], eps=1e-5)
    for opt, own in zip([legacy], [first.opts], strict=True):  # the same moments, held in the old layout
        for g, pol in first.policies.items():
            for p in pol.parameters():
                opt.state[p] = {k: v.clone() for k, v in own[g].state[p].items()}
    first.save(tmp_path / "ck.pt")
    state = torch.load(tmp_path / "ck.pt", weights_only=False)
    state["opt"] = legacy.state_dict()
    torch.save(state, tmp_path / "legacy.pt")
    second = Trainer(args)
    second.load(tmp_path / "legacy.pt")
    for g, pol in second.policies.items():
        assert second.opts[g].param_groups[0]["lr"] == args.for_group(g).learning_rate
        for p, q in zip(pol.parameters(), first.policies[g].parameters(), strict=True):
            for k, v in first.opts[g].state[q].items():
                assert torch.equal(second.opts[g].state[p][k], v), (g, k)
    per_group = {g: o.state_dict() for g, o in first.opts.items()}
    assert checkpoint.per_group_optimizer_states(per_group, first.policies) is per_group  # today's layout as it is


@pytest.mark.parametrize("critic", ["local", "state"])
def test_next_values_are_the_critic_of_each_next_observation(critic):
    """Step t's next value is the critic of its stored next input: step t+1's, or the final one where episodes end."""
    args = Args(env_id="simple_tag_v3", env_kwargs=dict(max_cycles=5), num_envs=4, num_steps=8, total_env_steps=64,
                device="cpu", eval_episodes=0, critic=critic)
    trainer = Trainer(args)
    trainer.rollout()
    src, nxt = ("critic_obs", "next_critic_obs") if critic == "state" else ("obs", "next_obs")
    for g, pol in trainer.policies.items():
        b = trainer.buf[g]
        assert (b[nxt][:-1] != b[src][1:]).any(), "episodes ended inside the rollout"
        torch.testing.assert_close(b["next_value"], pol.value(b[nxt]).detach())


def test_a_centralised_critic_sees_the_global_state_and_the_agents_index(tmp_path):
    """MAPPO: each agent's critic input is the env's state (every agent's observation) and its one-hot index."""
    args = Args(env_id="simple_tag_v3", env_kwargs=dict(max_cycles=5), num_envs=4, num_steps=8, total_env_steps=64,
                device="cpu", out=str(tmp_path), eval_episodes=0, critic="state")
    trainer = Trainer(args)
    env = trainer.env
    assert env.state_size == 3 * 16 + 14
    trainer.rollout()
    for key, src in (("critic_obs", "obs"), ("next_critic_obs", "next_obs")):
        state = env.global_state({g: trainer.buf[g][src] for g in env.groups})  # (T, E, state_size)
        for g, b in trainer.buf.items():
            n = env.group_size(g)
            assert b[key].shape == (8, 4, n, env.state_size + n)
            for i in range(n):
                assert torch.equal(b[key][:, :, i, :env.state_size], state)
                assert torch.equal(b[key][:, :, i, env.state_size:], torch.eye(n)[i].expand(8, 4, n))
    for g, pol in trainer.policies.items():
        assert pol.critic[0].in_features == env.state_size + env.group_size(g)
        torch.testing.assert_close(trainer.buf[g]["value"], pol.value(trainer.buf[g]["critic_obs"]).detach())
    first = env.global_state()[0]
    pz = gpu_zoo.parallel_env("simple_tag_v3", max_cycles=5)
    pz.reset(seed=0)
    assert pz.state().shape == (env.state_size,) and first.shape == (env.state_size,)


def test_a_centralised_critic_learns(tmp_path):
    """The tagger of `test_a_tagger_learns_to_catch_a_random_runner`, its critic seeing the state: it learns as well."""
    kw = dict(num_taggers=1, num_runners=1, grid_length=4, max_cycles=20)
    args = Args(env_id="tag_gridworld_v0", env_kwargs=kw, num_envs=256, num_steps=32, total_env_steps=200_000,
                train_groups="tagger", device="cpu", out=str(tmp_path), eval_episodes=0, learning_rate=1e-3,
                critic="state")
    trainer = train(args)
    result = compare(args, trainer.policies, episodes=256, seed=7)
    trained, random = result.trained.returns["tagger"].mean(), result.random.returns["tagger"].mean()
    assert trained > random + 3.0, (trained, random)
    with pytest.raises(ValueError, match="critic must be"):
        Args(critic="global")


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_a_shared_trunk_is_one_network_under_two_heads(activation):
    """Both heads read one trunk: each parameter once, the value and the logits from the same features."""
    import gymnasium

    from trainers.policy import GroupPolicy

    torch.manual_seed(0)
    pol = GroupPolicy(7, gymnasium.spaces.Discrete(5), 16, activation=activation, shared_trunk=True)
    names = [n for n, _ in pol.named_parameters()]
    assert names == ["trunk.0.weight", "trunk.0.bias", "trunk.2.weight", "trunk.2.bias", "policy_head.weight",
                     "policy_head.bias", "value_head.weight", "value_head.bias"]
    assert list(pol.state_dict()) == names
    kind = torch.nn.ReLU if activation == "relu" else torch.nn.Tanh
    assert isinstance(pol.trunk[1], kind) and pol.actor[0] is pol.critic[0] is pol.trunk[0]
    obs = torch.randn(9, 7)
    action, logp, entropy, value = pol.act(obs)
    h = pol.trunk(obs)
    torch.testing.assert_close(value, pol.value_head(h).squeeze(-1))
    torch.testing.assert_close(pol.value(obs), value)
    want = torch.distributions.Categorical(logits=pol.policy_head(h))
    torch.testing.assert_close(logp, want.log_prob(action))
    torch.testing.assert_close(entropy, want.entropy())
    pol.to(torch.float64)  # the actor and critic views follow the modules
    assert pol.actor[-1].weight.dtype == pol.critic[0].weight.dtype == torch.float64


def test_a_shared_trunk_trains_and_refuses_what_it_cannot_be(tmp_path):
    args = tiny_args(tmp_path / "a", shared_trunk=True, activation="relu")
    trainer = train(args)
    assert trainer.iteration == args.iterations
    with pytest.raises(ValueError, match="critic='local'"):
        tiny_args(tmp_path, shared_trunk=True, critic="state")
    with pytest.raises(ValueError, match="activation must be"):
        tiny_args(tmp_path, activation="gelu")
    separate = train(tiny_args(tmp_path / "b"))
    with pytest.raises(ValueError, match="does not fit this run's"):  # two networks do not load into one trunk
        Trainer(tiny_args(tmp_path / "c", shared_trunk=True, init_from=str(tmp_path / "b" / "checkpoint.pt")))
    per_group = Trainer(tiny_args(tmp_path / "d", group_settings={"runner": {"shared_trunk": True}}))
    assert per_group.policies["runner"].shared_trunk and not per_group.policies["tagger"].shared_trunk
    assert separate.policies["tagger"].actor[0] is not separate.policies["tagger"].critic[0]
