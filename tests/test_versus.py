"""trainers.versus: the board-game opponents and the game loop that scores a policy against them."""

import numpy as np
import pytest
import torch

import gpu_zoo
from tests.classic.helpers import pettingzoo_module
from trainers.versus import four_in_a_row, one_ply_opponent, play_games, random_opponent


def connect_four(num_envs):
    return gpu_zoo.make("connect_four_v3", num_envs=num_envs, device="cpu", autoreset=False)


class AsPolicy:
    """An opponent in a policy's place: its move for the mover's row, whatever for the other."""

    def __init__(self, env, opponent, seed=0):
        self.env, self.opponent, self.gen = env, opponent, torch.Generator().manual_seed(seed)

    def sample(self, obs, mask=None, greedy=False):
        move = self.opponent(self.env, self.gen)
        return move.view(-1, 1).expand(-1, 2), None


def set_board(env, rows):
    """Env 0's board from six strings of seven, top row first: '.' empty, 'x' player_0, 'o' player_1."""
    cells = [".xo".index(c) for row in rows for c in row]
    env.state.board[0] = torch.tensor(cells, dtype=env.state.board.dtype)
    env.state.current_player[0] = 0 if sum(c == 1 for c in cells) == sum(c == 2 for c in cells) else 1
    env.action_masks["player"][0] = 0
    env.action_masks["player"][0, int(env.state.current_player[0])] = env.state.board[0, :7] == 0


def test_four_in_a_row_agrees_with_pettingzoo_on_random_boards():
    ref = pettingzoo_module("connect_four_v3").raw_env()
    ref.reset()
    rng = np.random.default_rng(0)
    boards = rng.integers(0, 3, size=(500, 42))
    ours = four_in_a_row(torch.as_tensor(boards == 1).view(-1, 6, 7))
    for board, mine in zip(boards, ours.tolist(), strict=True):
        ref.board = board.tolist()
        assert ref.check_for_winner() == mine  # its agent_selection is player_0: it checks pieces of 1


@pytest.mark.parametrize("rows, expected", [
    # player_0 (x) to move wins at once in column 3, rather than blocking o's three in column 6
    ([".......", ".......", ".......", "......o", "......o", "xxx...o"], 3),
    # the same for o: it wins in column 6 rather than block x's three
    ([".......", ".......", ".......", "......o", "x.....o", "xxx...o"], 6),
    # player_1 (o) to move must block x's three in a row at column 3
    ([".......", ".......", ".......", ".......", "......o", "xxx...o"], 3),
])
def test_one_ply_wins_now_else_blocks(rows, expected):
    env = connect_four(1)
    env.reset(seed=0)
    set_board(env, rows)
    assert int(one_ply_opponent(env, torch.Generator().manual_seed(1))[0]) == expected


def test_one_ply_beats_random_and_the_record_counts_every_game():
    env = connect_four(200)
    record = play_games(env, AsPolicy(env, one_ply_opponent), random_opponent, seed=3)
    assert record.games == 200 and sum(sum(v) for v in record.by_seat.values()) == 200
    assert record.wins / record.games > 0.85, record


def test_a_random_policy_against_random_wins_about_half():
    env = connect_four(400)
    record = play_games(env, AsPolicy(env, random_opponent, seed=9), random_opponent, seed=4)
    assert 0.35 < record.wins / record.games < 0.65, record


def test_play_games_refuses_envs_that_are_not_turn_based_or_reset_themselves():
    with pytest.raises(ValueError, match="turn-based"):
        play_games(gpu_zoo.make("connect_four_v3", num_envs=2, device="cpu"), None, random_opponent)
    with pytest.raises(ValueError, match="turn-based"):
        play_games(gpu_zoo.make("simple_v3", num_envs=2, device="cpu", autoreset=False), None, random_opponent)
