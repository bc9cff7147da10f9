"""The Triton kernels of the trainer's GPU path against the plain torch code they replace.

Without a GPU they run under Triton's interpreter (``TRITON_INTERPRET=1``, set by conftest), on
CPU tensors; on a GPU (``GPU_ZOO_REAL_CUDA=1``) for real. Products are full fp32
(``GPU_ZOO_DOT_PRECISION=ieee``, set by conftest) so tight tolerances hold; one test checks the
fp16 products that training uses by default.
"""

from __future__ import annotations

import dataclasses

import gymnasium
import pytest
import torch

from tests.conftest import REAL_CUDA
from trainers import fused
from trainers.config import Args
from trainers.policy import GroupPolicy
from trainers.ppo import LOSS_STATS, InferenceLayers, Trainer, compute_gae, forward_bf16, hidden_bf16, ppo_loss

DEVICE = torch.device("cuda" if REAL_CUDA else "cpu")
TOL = dict(rtol=1e-4, atol=1e-5)


def policy(obs_size: int, space, hidden: int = 32, seed: int = 0) -> GroupPolicy:
    torch.manual_seed(seed)
    pol = GroupPolicy(obs_size, space, hidden).to(DEVICE)
    with torch.no_grad():  # weights large enough that the heads are far from uniform
        for p in pol.parameters():
            p.mul_(3.0)
    return pol


def test_which_networks_fit_the_kernels():
    assert fused.triton is not None, "Triton is a test dependency: the kernels must run here"
    assert fused.supported(16, 64, 5) and not fused.supported(1225, 128, 50) and not fused.supported(16, 256, 5)


@pytest.mark.parametrize("D,H,OUT", [(14, 64, 5), (3, 16, 1), (40, 100, 17)])
def test_forward_is_the_network(D, H, OUT):
    torch.manual_seed(1)
    seq = torch.nn.Sequential(torch.nn.Linear(D, H), torch.nn.Tanh(), torch.nn.Linear(H, H), torch.nn.Tanh(),
                              torch.nn.Linear(H, OUT)).to(DEVICE)
    x = torch.randn(3, 47, D, device=DEVICE)
    torch.testing.assert_close(fused.forward(seq, x), seq(x).detach(), **TOL)


def minibatch(pol: GroupPolicy, rows: int, masked: bool, seed: int = 2) -> dict:
    """A stored batch as a rollout leaves it: actions drawn from the policy (under the mask), old values."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    obs = torch.randn(rows, pol.actor[0].in_features, generator=gen).to(DEVICE)
    mask = None
    if masked:
        mask = (torch.rand(rows, pol.logits_size, generator=gen) < 0.6).to(DEVICE)
        start = 0
        for n in pol.splits:  # one feasible action per head at least
            mask[torch.arange(rows), start + torch.randint(0, n, (rows,), generator=gen).to(DEVICE)] = True
            start += n
        mask[::7] = False  # players waiting for their turn: every action masked
    with torch.no_grad():
        act, logp, _, value = pol.act(obs, mask=mask)
    jitter = lambda scale: scale * torch.randn(rows, generator=gen).to(DEVICE)  # noqa: E731
    batch = {"obs": obs, "act": act.to(torch.int32), "logp": logp + jitter(0.3), "value": value + jitter(0.5),
             "adv": jitter(1.0), "ret": value + jitter(1.0), "mask": (torch.rand(rows, generator=gen) < 0.9).float()
             .to(DEVICE)}
    if masked:
        batch["action_mask"] = mask
    return batch


def reference_grads(pol, batch, idx, clip, vf_coef, ent_coef, vf_clip):
    pol.zero_grad()
    mask = batch["action_mask"][idx] if "action_mask" in batch else None
    _, logp, ent, value = pol.act(batch["obs"][idx], batch["act"][idx].long(), mask=mask)
    loss, st = ppo_loss(logp, batch["logp"][idx], batch["adv"][idx], value, batch["value"][idx], batch["ret"][idx],
                        ent, batch["mask"][idx], clip, vf_coef, ent_coef, vf_clip)
    loss.backward()
    return [p.grad.clone() for p in pol.parameters()], torch.stack([st[k].detach() for k in LOSS_STATS])


@pytest.mark.parametrize("space,masked", [(gymnasium.spaces.Discrete(5), False),
                                          (gymnasium.spaces.Discrete(5), True),
                                          (gymnasium.spaces.MultiDiscrete([3, 4, 2]), True)])
@pytest.mark.parametrize("vf_clip", [0.2, 0.0])
def test_the_loss_gradient_is_autograds(space, masked, vf_clip):
    """Every weight's gradient and every loss statistic of one minibatch, as `ppo_loss` + autograd give them."""
    pol = policy(11, space)
    batch = minibatch(pol, 300, masked)
    perm = torch.randperm(300, generator=torch.Generator().manual_seed(3)).to(DEVICE)
    start, count = 40, 150  # a minibatch in the middle of the permutation, several tiles long
    clip, vf_coef, ent_coef = 0.2, 0.5, 0.05
    want, want_stats = reference_grads(pol, batch, perm[start:start + count], clip, vf_coef, ent_coef, vf_clip)
    sizes = [p.numel() for p in pol.parameters()]
    out = torch.full((fused.num_programs(DEVICE), sum(sizes) + len(LOSS_STATS) + 1), float("nan"), device=DEVICE)
    heads = fused.head_bounds(pol.splits, DEVICE)
    ent = torch.tensor(ent_coef, device=DEVICE)
    n_actor = sum(p.numel() for p in pol.actor.parameters())
    fused.ppo_grads(pol.actor, False, perm, start, count, batch, ent, heads, out, 0, sum(sizes), clip, vf_coef,
                    vf_clip)
    fused.ppo_grads(pol.critic, True, perm, start, count, batch, ent, heads, out, n_actor, sum(sizes) + 1,
                    clip, vf_coef, vf_clip)
    total = torch.empty(out.shape[1], device=DEVICE)
    fused.mean_gradient(out, total)
    torch.testing.assert_close(total[-1] * total[-1].new_ones(()), batch["mask"][perm[start:start + count]].sum())
    got = total[:sum(sizes)].split(sizes)
    for (name, p), g, w in zip(pol.named_parameters(), got, want, strict=True):
        torch.testing.assert_close(g.view_as(p), w, **TOL, msg=lambda m, name=name: f"{name}: {m}")
    torch.testing.assert_close(total[sum(sizes):-1], want_stats, **TOL)


