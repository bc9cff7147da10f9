"""PPO on a gpu_zoo batched env, end to end on one device.

    python -m trainers.ppo --env-id tag_gridworld_v0 --total-env-steps 2000000
    python -m trainers.ppo --env-id simple_tag_v3 --num-envs 16384 --device cuda
    python -m trainers.ppo --resume runs/ppo/checkpoint.pt

One policy per agent group (taggers, runners, ...), its parameters shared by the group's agents.
Rollout storage is preallocated on the device; nothing leaves it inside the rollout or the update
except one read of the episode statistics per iteration for the progress bar and the CSV.
Truncated episodes bootstrap from the value of ``info["final_obs"]``; terminated ones from zero.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import gymnasium
import torch
from torch import nn
from torch.distributions import Categorical, Normal
from tqdm import tqdm

import gpu_zoo
from gpu_zoo.core.launch import default_device


@dataclass
class Args:
    """PPO settings. Derived sizes (batch, iterations) are computed by `derived`, not stored."""

    env_id: str = "tag_gridworld_v0"
    """registered env id"""
    env_kwargs: dict = field(default_factory=dict)
    """constructor arguments of the env (JSON on the command line)"""
    num_envs: int = 256
    """environments stepped together"""
    num_steps: int = 32
    """steps per rollout and environment"""
    total_env_steps: int = 500_000
    """training budget in env-steps (num_envs per step)"""
    learning_rate: float = 3e-4
    """Adam step size"""
    gamma: float = 0.99
    """discount"""
    gae_lambda: float = 0.95
    """GAE lambda"""
    num_minibatches: int = 4
    """minibatches per epoch"""
    update_epochs: int = 4
    """epochs over each rollout"""
    clip_coef: float = 0.2
    """policy and value clipping range"""
    vf_coef: float = 0.5
    """value loss weight"""
    ent_coef: float = 0.01
    """entropy bonus weight"""
    max_grad_norm: float = 0.5
    """gradient clipping"""
    hidden: int = 64
    """width of the two hidden layers"""
    seed: int = 0
    """seed of the env, the networks and the sampling"""
    train_groups: str = ""
    """comma-separated groups to train (default: all); the others act uniformly at random"""
    device: str | None = None
    """cuda or cpu (default: cuda if usable)"""
    out: str = "runs/ppo"
    """folder for checkpoint.pt and progress.csv"""
    checkpoint_every: int = 50
    """iterations between checkpoints (one is always written at the end)"""


def derived(args: Args) -> dict:
    iterations = max(1, args.total_env_steps // (args.num_envs * args.num_steps))
    return {"iterations": iterations, "env_steps_per_iteration": args.num_envs * args.num_steps}


# --------------------------------------------------------------------- pure parts
def compute_gae(rewards, values, next_values, terminated, ended, gamma: float, lam: float):
    """Advantages and returns over a rollout; every tensor is (T, ...).

    ``next_values[t]`` is the value of the state after step t (of the final observation when the
    episode ended there). ``terminated[t]`` zeroes that bootstrap; ``ended[t]`` (terminated or
    truncated) cuts the advantage chain.
    """
    adv = torch.zeros_like(rewards)
    last = torch.zeros_like(rewards[0])
    for t in range(rewards.shape[0] - 1, -1, -1):
        delta = rewards[t] + gamma * next_values[t] * (1.0 - terminated[t]) - values[t]
        last = delta + gamma * lam * (1.0 - ended[t]) * last
        adv[t] = last
    return adv, adv + values


def ppo_loss(new_logp, old_logp, adv, new_value, old_value, returns, entropy, mask, clip: float, vf_coef: float,
             ent_coef: float):
    """Clipped PPO loss averaged over ``mask`` (agents in the game); returns (loss, stats)."""
    n = mask.sum().clamp_min(1.0)
    ratio = (new_logp - old_logp).exp()
    pg = torch.max(-adv * ratio, -adv * ratio.clamp(1 - clip, 1 + clip))
    v_clipped = old_value + (new_value - old_value).clamp(-clip, clip)
    vf = 0.5 * torch.max((new_value - returns) ** 2, (v_clipped - returns) ** 2)
    pg_loss, v_loss, ent = (pg * mask).sum() / n, (vf * mask).sum() / n, (entropy * mask).sum() / n
    return pg_loss + vf_coef * v_loss - ent_coef * ent, {"pg": pg_loss, "vf": v_loss, "entropy": ent}


# --------------------------------------------------------------------- the model
class GroupPolicy(nn.Module):
    """Actor-critic for one group: Discrete, MultiDiscrete or Box actions."""

    def __init__(self, obs_size: int, space: gymnasium.spaces.Space, hidden: int):
        super().__init__()
        if isinstance(space, gymnasium.spaces.Discrete):
            self.splits, out = [int(space.n)], int(space.n)
        elif isinstance(space, gymnasium.spaces.MultiDiscrete):
            self.splits = [int(n) for n in space.nvec]
            out = sum(self.splits)
        else:
            self.splits, out = None, int(space.shape[0])
            self.log_std = nn.Parameter(torch.zeros(out))
            self.register_buffer("low", torch.as_tensor(space.low))
            self.register_buffer("high", torch.as_tensor(space.high))
        self.actor = nn.Sequential(nn.Linear(obs_size, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                   nn.Linear(hidden, out))
        self.critic = nn.Sequential(nn.Linear(obs_size, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                    nn.Linear(hidden, 1))

    def value(self, obs):
        return self.critic(obs).squeeze(-1)

    def act(self, obs, action=None):
        """(action, log-prob, entropy, value); samples an action when none is given."""
        out = self.actor(obs)
        if self.splits is None:
            dist = Normal(out, self.log_std.exp().expand_as(out))
            if action is None:
                action = dist.sample()
            return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.value(obs)
        dists = [Categorical(logits=x) for x in out.split(self.splits, dim=-1)]
        if action is None:
            action = torch.stack([d.sample() for d in dists], -1)
        parts = action.unsqueeze(-1) if action.dim() == out.dim() - 1 else action
        logp = sum(d.log_prob(parts[..., i]) for i, d in enumerate(dists))
        ent = sum(d.entropy() for d in dists)
        if len(self.splits) == 1 and action.dim() == out.dim():
            action = action[..., 0]
        return action, logp, ent, self.value(obs)

    def to_env(self, action):
        """The action as the env takes it (Box actions clipped to their bounds)."""
        return action.clamp(self.low, self.high) if self.splits is None else action


# --------------------------------------------------------------------- training
class Trainer:
    """The env, one policy per group, one optimiser and the rollout storage, all on one device."""

    def __init__(self, args: Args):
        self.args = args
        self.device = torch.device(args.device) if args.device else default_device()
        torch.manual_seed(args.seed)
        self.env = gpu_zoo.make(args.env_id, num_envs=args.num_envs, device=self.device, validate=False,
                                **args.env_kwargs)
        trained = tuple(g for g in args.train_groups.split(",") if g) or self.env.groups
        unknown = set(trained) - set(self.env.groups)
        if unknown:
            raise ValueError(f"train_groups {sorted(unknown)} are not groups of {args.env_id}: {self.env.groups}")
        self.random_groups = tuple(g for g in self.env.groups if g not in trained)
        self.policies = nn.ModuleDict({g: GroupPolicy(self.env.single_observation_space(g).shape[0],
                                                      self.env.single_action_space(g), args.hidden)
                                       for g in trained}).to(self.device)
        self.opt = torch.optim.Adam(self.policies.parameters(), lr=args.learning_rate, eps=1e-5)
        self.iteration = 0
        self.obs = {g: o.clone() for g, o in self.env.reset(seed=args.seed).items() if g in self.policies}
        T, E = args.num_steps, args.num_envs
        self.buf = {}
        for g in self.policies:
            n, D = self.env.group_size(g), self.env.single_observation_space(g).shape[0]
            act_shape = self.env.actions[g].shape[2:]
            z = lambda *s, dtype=torch.float32: torch.zeros(*s, dtype=dtype, device=self.device)  # noqa: E731
            self.buf[g] = {"obs": z(T, E, n, D), "act": z(T, E, n, *act_shape, dtype=self.env.actions[g].dtype
                                                          if self.policies[g].splits is not None else torch.float32),
                           "logp": z(T, E, n), "value": z(T, E, n), "next_value": z(T, E, n), "rew": z(T, E, n),
                           "term": z(T, E, n), "ended": z(T, E, n), "mask": z(T, E, n)}

    @torch.no_grad()
    def rollout(self):
        env = self.env
        for t in range(self.args.num_steps):
            actions = env.sample_actions(groups=self.random_groups) if self.random_groups else {}
            for g, pol in self.policies.items():
                b = self.buf[g]
                b["obs"][t] = self.obs[g]
                act, logp, _, value = pol.act(self.obs[g])
                b["act"][t], b["logp"][t], b["value"][t] = act, logp, value
                actions[g] = pol.to_env(act)
            obs, rew, term, trunc, info = env.step(actions)
            done = info["done"].unsqueeze(-1)
            for g, pol in self.policies.items():
                b = self.buf[g]
                b["rew"][t], b["term"][t] = rew[g], term[g].float()
                b["ended"][t] = (term[g] | trunc[g]).float()
                b["mask"][t] = info["active"][g].float()
                b["next_value"][t] = torch.where(done, pol.value(info["final_obs"][g]), pol.value(obs[g]))
                self.obs[g].copy_(obs[g])

    def update(self) -> dict:
        a = self.args
        stats = {}
        for g, pol in self.policies.items():
            b = self.buf[g]
            adv, ret = compute_gae(b["rew"], b["value"], b["next_value"], b["term"], b["ended"], a.gamma, a.gae_lambda)
            flat = {k: v.reshape(-1, *v.shape[3:]) for k, v in b.items()}
            adv, ret = adv.reshape(-1), ret.reshape(-1)
            m = flat["mask"]
            mean = (adv * m).sum() / m.sum().clamp_min(1)
            std = (((adv - mean) ** 2 * m).sum() / m.sum().clamp_min(1)).sqrt()
            adv = (adv - mean) / (std + 1e-8)
            size = adv.shape[0]
            mb = max(1, size // a.num_minibatches)
            for _ in range(a.update_epochs):
                perm = torch.randperm(size, device=self.device)
                for start in range(0, size, mb):
                    idx = perm[start:start + mb]
                    _, logp, ent, value = pol.act(flat["obs"][idx], flat["act"][idx])
                    loss, st = ppo_loss(logp, flat["logp"][idx], adv[idx], value, flat["value"][idx], ret[idx], ent,
                                        m[idx], a.clip_coef, a.vf_coef, a.ent_coef)
                    self.opt.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(pol.parameters(), a.max_grad_norm)
                    self.opt.step()
            stats.update({f"{g}/{k}": v for k, v in st.items()})
        return stats

    def episode_returns(self) -> dict[str, float]:
        """Mean return per agent of each group over each env's latest finished episode."""
        s = self.env.episode_stats()
        finished = s["episodes"] > 0
        n = finished.sum().clamp_min(1)
        return {g: float((s[f"return_{g}"].mean(-1) * finished).sum() / n) for g in self.env.groups}

    # ----------------------------------------------------------------- persistence
    def save(self, path: Path):
        state = {"args": dataclasses.asdict(self.args), "iteration": self.iteration,
                 "policies": self.policies.state_dict(), "opt": self.opt.state_dict(),
                 "torch_rng": torch.get_rng_state(),
                 "cuda_rng": torch.cuda.get_rng_state_all() if self.device.type == "cuda" else None,
                 "obs": self.obs, "env_state": self.env.buffers.storage}
        tmp = path.with_suffix(".tmp")
        torch.save(state, tmp)
        os.replace(tmp, path)  # atomic: a crash mid-write never leaves a broken checkpoint

    def load(self, path: Path):
        state = torch.load(path, map_location=self.device, weights_only=False)
        self.policies.load_state_dict(state["policies"])
        self.opt.load_state_dict(state["opt"])
        self.iteration = state["iteration"]
        torch.set_rng_state(state["torch_rng"])
        if state["cuda_rng"] is not None:
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        self.env.buffers.storage.copy_(state["env_state"])
        for g in self.obs:
            self.obs[g].copy_(state["obs"][g])


