"""Chess against PettingZoo's chess_v6 (python-chess's rules), move for move over whole games.

Random games (legal moves; moves over the whole action space too), and scripted games for each
rule: castling on both sides, en passant, promotions and under-promotions, checkmate, stalemate,
insufficient material, threefold repetition and the fifty-move rule. After every move:
``agent_selection``, every agent's observation and mask, rewards, cumulative rewards,
terminations, truncations and infos. Every test shares one kernel configuration.
"""

import numpy as np
import pytest
import torch

from gpu_zoo.classic import chess_v6
from gpu_zoo.testing.check import assert_same_state
from tests.classic.helpers import pettingzoo_module, play_along, random_moves, scripted
from tests.helpers import reference

chess = reference("chess", "python-chess is PettingZoo's chess engine")
ILLEGAL = 0  # a1's first queen move points off the board: never legal, so it ends a scripted game


def ref_module():
    return pettingzoo_module("chess_v6")


def action_of(board, move):
    """PettingZoo's action for python-chess ``move`` on ``board`` (the mover's view: black's board mirrored)."""
    from pettingzoo.classic.chess import chess_utils

    if board.turn == chess.BLACK:
        move = chess_utils.mirror_move(move)
    col, row = chess_utils.square_to_coord(move.from_square)
    return (col * 8 + row) * 73 + chess_utils.get_move_plane(move)


def actions_of(sans):
    """The actions of a game written in SAN from the start position."""
    board, out = chess.Board(), []
    for san in sans:
        move = board.parse_san(san)
        out.append(action_of(board, move))
        board.push(move)
    return out


def ending(ref):
    outcome = ref.unwrapped.board.outcome(claim_draw=True)
    return outcome.termination.name if outcome else None


@pytest.mark.parametrize("first", [0, 10])
def test_random_legal_games_match(first):
    ours, ref = chess_v6.env(), ref_module().env()
    endings = set()
    for game in range(first, first + 10):
        play_along(ours, ref, random_moves(game), seed=game)
        endings.add(ending(ref))
    assert len(endings) >= 3, endings  # random games end every way: mates, stalemates and draws


def test_random_games_with_illegal_moves_match():
    """PettingZoo's TerminateIllegalWrapper ends them: -1 to the mover, every agent terminated and truncated."""
    ours, ref = chess_v6.env(), ref_module().env()
    for game in range(12):
        play_along(ours, ref, random_moves(100 + game, illegal_share=0.01 if game % 2 else 0.1), seed=game)


def test_raw_envs_match():
    ours, ref = chess_v6.raw_env(), ref_module().raw_env()
    for game in range(4):
        play_along(ours, ref, random_moves(200 + game), seed=game)


# ------------------------------------------------------------------ scripted games
LOYD_STALEMATE = ["e3", "a5", "Qh5", "Ra6", "Qxa5", "h5", "h4", "Rah6", "Qxc7", "f6", "Qxd7+", "Kf7", "Qxb7", "Qd3",
                  "Qxb8", "Qh7", "Qxc8", "Kg6", "Qe6"]
GAMES = {  # SAN from the start; None: the game goes on, and an illegal move ends it
    "castling, white king side, black queen side": (
        ["e4", "e5", "Nf3", "Nc6", "Bc4", "d6", "O-O", "Bg4", "d3", "Qd7", "Nc3", "O-O-O", "Be3", "Kb8"], None),
    "castling, white queen side, black king side": (
        ["d4", "d5", "Nc3", "Nf6", "Bf4", "e6", "Qd2", "Be7", "O-O-O", "O-O", "Kb1", "Re8"], None),
    "castling rights lost to king and rook moves": (
        ["e4", "e5", "Ke2", "Nf6", "Ke1", "Rg8", "Nf3", "Rh8", "Be2", "Bc5", "Rf1", "d6"], None),
    "en passant by both sides, and one let go": (
        ["e4", "Nf6", "e5", "d5", "exd6", "c5", "a3", "c4", "b4", "cxb3", "Nf3", "g5", "h4", "g4", "Nh2", "h5",
         "f4", "Bg7"], None),
    "promotions and under-promotions by captures": (
        ["a4", "h5", "a5", "h4", "a6", "h3", "axb7", "hxg2", "bxa8=N", "gxh1=R", "b4", "Nf6", "b5", "e5", "b6",
         "Be7", "b7", "O-O", "bxc8=B", "Qe8", "c4", "g5", "c5", "g4", "c6", "g3", "cxd7", "g2", "dxe8=R",
         "gxf1=Q+", "Kxf1", "Rxg1+", "Kxg1"], None),
    "under-promotions without captures": (
        ["a4", "b5", "axb5", "a6", "bxa6", "Nc6", "a7", "Rb8", "a8=N", "h5", "Nb6", "h4", "Nd5", "h3", "e3", "hxg2",
         "Nf3", "g1=B", "b4", "Bxh2", "b5", "Bg3"], None),
    "queen promotion by a capture": (
        ["h4", "g5", "hxg5", "Nf6", "gxf6", "Rg8", "fxe7", "Rg6", "exd8=Q+", "Kxd8"], None),
    "fool's mate": (["f3", "e5", "g4", "Qh4#"], "CHECKMATE"),
    "scholar's mate": (["e4", "e5", "Bc4", "Nc6", "Qh5", "Nf6", "Qxf7#"], "CHECKMATE"),
    "Loyd's stalemate": (LOYD_STALEMATE, "STALEMATE"),
    "threefold repetition, claimed a move early": (["Nf3", "Nf6", "Ng1", "Ng8", "Nf3", "Nf6", "Ng1"],
                                                  "THREEFOLD_REPETITION"),
}


