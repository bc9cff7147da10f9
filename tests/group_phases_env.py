"""A test env whose phases are bound to its groups: chasers step by Discrete(3), runners by a Box."""

from dataclasses import dataclass

import gymnasium
import numpy as np

from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerObs, kernel_fn


@dataclass(frozen=True)
class Params:
    """Chasers and runners on a line."""

    num_chasers: int = 3
    num_runners: int = 2
    max_cycles: int = 6


def groups(p: Params):
    obs = (ObsBlock("position", 1, "own place"),)
    return (Group("chaser", p.num_chasers, obs, gymnasium.spaces.Discrete(3)),
            Group("runner", p.num_runners, obs, gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)))


def fields(p: Params):
    return (Field("pos", "f32", (p.num_chasers + p.num_runners,), "place of each agent"),)


@kernel_fn
def spawn(s, p, e, a):
    s.pos[e, a] = np.float32(a)


@kernel_fn
def chase(s, p, e, a, act):
    s.pos[e, a] += np.float32(act - 1)  # 0, 1, 2: back, stay, forward


@kernel_fn
def run(s, p, e, a, act):
    s.pos[e, a] += act[0] - np.float32(2.0) * act[1]


@kernel_fn
def pay(s, p, e, a):
    s.rew[e, a] = s.pos[e, a]


@kernel_fn
def observe_chaser(s, p, e, a, i):
    return np.float32(2.0) * s.pos[e, a]


@kernel_fn
def observe_runner(s, p, e, a, i):
    return s.pos[e, a]


SPEC = EnvSpec(id="group_phases_v0", params=Params, groups=groups, fields=fields, reset=(PerAgent(spawn),),
               step=(PerAgent(chase, group="chaser"), PerAgent(run, group="runner"), PerAgent(pay)),
               observe=(PerObs(observe_chaser, group="chaser"), PerObs(observe_runner, group="runner")),
               module=__name__)


@kernel_fn
def pay_weighted(s, p, e, a):
    """`pay` scaled by the agent's entry of a table constant (`tests/test_core_tables.py`)."""
    s.rew[e, a] = s.pos[e, a] * np.float32(p.weight[a])


def shared_groups(p: Params):
    """The chasers as two groups of one action space, "chaser" and "hunter" (the last chaser)."""
    chaser, runner = groups(p)
    return (Group("chaser", p.num_chasers - 1, chaser.obs, chaser.action_space),
            Group("hunter", 1, chaser.obs, chaser.action_space), runner)


SHARED_SPEC = EnvSpec(
    id="group_phases_shared_v0", params=Params, groups=shared_groups, fields=fields, reset=(PerAgent(spawn),),
    step=(PerAgent(chase, group="chaser"), PerAgent(run, group="runner"), PerAgent(chase, group="hunter"),
          PerAgent(pay)),
    observe=(PerObs(observe_chaser, group="chaser"), PerObs(observe_chaser, group="hunter"),
             PerObs(observe_runner, group="runner")),
    module=__name__)
"""One function bound to two adjacent groups (declared apart): the CUDA stage calls it once for both."""
