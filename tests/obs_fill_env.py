"""A test env observed through its blocks' fill functions (`ObsBlock.fill`, `PerObs()`)."""

from dataclasses import dataclass

import gymnasium
import numpy as np

from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerObs, kernel_fn


@dataclass(frozen=True)
class Params:
    """Walkers and watchers on a line; each sees its place and its own index spelled out."""

    num_walkers: int = 3
    num_watchers: int = 2
    max_cycles: int = 6


@kernel_fn
def place(s, p, e, a, j):
    return s.pos[e, a]


@kernel_fn
def twice_place(s, p, e, a, j):
    return np.float32(2.0) * s.pos[e, a]


@kernel_fn
def index_digits(s, p, e, a, j):
    """Element j of the block: 10 * agent + j, which shows where each element landed."""
    return np.float32(10 * a + j)


@kernel_fn
def elapsed(s, p, e, a, j):
    return np.float32(s.t[e])


def groups(p: Params):
    act = gymnasium.spaces.Discrete(3)
    return (Group("walker", p.num_walkers, (ObsBlock("place", 1, fill=place), ObsBlock("index", 3, fill=index_digits),
                                           ObsBlock("time", 1, fill=elapsed)), act),
            Group("watcher", p.num_watchers, (ObsBlock("index", 3, fill=index_digits),
                                             ObsBlock("place", 1, fill=twice_place)), act))


def fields(p: Params):
    return (Field("pos", "f32", (p.num_walkers + p.num_watchers,), "place of each agent"),)


@kernel_fn
def spawn(s, p, e, a):
    s.pos[e, a] = np.float32(a)


@kernel_fn
def walk(s, p, e, a):
    act = s.act_walker[e, a] if a < p.walker_hi else s.act_watcher[e, a - p.watcher_lo]
    s.pos[e, a] += np.float32(act - 1)


SPEC = EnvSpec(id="obs_fill_v0", params=Params, groups=groups, fields=fields, reset=(PerAgent(spawn),),
               step=(PerAgent(walk),), observe=(PerObs(),), module=__name__)