@pytest.mark.parametrize("space,masked", [(gymnasium.spaces.Discrete(5), False),
                                          (gymnasium.spaces.MultiDiscrete([3, 4, 2]), True)])
def test_the_policy_loss_by_the_logits_is_autograds(space, masked):
    """`fused.actor_loss`: a torch actor's minibatch loss, its gradient by the logits and its statistics."""
    pol = policy(11, space)
    batch = minibatch(pol, 300, masked)
    perm = torch.randperm(300, generator=torch.Generator().manual_seed(3)).to(DEVICE)
    start, count, clip, ent_coef = 40, 150, 0.2, 0.05
    idx = perm[start:start + count]
    logits = pol.actor(batch["obs"][idx]).detach().requires_grad_()
    # the torch path's own log-probabilities and entropies of the logits (masked entries constant)
    _, logp, ent = pol.draw(logits, batch["act"][idx].long(), batch["action_mask"][idx] if masked else None)
    zero = torch.zeros(count, device=DEVICE)
    loss, st = ppo_loss(logp, batch["logp"][idx], batch["adv"][idx], zero, zero, zero, ent, batch["mask"][idx], clip,
                        0.0, ent_coef)
    loss.backward()
    agents = batch["mask"][idx].sum().view(1)
    dlogits, sums = fused.actor_loss(logits.detach(), perm, start, count, batch, torch.tensor(ent_coef, device=DEVICE),
                                     fused.head_bounds(pol.splits, DEVICE), clip, agents)
    torch.testing.assert_close(dlogits, logits.grad, **TOL)
    torch.testing.assert_close(sums / agents, torch.stack([st[k] for k in ("pg", "entropy", "approx_kl", "clipfrac")])
                               .detach(), **TOL)


@pytest.mark.parametrize("space,masked", [(gymnasium.spaces.Discrete(4), False),
                                          (gymnasium.spaces.MultiDiscrete([3, 2]), True)])
