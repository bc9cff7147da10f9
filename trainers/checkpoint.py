"""A `trainers.ppo.Trainer`'s checkpoints: save, resume exactly, and warm-start from another run's policies."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import torch

from trainers import distributed

RESTART_SEED = 1_000_033  # per iteration: a resume without env state starts episodes unlike the run's first


def save(trainer, path: Path, env_state: bool = True):
    """Everything a resumed run needs to continue exactly, written atomically.

    With ``env_state=False`` the env's buffers stay out (tens of MB for a large batch of a big
    env) and each env's finished-episode count goes in: a run resumed from it starts fresh
    episodes, seeded apart from the ones it began with, and whatever counts episodes (the
    economy's tax annealing) goes on from the counts.

    In a data-parallel run every rank calls this; rank 0 writes one file with the policies and
    optimisers (equal on every rank) and each rank's own part: env, random streams, accumulators.
    """
    own = _rank_state(trainer, env_state)
    parts = [own]
    if trainer.world.distributed:  # the other ranks' parts travel pickled, through the CPU
        parts = distributed.gather({k: v.cpu() if torch.is_tensor(v) else v for k, v in own.items()}, trainer.world)
    if not trainer.world.main:
        return
    state = {"args": dataclasses.asdict(trainer.args), "iteration": trainer.iteration, "seconds": trainer.seconds,
             "policies": trainer.policies.state_dict(), "opt": {g: o.state_dict() for g, o in trainer.opts.items()},
             "world_size": trainer.world.size, **own, "ranks": parts[1:]}
    if env_state:
        state["env_layout"] = trainer.env.buffers.layout_record()
    path = Path(path)
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)  # atomic: a crash mid-write never leaves a broken checkpoint


def _rank_state(trainer, env_state: bool) -> dict:
    """What differs between the ranks of a data-parallel run: their envs, random streams and accumulators."""
    own = {"torch_rng": torch.get_rng_state(),
           "cuda_rng": torch.cuda.get_rng_state(trainer.device) if trainer.device.type == "cuda" else None,
           "counters": trainer.counters.cpu(), "episode_acc": trainer.episode_acc, "loss_acc": trainer.loss_acc,
           "updates_since_log": trainer.updates_since_log}
    if env_state:
        own["env_state"] = trainer.env.buffers.storage
    else:
        own["episode_counts"] = trainer.env.state.ep_count.clone()
    return own


def warm_start(trainer, path: str):
    """Copies the policies of ``path``'s checkpoint into the groups of this run that it has."""
    saved = torch.load(path, map_location=trainer.device, weights_only=False)["policies"]
    by_group: dict[str, dict] = {}
    for key, value in saved.items():
        group, _, name = key.partition(".")
        by_group.setdefault(group, {})[name] = value
    shared = [g for g in trainer.policies if g in by_group]
    if not shared:
        raise ValueError(f"init_from {path} holds policies for {sorted(by_group)}, none of the groups "
                         f"this run trains ({list(trainer.policies)})")
    for g in shared:
        try:
            trainer.policies[g].load_state_dict(by_group[g])
        except RuntimeError as err:
            raise ValueError(f"init_from {path}: the {g!r} policy there does not fit this run's "
                             f"(observation or action spaces, or hidden width, differ): {err}") from None


def load(trainer, path: Path):
    """Continues ``trainer`` from ``path``; checked before anything changes: a refused checkpoint changes nothing."""
    state = torch.load(path, map_location=trainer.device, weights_only=False)
    saved_world = state.get("world_size", 1)
    if saved_world != trainer.world.size:
        raise ValueError(f"{path} was written by a data-parallel run of {saved_world} process(es), each with its own "
                         f"envs; this run has {trainer.world.size}: resume it with as many (torchrun "
                         f"--nproc-per-node), or start a new run from its policies with --init-from")
    if trainer.rank:
        state = {**state, **state["ranks"][trainer.rank - 1]}
    if "env_state" in state:
        try:
            trainer.env.buffers.check_layout_record(state.get("env_layout"), str(path))
        except ValueError as err:
            raise ValueError(f"{err}; --init-from starts a new run from its policies alone") from None
    opts = per_group_optimizer_states(state["opt"], trainer.policies)
    trainer.policies.load_state_dict(state["policies"])
    for g, opt in trainer.opts.items():  # settings and moments from the checkpoint, the way of stepping its own
        opt.load_state_dict(opts[g])
    trainer.iteration, trainer.seconds = state["iteration"], state["seconds"]
    torch.set_rng_state(state["torch_rng"].cpu())
    if state["cuda_rng"] is not None and trainer.device.type == "cuda":
        torch.cuda.set_rng_state(state["cuda_rng"].cpu(), trainer.device)
    if "counters" in state:
        trainer.counters.copy_(state["counters"])
    if "env_state" in state:
        # The env's observations live in its state buffer, so this restores them too.
        trainer.env.buffers.storage.copy_(state["env_state"])
    else:  # fresh episodes, seeded apart from every earlier start of this run
        trainer._reset_env(trainer.args.seed + trainer.rank + RESTART_SEED * trainer.iteration,
                           state["episode_counts"])
    trainer.episode_acc.copy_(state["episode_acc"])
    trainer.loss_acc.copy_(state["loss_acc"])
    trainer.updates_since_log = list(state["updates_since_log"])


def per_group_optimizer_states(saved: dict, policies) -> dict[str, dict]:
    """The optimiser states of a checkpoint per group.

    Checkpoints before per-group optimisers hold one Adam over every policy's parameters (in the
    policies' order, one parameter group per policy or one for all): each group's share of it is
    its state as its own optimiser.
    """
    if set(saved) == set(policies):
        return saved
    counts = [len(list(pol.parameters())) for pol in policies.values()]
    groups = saved["param_groups"]
    out, first = {}, 0
    for gi, (g, n) in enumerate(zip(policies, counts, strict=True)):
        settings = {k: v for k, v in groups[gi if len(groups) == len(counts) else 0].items() if k != "params"}
        out[g] = {"state": {i: saved["state"][first + i] for i in range(n) if first + i in saved["state"]},
                  "param_groups": [{**settings, "params": list(range(n))}]}
        first += n
    return out
