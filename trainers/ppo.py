"""PPO on a gpu_zoo batched env, end to end on one device.

    gpu-zoo train tag_gridworld_v0                     # its preset: see trainers/config.py
    python -m trainers.ppo --env-id simple_tag_v3 --num-envs 16384 --device cuda
    gpu-zoo train --resume runs/tag_gridworld_v0/checkpoint.pt --total-env-steps 8000000

One policy per agent group (taggers, runners, ...), its parameters shared by the group's agents.
Rollout storage is preallocated on the device; nothing leaves it inside the rollout or the update.
Metrics accumulate on the device and are read every ``log_every`` iterations. Truncated episodes
bootstrap from the value of ``info["final_obs"]``; terminated ones from zero. Groups with action
masks sample under them, and the update recomputes log-probabilities under the same masks.

Data parallelism is one step away: a `Trainer` per rank with ``rank`` (it seeds the rank's envs
apart) and an all-reduce in `Trainer.sync_gradients`.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
from pathlib import Path

import torch
from torch import nn

import gpu_zoo
from gpu_zoo.core.launch import default_device
from trainers.config import Args
from trainers.policy import GroupPolicy

LOSS_STATS = ("pg", "vf", "entropy", "approx_kl", "clipfrac")
RESTART_SEED = 1_000_033  # per iteration: a resume without env state starts episodes unlike the run's first


# --------------------------------------------------------------------- pure parts
def compute_gae(rewards, values, next_values, terminated, ended, gamma: float, lam: float, choice=None):
    """Advantages and returns over a rollout; every tensor is (T, ...).

    ``next_values[t]`` is the value of the state after step t (of the final observation when the
    episode ended there). ``terminated[t]`` zeroes that bootstrap; ``ended[t]`` (terminated or
    truncated) cuts the advantage chain.

    ``choice[t]`` (bools, optional) says whether the agent had a choice at step t. A step without
    one is no decision: the chain runs through it with lambda 1, so an agent that acts once per
    period (the economy's planner) is credited with its whole period's rewards, bootstrapped from
    its value only at its next decision, as in a semi-Markov decision process. With every step a
    choice this is the usual GAE.
    """
    adv = torch.zeros_like(rewards)
    last = torch.zeros_like(rewards[0])
    lams = None if choice is None else torch.where(choice, lam, 1.0)
    for t in range(rewards.shape[0] - 1, -1, -1):
        delta = rewards[t] + gamma * next_values[t] * (1.0 - terminated[t]) - values[t]
        # ``last`` is step t+1's advantage (zero past the rollout): its lambda is that step's
        step_lam = lam if lams is None or t + 1 == rewards.shape[0] else lams[t + 1]
        last = delta + gamma * step_lam * (1.0 - ended[t]) * last
        adv[t] = last
    return adv, adv + values


def ppo_loss(new_logp, old_logp, adv, new_value, old_value, returns, entropy, mask, clip: float, vf_coef: float,
             ent_coef: float, vf_clip: float | None = None):
    """Clipped PPO loss averaged over ``mask`` (agents in the game); returns (loss, stats).

    ``vf_clip`` limits how far the value moves from ``old_value`` (None: ``clip``; 0: no limit).
    """
    n = mask.sum().clamp_min(1.0)
    log_ratio = new_logp - old_logp
    ratio = log_ratio.exp()
    pg = torch.max(-adv * ratio, -adv * ratio.clamp(1 - clip, 1 + clip))
    v_clip = clip if vf_clip is None else vf_clip
    vf = 0.5 * (new_value - returns) ** 2
    if v_clip > 0:
        v_clipped = old_value + (new_value - old_value).clamp(-v_clip, v_clip)
        vf = torch.max(vf, 0.5 * (v_clipped - returns) ** 2)
    pg_loss, v_loss, ent = (pg * mask).sum() / n, (vf * mask).sum() / n, (entropy * mask).sum() / n
    with torch.no_grad():
        approx_kl = (((ratio - 1) - log_ratio) * mask).sum() / n
        clipfrac = (((ratio - 1).abs() > clip).float() * mask).sum() / n
    stats = {"pg": pg_loss, "vf": v_loss, "entropy": ent, "approx_kl": approx_kl, "clipfrac": clipfrac}
    return pg_loss + vf_coef * v_loss - ent_coef * ent, stats


def put(storage: torch.Tensor, t: torch.Tensor, value: torch.Tensor):
    """``storage[t] = value`` for a one-element index tensor ``t``: the same kernels whatever step t holds."""
    storage.index_copy_(0, t, value.unsqueeze(0).to(storage.dtype))


# --------------------------------------------------------------------- building
def make_env(args: Args, num_envs: int | None = None, device=None):
    device = torch.device(device or args.device) if (device or args.device) else default_device()
    return gpu_zoo.make(args.env_id, num_envs=num_envs or args.num_envs, device=device, validate=False,
                        **args.env_kwargs)


def make_policies(env, groups, args: Args) -> nn.ModuleDict:
    """One `GroupPolicy` per group in ``groups``, each as wide as its settings say, on the env's device."""
    return nn.ModuleDict({g: GroupPolicy(env.single_observation_space(g).shape[0], env.single_action_space(g),
                                         args.for_group(g).hidden) for g in groups}).to(env.device)


def action_masks(env) -> dict[str, torch.Tensor]:
    """The env's current action masks per masked group (none for envs without masks)."""
    return getattr(env, "action_masks", None) or {}


def policy_actions(env, policies, generator: torch.Generator | None = None, greedy: bool = False) -> dict:
    """Actions of every group for the env's current observations: the policies', random for the others."""
    others = [g for g in env.groups if g not in policies]
    actions = env.sample_actions(generator, groups=others) if others else {}
    masks = action_masks(env)
    for g, pol in policies.items():
        actions[g] = pol.to_env(pol.act(env.obs[g], mask=masks.get(g), greedy=greedy)[0])
    return actions


# --------------------------------------------------------------------- training
class Trainer:
    """The env, one policy per trained group, one optimiser and the rollout storage, on one device.

    Args:
        args: the settings.
        env: a batched env to train on (default: ``make_env(args)``); a data-parallel run gives
            each rank its own shard.
        rank: this process's rank in a data-parallel run; seeds the rank's envs and sampling apart.
    """

    def __init__(self, args: Args, env=None, rank: int = 0):
        self.args = args
        self.rank = rank
        torch.manual_seed(args.seed + rank)
        self.env = env if env is not None else make_env(args)
        if self.env.num_envs != args.num_envs:
            raise ValueError(f"the env has {self.env.num_envs} environments but args.num_envs is {args.num_envs}; "
                             "a rank's shard is described by its own Args")
        self.device = self.env.device
        trained = args.trained_groups or self.env.groups
        unknown = set(trained) - set(self.env.groups)
        if unknown:
            raise ValueError(f"train_groups {sorted(unknown)} are not groups of {args.env_id}: {self.env.groups}")
        self.random_groups = tuple(g for g in self.env.groups if g not in trained)
        self.policies = make_policies(self.env, [g for g in self.env.groups if g in trained], args)
        unknown = set(args.group_settings) - set(self.policies)
        if unknown:
            raise ValueError(f"group_settings names {sorted(unknown)}, which this run does not train "
                             f"({list(self.policies)})")
        if args.init_from:
            self._warm_start(args.init_from)
        # One parameter group per policy when their learning rates may differ (a single one
        # otherwise, which keeps the optimiser state of earlier checkpoints loadable).
        params = ([{"params": pol.parameters(), "lr": args.for_group(g).learning_rate}
                   for g, pol in self.policies.items()] if args.group_settings else self.policies.parameters())
        self.opt = torch.optim.Adam(params, lr=args.learning_rate, eps=1e-5)
        self.base_lrs = [pg["lr"] for pg in self.opt.param_groups]
        self.iteration = 0
        self.seconds = 0.0  # training wall time, carried over by resumes
        self._reset_env(args.seed + rank)
        self.masked = tuple(g for g in self.policies if g in action_masks(self.env))
        self.buf = {g: self._storage(g) for g in self.policies}
        self._t = torch.zeros(1, dtype=torch.long, device=self.device)  # the rollout step being written
        self._graph: torch.cuda.CUDAGraph | None = None
        # On-device metric accumulators: [episodes, sum of lengths, sum of return per group...]
        # and the loss statistics per trained group, summed over minibatches.
        self.episode_acc = torch.zeros(2 + len(self.env.groups), device=self.device, dtype=torch.float64)
        self.loss_acc = torch.zeros(len(self.policies), len(LOSS_STATS), device=self.device)
        self.updates_since_log = [0] * len(self.policies)  # minibatches per group, counted on the host

    def _reset_env(self, seed: int, episode_counts: torch.Tensor | None = None):
        """Fresh episodes from ``seed``; with ``stagger_starts`` each env's first starts at a step drawn from it."""
        starts = None
        if self.args.stagger_starts:
            gen = torch.Generator().manual_seed(seed)
            starts = torch.randint(0, self.env.params.max_cycles, (self.env.num_envs,), generator=gen)
        self.env.reset(seed=seed, episode_counts=episode_counts, start_steps=starts)

    def _storage(self, g: str) -> dict[str, torch.Tensor]:
        T, E, n = self.args.num_steps, self.args.num_envs, self.env.group_size(g)
        D = self.env.single_observation_space(g).shape[0]
        act = self.env.actions[g]
        act_dtype = act.dtype if self.policies[g].splits is not None else torch.float32
        z = lambda *shape, dtype=torch.float32: torch.zeros(*shape, dtype=dtype, device=self.device)  # noqa: E731
        buf = {"obs": z(T, E, n, D), "act": z(T, E, n, *act.shape[2:], dtype=act_dtype)}
        for k in ("logp", "value", "next_value", "rew", "term", "ended", "mask"):
            buf[k] = z(T, E, n)
        if g in action_masks(self.env):
            buf["action_mask"] = z(T, E, *action_masks(self.env)[g].shape[1:], dtype=torch.bool)
        return buf

    @torch.no_grad()
    def rollout(self):
        """Steps every env ``num_steps`` times with the current policies, filling the storage.

        With ``cuda_graph`` on a GPU the first step runs eagerly, which also warms the kernels,
        and is then captured once as a CUDA graph; every later step replays it. A step is some
        hundred small kernels, so when the envs are few their Python launch cost, not the GPU,
        sets the rollout's speed, and a replay launches them all at once.
        """
        self._t.zero_()
        for _ in range(self.args.num_steps):
            if self._graph is not None:
                self._graph.replay()
                continue
            self._rollout_step()
            if self.args.cuda_graph and self.device.type == "cuda":
                self._graph = self._capture(self._rollout_step)

    def _capture(self, fn) -> torch.cuda.CUDAGraph:
        """``fn`` captured as a CUDA graph; capturing runs nothing. Its tensors keep their addresses.

        Captured with the trainer's GPU current, on a stream of that GPU: torch's default capture
        stream is made once, on whichever GPU captured first, and work for another GPU bypasses it.
        """
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.device(self.device), torch.cuda.graph(graph, stream=torch.cuda.Stream(self.device)):
            fn()
        return graph

    def _rollout_step(self):
        """One step of every env, written to the storage at the step index ``self._t`` (a device tensor).

        No host value and no Python branch on device data, so one capture serves every step.
        """
        env, acc, t = self.env, self.episode_acc, self._t
        masks = action_masks(env)
        actions = env.sample_actions(groups=self.random_groups) if self.random_groups else {}
        for g, pol in self.policies.items():
            b = self.buf[g]
            put(b["obs"], t, env.obs[g])
            mask = None
            if g in self.masked:
                put(b["action_mask"], t, masks[g])
                mask = masks[g]
            act, logp, _, value = pol.act(env.obs[g], mask=mask)
            put(b["act"], t, act)
            put(b["logp"], t, logp)
            put(b["value"], t, value)
            actions[g] = pol.to_env(act)
        obs, rew, term, trunc, info = env.step(actions)
        done = info["done"]
        for g, pol in self.policies.items():
            b = self.buf[g]
            put(b["rew"], t, rew[g])
            put(b["term"], t, term[g])
            put(b["ended"], t, term[g] | trunc[g])
            put(b["mask"], t, info["active"][g])
            # One critic pass: the final observation where the episode ended, the next one elsewhere.
            after = torch.where(done.view(-1, 1, 1), info["final_obs"][g], obs[g])
            put(b["next_value"], t, pol.value(after))
        stats, d = env.episode_stats(), done.double()
        acc += torch.stack([d.sum(), (stats["length"] * d).sum(),
                            *((stats[f"return_{g}"].mean(-1) * d).sum() for g in env.groups)])
        t += 1

    def update(self):
        """PPO epochs over the rollout in storage."""
        if self.args.anneal_lr:
            for pg, lr in zip(self.opt.param_groups, self.base_lrs, strict=True):
                pg["lr"] = lr * (1.0 - self.iteration / self.args.iterations)
        for gi, (g, pol) in enumerate(self.policies.items()):
            a = self.args.for_group(g)
            b = self.buf[g]
            # A step whose mask left one action per head was no decision (`compute_gae`)
            choice = b["action_mask"].sum(-1) > len(pol.splits) if a.gae_skip_forced and "action_mask" in b else None
            adv, ret = compute_gae(b["rew"], b["value"], b["next_value"], b["term"], b["ended"], a.gamma, a.gae_lambda,
                                   choice=choice)
            flat = {k: v.reshape(-1, *v.shape[3:]) for k, v in b.items()}
            adv, ret, m = adv.reshape(-1), ret.reshape(-1), flat["mask"]
            if a.norm_adv:
                mean = (adv * m).sum() / m.sum().clamp_min(1)
                std = (((adv - mean) ** 2 * m).sum() / m.sum().clamp_min(1)).sqrt()
                adv = (adv - mean) / (std + 1e-8)
            ent_coef = a.ent_coef_at(self.iteration * a.env_steps_per_iteration)
            size = adv.shape[0]
            mb = max(1, size // a.num_minibatches)
            for _ in range(a.update_epochs):
                perm = torch.randperm(size, device=self.device)
                for start in range(0, size, mb):
                    idx = perm[start:start + mb]
                    mask = flat["action_mask"][idx] if "action_mask" in flat else None
                    _, logp, ent, value = pol.act(flat["obs"][idx], flat["act"][idx], mask=mask)
                    loss, st = ppo_loss(logp, flat["logp"][idx], adv[idx], value, flat["value"][idx], ret[idx], ent,
                                        m[idx], a.clip_coef, a.vf_coef, ent_coef, a.vf_clip)
                    self.opt.zero_grad()
                    loss.backward()
                    self.sync_gradients()
                    nn.utils.clip_grad_norm_(pol.parameters(), a.max_grad_norm)
                    self.opt.step()
                    self.loss_acc[gi] += torch.stack([st[k].detach() for k in LOSS_STATS])
                    self.updates_since_log[gi] += 1

    def sync_gradients(self):
        """Hook between backward and the optimiser step: a data-parallel run all-reduces gradients here."""

    def read_metrics(self) -> dict[str, float]:
        """Metrics since the last read (one host sync); the accumulators restart from zero."""
        values = torch.cat([self.episode_acc.float(), self.loss_acc.flatten()]).tolist()
        self.episode_acc.zero_()
        self.loss_acc.zero_()
        groups = self.env.groups
        episodes, lengths, returns = values[0], values[1], values[2:2 + len(groups)]
        nan = float("nan")
        out = {"episodes": episodes, "episode_length": lengths / episodes if episodes else nan}
        out.update({f"return/{g}": r / episodes if episodes else nan for g, r in zip(groups, returns, strict=True)})
        losses = values[2 + len(groups):]
        for gi, g in enumerate(self.policies):
            updates = self.updates_since_log[gi]
            for si, k in enumerate(LOSS_STATS):
                out[f"loss/{g}/{k}"] = losses[gi * len(LOSS_STATS) + si] / updates if updates else nan
        self.updates_since_log = [0] * len(self.policies)
        return out

    def metric_names(self) -> list[str]:
        return (["episodes", "episode_length", *(f"return/{g}" for g in self.env.groups)]
                + [f"loss/{g}/{k}" for g in self.policies for k in LOSS_STATS])

    # ----------------------------------------------------------------- persistence
    def save(self, path: Path, env_state: bool = True):
        """Everything a resumed run needs to continue exactly, written atomically.

        With ``env_state=False`` the env's buffers stay out (tens of MB for a large batch of a big
        env) and each env's finished-episode count goes in: a run resumed from it starts fresh
        episodes, seeded apart from the ones it began with, and whatever counts episodes (the
        economy's tax annealing) goes on from the counts.
        """
        state = {"args": dataclasses.asdict(self.args), "iteration": self.iteration, "seconds": self.seconds,
                 "policies": self.policies.state_dict(), "opt": self.opt.state_dict(),
                 "torch_rng": torch.get_rng_state(),
                 "cuda_rng": torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None,
                 "episode_acc": self.episode_acc, "loss_acc": self.loss_acc,
                 "updates_since_log": self.updates_since_log}
        if env_state:
            state["env_state"] = self.env.buffers.storage
            state["env_layout"] = self.env.buffers.layout_record()
        else:
            state["episode_counts"] = self.env.state.ep_count.clone()
        tmp = path.with_suffix(".tmp")
        torch.save(state, tmp)
        os.replace(tmp, path)  # atomic: a crash mid-write never leaves a broken checkpoint

    def _warm_start(self, path: str):
        """Copies the policies of ``path``'s checkpoint into the groups of this run that it has."""
        saved = torch.load(path, map_location=self.device, weights_only=False)["policies"]
        by_group: dict[str, dict] = {}
        for key, value in saved.items():
            group, _, name = key.partition(".")
            by_group.setdefault(group, {})[name] = value
        shared = [g for g in self.policies if g in by_group]
        if not shared:
            raise ValueError(f"init_from {path} holds policies for {sorted(by_group)}, none of the groups "
                             f"this run trains ({list(self.policies)})")
        for g in shared:
            try:
                self.policies[g].load_state_dict(by_group[g])
            except RuntimeError as err:
                raise ValueError(f"init_from {path}: the {g!r} policy there does not fit this run's "
                                 f"(observation or action spaces, or hidden width, differ): {err}") from None

    def load(self, path: Path):
        state = torch.load(path, map_location=self.device, weights_only=False)
        if "env_state" in state:  # checked before anything changes: a refused checkpoint leaves the run as it was
            self.env.buffers.check_layout_record(state.get("env_layout"), str(path))
        self.policies.load_state_dict(state["policies"])
        self.opt.load_state_dict(state["opt"])
        self.iteration, self.seconds = state["iteration"], state["seconds"]
        torch.set_rng_state(state["torch_rng"].cpu())
        if state["cuda_rng"] is not None and self.device.type == "cuda":
            torch.cuda.set_rng_state(state["cuda_rng"].cpu(), self.device)
        if "env_state" in state:
            # The env's observations live in its state buffer, so this restores them too.
            self.env.buffers.storage.copy_(state["env_state"])
        else:  # fresh episodes, seeded apart from every earlier start of this run
            self._reset_env(self.args.seed + self.rank + RESTART_SEED * self.iteration, state["episode_counts"])
        self.episode_acc.copy_(state["episode_acc"])
        self.loss_acc.copy_(state["loss_acc"])
        self.updates_since_log = list(state["updates_since_log"])


class StopRequest:
    """While active, a first Ctrl-C asks the loop to stop after the current iteration; a second one stops at once."""

    def __init__(self):
        self.requested = False
        self._previous = None

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print("\nCtrl-C: stopping after this iteration and writing a checkpoint (Ctrl-C again to stop now)",
              flush=True)

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


def main(argv=None):
    """``python -m trainers.ppo [ENV_ID] [flags]``: the same as ``gpu-zoo train``."""
    import sys

    from trainers.cli import main as cli_main

    code = cli_main(["train", *(sys.argv[1:] if argv is None else argv)])
    if argv is None:
        sys.exit(code)
    return code


if __name__ == "__main__":
    main()
