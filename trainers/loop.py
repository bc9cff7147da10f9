"""A whole training run: the PPO loop, its logs and checkpoints, then the trained-against-random report.

Outputs, all in ``args.out_dir``: ``checkpoint.pt`` (every ``checkpoint_every`` iterations, at the
end and on Ctrl-C), ``progress.csv`` and ``tb/`` (TensorBoard), ``curve.png`` (the learning
curve, with random play as dashed lines) and ``policy.gif`` (one episode of the trained policies).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import torch

from trainers import distributed
from trainers.config import Args
from trainers.evaluate import Comparison, compare
from trainers.plots import plot_learning_curve
from trainers.ppo import Trainer
from trainers.runlog import RunLog

EVAL_SEED_OFFSET = 1_000_003  # evaluation episodes start unlike any the run trained on first


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


def train(args: Args, resume: str | Path | None = None, callback: Callable[[Trainer], None] | None = None,
          ) -> Trainer:
    """Trains (or resumes) a run; ``callback(trainer)`` runs after every iteration.

    A KeyboardInterrupt (Ctrl-C, or raised by the callback) writes a checkpoint and the curve,
    then propagates. A first Ctrl-C lets the current iteration finish, so the checkpoint
    continues exactly; a second one stops at once.

    Under torchrun every process trains its own envs (`trainers.distributed`); rank 0 alone
    prints, logs and writes files, and a first Ctrl-C on any rank stops every rank after the next
    logged iteration (a second one stops at once, without a checkpoint).
    """
    world = distributed.join(args.device)
    out = Path(args.out_dir)
    if world.main:
        out.mkdir(parents=True, exist_ok=True)
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    trainer = Trainer(args, world=world)
    if resume:
        trainer.load(Path(resume))
    run_steps = args.env_steps_per_iteration * world.size  # env-steps per iteration over every rank
    log = None
    if world.main:
        groups = ", ".join(f"{g} x{trainer.env.group_size(g)} ({'trained' if g in trainer.policies else 'random'})"
                           for g in trainer.env.groups)
        where = f"{world.size} processes x {args.num_envs} envs" if world.distributed else f"{args.num_envs} envs"
        print(f"{args.env_id}: {where} on {trainer.device.type}, {groups}; {trainer.iterations} iterations of "
              f"{run_steps:,} env-steps; writing to {out}/", flush=True)
        log = RunLog(out, trainer.metric_names(), trainer.env.groups, trainer.iterations * run_steps,
                     trainer.iteration, trainer.iteration * run_steps)
    checkpoint = out / "checkpoint.pt"
    try:
        with StopRequest() as stop:
            _loop(trainer, log, checkpoint, callback, stop)
    except KeyboardInterrupt as stopped:
        if world.distributed and not isinstance(stopped, _AllRanksStop):
            print(f"rank {world.rank} stopped at once: no checkpoint (the ranks may be at different points)",
                  flush=True)
            raise
        trainer.save(checkpoint)
        if log is not None:
            log.close()
            plot_learning_curve(log.csv_path, out / "curve.png", trainer.env.groups, tuple(trainer.policies),
                                title=args.env_id)
            print(f"stopped at iteration {trainer.iteration}: checkpoint {checkpoint}; continue with "
                  f"gpu-zoo train --resume {checkpoint}", flush=True)
        raise
    trainer.save(checkpoint)
    if log is not None:
        log.close()
        report(trainer, out)
    return trainer


class _AllRanksStop(KeyboardInterrupt):
    """A stop every rank of a data-parallel run agreed on, at the same iteration."""


def _loop(trainer: Trainer, log: RunLog | None, checkpoint: Path, callback, stop: StopRequest):
    args, world = trainer.args, trainer.world
    per_it = args.env_steps_per_iteration * world.size
    last = window_start = time.perf_counter()
    window_iteration = trainer.iteration
    while trainer.iteration < trainer.iterations:
        trainer.rollout()
        trainer.update()
        trainer.iteration += 1
        logging = trainer.iteration % args.log_every == 0 or trainer.iteration == trainer.iterations
        metrics = trainer.read_metrics() if logging else None  # the loop's one host sync: rates are real
        now = time.perf_counter()
        trainer.seconds += now - last
        last = now
        if logging and log is not None:
            rate = (trainer.iteration - window_iteration) * per_it / max(now - window_start, 1e-9)
            log.write({"iteration": trainer.iteration, "env_steps": trainer.iteration * per_it,
                       "seconds": trainer.seconds, "env_steps_per_s": rate, **metrics})
        if logging:
            window_start, window_iteration = now, trainer.iteration
        if trainer.iteration % args.checkpoint_every == 0:
            trainer.save(checkpoint)
        if callback is not None:
            callback(trainer)
        if not world.distributed:
            if stop.requested:
                raise KeyboardInterrupt
        elif logging and distributed.any_rank(stop.requested, world, trainer.device):
            raise _AllRanksStop


def report(trainer: Trainer, out: Path) -> Comparison | None:
    """The trained policies against random ones on the same episodes; the curve; the GIF."""
    args = trainer.args
    result = None
    baselines = None
    if args.eval_episodes:
        gif = out / "policy.gif" if args.gif else None
        result = compare(args, trainer.policies, args.eval_episodes, args.seed + EVAL_SEED_OFFSET, gif=gif,
                         device=trainer.device)
        baselines = {g: float(r.mean()) for g, r in result.random.returns.items()}
    plot_learning_curve(out / "progress.csv", out / "curve.png", trainer.env.groups, tuple(trainer.policies),
                        baselines, title=args.env_id)
    written = ["checkpoint.pt", "progress.csv", "tb/", "curve.png"] + (["policy.gif"] if result and args.gif else [])
    if result is not None:
        print(result.table())
        print(result.summary())
    print(f"wrote {', '.join(str(out / w) for w in written)}", flush=True)
    return result
