"""The MPE scenarios against MPE2's own: same start, same actions, same episodes to the bit.

Each case starts both envs, then copies MPE2's start state (every entity's position, every
agent's velocity, the goals and types drawn) into ours: the two draw their starts from
different generators, and the copy is what aligns them. collect_treasure also draws during an
episode (a picked-up treasure's return): ours steps first, and MPE2's generator is replaced by
one handing out the places and types ours drew. Both then take the same random actions for
whole episodes, in both action modes and several sizes; the state is double precision as in MPE2,
so observations and ``state()`` match bit for bit from the first step on, and rewards to their
rounding to float32.
Three episodes per case, each reset and aligned anew.
"""

import importlib

import numpy as np
import pytest

from tests.helpers import reference

CASES = {  # name: (env id, arguments, the action modes compared)
    "simple": ("simple_v3", {}, (False, True)),
    "spread": ("simple_spread_v3", {}, (False, True)),
    "adversary": ("simple_adversary_v3", {}, (False, True)),
    "adversary_nearest": ("simple_adversary_v3", dict(N=3, num_agent_neighbors=2, num_landmark_neighbors=4), (False,)),
    "push": ("simple_push_v3", {}, (False, True)),
    "speaker_listener": ("simple_speaker_listener_v4", {}, (False, True)),
    "reference": ("simple_reference_v3", {}, (False, True)),
    "reference_local": ("simple_reference_v3", dict(local_ratio=0.8), (False,)),
    "crypto": ("simple_crypto_v3", {}, (False, True)),
    "formation": ("simple_formation_v1", {}, (False, True)),
    "formation_6": ("simple_formation_v1", dict(N=6, terminate_on_success=True), (False,)),
    "line": ("simple_line_v1", {}, (False, True)),
    "line_7": ("simple_line_v1", dict(N=7, terminate_on_success=True), (False,)),
    "world_comm": ("simple_world_comm_v3", {}, (False, True)),
    # one predator (no followers), more prey, forests and food, no obstacle
    "treasure": ("collect_treasure_v1", {}, (False, True)),
    # crowded: pickups and deliveries every few steps
    "treasure_crowded": ("collect_treasure_v1", dict(num_collectors=3, num_deposits=3, num_treasures=12), (False,)),
    "world_comm_alone": ("simple_world_comm_v3", dict(num_adversaries=1, num_good=3, num_obstacles=0, num_food=3,
                                                      num_forests=3), (False, True)),
    # partial observability with fewer agents observed than there are and more landmarks (zero slots)
    "spread_nearest": ("simple_spread_v3", dict(N=4, local_ratio=0.25, num_agent_neighbors=2, num_landmark_neighbors=5,
                                                terminate_on_success=True), (False,)),
}


def align(ref, ours):
    world = ref.unwrapped.world
    f = ours.batched.state
    entities = world.agents + world.landmarks
    f.pos_x[0] = f.pos_x.new_tensor([ent.state.p_pos[0] for ent in entities])
    f.pos_y[0] = f.pos_y.new_tensor([ent.state.p_pos[1] for ent in entities])
    f.vel_x[0] = f.vel_x.new_tensor([ag.state.p_vel[0] for ag in world.agents])
    f.vel_y[0] = f.vel_y.new_tensor([ag.state.p_vel[1] for ag in world.agents])
    first = len(world.agents)  # entity index of the first landmark
    if hasattr(f, "goal") and f.goal.dim() == 2:  # each agent's goal landmark (for the other agent)
        f.goal[0] = f.goal.new_tensor([first + world.landmarks.index(ag.goal_b) for ag in world.agents])
    elif hasattr(f, "goal"):  # the landmark the scenario drew as the goal
        goal = world.agents[0].goal_b if hasattr(world.agents[0], "goal_b") else world.agents[0].goal_a
        f.goal[0] = first + world.landmarks.index(goal)
    if hasattr(f, "target_x") and ref.unwrapped.scenario.__dict__.get("_expected_positions") is not None:
        points = ref.unwrapped.scenario._expected_positions  # the line's, drawn at the reset
        f.target_x[0] = f.target_x.new_tensor([q[0] for q in points])
        f.target_y[0] = f.target_y.new_tensor([q[1] for q in points])
    if hasattr(f, "treasure_type"):
        f.treasure_type[0] = f.treasure_type.new_tensor([lm.type for lm in world.landmarks])
    if hasattr(f, "key"):  # the landmark whose colour is the key
        key = world.agents[-1].key
        f.key[0] = first + next(j for j, lm in enumerate(world.landmarks) if np.array_equal(lm.color, key))


