"""Evaluation: trained policies against random ones on the same episodes, and a GIF of one episode."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from gpu_zoo.core.api.render import write_gif
from trainers.config import Args
from trainers.ppo import make_env, make_policies, policy_actions

MAX_EPISODE_STEPS = 1_000_000  # a guard against an env whose episodes never end


@dataclass
class Episodes:
    """Per-episode results of one policy set: ``returns[group]`` is the mean return per agent."""

    returns: dict[str, np.ndarray]
    lengths: np.ndarray
    frames: list[np.ndarray]


@torch.no_grad()
def play(env, policies, seed: int, greedy: bool = False, record: bool = False) -> Episodes:
    """One episode in each of the env's ``num_envs`` environments, from ``env.reset(seed)``.

    Groups in ``policies`` act by their policy, the others uniformly at random (under their
    masks). With ``record``, the frames of environment 0's episode are kept.
    """
    with torch.random.fork_rng(devices=[env.device] if env.device.type == "cuda" else []):
        torch.manual_seed(seed)
        generator = torch.Generator(device=env.device).manual_seed(seed)
        env.reset(seed=seed)
        finished = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)
        returns = {g: torch.zeros(env.num_envs, device=env.device) for g in env.groups}
        lengths = torch.zeros(env.num_envs, dtype=torch.int64, device=env.device)
        frames, recording = [], record
        for step in range(1, MAX_EPISODE_STEPS + 1):
            if recording:
                frames.append(env.render(0))
            *_, info = env.step(policy_actions(env, policies, generator, greedy))
            first = info["done"] & ~finished
            stats = env.episode_stats()
            for g in env.groups:
                returns[g] = torch.where(first, stats[f"return_{g}"].mean(-1), returns[g])
            lengths = torch.where(first, stats["length"].long(), lengths)
            finished |= first
            if recording and bool(finished[0]):
                recording = False
            # One host read every few steps: episodes end together within a few steps of max_cycles.
            if step % 8 == 0 and bool(finished.all()):
                break
        else:
            raise RuntimeError(f"{env.spec.id}: some episodes did not end within {MAX_EPISODE_STEPS} steps")
    return Episodes({g: r.cpu().numpy() for g, r in returns.items()}, lengths.cpu().numpy(), frames)


@dataclass
class Comparison:
    """Trained and random policies on the same episodes (same env, same seeds)."""

    env_id: str
    trained_groups: tuple[str, ...]
    trained: Episodes
    random: Episodes
    seed: int

    def table(self) -> str:
        """Per-group returns (mean +- std over episodes, per agent) of both policy sets."""
        n = len(self.trained.lengths)
        lines = [f"{self.env_id}: {n} episodes per policy set, seed {self.seed} (the same starts for both); "
                 f"return per agent, mean ± std (episodes)",
                 f"{'group':<12}{'trained':>24}{'random':>24}"]
        for g in self.trained.returns:
            tag = "" if g in self.trained_groups else " (random in both)"
            lines.append(f"{g:<12}{_spread(self.trained.returns[g]):>24}{_spread(self.random.returns[g]):>24}{tag}")
        lines.append(f"{'length':<12}{_spread(self.trained.lengths):>24}{_spread(self.random.lengths):>24}")
        return "\n".join(lines)

    def summary(self) -> str:
        """One line: each trained group's return, trained against random."""
        n = len(self.trained.lengths)
        parts = [f"{_plural(g)} trained {_spread(self.trained.returns[g], False)} vs random "
                 f"{_spread(self.random.returns[g], False)}" for g in self.trained_groups]
        return "; ".join(parts) + f" (return per agent per episode, {n} episodes each, same seeds)"


def _plural(group: str) -> str:
    """A group's name for its agents: taggers, adversaries."""
    if group.endswith("y") and group[-2:-1] not in ("a", "e", "i", "o", "u"):
        return group[:-1] + "ies"
    return group + "s"


def _spread(x: np.ndarray, count: bool = True) -> str:
    return f"{np.mean(x):.3g} ± {np.std(x):.2g}" + (f" ({len(x)})" if count else "")


def compare(args: Args, policies, episodes: int, seed: int, gif: str | Path | None = None, device=None,
            greedy: bool = False) -> Comparison:
    """Plays ``episodes`` episodes with ``policies`` and again with random actions, on one env and seed."""
    env = make_env(args, num_envs=episodes, device=device)
    trained = play(env, policies, seed, greedy=greedy, record=gif is not None)
    random = play(env, {}, seed)
    if gif is not None:
        write_gif(trained.frames, gif)
    return Comparison(args.env_id, tuple(policies), trained, random, seed)


def load_checkpoint(checkpoint: str | Path, device=None) -> tuple[Args, torch.nn.ModuleDict]:
    """The settings and the trained policies of a checkpoint (on ``device``, default CUDA if usable)."""
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    args = dataclasses.replace(Args(**state["args"]), device=device)  # where it runs now, not where it trained
    probe = make_env(args, num_envs=1, device=device)
    groups = [g for g in probe.groups if any(k.startswith(f"{g}.") for k in state["policies"])]
    policies = make_policies(probe, groups, args)
    policies.load_state_dict(state["policies"])
    return args, policies.eval()