@pytest.mark.parametrize("drawn", [False, True])
@pytest.mark.parametrize("u8", [False, True], ids=["float32_obs", "uint8_obs"])
def test_act_samples_the_policy_and_writes_the_step(space, masked, drawn, u8):
    """The actor's draw and the step's storage, with the actor in the kernel or its logits given (``drawn``).

    ``u8``: the env's observations are bytes (a board's 0/1 planes), which the kernel reads as float32.
    """
    E, n, T, t = 400, 3, 4, 2
    pol = policy(6, space, hidden=16)
    obs = torch.randn(1, 1, 6, device=DEVICE).expand(E, n, 6).contiguous()  # one state, many draws
    if u8:
        obs = (obs > 0).to(torch.uint8)
    x = obs.float()  # what the networks take
    nh = len(pol.splits)
    mask = None
    if masked:
        mask = torch.ones(E, n, pol.logits_size, dtype=torch.bool, device=DEVICE)
        mask[..., 1] = False
    storage = {"obs": torch.zeros(T, E, n, 6, device=DEVICE), "logp": torch.zeros(T, E, n, device=DEVICE),
               "act": torch.zeros(T, E, n, *([nh] if nh > 1 else []), dtype=torch.int32, device=DEVICE),
               "action_mask": torch.zeros(T, E, n, pol.logits_size, dtype=torch.bool, device=DEVICE)}
    env_actions = torch.full_like(storage["act"][0], -1)
    step = torch.tensor([5], device=DEVICE)
    key = fused.draw_key(0, 0, 1)
    given = pol.actor(x).detach() if drawn else None

    def act(into, at_step):
        fused.act(pol.actor, obs, mask, into, storage, torch.tensor([t], device=DEVICE), at_step,
                  fused.head_bounds(pol.splits, DEVICE), key, logits=given)

    act(env_actions, step)
    assert torch.equal(storage["act"][t], env_actions) and torch.equal(storage["obs"][t], x)
    assert not storage["obs"][t - 1].any() and not storage["logp"][t + 1].any()
    with torch.no_grad():
        _, logp, _, _ = pol.act(x, env_actions.long(), mask=mask)
    torch.testing.assert_close(storage["logp"][t], logp, **TOL)
    if masked:
        assert torch.equal(storage["action_mask"][t], mask)
        assert (env_actions[..., 0] != 1).all(), "a masked action was drawn"
    # the first head's frequencies are its probabilities (1200 draws: within 5 standard errors)
    logits = pol.actor(x[0, 0]).detach()
    if masked:
        logits = logits.masked_fill(~mask[0, 0], -1e9)
    p = logits[:pol.splits[0]].softmax(-1)
    first = env_actions.reshape(E * n, -1)[:, 0] if nh > 1 else env_actions.reshape(-1)
    freq = torch.bincount(first.long(), minlength=pol.splits[0]).float() / first.numel()
    assert ((freq - p).abs() <= 5 * (p * (1 - p) / first.numel()).sqrt() + 1e-3).all(), (freq, p)
    again = torch.full_like(env_actions, -1)
    act(again, step)
    assert torch.equal(again, env_actions), "the same key and step draw the same"
    act(again, step + 1)
    assert not torch.equal(again, env_actions), "the next step draws anew"


@pytest.mark.parametrize("with_choice", [False, True])
def test_gae_is_compute_gae(with_choice):
    gen = torch.Generator().manual_seed(4)
    T, M = 9, 70
    r = lambda: torch.randn(T, M, generator=gen).to(DEVICE)  # noqa: E731
    term = (torch.rand(T, M, generator=gen) < 0.1).float().to(DEVICE)
    ended = torch.maximum(term, (torch.rand(T, M, generator=gen) < 0.1).float().to(DEVICE))
    choice = (torch.rand(T, M, generator=gen) < 0.5).to(DEVICE) if with_choice else None
    args = (r(), r(), r(), term, ended)
    want = compute_gae(*args, 0.97, 0.9, choice=choice)
    got = fused.gae(*args, 0.97, 0.9, choice=choice)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, **TOL)


def tiny(env_id: str, **kw) -> Args:
    presets = {"simple_tag_v3": dict(max_cycles=5), "tag_gridworld_v0": dict(num_taggers=2, num_runners=2,
                                                                            grid_length=4, max_cycles=5)}
    return Args(env_id=env_id, env_kwargs=presets[env_id], num_envs=4, num_steps=8, total_env_steps=64,
                device=str(DEVICE), eval_episodes=0, gif=False, cuda_graph=False, hidden=16,
                **{"bf16_layers": False, **kw})  # float32 layers: the torch path's results to tolerance


