"""Playing one of our turn-based envs beside PettingZoo's, move for move."""

import numpy as np

from tests.helpers import reference


def pettingzoo_module(env_id):
    return reference(f"pettingzoo.classic.{env_id}")


def assert_same_position(ours, ref, where):
    """``agent_selection``, agents, every dict PettingZoo keeps, and every agent's observation and mask."""
    assert ours.agent_selection == ref.agent_selection, f"{where}: agent_selection"
    assert ours.agents == ref.agents, f"{where}: agents"
    for attr in ("rewards", "_cumulative_rewards", "terminations", "truncations", "infos"):
        assert getattr(ours, attr) == getattr(ref, attr), f"{where}: {attr} {getattr(ours, attr)} {getattr(ref, attr)}"
    for agent in ref.possible_agents:
        a, b = ours.observe(agent), ref.observe(agent)
        for key in ("observation", "action_mask"):
            assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, f"{where}: {agent}'s {key} type"
            differs = np.argwhere(a[key] != b[key])[:4]
            assert not differs.size, f"{where}: {agent}'s {key} differs at {differs.tolist()}"


def play_along(ours, ref, moves, seed=0):
    """Both envs through one game: ``moves(agent, obs)`` picks each move; returns the number of moves made."""
    ours.reset(seed=seed)
    ref.reset(seed=seed)
    made = 0
    for agent in ref.agent_iter():
        assert_same_position(ours, ref, f"before move {made}")
        obs, _, term, trunc, _ = ref.last()
        assert ours.last()[1:4] == ref.last()[1:4], f"last() after {made} moves"
        action = None if term or trunc else moves(agent, obs)
        ours.step(action)
        ref.step(action)
        made += action is not None
    assert ours.agents == [] and ours.rewards == ref.rewards
    return made


def random_moves(seed, illegal_share=0.0):
    """Uniform legal moves; with ``illegal_share``, that share of moves drawn over the whole action space."""
    rng = np.random.default_rng(seed)

    def pick(agent, obs):
        if rng.random() < illegal_share:
            return int(rng.integers(obs["action_mask"].size))
        return int(rng.choice(np.flatnonzero(obs["action_mask"])))

    return pick


def scripted(sequence):
    it = iter(sequence)
    return lambda agent, obs: next(it)
