r"""Data-parallel PPO over the processes torchrun starts: one env batch and one `Trainer` per rank.

    torchrun --standalone --nproc-per-node=4 -m gpu_zoo.cli train simple_tag_v3 --num-envs 16384 --device cuda
    torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=HOST:29400 \
        -m gpu_zoo.cli train simple_tag_v3 --num-envs 16384 --device cuda       # the same on each host
    torchrun --standalone --nproc-per-node=2 -m gpu_zoo.cli train tag_gridworld_v0 --device cpu   # gloo

Each rank steps its own ``num_envs`` envs, on the GPU its ``LOCAL_RANK`` names (NCCL) or on the
CPU (gloo), its episodes and draws seeded apart by rank. The policies start from rank 0's weights
and stay equal: every minibatch's gradient is averaged over the ranks before the optimisers step.
Episode metrics and loss statistics are summed over the ranks when read; ``total_env_steps`` is
the run's budget over all of them. Rank 0 alone writes the logs, checkpoints, curve and GIF; a
checkpoint holds every rank's env state and random streams, so a run resumes exactly with the same
number of processes (another number is refused).

A process started without torchrun is a world of one: nothing here joins a process group.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class World:
    """This process's place in a data-parallel run (``size`` 1: a run of its own)."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0
    device: str | None = None
    """the device this rank's env and networks use (None: the run's ``device`` setting)"""

    @property
    def distributed(self) -> bool:
        return self.size > 1

    @property
    def main(self) -> bool:
        """Whether this rank writes the run's files."""
        return self.rank == 0


SINGLE = World()


def join(device: str | None) -> World:
    """The world torchrun describes in the environment (``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK``), its group joined.

    On a GPU each rank takes the GPU of its local rank, for torch and for Numba's kernels alike,
    and NCCL; on the CPU gloo. ``device`` is the run's setting (None: a GPU if one is usable).
    """
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size == 1:
        return SINGLE
    from gpu_zoo.core.runtime.launch import default_device

    rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    kind = torch.device(device).type if device else default_device().type
    if kind == "cuda":
        if device and torch.device(device).index is not None:
            raise ValueError(f"device={device!r}: in a data-parallel run each rank takes the GPU of its local rank; "
                             "pass --device cuda")
        if local >= torch.cuda.device_count():
            raise RuntimeError(f"local rank {local} has no GPU of its own: this host has {torch.cuda.device_count()}; "
                               "start at most that many processes per host (torchrun --nproc-per-node)")
        torch.cuda.set_device(local)
        from gpu_zoo.core.compiler.speed import compat

        compat.import_cuda().select_device(local)  # Numba's current GPU is torch's
        device = f"cuda:{local}"
    else:
        device = "cpu"
    if not dist.is_initialized():
        dist.init_process_group("nccl" if kind == "cuda" else "gloo")
    if dist.get_world_size() != size or dist.get_rank() != rank:
        raise RuntimeError(f"the process group ({dist.get_rank()} of {dist.get_world_size()}) is not the one "
                           f"the environment describes (RANK {rank} of WORLD_SIZE {size})")
    return World(rank=rank, size=size, local_rank=local, device=device)


def leave():
    """Leaves the process group, if this process joined one."""
    if dist.is_initialized():
        dist.destroy_process_group()


def broadcast_parameters(module: torch.nn.Module, world: World):
    """Every rank's ``module`` takes rank 0's parameters and buffers."""
    if world.distributed:
        for t in [*module.parameters(), *module.buffers()]:
            dist.broadcast(t.data, 0)


def average(tensors: list[torch.Tensor], world: World):
    """Each tensor becomes its mean over the ranks, in one all-reduce of their concatenation."""
    if not world.distributed or not tensors:
        return
    if len(tensors) == 1:
        dist.all_reduce(tensors[0])
        tensors[0].div_(world.size)
        return
    flat = torch.cat([t.reshape(-1) for t in tensors])
    dist.all_reduce(flat)
    flat.div_(world.size)
    for t, part in zip(tensors, flat.split([t.numel() for t in tensors]), strict=True):
        t.copy_(part.view_as(t))


def total(t: torch.Tensor, world: World) -> torch.Tensor:
    """``t`` summed over the ranks (``t`` itself in a world of one)."""
    if world.distributed:
        t = t.clone()
        dist.all_reduce(t)
    return t


def any_rank(flag: bool, world: World, device: torch.device) -> bool:
    """Whether ``flag`` holds on any rank (every rank calls this at the same point)."""
    if not world.distributed:
        return flag
    return bool(total(torch.tensor([float(flag)], device=device), world).item())


def gather(obj, world: World) -> list | None:
    """Every rank's ``obj`` (picklable, on the CPU), as a list in rank order on rank 0; None on the others."""
    if not world.distributed:
        return [obj]
    out = [None] * world.size if world.main else None
    dist.gather_object(obj, out, dst=0)
    return out
