"""Rock-paper-scissors against PettingZoo's: its AEC form move for move, its parallel form round for round."""

import numpy as np
import pytest
import torch

from gpu_zoo.classic import rps_v2
from tests.classic.helpers import pettingzoo_module

CONFIGS = [dict(), dict(num_actions=5, max_cycles=9), dict(num_actions=7, max_cycles=4)]


@pytest.mark.parametrize("kw", CONFIGS, ids=str)
@pytest.mark.parametrize("face", ["env", "raw_env"])
def test_aec_games_match(kw, face):
    ref_mod = pettingzoo_module("rps_v2")
    ours, ref = getattr(rps_v2, face)(**kw), getattr(ref_mod, face)(**kw)
    rng = np.random.default_rng(0)
    for game in range(5):
        ours.reset(seed=game)
        ref.reset(seed=game)
        for agent in ref.agent_iter():
            assert ours.agent_selection == agent and ours.agents == ref.agents
            for attr in ("rewards", "_cumulative_rewards", "terminations", "truncations", "infos"):
                assert getattr(ours, attr) == getattr(ref, attr), attr
            for a in ref.possible_agents:
                mine, theirs = ours.observe(a), ref.observe(a)
                assert mine.dtype == theirs.dtype and mine.shape == theirs.shape and mine == theirs
            assert ours.last()[1:] == ref.last()[1:]
            _, _, term, trunc, _ = ref.last()
            move = None if term or trunc else int(rng.integers(ref.action_space(agent).n))
            ours.step(move)
            ref.step(move)
        assert ours.agents == []


@pytest.mark.parametrize("kw", CONFIGS, ids=str)
def test_parallel_games_match(kw):
    ref_mod = pettingzoo_module("rps_v2")
    ours, ref = rps_v2.parallel_env(**kw), ref_mod.parallel_env(**kw)
    rng = np.random.default_rng(1)
    assert ours.possible_agents == ref.possible_agents
    for a in ref.possible_agents:
        assert ours.observation_space(a) == ref.observation_space(a) and ours.action_space(a) == ref.action_space(a)
    for game in range(3):
        outs = ours.reset(seed=game), ref.reset(seed=game)
        assert outs[0][0] == outs[1][0]
        while ref.agents:
            moves = {a: int(rng.integers(ref.action_space(a).n)) for a in ref.agents}
            mine, theirs = ours.step(moves), ref.step(moves)
            assert mine == theirs, (mine, theirs)
        assert ours.agents == []


def test_the_batched_face_plays_a_round_a_step():
    env = rps_v2.batched_env(4, device="cpu", num_actions=5, max_cycles=3)
    obs = env.reset(seed=0)
    assert (obs["player"] == 5).all(), "before the first round each player sees 'none'"
    moves = torch.tensor([[0, 2], [2, 0], [1, 1], [3, 4]], dtype=torch.int32)
    obs, rew, term, trunc, _ = env.step({"player": moves})
    # rock beats scissors, a draw, spock (3) against lizard (4): odd sum, the larger wins
    assert rew["player"].tolist() == [[1, -1], [-1, 1], [0, 0], [-1, 1]]
    assert obs["player"][:, :, 0].tolist() == [[2, 0], [0, 2], [1, 1], [4, 3]]
    for _ in range(2):
        _, _, term, trunc, info = env.step({"player": moves})
    assert trunc["player"].all() and not term["player"].any() and info["done"].all()


@pytest.mark.parametrize("bad", [2, 4, 0, 3.0])
def test_num_actions_is_an_odd_int_of_at_least_3(bad):
    with pytest.raises(ValueError, match="num_actions"):
        rps_v2.env(num_actions=bad)
