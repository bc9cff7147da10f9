"""Go's rules in scripted games on 9 x 9, each against PettingZoo's go (minigo's engine) move for move.

Points are ``row * 9 + col``; 81 passes.
"""

import numpy as np
import pytest

from gpu_zoo.classic import go_v5
from tests.classic.helpers import pettingzoo_module, play_along, scripted

N = 9
PASS = N * N


def at(r, c):
    return r * N + c


# Black surrounds white's (1, 1); white's (1, 3) makes (1, 2) a ko point for black to take.
KO_SHAPE = [at(0, 1), at(0, 2), at(1, 0), at(1, 1), at(2, 1), at(2, 2), at(8, 0), at(1, 3)]
GAMES = {
    # black takes the ko, white plays elsewhere, black answers, white retakes; then both pass: scored
    "ko fight": KO_SHAPE + [at(1, 2), at(8, 8), at(8, 7), at(1, 1), at(7, 7), PASS, PASS],
    # white retakes at once: the ko forbids it, and PettingZoo's wrapper ends the game
    "ko violation": KO_SHAPE + [at(1, 2), at(1, 1)],
    # a pass clears the ko: white may retake after passing... once black has passed back
    "pass clears the ko": KO_SHAPE + [at(1, 2), PASS, PASS],
    # black's stone in the corner between two white stones would have no liberty: suicide, illegal
    "suicide": [at(4, 4), at(0, 1), at(5, 5), at(1, 0), at(0, 0)],
    # black fills its own last liberty while capturing: legal, since the capture frees points
    "capture of a group": [at(0, 1), at(0, 0), at(1, 1), at(1, 0), at(2, 0), PASS, PASS],
    # a game of passes only: an empty board, white wins on komi
    "two passes": [PASS, PASS],
}


@pytest.mark.parametrize("game", sorted(GAMES))
def test_scripted_go_games_match(game):
    ref_mod = pettingzoo_module("go_v5")
    moves = GAMES[game]
    made = play_along(go_v5.env(board_size=N), ref_mod.env(board_size=N), scripted(moves))
    assert made == len(moves), "the script should be played to its last move"


def test_the_ko_point_is_masked_and_a_capture_empties_the_board():
    env = go_v5.raw_env(board_size=N)
    env.reset()
    for move in KO_SHAPE + [at(1, 2)]:
        env.step(move)
    obs = env.observe("white_0")
    assert obs["action_mask"][at(1, 1)] == 0, "the ko point is illegal for white now"
    assert env.batched.state.board[0, at(1, 1)] == 0, "white's stone was captured"
    assert not obs["observation"][1, 1, 1], "white's captured stone is gone from the latest planes"
    assert obs["observation"][1, 1, 2], "and still in the previous move's planes: white moved then, its stones first"
    with pytest.raises(ValueError, match="not legal"):
        env.step(at(1, 1))


@pytest.mark.parametrize("size", [13, 19])
def test_larger_boards_match_over_a_whole_game(size):
    ref_mod = pettingzoo_module("go_v5")
    rng = np.random.default_rng(size)

    def moves(agent, obs):  # rarely a pass: the board fills and groups are captured
        legal = np.flatnonzero(obs["action_mask"])
        return int(rng.choice(legal[:-1])) if len(legal) > 1 and rng.random() > 0.02 else size * size

    made = play_along(go_v5.env(board_size=size, komi=6.5), ref_mod.env(board_size=size, komi=6.5), moves)
    assert made > size * size // 2


@pytest.mark.parametrize("bad", [1, 26, 9.0, True, "9"])
def test_board_sizes_are_checked(bad):
    with pytest.raises((ValueError, TypeError), match="board_size"):
        go_v5.env(board_size=bad)
