"""MPE simple_speaker_listener: a speaker that cannot move tells a listener that cannot see the goal where to go.

The same environment as MPE2's ``simple_speaker_listener_v4``, with the same agent names,
observation layout, action meanings, physics and reward, run as a Numba kernel on the particle
world that every MPE scenario shares (`gpu_zoo.mpe.particles`). The state is double precision,
as in MPE2, so trajectories match MPE2's step for step.

## Rules
The speaker (``speaker_0``) stands still and speaks; the listener (``listener_0``, size 0.075,
action scale 5, no speed limit) moves and is silent; three landmarks (size 0.04, red, green and
blue), one of them the goal, drawn at each reset. Each step the speaker's message becomes its
communication state and the listener moves and integrates as every MPE agent does
(``dt = 0.1``, damping 0.25). Both share one reward: minus the listener's squared distance to
the goal. Episodes are truncated after ``max_cycles`` steps.

Starts: both agents and the landmarks uniform in [-1, 1]^2, at rest, the goal uniform among the
landmarks, no message yet (MPE2's ranges, drawn from gpu_zoo's counter-based generator rather
than NumPy's).

## Observations
The speaker: ``goal_color (3)``, the goal landmark's colour. The listener: ``self_vel (2),
landmark_rel_pos (6), speaker_message (3)``; float32.

## Actions
The speaker: Discrete(3), which of three one-hot messages to say; with
``continuous_actions=True``, ``Box(0, 1, (3,))``, the message itself. The listener: Discrete(5),
no-op, left, right, down, up; with ``continuous_actions=True``, ``Box(0, 1, (5,))`` whose force
is ``(a[2] - a[1], a[4] - a[3])`` times 5.

## Version history
- v4: matches MPE2's ``simple_speaker_listener_v4``.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium
import numpy as np

from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerEnv, PerObs, kernel_fn
from gpu_zoo.mpe import particles
from gpu_zoo.mpe.particles import (
    integrate,
    landmarks_relative,
    move_continuous,
    move_discrete,
    own_vel,
    place_landmarks_and_goal,
    spawn,
)
from gpu_zoo.mpe.scenario import check_common, move_space

DIM_C = 3  # this scenario's message length
AGENT_SIZE, LANDMARK_SIZE = 0.075, 0.04
NUM_LANDMARKS = 3
LANDMARK_COLORS = ((0.65, 0.15, 0.15), (0.15, 0.65, 0.15), (0.15, 0.15, 0.65))
_DIM, _LIT = 0.15, 0.65  # a landmark's colour: its own channel lit, the others dim


@dataclass(frozen=True)
class SimpleSpeakerListenerParams:
    """MPE2's ``simple_speaker_listener_v4`` constructor arguments."""

    max_cycles: int = 25
    continuous_actions: bool = False
    dynamic_rescaling: bool = True
    benchmark_data: bool = False

    def __post_init__(self):
        check_common(self)


def groups(p: SimpleSpeakerListenerParams) -> tuple[Group, ...]:
    say = (gymnasium.spaces.Box(0.0, 1.0, (DIM_C,), np.float32) if p.continuous_actions
           else gymnasium.spaces.Discrete(DIM_C))
    return (Group("speaker", 1, (ObsBlock("goal_color", 3, fill=goal_color),), say),
            Group("listener", 1, (ObsBlock("self_vel", 2, fill=own_vel),
                                  ObsBlock("landmark_rel_pos", 2 * NUM_LANDMARKS, fill=landmarks_relative),
                                  ObsBlock("speaker_message", DIM_C, fill=speaker_message)),
                  move_space(p.continuous_actions)))


def world(p: SimpleSpeakerListenerParams) -> particles.World:
    return particles.World(sizes=(AGENT_SIZE,) * 2 + (LANDMARK_SIZE,) * NUM_LANDMARKS,
                           collides=(0,) * (2 + NUM_LANDMARKS), accels=(None, None))


def fields(p: SimpleSpeakerListenerParams) -> tuple[Field, ...]:
    return (*world(p).fields(), Field("goal", "i32", (), "entity index of the goal landmark"),
            Field("message", "f32", (DIM_C,), "the speaker's word of the last step (float32 holds each"
                                          " exactly: action values or a one-hot)"))


def constants(p: SimpleSpeakerListenerParams) -> dict:
    return world(p).constants()


# ------------------------------------------------------------------ phases
@kernel_fn
def spawn_silent(s, p, e, a):
    """`particles.spawn`, the speaker with no message yet."""
    spawn(s, p, e, a)
    if a < p.speaker_hi:
        for c in range(DIM_C):
            s.message[e, c] = 0.0


@kernel_fn
def say_discrete(s, p, e, a, k):
    """MPE2's one-hot message."""
    for c in range(DIM_C):
        s.message[e, c] = 1.0 if c == k else 0.0


@kernel_fn
def say_continuous(s, p, e, a, u):
    for c in range(DIM_C):
        s.message[e, c] = u[c]


@kernel_fn
def glide(s, p, e, a, act):
    """The listener moves; the speaker does not."""
    integrate(s, p, e, a)


def step(p: SimpleSpeakerListenerParams) -> tuple:
    say, move = (say_continuous, move_continuous) if p.continuous_actions else (say_discrete, move_discrete)
    return (PerAgent(say, group="speaker"), PerAgent(move, group="listener"), PerAgent(glide, group="listener"),
            PerAgent(reward))


@kernel_fn
def reward(s, p, e, a):
    """Shared: minus the listener's squared distance to the goal."""
    g = s.goal[e]
    dx, dy = s.pos_x[e, p.listener_lo] - s.pos_x[e, g], s.pos_y[e, p.listener_lo] - s.pos_y[e, g]
    s.rew[e, a] = np.float32(-(dx * dx + dy * dy))


@kernel_fn
def goal_color(s, p, e, a, c):
    """The goal landmark's colour."""
    return np.float32(_LIT if c == s.goal[e] - p.num_agents else _DIM)


@kernel_fn
def speaker_message(s, p, e, a, c):
    return np.float32(s.message[e, c])


def render(state: dict, p: SimpleSpeakerListenerParams, size: int = 320) -> np.ndarray:
    goal = LANDMARK_COLORS[int(state["goal"]) - 2]
    listener = particles.rgb([c + 0.45 for c in goal])
    colors = (particles.rgb((0.25, 0.25, 0.25)), listener, *(particles.rgb(c) for c in LANDMARK_COLORS))
    return particles.render(state, colors, world(p).sizes, size, p.max_cycles)


SPEC = EnvSpec(
    id="simple_speaker_listener_v4",
    params=SimpleSpeakerListenerParams,
    groups=groups,
    fields=fields,
    reset=(PerAgent(spawn_silent), PerEnv(place_landmarks_and_goal)),
    step=step,
    observe=(PerObs(),),
    constants=constants,
    render=render,
    module=__name__,
)
