"""Connect four, tic-tac-toe and go against PettingZoo's own envs, move for move over whole games.

Every face: ``env()`` (PettingZoo's wrappers, illegal moves included), ``raw_env()`` (legal moves),
and the batched face, whose games are each replayed in a PettingZoo env beside it. After every
move: ``agent_selection``, every agent's observation and mask, rewards, cumulative rewards,
terminations and truncations.
"""

import numpy as np
import pytest
import torch

from gpu_zoo.classic import connect_four_v3, go_v5, tictactoe_v3
from gpu_zoo.testing.check import assert_same_state
from tests.classic.helpers import pettingzoo_module, play_along, random_moves, scripted

OURS = {"connect_four_v3": connect_four_v3, "tictactoe_v3": tictactoe_v3, "go_v5": go_v5}
KWARGS = {"go_v5": dict(board_size=9)}  # the same arguments to ours and to PettingZoo's
GAMES = {"go_v5": 8}  # games per test (go's are long), else 40


def pair(env_id, face="env"):
    """Ours and PettingZoo's env of ``env_id``, built alike."""
    kw = KWARGS.get(env_id, {})
    return getattr(OURS[env_id], face)(**kw), getattr(pettingzoo_module(env_id), face)(**kw)


@pytest.mark.parametrize("env_id", sorted(OURS))
def test_random_legal_games_match(env_id):
    ours, ref = pair(env_id)
    for game in range(GAMES.get(env_id, 40)):
        play_along(ours, ref, random_moves(game), seed=game)


@pytest.mark.parametrize("env_id", sorted(OURS))
def test_random_games_with_illegal_moves_match(env_id):
    """PettingZoo's TerminateIllegalWrapper ends them: -1 to the mover, every agent terminated and truncated."""
    ours, ref = pair(env_id)
    for game in range(GAMES.get(env_id, 40)):
        play_along(ours, ref, random_moves(100 + game, illegal_share=0.3 if env_id != "go_v5" else 0.02), seed=game)


@pytest.mark.parametrize("env_id", sorted(OURS))
def test_raw_envs_match(env_id):
    ours, ref = pair(env_id, "raw_env")
    for game in range(min(10, GAMES.get(env_id, 40))):
        play_along(ours, ref, random_moves(200 + game), seed=game)


# Scripted connect four games: a vertical, horizontal and both diagonal wins, a filled column then a move into it.
C4_GAMES = {
    "vertical": [0, 1, 0, 1, 0, 1, 0],
    "horizontal by player_1": [0, 0, 1, 1, 2, 2, 6, 3, 5, 3],
    "rising diagonal": [0, 1, 1, 2, 2, 3, 2, 3, 3, 6, 3],
    "falling diagonal": [6, 5, 5, 4, 4, 3, 4, 3, 3, 0, 3],
    "full column, then into it": [4, 4, 4, 4, 4, 4, 4],
}


@pytest.mark.parametrize("game", sorted(C4_GAMES))
def test_scripted_connect_four_games_match(game):
    ref_mod = pettingzoo_module("connect_four_v3")
    moves = C4_GAMES[game]
    made = play_along(connect_four_v3.env(), ref_mod.env(), scripted(moves))
    assert made == len(moves), "the script should be played to its last move"