class _Returns:
    """Hands MPE2's collect_treasure the draws ours made: each returning treasure's place and type, in order."""

    def __init__(self, draws):
        self.draws = list(draws)

    def uniform(self, low=0.0, high=1.0, size=None):
        if size is None:
            return 0.0  # MPE2's respawn_prob check (1.0): always return
        return self.draws.pop(0)

    def integers(self, low, high=None):
        return self.draws.pop(0)


def hand_over_returns(ref, ours, gone):
    """collect_treasure draws a returning treasure's place from its own generator: give it the ones ours drew."""
    f, n = ours.batched.state, len(ref.unwrapped.world.agents)
    draws = []
    for t in gone.nonzero().flatten().tolist():
        draws += [np.array([float(f.pos_x[0, n + t]), float(f.pos_y[0, n + t])]), int(f.treasure_type[0, t])]
    ref.unwrapped.world._np_random = _Returns(draws)


def episode(ref, ours, rng, continuous: bool, label: str) -> int:
    steps = 0
    while ref.agents:
        actions = {a: rng.random(ref.action_space(a).shape, dtype=np.float32) if continuous
                   else int(rng.integers(ref.action_space(a).n)) for a in ref.agents}
        gone = ours.batched.state.treasure_alive[0] == 0 if hasattr(ours.batched.state, "treasure_alive") else None
        o2, r2, te2, tr2, _ = ours.step(actions)
        if gone is not None:
            hand_over_returns(ref, ours, gone)
        o1, r1, te1, tr1, _ = ref.step(actions)
        steps += 1
        where = f"{label}, step {steps}"
        assert set(o1) == set(o2), where
        for a in o1:
            np.testing.assert_array_equal(o2[a], o1[a], err_msg=f"obs of {a}, {where}")
            assert r2[a] == pytest.approx(r1[a], rel=1e-6, abs=1e-7), f"reward of {a}, {where}"
        assert te1 == te2 and tr1 == tr2, where
        np.testing.assert_array_equal(ours.state(), ref.state(), err_msg=where)
    assert ours.agents == []
    return steps


@pytest.mark.parametrize("case, continuous", [(c, m) for c in sorted(CASES) for m in CASES[c][2]])
def test_matches_mpe2_over_whole_episodes(case, continuous):
    env_id, kw, _ = CASES[case]
    kw = dict(kw, max_cycles=kw.get("max_cycles", 25), continuous_actions=continuous)
    ref = reference(f"mpe2.{env_id}").parallel_env(**kw)
    ours = importlib.import_module(f"gpu_zoo.mpe.{env_id}").parallel_env(**kw)
    assert ours.possible_agents == ref.possible_agents
    for a in ref.possible_agents:
        assert ours.observation_space(a) == ref.observation_space(a)
        assert ours.action_space(a) == ref.action_space(a)
    rng = np.random.default_rng(len(case))
    lengths = []
    for seed in range(3):
        ref.reset(seed=seed)
        ours.reset(seed=seed)
        align(ref, ours)
        lengths.append(episode(ref, ours, rng, continuous, f"{case}, episode {seed}"))
    if kw.get("terminate_on_success"):
        return
    assert lengths == [kw["max_cycles"]] * 3


def test_spread_ends_once_every_landmark_is_covered():
    """terminate_on_success: MPE2's is_terminal, once every landmark has an agent closer than 0.1."""
    env_id, kw, _ = CASES["spread_nearest"]
    ref = reference(f"mpe2.{env_id}").parallel_env(**kw)
    ours = importlib.import_module(f"gpu_zoo.mpe.{env_id}").parallel_env(**kw)
    for covered in (3, 4):
        ref.reset(seed=0)
        world = ref.unwrapped.world
        for agent, landmark in zip(world.agents[:covered], world.landmarks, strict=False):
            agent.state.p_pos = landmark.state.p_pos + 0.01
            agent.state.p_vel[:] = 0.0
        ours.reset(seed=0)
        align(ref, ours)
        actions = {a: 0 for a in ref.agents}
        _, r1, te1, tr1, _ = ref.step(actions)
        _, r2, te2, tr2, _ = ours.step(actions)
        assert te2 == te1 and tr2 == tr1 and all(te2.values()) == (covered == 4)
        assert r2 == pytest.approx(r1, rel=1e-6)


