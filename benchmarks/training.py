"""End-to-end training throughput of ``trainers/ppo.py``: rollouts, GAE and PPO updates, in env-steps per second."""

from __future__ import annotations

import torch

from benchmarks.cases import TRAINER_SETTINGS
from benchmarks.timing import gpu_memory_in_use, peak_gpu_memory, time_steps


def make_trainer(env_id: str, num_envs: int, device: str, env_kwargs: dict, **settings):
    """The PPO trainer of ``trainers/ppo.py``, every group trained, built from its ``Args``."""
    from trainers.ppo import Args, Trainer

    unknown = set(settings) - set(TRAINER_SETTINGS)
    if unknown:
        raise ValueError(f"trainer settings must be among {TRAINER_SETTINGS}, got {sorted(unknown)}")
    return Trainer(Args(env_id=env_id, env_kwargs=env_kwargs, num_envs=num_envs, device=device, eval_episodes=0,
                        gif=False, **settings))


def measure(env_id: str, num_envs: int, device: str, env_kwargs: dict, *, iterations: int, repeats: int,
            **settings) -> dict:
    """Env-steps/s of whole PPO iterations (``rollout()`` then ``update()``), as the training loop runs them.

    One iteration first (compilation, allocator growth), then ``repeats`` timed runs of
    ``iterations`` iterations, the clock read after a device synchronisation.
    """
    dev = torch.device(device)
    baseline = gpu_memory_in_use(dev)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    trainer = make_trainer(env_id, num_envs, device, env_kwargs, **settings)
    num_steps = trainer.args.num_steps

    def iteration():
        trainer.rollout()
        trainer.update()

    iteration()
    timing = time_steps(iteration, dev, target_s=0.0, repeats=repeats, warmup=0, steps=iterations)
    rate = timing.summary(num_envs * num_steps)
    agents = trainer.env.layout.num_agents
    return {"env_steps_per_s": rate["median"], "spread": rate["spread"], "samples": rate["samples"],
            "agent_steps_per_s": rate["median"] * agents, "agents": agents, "num_steps": num_steps,
            "iterations_per_repeat": iterations, "trained_groups": list(trainer.policies),
            "hidden": trainer.args.hidden, "update_epochs": trainer.args.update_epochs,
            "num_minibatches": trainer.args.num_minibatches, **peak_gpu_memory(dev, baseline),
            "notes": "trainers.ppo.Trainer(Args): rollout() + update() per iteration, every group trained"}