def test_a_drawn_connect_four_game_matches():
    """A full board without a line: found among random legal games, then replayed move for move."""
    ref_mod = pettingzoo_module("connect_four_v3")
    for seed in range(3000):
        ref = ref_mod.raw_env()
        ref.reset()
        rng, moves = np.random.default_rng(seed), []
        for _ in ref.agent_iter():
            obs, reward, term, trunc, _ = ref.last()
            if term or trunc:
                break
            moves.append(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
            ref.step(moves[-1])
        if len(moves) == 42 and reward == 0:
            break
    else:
        pytest.fail("no drawn game among 3000 random ones")
    assert play_along(connect_four_v3.env(), ref_mod.env(), scripted(moves)) == 42


@pytest.mark.parametrize("env_id", sorted(OURS))
def test_batched_games_each_match_pettingzoo(env_id):
    """Many games at once, each replayed in a PettingZoo env; illegal moves end them as PettingZoo's env() does."""
    ref_mod = pettingzoo_module(env_id)
    n, kw = 24, KWARGS.get(env_id, {})
    env = OURS[env_id].batched_env(n, device="cpu", autoreset=False, **kw)
    env.reset(seed=0)
    refs = [ref_mod.env(**kw) for _ in range(n)]
    for r in refs:
        r.reset()
    rng = np.random.default_rng(1)
    size = env.single_action_space("player").n
    over = np.zeros(n, bool)
    for move in range(2000):
        if over.all():
            break
        acts = torch.as_tensor(rng.integers(size, size=(n, 2)), dtype=torch.int32)
        legal = env.action_masks["player"].clone()
        for e in range(n):
            mover = int(env.current_player[e])
            assert over[e] or refs[e].agent_selection == refs[e].possible_agents[mover], f"env {e}, move {move}"
            if not over[e] and rng.random() < (0.8 if env_id != "go_v5" else 0.995):  # mostly legal moves
                acts[e, mover] = int(rng.choice(np.flatnonzero(legal[e, mover].numpy())))
        env.step({"player": acts})
        rew, term = env.rewards["player"].numpy(), env.terminated["player"].numpy()
        obs = env.obs["player"].numpy()
        for e in range(n):
            if over[e]:
                assert not rew[e].any() and not term[e].any(), "a finished game reported again"
                continue
            ref = refs[e]
            mover = ref.possible_agents.index(ref.agent_selection)
            ref.step(int(acts[e, mover]))
            for i, agent in enumerate(ref.possible_agents):
                assert rew[e, i] == ref.rewards[agent], f"env {e}, move {move}: {agent}'s reward"
                assert term[e, i] == ref.terminations[agent], f"env {e}, move {move}: {agent}'s termination"
                seen = ref.observe(agent)["observation"]
                assert np.array_equal(obs[e, i].reshape(seen.shape), seen), f"env {e}, move {move}: {agent}'s board"
            over[e] = all(ref.terminations.values())
            if not over[e]:
                turn = ref.possible_agents.index(ref.agent_selection)
                assert int(env.current_player[e]) == turn
                mask = env.action_masks["player"][e].numpy()
                assert np.array_equal(mask[turn], ref.observe(ref.agent_selection)["action_mask"])
                assert not mask[1 - turn].any(), "the waiting player's mask is zeros"
    assert over.all(), "every game should have ended"


@pytest.mark.parametrize("env_id", sorted(OURS))
def test_illegal_moves_agree_on_cpu_and_cuda(env_id, cuda_device):
    """Moves drawn over every column or square, the masks ignored: both targets end the same games alike."""
    kw = KWARGS.get(env_id, {})
    envs = [OURS[env_id].batched_env(3, device="cpu", **kw),
            OURS[env_id].batched_env(3, device=cuda_device, target="cuda", **kw)]
    for env in envs:
        env.reset(seed=3)
    gen = torch.Generator().manual_seed(5)
    size = envs[0].single_action_space("player").n
    for t in range(40):  # connect four's columns fill (illegal moves) or its lines form within 40 moves
        acts = torch.randint(0, size, (3, 2), generator=gen, dtype=torch.int32)
        for env in envs:
            env.step({"player": acts.to(env.device)})
        assert_same_state(*envs, f"step {t}")
    assert int(envs[0].state.ep_count.sum()) > 0


# ------------------------------------------------------------------ bad input
def test_raw_env_refuses_illegal_and_malformed_moves_and_changes_nothing():
    env = connect_four_v3.raw_env()
    env.reset()
    for _ in range(6):
        env.step(3)  # column 3 full
    before = env.batched.buffers.storage.clone()
    selection = env.agent_selection
    for bad, match in ((3, r"not legal.*legal actions are \[0, 1, 2, 4, 5, 6\]"), (7, "element of Discrete"),
                       (-1, "element of Discrete"), (2.0, "must be an int"), ("2", "must be an int"),
                       (True, "must be an int"), (np.array([2]), "must be an int")):
        with pytest.raises(ValueError, match=match):
            env.step(bad)
    assert torch.equal(env.batched.buffers.storage, before) and env.agent_selection == selection
    env.step(np.int64(2))  # NumPy ints are moves
    with pytest.raises(ValueError, match="unknown agent"):
        env.observe("player_2")
    with pytest.raises(ValueError, match="unknown agent"):
        env.action_space("nobody")


def test_a_finished_agent_steps_only_with_none():
    env = tictactoe_v3.raw_env()
    env.reset()
    for square in (0, 3, 1, 4, 2):  # player_1 wins along the first column of the picture
        env.step(square)
    assert env.terminations == {"player_1": True, "player_2": True}
    assert env._cumulative_rewards == {"player_1": 1.0, "player_2": -1.0}
    with pytest.raises(ValueError, match="only valid action is None"):
        env.step(5)
    env.step(None)
    env.step(None)
    assert env.agents == []


def test_turn_based_specs_refuse_the_parallel_face():
    from gpu_zoo.core.faces.pettingzoo import GpuZooParallelEnv, entry_points

    with pytest.raises(ValueError, match="turn-based"):
        entry_points(connect_four_v3.raw_env().batched.spec)
    with pytest.raises(ValueError, match="turn-based"):
        GpuZooParallelEnv(tictactoe_v3.raw_env().batched.spec)


def test_render_frames_have_pettingzoo_sizes():
    ours = connect_four_v3.env(render_mode="rgb_array", screen_scaling=4)
    ours.reset()
    ours.step(3)
    assert ours.render().shape == (344, 396, 3)
    ttt = tictactoe_v3.env(render_mode="rgb_array", screen_height=300)
    ttt.reset()
    assert ttt.render().shape == (300, 300, 3)