def test_crypto_guess_of_all_zeros_pays_nothing():
    """simple_crypto: a word of zeros (continuous actions) is no guess, in MPE2's rewards and ours."""
    kw = dict(continuous_actions=True)
    ref = reference("mpe2.simple_crypto_v3").parallel_env(**kw)
    ours = importlib.import_module("gpu_zoo.mpe.simple_crypto_v3").parallel_env(**kw)
    for silent in (("eve_0",), ("bob_0",), ("eve_0", "bob_0")):
        ref.reset(seed=2)
        ours.reset(seed=2)
        align(ref, ours)
        actions = {a: np.zeros(4, np.float32) if a in silent else np.full(4, 0.3, np.float32) for a in ref.agents}
        _, r1, *_ = ref.step(actions)
        _, r2, *_ = ours.step(actions)
        assert r2 == pytest.approx(r1, rel=1e-6, abs=1e-7), silent
        assert any(r != 0.0 for r in r1.values()) or silent == ("eve_0", "bob_0")


@pytest.mark.parametrize("case", ["formation_6", "line_7"])
def test_shapes_end_once_every_agent_is_on_its_point(case):
    """terminate_on_success: MPE2's is_terminal, once every matched distance is under 0.05 (agents given in reverse)."""
    env_id, kw, _ = CASES[case]
    ref = reference(f"mpe2.{env_id}").parallel_env(**kw)
    ours = importlib.import_module(f"gpu_zoo.mpe.{env_id}").parallel_env(**kw)
    for offset in (0.01, 0.2):
        ref.reset(seed=3)
        world = ref.unwrapped.world
        if env_id == "simple_line_v1":
            points = ref.unwrapped.scenario._expected_positions
        else:
            centre = world.landmarks[0].state.p_pos
            n = kw["N"]
            points = [centre + 0.5 * np.array([np.cos(0.3 + i * 2 * np.pi / n), np.sin(0.3 + i * 2 * np.pi / n)])
                      for i in range(n)]
        for agent, point in zip(world.agents, points[::-1], strict=True):
            agent.state.p_pos = point + offset
            agent.state.p_vel[:] = 0.0
        ours.reset(seed=3)
        align(ref, ours)
        actions = {a: 0 for a in ref.agents}
        _, r1, te1, tr1, _ = ref.step(actions)
        _, r2, te2, tr2, _ = ours.step(actions)
        assert te2 == te1 and tr2 == tr1 and all(te2.values()) == (offset < 0.05)
        assert r2 == pytest.approx(r1, rel=1e-6)


def test_treasure_pickup_return_and_delivery_as_mpe2():
    """collect_treasure: a pickup, the treasure's return and a delivery, as MPE2's at each step.

    A collector put on a treasure picks it up; the next step the treasure returns and the
    collector, put on its type's deposit, delivers it.
    """
    env_id, kw, _ = CASES["treasure"]
    ref = reference(f"mpe2.{env_id}").parallel_env(**kw)
    ours = importlib.import_module(f"gpu_zoo.mpe.{env_id}").parallel_env(**kw)
    ref.reset(seed=4)
    world = ref.unwrapped.world
    first, deposit = world.landmarks[0], world.agents[6 + world.landmarks[0].type]
    world.agents[0].state.p_pos = first.state.p_pos.copy()
    ours.reset(seed=4)
    align(ref, ours)
    f = ours.batched.state
    for step in range(3):
        if step == 1:  # carry it onto the deposit of its type
            world.agents[0].state.p_pos = deposit.state.p_pos.copy()
            f.pos_x[0, 0], f.pos_y[0, 0] = float(deposit.state.p_pos[0]), float(deposit.state.p_pos[1])
        actions = {a: 0 for a in ref.agents}
        gone = f.treasure_alive[0] == 0
        o2, r2, *_ = ours.step(actions)
        hand_over_returns(ref, ours, gone)
        o1, r1, *_ = ref.step(actions)
        for a in o1:
            np.testing.assert_array_equal(o2[a], o1[a], err_msg=f"obs of {a}, step {step}")
        assert r2 == pytest.approx(r1, rel=1e-6, abs=1e-7), step
        if step == 0:
            assert int(f.holding[0, 0]) == first.type and not bool(f.treasure_alive[0, 0])
            assert r1["deposit_0"] >= 5.0 - 1.0  # the pickup's +5, less the deposit's shaping
        if step == 1:
            assert bool(f.treasure_alive[0, 0]) and int(f.holding[0, 0]) == -1  # returned, and delivered
            assert r1["collector_0"] >= 5.0 - 1.0