@pytest.fixture(params=["fused", "drawn"])
def kernels_on_this_device(monkeypatch, request):
    """The kernels on this device, whole networks in them (``fused``) or only draws and policy losses (``drawn``).

    ``drawn`` is what networks too wide for the kernels get: torch's layers beside the kernels.
    """
    monkeypatch.setattr(fused, "available", lambda device: True)
    if request.param == "drawn":
        monkeypatch.setattr(fused, "supported", lambda *widths: False)
    return request.param


def served(trainer: Trainer, path: str) -> tuple:
    return trainer.fused if path == "fused" else trainer.drawn


@pytest.mark.parametrize("env_id", ["simple_tag_v3", "tag_gridworld_v0"])
def test_a_fused_rollout_is_the_env_stepped_with_its_actions(kernels_on_this_device, env_id):
    """Storage, values and the episode metrics of a kernel rollout, replayed through the env by hand."""
    trainer = Trainer(tiny(env_id))
    assert served(trainer, kernels_on_this_device) == trainer.recorded == tuple(trainer.policies)
    reference = Trainer(dataclasses.replace(trainer.args, fused=False))
    assert reference.fused == reference.drawn == reference.recorded == ()
    trainer.rollout()
    env = reference.env
    episodes = torch.zeros_like(trainer.episode_acc)
    for t in range(trainer.args.num_steps):
        for g in trainer.policies:
            assert torch.equal(trainer.buf[g]["obs"][t], env.obs[g]), (g, t)
        obs, rew, term, trunc, info = env.step({g: trainer.buf[g]["act"][t] for g in env.groups})
        for g, pol in trainer.policies.items():
            b = trainer.buf[g]
            nxt = torch.where(info["done"].view(-1, 1, 1), info["final_obs"][g], obs[g])
            assert torch.equal(b["rew"][t], rew[g]) and torch.equal(b["next_obs"][t], nxt)
            assert torch.equal(b["ended"][t], (term[g] | trunc[g]).float())
            assert torch.equal(b["mask"][t], info["active"][g].float())
            with torch.no_grad():
                _, logp, _, value = pol.act(b["obs"][t], b["act"][t].long())
                torch.testing.assert_close(b["logp"][t], logp, **TOL)
                torch.testing.assert_close(b["value"][t], value, **TOL)
                torch.testing.assert_close(b["next_value"][t], pol.value(nxt), **TOL)
        d = info["done"].double()
        stats = env.episode_stats()
        episodes += torch.stack([d.sum(), (stats["length"] * d).sum(),
                                 *((stats[f"return_{g}"].mean(-1) * d).sum() for g in env.groups)])
    torch.testing.assert_close(trainer.episode_acc, episodes)
    assert episodes[0] > 0, "episodes ended inside the rollout"


@pytest.mark.parametrize("path", ["torch", "fused", "drawn"])
def test_a_board_games_bytes_are_stored_as_float32(monkeypatch, path):
    """Tic-tac-toe observes uint8 planes (``obs_dtype="u8"``): each path stores and feeds float32 to the networks."""
    if path != "torch":
        monkeypatch.setattr(fused, "available", lambda device: True)
    if path == "drawn":
        monkeypatch.setattr(fused, "supported", lambda *widths: False)
    args = Args(env_id="tictactoe_v3", num_envs=4, num_steps=6, total_env_steps=24, device=str(DEVICE),
                eval_episodes=0, gif=False, cuda_graph=False, hidden=16, bf16_layers=False, fused=path != "torch",
                update_epochs=1, num_minibatches=1)
    trainer = Trainer(args)
    assert trainer.recorded == (() if path == "torch" else ("player",))
    env, b = trainer.env, trainer.buf["player"]
    assert env.obs["player"].dtype == torch.uint8
    for t in range(args.num_steps):
        seen = env.obs["player"].float()
        with torch.no_grad():
            trainer._rollout_step()
        nxt = torch.where(env.info["done"].view(-1, 1, 1), env.final_obs["player"], env.obs["player"]).float()
        assert torch.equal(b["obs"][t], seen) and torch.equal(b["next_obs"][t], nxt), t
    assert b["obs"].dtype == torch.float32 and b["obs"].any()
    trainer._value_final_observations()
    trainer.update()
    assert all(p.isfinite().all() for p in trainer.policies["player"].parameters())


