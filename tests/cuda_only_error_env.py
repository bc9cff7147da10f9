"""A defective env: its observations leave their declared space, and CUDA cannot compile its step.

Its step phase calls NumPy's random generator, which no CUDA kernel has. It runs on the CPU
and under the CUDA simulator, which is what `gpu_zoo.testing.check_env` is for.
"""

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
    obs = (ObsBlock("position", 1, "own cell"),)  # declared within [0, 1]; walkers walk to max_cycles
    return (Group("walker", p.num_walkers, obs, gymnasium.spaces.Discrete(2), obs_low=0.0, obs_high=1.0),)


def fields(p: Params):
    return (Field("pos", "i32", (p.num_walkers,), "cell of each walker"),)


@kernel_fn
def spawn(s, p, e, a):
    s.pos[e, a] = 0


@kernel_fn
def move(s, p, e, a):
    if np.random.random() < 2.0:  # always: but a CUDA kernel has no NumPy random generator
        s.pos[e, a] += s.act_walker[e, a]


@kernel_fn
def observe(s, p, e, a, i):
    return np.float32(s.pos[e, a])


def render(state: dict, p: Params, size: int = 64) -> np.ndarray:
    return np.zeros((size, size, 3), np.uint8)


SPEC = EnvSpec(id="cuda_only_error_v0", params=Params, groups=groups, fields=fields, reset=(PerAgent(spawn),),
               step=(PerAgent(move),), observe=(PerObs(observe),), render=render,
               module=__name__)
