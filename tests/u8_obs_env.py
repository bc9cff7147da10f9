"""A test env with a group observing bytes (``Group(obs_dtype="u8")``) beside one observing float32."""

import dataclasses
from dataclasses import dataclass

import gymnasium
import numpy as np

from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerObs, Tuning, kernel_fn

ROW = 40  # a block long enough for CUDA's row-per-warp loop (`codegen_cuda.ROW_MIN`)


@dataclass(frozen=True)
class Params:
    """Eyes (uint8 observations) and ears (float32) walking right on a line."""

    num_eyes: int = 3
    num_ears: int = 2
    max_cycles: int = 6


@kernel_fn
def place(s, p, e, a, j):
    return s.pos[e, a]


@kernel_fn
def half_place(s, p, e, a, j):
    return np.float32(0.5) * s.pos[e, a]


@kernel_fn
def index_digits(s, p, e, a, j):
    return np.float32(10 * a + j)


@kernel_fn
def high_bytes(s, p, e, a, j):
    """200 + 5a + j + t: up to 255 at the last step, the top of a byte."""
    return np.float32(200 + 5 * a + j + s.t[e])


@kernel_fn
def whole_row(s, p, e, a, i):
    """The blocks' fills as one function of the row (the CPU's one loop over every group)."""
    if a < p.eye_hi:
        if i == 0:
            return place(s, p, e, a, 0)
        if i < 4:
            return index_digits(s, p, e, a, i - 1)
        return high_bytes(s, p, e, a, i - 4)
    if i < 3:
        return index_digits(s, p, e, a, i)
    return half_place(s, p, e, a, 0)


def groups(p: Params):
    act = gymnasium.spaces.Discrete(3)
    return (Group("eye", p.num_eyes, (ObsBlock("place", 1, fill=place), ObsBlock("index", 3, fill=index_digits),
                                      ObsBlock("bytes", ROW, fill=high_bytes)), act,
                  obs_low=0, obs_high=255, obs_dtype="u8"),
            Group("ear", p.num_ears, (ObsBlock("index", 3, fill=index_digits),
                                      ObsBlock("place", 1, fill=half_place)), act))


def fields(p: Params):
    return (Field("pos", "f32", (p.num_eyes + p.num_ears,), "place of each agent"),)


@kernel_fn
def spawn(s, p, e, a):
    s.pos[e, a] = np.float32(a)


@kernel_fn
def walk(s, p, e, a):
    act = s.act_eye[e, a] if a < p.eye_hi else s.act_ear[e, a - p.ear_lo]
    s.pos[e, a] += np.float32(act)


SPEC = EnvSpec(id="u8_obs_v0", params=Params, groups=groups, fields=fields, reset=(PerAgent(spawn),),
               step=(PerAgent(walk),), observe=(PerObs(),), module=__name__)
# the same observation by block, and as one function of the row (the CPU's one loop over every group)
SPEC_BY_BLOCK = dataclasses.replace(SPEC, id="u8_obs_by_block_v0", tuning=Tuning(observe_by_block=True))
SPEC_ROW = dataclasses.replace(SPEC, id="u8_obs_row_v0", observe=(PerObs(whole_row),))