@pytest.mark.parametrize("critic", ["local", "state"])
def test_a_fused_update_is_the_torch_update(kernels_on_this_device, critic):
    """The same rollout in storage, the same permutations: the kernels' update leaves the same weights."""
    first = Trainer(tiny("simple_tag_v3", ent_coef=0.05, critic=critic))
    second = Trainer(dataclasses.replace(first.args, fused=False))
    assert served(first, kernels_on_this_device) == tuple(first.policies) and not second.recorded
    first.rollout()
    second.policies.load_state_dict(first.policies.state_dict())
    for g, b in first.buf.items():
        for k, v in b.items():
            second.buf[g][k].copy_(v)
    for trainer in (first, second):
        torch.manual_seed(5)  # the same minibatches
        trainer.update()
    for g in first.policies:
        for (name, a), b in zip(first.policies[g].named_parameters(), second.policies[g].parameters(), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=lambda m, name=f"{g}.{name}": f"{name}: {m}")
    torch.testing.assert_close(first.loss_acc, second.loss_acc, **TOL)


@pytest.mark.parametrize("shared_trunk", [False, True])
@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_the_rollouts_inference_layers_are_the_networks_in_bfloat16(activation, shared_trunk):
    """The rollout's copies of the weights give `forward_bf16`'s logits and values, and follow each refresh."""
    torch.manual_seed(3)
    pol = GroupPolicy(11, gymnasium.spaces.MultiDiscrete([4, 3]), 32, activation=activation,
                      shared_trunk=shared_trunk).to(DEVICE)
    layers = InferenceLayers(pol)
    x = torch.randn(2, 50, 11, generator=torch.Generator().manual_seed(1)).to(DEVICE)
    for _ in range(2):
        layers.refresh()
        logits, values = layers(x)
        want = forward_bf16(pol.actor, x).detach()
        assert logits.dtype == torch.float32 and logits.shape == want.shape
        torch.testing.assert_close(logits, want, rtol=2e-2, atol=2e-2)
        if shared_trunk:
            h = hidden_bf16(pol.trunk, x)
            torch.testing.assert_close(values, pol.value_head(h.float()).squeeze(-1).detach(), rtol=2e-2, atol=2e-2)
        else:
            assert values is None
        with torch.no_grad():  # an update moves the weights: the next refresh must see them
            for p in pol.parameters():
                p.mul_(-1.5)


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_a_shared_trunk_values_in_the_rollout_and_updates_as_the_torch_path(monkeypatch, activation):
    """A shared trunk's drawn rollout stores the values its steps computed; its update is the torch path's."""
    monkeypatch.setattr(fused, "available", lambda device: True)
    first = Trainer(tiny("simple_tag_v3", ent_coef=0.05, shared_trunk=True, activation=activation))
    assert first.fused == () and first.drawn == first.valued_in_step == tuple(first.policies)
    second = Trainer(dataclasses.replace(first.args, fused=False))
    assert not second.recorded
    second.policies.load_state_dict(first.policies.state_dict())
    first.rollout()
    for g, b in first.buf.items():
        pol = first.policies[g]
        assert (b["next_obs"][:-1] != b["obs"][1:]).any(), "episodes ended inside the rollout"
        torch.testing.assert_close(b["value"], pol.value(b["obs"]).detach(), **TOL)
        torch.testing.assert_close(b["next_value"], pol.value(b["next_obs"]).detach(), **TOL)
        for k, v in b.items():
            second.buf[g][k].copy_(v)
    for trainer in (first, second):
        torch.manual_seed(5)
        trainer.update()
    for g in first.policies:
        for (name, a), b in zip(first.policies[g].named_parameters(), second.policies[g].parameters(), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=lambda m, name=f"{g}.{name}": f"{name}: {m}")
    torch.testing.assert_close(first.loss_acc, second.loss_acc, **TOL)


