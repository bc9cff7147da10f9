"""MPE simple_crypto: Alice sends Bob a message an eavesdropper, Eve, must not decode.

The same environment as MPE2's ``simple_crypto_v3``, with the same agent names, observation
layout, action meanings and rewards, run as a Numba kernel on the particle world that every MPE
scenario shares (`gpu_zoo.mpe.particles`). The state is double precision, as in MPE2, so
trajectories match MPE2's step for step.

## Rules
Three agents that never move: ``eve_0`` (the adversary), ``bob_0`` and ``alice_0`` (the
speaker), and two landmarks whose colours are the one-hot words ``[1, 0, 0, 0]`` and
``[0, 1, 0, 0]``. At each reset one landmark's colour is drawn as the goal word and another
draw (possibly the same landmark) as the key that Alice and Bob share. Every agent speaks a
4-dimensional communication state each step: Alice's is what Bob and Eve hear; Bob's and Eve's
are their guesses of the goal word.

Eve is paid minus the squared distance of her guess to the goal word. Alice and Bob are both
paid Eve's squared error minus Bob's. A guess of all zeros (possible with continuous actions)
counts as no guess and pays nothing. Episodes are truncated after ``max_cycles`` steps.

Starts: agents and landmarks uniform in [-1, 1]^2 (their places are only drawn), silent
(MPE2's ranges, drawn from gpu_zoo's counter-based generator rather than NumPy's).

## Observations
Eve: ``alice_comm (4)``. Bob: ``key (4), alice_comm (4)``. Alice: ``goal (4), key (4)``; float32.

## Actions
Discrete(4): which one-hot word to say. With ``continuous_actions=True``, ``Box(0, 1, (4,))``:
the word itself.

## Version history
- v3: matches MPE2's ``simple_crypto_v3``.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium
import numpy as np

from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerEnv, PerObs, kernel_fn
from gpu_zoo.core.api.rng import randint
from gpu_zoo.mpe import particles
from gpu_zoo.mpe.particles import DRAW_GOAL, place_landmarks, spawn
from gpu_zoo.mpe.scenario import check_common

DIM_C = 4  # this scenario's word length
NUM_AGENTS, NUM_LANDMARKS = 3, 2
SIZE = 0.05  # every entity's: MPE2's default
EVE, BOB, ALICE = 0, 1, 2
DRAW_KEY = DRAW_GOAL + 1  # the env's draw of the key, after the goal word's


@dataclass(frozen=True)
class SimpleCryptoParams:
    """MPE2's ``simple_crypto_v3`` constructor arguments."""

    max_cycles: int = 25
    continuous_actions: bool = False
    dynamic_rescaling: bool = True
    benchmark_data: bool = False

    def __post_init__(self):
        check_common(self)


def groups(p: SimpleCryptoParams) -> tuple[Group, ...]:
    say = (gymnasium.spaces.Box(0.0, 1.0, (DIM_C,), np.float32) if p.continuous_actions
           else gymnasium.spaces.Discrete(DIM_C))
    heard = ObsBlock("alice_comm", DIM_C, fill=alice_comm)
    key = ObsBlock("key", DIM_C, fill=key_word)
    return (Group("eve", 1, (heard,), say), Group("bob", 1, (key, heard), say),
            Group("alice", 1, (ObsBlock("goal", DIM_C, fill=goal_word), key), say))


def world(p: SimpleCryptoParams) -> particles.World:
    return particles.World(sizes=(SIZE,) * (NUM_AGENTS + NUM_LANDMARKS), collides=(0,) * (NUM_AGENTS + NUM_LANDMARKS),
                           accels=(None,) * NUM_AGENTS)


def fields(p: SimpleCryptoParams) -> tuple[Field, ...]:
    return (*world(p).fields(), Field("goal", "i32", (), "entity index of the landmark whose colour is the goal word"),
            Field("key", "i32", (), "entity index of the landmark whose colour is the key"),
            Field("message", "f32", (NUM_AGENTS, DIM_C), "each agent's word of the last step (float32 holds"
                                                     " each exactly: action values or a one-hot)"))


def constants(p: SimpleCryptoParams) -> dict:
    return world(p).constants()


