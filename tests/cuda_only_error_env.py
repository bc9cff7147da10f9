"""An env that runs on the CPU and under the CUDA simulator but that CUDA cannot compile: a phase allocates."""

from dataclasses import dataclass

import gymnasium
import numpy as np

from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerObs, kernel_fn


@dataclass(frozen=True)
class Params:
    """Two walkers on a line."""

    num_walkers: int = 2
    max_cycles: int = 5


def groups(p: Params):
    return (Group("walker", p.num_walkers, (ObsBlock("position", 1, "own cell"),), gymnasium.spaces.Discrete(2)),)


def fields(p: Params):
    return (Field("pos", "i32", (p.num_walkers,), "cell of each walker"),)


@kernel_fn
def spawn(s, p, e, a):
    s.pos[e, a] = 0


@kernel_fn
def move(s, p, e, a):
    steps = np.zeros(2, dtype=np.int32)  # a heap array: no such thing in a CUDA kernel
    steps[1] = 1
    s.pos[e, a] += steps[s.act_walker[e, a]]


@kernel_fn
def observe(s, p, e, a, i):
    return np.float32(s.pos[e, a])


SPEC = EnvSpec(id="cuda_only_error_v0", params=Params, groups=groups, fields=fields, reset=(PerAgent(spawn),),
               step=(PerAgent(move),), observe=(PerObs(observe),), module=__name__)