def test_bf16_layers_keep_the_networks_and_the_update(monkeypatch):
    """A wide network's bfloat16 hidden layers: outputs and gradients near float32's, the update's losses too."""
    net = policy(11, gymnasium.spaces.Discrete(5)).actor
    x = torch.randn(300, 11, generator=torch.Generator().manual_seed(2)).to(DEVICE)
    want, got = net(x), forward_bf16(net, x)
    assert got.dtype == torch.float32 and (got - want).norm() <= 1e-2 * want.norm()
    grads = []
    for y in (want, got):
        net.zero_grad()
        (y * torch.linspace(-1, 1, 5, device=DEVICE)).sum().backward()
        grads.append(torch.cat([p.grad.flatten() for p in net.parameters()]))
    assert all(p.grad.dtype == torch.float32 for p in net.parameters())
    assert (grads[1] - grads[0]).norm() <= 2e-2 * grads[0].norm()
    monkeypatch.setattr(fused, "available", lambda device: True)
    monkeypatch.setattr(fused, "supported", lambda *widths: False)
    half = Trainer(tiny("simple_tag_v3", bf16_layers=True))
    full = Trainer(dataclasses.replace(half.args, bf16_layers=False))
    assert half.half == half.drawn == tuple(half.policies) and full.half == ()
    full.policies.load_state_dict(half.policies.state_dict())
    half.rollout()
    for g, b in half.buf.items():
        for k, v in b.items():
            full.buf[g][k].copy_(v)
        torch.testing.assert_close(b["value"], full.policies[g].value(b["obs"]).detach(), rtol=2e-2, atol=2e-2)
        _, logp, _, _ = full.policies[g].act(b["obs"], b["act"].long())  # drawn from the rollout's bf16 copies
        torch.testing.assert_close(b["logp"], logp.detach(), rtol=2e-2, atol=2e-2)
    for trainer in (half, full):
        torch.manual_seed(5)
        trainer.update()
    torch.testing.assert_close(half.loss_acc, full.loss_acc, rtol=3e-2, atol=3e-3)


@pytest.mark.cuda
@pytest.mark.parametrize("kernels", [True, False])
def test_a_graphed_iteration_is_an_eager_one(kernels):
    """On a GPU a captured rollout and update, replayed, compute what the same calls compute eagerly."""
    graphed = Trainer(dataclasses.replace(tiny("simple_tag_v3"), cuda_graph=True, fused=kernels))
    eager = Trainer(dataclasses.replace(graphed.args, cuda_graph=False))
    assert bool(graphed.fused) == kernels
    for i in range(3):  # eager and captured, then replayed twice
        for trainer in (graphed, eager):
            torch.cuda.manual_seed(11 + i)
            trainer.rollout()
            trainer.update()
    assert set(graphed._graphs) == {"rollout", "update"}
    for g in graphed.policies:
        for name, b in graphed.buf[g].items():
            torch.testing.assert_close(b, eager.buf[g][name], msg=lambda m, name=f"{g} {name}": f"{name}: {m}")
        for a, b in zip(graphed.policies[g].parameters(), eager.policies[g].parameters(), strict=True):
            torch.testing.assert_close(a, b)
    torch.testing.assert_close(graphed.read_metrics(), eager.read_metrics())


def test_fp16_products_keep_the_gradient_and_saturate(monkeypatch):
    """Training's default products: the minibatch's gradient close to fp32's, and no inf from a huge input."""
    pol = policy(11, gymnasium.spaces.Discrete(5))
    batch = minibatch(pol, 200, masked=False)
    perm = torch.randperm(200, generator=torch.Generator().manual_seed(3)).to(DEVICE)
    sizes = [p.numel() for p in pol.parameters()]
    n_actor = sum(p.numel() for p in pol.actor.parameters())

    def gradient(precision):
        monkeypatch.setattr(fused, "PRECISION", precision)
        out = torch.zeros(fused.num_programs(DEVICE), sum(sizes) + len(LOSS_STATS) + 1, device=DEVICE)
        ent, heads = torch.tensor(0.01, device=DEVICE), fused.head_bounds(pol.splits, DEVICE)
        fused.ppo_grads(pol.actor, False, perm, 0, 200, batch, ent, heads, out, 0, sum(sizes), 0.2, 0.5, 0.2)
        fused.ppo_grads(pol.critic, True, perm, 0, 200, batch, ent, heads, out, n_actor, sum(sizes) + 1, 0.2, 0.5, 0.2)
        flat = torch.empty(out.shape[1], device=DEVICE)
        fused.mean_gradient(out, flat)
        return flat[:sum(sizes)]

    want, got = gradient("ieee"), gradient("fp16")
    # 10-bit mantissas, as TF32's: with this test's large weights the critic's values reach tens, and
    # its last layer's gradient (value minus return, about one) keeps two to three digits
    assert (got - want).norm() <= 5e-2 * want.norm()
    batch["obs"][7] = 1e6  # past fp16's range: saturated, as if it were at the range's end
    huge = gradient("fp16")
    batch["obs"][7] = fused.FP16_MAX
    assert torch.isfinite(huge).all() and torch.equal(huge, gradient("fp16"))
    with torch.no_grad():
        monkeypatch.setattr(fused, "PRECISION", "fp16")
        batch["obs"][7] = 1e6
        values = fused.forward(pol.critic, batch["obs"])
    assert torch.isfinite(values).all()
