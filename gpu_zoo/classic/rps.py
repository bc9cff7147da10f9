"""Rock-paper-scissors (and lizard-spock and beyond): both players choose at once. PettingZoo's ``rps_v2``.

A drop-in for `pettingzoo.classic.rps_v2`: the same agents, spaces, observations, rewards and
truncation, in its AEC form (the round's moves taken one player after the other) and its
parallel form (PettingZoo's ``parallel_wrapper_fn`` of it), compared over whole games with
PettingZoo's env in the tests. The batched face plays a whole round per step.

## Rules
``player_0`` and ``player_1`` each choose one of ``num_actions`` moves (an odd number, at least
3): rock, paper, scissors, then spock, lizard, then further moves. Equal moves draw (0 each).
Otherwise, with ``a`` and ``b`` the two moves: when ``a + b`` is even the smaller wins, when it is
odd the larger wins (rock beats scissors, paper beats rock, scissors beat paper; with five, spock
beats rock and scissors, lizard beats paper and spock): +1 to the winner, -1 to the loser.
After ``max_cycles`` rounds every player is truncated; nothing terminates.

## Observations
``Discrete(num_actions + 1)``: the opponent's move in the last round, ``num_actions`` before the
first. The batched face gives it as a float32 row of one value.

## Actions
``Discrete(num_actions)``.

## Version history
- v2: PettingZoo 1.27's rock-paper-scissors.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium
import numpy as np

from gpu_zoo.classic.boards import discs
from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerEnv, PerObs, kernel_fn
from gpu_zoo.core.api.params import check_count


@dataclass(frozen=True)
class RpsParams:
    """Constructor arguments of rock-paper-scissors, PettingZoo's."""

    num_actions: int = 3
    max_cycles: int = 15
    screen_height: float = 800.0
    """frames are ``screen_height`` pixels high and ``5/14`` of that wide, as PettingZoo's"""

    def __post_init__(self):
        check_count("num_actions", self.num_actions, 3)
        if self.num_actions % 2 == 0:
            raise ValueError(f"num_actions must be odd, got {self.num_actions}")
        check_count("max_cycles", self.max_cycles)
        if not self.screen_height >= 14:
            raise ValueError(f"screen_height must be at least 14 pixels, got {self.screen_height}")


def groups(p: RpsParams) -> tuple[Group, ...]:
    seen = ObsBlock("opponent_move", 1, f"the opponent's last move; {p.num_actions} before the first",
                    fill=opponent_move)
    return (Group("player", 2, (seen,), gymnasium.spaces.Discrete(p.num_actions), obs_low=0.0,
                  obs_high=float(p.num_actions), obs_space=gymnasium.spaces.Discrete(p.num_actions + 1)),)


def fields(p: RpsParams) -> tuple[Field, ...]:
    return (Field("move", "i32", (2,), "each player's move in the last round (num_actions: none yet)"),)


# ------------------------------------------------------------------ phases
@kernel_fn
def new_game(s, p, e):
    s.move[e, 0] = p.num_actions
    s.move[e, 1] = p.num_actions


@kernel_fn
def play(s, p, e):
    """Both moves at once: the winner +1, the loser -1, a draw 0."""
    a, b = s.act_player[e, 0], s.act_player[e, 1]
    if a != b:
        first_wins = (a < b) if (a + b) % 2 == 0 else (a > b)
        s.rew[e, 0] = 1.0 if first_wins else -1.0
        s.rew[e, 1] = -s.rew[e, 0]
    s.move[e, 0] = a
    s.move[e, 1] = b


@kernel_fn
def opponent_move(s, p, e, a, j):
    return np.float32(s.move[e, 1 - a])


# ------------------------------------------------------------------ render
MOVE_COLORS = ((120, 120, 120), (240, 240, 225), (200, 60, 60), (60, 120, 200), (70, 160, 80))


def render(state: dict, p: RpsParams) -> np.ndarray:
    """The last round: each player's move as a coloured disc (grey before the first), player_0 above."""
    height = int(p.screen_height)
    width = int(height * 5 / 14)
    image = np.empty((height, width, 3), np.uint8)
    image[:] = (30, 30, 46)
    for player in (0, 1):
        move = int(state["move"][player])
        color = (90, 90, 90) if move == p.num_actions else MOVE_COLORS[move % len(MOVE_COLORS)]
        discs(image, [(width / 2, height * (0.25 + 0.5 * player))], width * 0.35, color)
    return image


SPEC = EnvSpec(
    id="rps_v2",
    params=RpsParams,
    groups=groups,
    fields=fields,
    reset=(PerEnv(new_game),),
    step=(PerEnv(play),),
    observe=(PerObs(),),
    render=render,
    module=__name__,
    play="rounds",
)