@pytest.mark.parametrize("game", sorted(GAMES))
def test_scripted_games_match(game):
    sans, expected = GAMES[game]
    moves = actions_of(sans) + ([] if expected else [ILLEGAL])
    ref = ref_module().env()
    made = play_along(chess_v6.env(), ref, scripted(moves))
    assert made == len(moves), "the script should be played to its last move"
    assert ending(ref) == expected


def found_game(termination, seed=0, tries=2000):
    """A game of random legal moves (python-chess alone) that PettingZoo's rules end by ``termination``."""
    for s in range(seed, seed + tries):
        rng, board, moves = np.random.default_rng(s), chess.Board(), []
        while not (board.is_game_over() or board.can_claim_draw()):
            legal = list(board.legal_moves)
            move = legal[int(rng.integers(len(legal)))]
            moves.append(action_of(board, move))
            board.push(move)
        if board.outcome(claim_draw=True).termination.name == termination:
            return moves
    pytest.fail(f"no {termination} among {tries} random games")


@pytest.mark.parametrize("termination", ["INSUFFICIENT_MATERIAL", "STALEMATE", "CHECKMATE"])
def test_games_ending_each_way_match(termination):
    moves = found_game(termination)
    ref = ref_module().env()
    assert play_along(chess_v6.env(), ref, scripted(moves)) == len(moves)
    assert ending(ref) == termination


def shuffle_to_fifty_moves():
    """Knights and kings wander without a capture, a pawn move or a position seen twice: the clock reaches 99."""
    board, moves = chess.Board(), []
    for san in ["e4", "e5"]:  # room for the kings
        move = board.parse_san(san)
        moves.append(action_of(board, move))
        board.push(move)
    seen = {board._transposition_key()}
    while not board.can_claim_draw():
        for move in sorted(board.legal_moves, key=lambda m: m.uci()):
            if board.is_zeroing(move) or board.piece_type_at(move.from_square) not in (chess.KNIGHT, chess.KING):
                continue
            board.push(move)
            fresh = board._transposition_key() not in seen and not board.is_check()
            board.pop()
            if fresh:
                break
        else:
            raise AssertionError("the shuffle is stuck")
        moves.append(action_of(board, move))
        board.push(move)
        seen.add(board._transposition_key())
    return moves, board


def test_the_fifty_move_rule_matches():
    moves, board = shuffle_to_fifty_moves()
    assert board.can_claim_fifty_moves() and not board.can_claim_threefold_repetition()
    ref = ref_module().env()
    assert play_along(chess_v6.env(), ref, scripted(moves)) == len(moves)
    assert ending(ref) == "FIFTY_MOVES" and len(moves) == 2 + 99