# ------------------------------------------------------------------ phases
@kernel_fn
def spawn_silent(s, p, e, a):
    spawn(s, p, e, a)
    for c in range(DIM_C):
        s.message[e, a, c] = 0.0


@kernel_fn
def draw_words(s, p, e):
    """The goal word, then the key, each a landmark's colour; then the landmarks' places (MPE2's order)."""
    s.goal[e] = p.num_agents + randint(s, e, p.num_entities, DRAW_GOAL, NUM_LANDMARKS)
    s.key[e] = p.num_agents + randint(s, e, p.num_entities, DRAW_KEY, NUM_LANDMARKS)
    place_landmarks(s, p, e)


@kernel_fn
def _word(s, p, e, j, c):
    """Channel c of the colour of landmark entity j: its landmark index one-hot."""
    return 1.0 if c == j - p.num_agents else 0.0


@kernel_fn
def say_discrete(s, p, e, a, k):
    """Discrete(DIM_C): word k, one-hot."""
    for c in range(DIM_C):
        s.message[e, a, c] = 1.0 if c == k else 0.0


@kernel_fn
def say_continuous(s, p, e, a, u):
    """Box(0, 1, (DIM_C,)): the word as given."""
    for c in range(DIM_C):
        s.message[e, a, c] = u[c]


@kernel_fn
def _guess_error(s, p, e, a):
    """MPE2's ``np.sum(np.square(c - goal))`` of agent a's word, and whether it said anything (non-zero)."""
    g = s.goal[e]
    err = 0.0
    said = False
    for c in range(DIM_C):
        v = s.message[e, a, c]
        said = said or v != 0.0
        d = v - _word(s, p, e, g, c)
        err += d * d
    return err, said


@kernel_fn
def reward_eve(s, p, e, a, act):
    """Minus Eve's error guessing the goal word, if she said anything."""
    eve, eve_said = _guess_error(s, p, e, EVE)
    s.rew[e, a] = np.float32(-eve if eve_said else 0.0)


@kernel_fn
def reward_team(s, p, e, a, act):
    """Bob's and Alice's: Eve's error minus Bob's, each counted if its speaker said anything."""
    eve, eve_said = _guess_error(s, p, e, EVE)
    bob, bob_said = _guess_error(s, p, e, BOB)
    s.rew[e, a] = np.float32((eve if eve_said else 0.0) + (-bob if bob_said else 0.0))


def step(p: SimpleCryptoParams) -> tuple:
    say = say_continuous if p.continuous_actions else say_discrete
    return (*(PerAgent(say, group=g) for g in ("eve", "bob", "alice")), PerAgent(reward_eve, group="eve"),
            PerAgent(reward_team, group="bob"), PerAgent(reward_team, group="alice"))


@kernel_fn
def alice_comm(s, p, e, a, c):
    """Alice's word of the last step."""
    return np.float32(s.message[e, ALICE, c])


@kernel_fn
def key_word(s, p, e, a, c):
    """The key: its landmark's colour."""
    return np.float32(_word(s, p, e, s.key[e], c))


@kernel_fn
def goal_word(s, p, e, a, c):
    """The goal word: its landmark's colour."""
    return np.float32(_word(s, p, e, s.goal[e], c))


def render(state: dict, p: SimpleCryptoParams, size: int = 320) -> np.ndarray:
    # MPE2's colours, their first three channels: Bob wears the goal word's
    words = [tuple(1.0 if c == j else 0.0 for c in range(3)) for j in range(NUM_LANDMARKS)]
    bob = words[int(state["goal"]) - NUM_AGENTS]
    colors = [particles.rgb(c) for c in ((0.75, 0.25, 0.25), bob, (0.25, 0.25, 0.25), *words)]
    return particles.render(state, colors, world(p).sizes, size, p.max_cycles)


SPEC = EnvSpec(
    id="simple_crypto_v3",
    params=SimpleCryptoParams,
    groups=groups,
    fields=fields,
    reset=(PerAgent(spawn_silent), PerEnv(draw_words)),
    step=step,
    observe=(PerObs(),),
    constants=constants,
    render=render,
    module=__name__,
)