def train(args: Args, resume: str | None = None) -> Trainer:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    trainer = Trainer(args)
    if resume:
        trainer.load(Path(resume))
    iterations = derived(args)["iterations"]
    csv_path = out / "progress.csv"
    new_csv = not csv_path.exists() or not resume
    with open(csv_path, "w" if new_csv else "a", newline="") as fh, \
            tqdm(total=iterations, initial=trainer.iteration, unit="it", dynamic_ncols=True) as bar:
        writer = csv.writer(fh)
        if new_csv:
            writer.writerow(["iteration", "env_steps", "seconds", "env_steps_per_s",
                             *(f"return_{g}" for g in trainer.env.groups)])
        start = time.perf_counter()
        steps_per_it = derived(args)["env_steps_per_iteration"]
        try:
            while trainer.iteration < iterations:
                trainer.rollout()
                trainer.update()
                trainer.iteration += 1
                returns = trainer.episode_returns()
                elapsed = time.perf_counter() - start
                rate = (trainer.iteration - bar.initial) * steps_per_it / elapsed
                writer.writerow([trainer.iteration, trainer.iteration * steps_per_it, f"{elapsed:.2f}", f"{rate:.1f}",
                                 *(f"{returns[g]:.4f}" for g in trainer.env.groups)])
                bar.set_postfix({"env-steps/s": f"{rate:.3g}", **{f"ret_{g}": f"{v:.2f}" for g, v in returns.items()}})
                bar.update(1)
                if trainer.iteration % args.checkpoint_every == 0:
                    trainer.save(out / "checkpoint.pt")
        except KeyboardInterrupt:
            print("interrupted: writing a checkpoint")
        finally:
            trainer.save(out / "checkpoint.pt")
    return trainer


def parse_args(argv=None) -> tuple[Args, str | None]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for f in dataclasses.fields(Args):
        flag = "--" + f.name.replace("_", "-")
        if f.name == "env_kwargs":
            ap.add_argument(flag, type=json.loads, default={}, help="constructor arguments as JSON")
        elif f.type in (bool, "bool"):
            ap.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default)
        else:
            kind = {"int": int, "float": float}.get(str(f.type), str)
            ap.add_argument(flag, type=kind, default=f.default)
    ap.add_argument("--resume", default=None, help="continue from this checkpoint (its settings win)")
    ns = vars(ap.parse_args(argv))
    resume = ns.pop("resume")
    if resume:
        saved = torch.load(resume, map_location="cpu", weights_only=False)["args"]
        ns = {**saved, "total_env_steps": ns["total_env_steps"], "out": ns["out"]}
    return Args(**ns), resume


def main(argv=None):
    args, resume = parse_args(argv)
    train(args, resume)


if __name__ == "__main__":
    main()