# ------------------------------------------------------------------ the observation, read by hand
def test_planes_after_a_double_push_and_a_repetition():
    env = chess_v6.raw_env()
    env.reset()
    for action in actions_of(["e4"]):
        env.step(action)
    white, black = env.observe("player_0")["observation"], env.observe("player_1")["observation"]
    assert white.shape == (8, 8, 111) and white.dtype == bool
    # white's pawn just pushed two squares shows on e1 (row 7 of white's view), not on e4
    assert white[7, 4, 7] and not white[4, 4, 7] and not white[7, 4, 7 + 13]
    # black sees the board mirrored, its own pieces first: the pawn is the opponent's, on row 0
    assert black[0, 4, 13] and not black[3, 4, 13] and black[:, :, 4].all() and not white[:, :, 4].any()
    assert white[:, :, :4].all() and black[:, :, :4].all()  # every castling right
    for action in actions_of(["e4", "Nf6", "Nf3", "Ng8", "Ng1"])[1:]:
        env.step(action)
    obs = env.observe("player_1")["observation"]
    assert obs[:, :, 7 + 12].all(), "the position after Ng1 occurred before (after e4, without en passant)"


# ------------------------------------------------------------------ the batched face
def test_batched_games_each_match_pettingzoo():
    """Games at once, each replayed in a PettingZoo env; illegal moves end them as PettingZoo's env() does."""
    n = 6
    env = chess_v6.batched_env(n, device="cpu", autoreset=False)
    env.reset(seed=0)
    refs = [ref_module().env() for _ in range(n)]
    for r in refs:
        r.reset()
    rng = np.random.default_rng(1)
    over = np.zeros(n, bool)
    for move in range(1000):
        if over.all():
            break
        acts = torch.as_tensor(rng.integers(4672, size=(n, 2)), dtype=torch.int32)
        legal = env.action_masks["player"].clone()
        for e in range(n):
            mover = int(env.current_player[e])
            if not over[e] and rng.random() < 0.997:
                acts[e, mover] = int(rng.choice(np.flatnonzero(legal[e, mover].numpy())))
        env.step({"player": acts})
        rew, term = env.rewards["player"].numpy(), env.terminated["player"].numpy()
        obs = env.obs["player"].numpy()
        for e in range(n):
            if over[e]:
                continue
            ref = refs[e]
            ref.step(int(acts[e, ref.possible_agents.index(ref.agent_selection)]))
            for i, agent in enumerate(ref.possible_agents):
                assert rew[e, i] == ref.rewards[agent], f"env {e}, move {move}: {agent}'s reward"
                assert term[e, i] == ref.terminations[agent], f"env {e}, move {move}: {agent}'s termination"
                seen = ref.observe(agent)["observation"]
                assert np.array_equal(obs[e, i].reshape(seen.shape), seen), f"env {e}, move {move}: {agent}'s planes"
            over[e] = all(ref.terminations.values())
            if not over[e]:
                turn = ref.possible_agents.index(ref.agent_selection)
                mask = env.action_masks["player"][e].numpy()
                assert np.array_equal(mask[turn], ref.observe(ref.agent_selection)["action_mask"])
                assert not mask[1 - turn].any(), "the waiting player's mask is zeros"
    assert over.all(), "every game should have ended"


def test_illegal_moves_agree_on_cpu_and_cuda(cuda_device):
    """Mostly legal moves, a few drawn over the whole action space: both targets play and end the games alike."""
    envs = [chess_v6.batched_env(2, device="cpu"), chess_v6.batched_env(2, device=cuda_device, target="cuda")]
    for env in envs:
        env.reset(seed=3)
    gen = torch.Generator().manual_seed(5)
    for t in range(16):
        acts = envs[0].sample_actions(gen)["player"]
        if t % 5 == 4:
            acts = torch.randint(0, 4672, (2, 2), generator=gen, dtype=torch.int32)
        for env in envs:
            env.step({"player": acts.to(env.device)})
        assert_same_state(*envs, f"step {t}")
    assert int(envs[0].state.ep_count.sum()) > 0


# ------------------------------------------------------------------ bad input
def test_raw_env_refuses_illegal_and_malformed_moves_and_changes_nothing():
    env = chess_v6.raw_env()
    env.reset()
    before = env.batched.buffers.storage.clone()
    for bad, match in ((ILLEGAL, "not legal"), (4672, "element of Discrete"), (-1, "element of Discrete"),
                       (2.0, "must be an int"), ("2", "must be an int"), (True, "must be an int"),
                       (np.array([2]), "must be an int")):
        with pytest.raises(ValueError, match=match):
            env.step(bad)
    assert torch.equal(env.batched.buffers.storage, before) and env.agent_selection == "player_0"
    env.step(np.int64(actions_of(["e4"])[0]))  # NumPy ints are moves
    assert env.agent_selection == "player_1"
    with pytest.raises(ValueError, match="unknown agent"):
        env.observe("player_2")
    with pytest.raises(ValueError, match="unknown agent"):
        env.action_space("nobody")
