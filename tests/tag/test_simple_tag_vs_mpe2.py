"""simple_tag_v3 against MPE2's own: same state, same actions, same observations and rewards.

Both start from MPE2's reset state (copied into ours), then take the same random actions for a
whole episode, in both action modes and several agent counts. The state is double precision as
in MPE2, so observations match bit for bit; rewards differ only by their rounding to float32.
"""

import numpy as np
import pytest

from gpu_zoo.tag import simple_tag_v3
from tests.helpers import reference

mpe2_simple_tag = reference("mpe2.simple_tag_v3")

CONFIGS = [
    dict(num_good=1, num_adversaries=3, num_obstacles=2),
    dict(num_good=2, num_adversaries=2, num_obstacles=1),
    dict(num_good=3, num_adversaries=4, num_obstacles=0),
]
PARTIAL = [  # MPE2's partial observability: fewer slots than entities, more (zero slots), landmarks only
    dict(num_good=2, num_adversaries=3, num_obstacles=2, num_agent_neighbors=2, num_landmark_neighbors=1),
    dict(num_good=1, num_adversaries=2, num_obstacles=1, num_agent_neighbors=5, num_landmark_neighbors=3),
    dict(num_good=2, num_adversaries=2, num_obstacles=3, num_landmark_neighbors=2),
]


def copy_state(ref, ours):
    world = ref.unwrapped.world
    f = ours.batched.state
    entities = world.agents + world.landmarks
    f.pos_x[0] = f.pos_x.new_tensor([ent.state.p_pos[0] for ent in entities])
    f.pos_y[0] = f.pos_y.new_tensor([ent.state.p_pos[1] for ent in entities])
    f.vel_x[0] = f.vel_x.new_tensor([ag.state.p_vel[0] for ag in world.agents])
    f.vel_y[0] = f.vel_y.new_tensor([ag.state.p_vel[1] for ag in world.agents])


@pytest.mark.parametrize("cfg, continuous", [(c, m) for c in range(len(CONFIGS)) for m in (False, True)]
                         + [(len(CONFIGS) + c, False) for c in range(len(PARTIAL))])
def test_matches_mpe2_step_for_step(cfg, continuous):
    kw = dict(**(CONFIGS + PARTIAL)[cfg], max_cycles=25, continuous_actions=continuous)
    ref = mpe2_simple_tag.parallel_env(**kw)
    ours = simple_tag_v3.parallel_env(**kw)
    ref.reset(seed=cfg)
    ours.reset(seed=cfg)
    assert ours.possible_agents == ref.possible_agents
    for a in ref.possible_agents:
        assert ours.observation_space(a).shape == ref.observation_space(a).shape
        assert ours.action_space(a) == ref.action_space(a)
    copy_state(ref, ours)
    rng = np.random.default_rng(cfg)
    steps = 0
    while ref.agents:
        actions = {}
        for a in ref.agents:
            sp = ref.action_space(a)
            actions[a] = rng.random(5, dtype=np.float32) if continuous else int(rng.integers(sp.n))
        o1, r1, te1, tr1, _ = ref.step(actions)
        o2, r2, te2, tr2, _ = ours.step(actions)
        steps += 1
        assert set(o1) == set(o2)
        for a in o1:
            np.testing.assert_array_equal(o2[a], o1[a], err_msg=f"obs of {a} at step {steps}")
            assert r2[a] == pytest.approx(r1[a], rel=1e-6, abs=1e-7), f"reward of {a} at step {steps}"
        assert te1 == te2 and tr1 == tr2
        np.testing.assert_array_equal(ours.state(), ref.state())
    assert steps == 25 and ours.agents == []


def test_start_ranges_match_mpe2():
    import gpu_zoo

    env = gpu_zoo.make("simple_tag_v3", num_envs=256, device="cpu")
    env.reset(seed=0)
    A = 4
    pos = env.state.pos_x.numpy()
    assert -1 <= pos[:, :A].min() and pos[:, :A].max() <= 1 and pos[:, :A].std() > 0.5
    assert -0.9 <= pos[:, A:].min() and pos[:, A:].max() <= 0.9
    assert not env.state.vel_x.any()


def test_terminate_on_success():
    ours = simple_tag_v3.parallel_env(num_good=1, num_adversaries=1, num_obstacles=0, terminate_on_success=True)
    ours.reset(seed=0)
    f = ours.batched.state
    f.pos_x[0] = f.pos_x.new_tensor([0.0, 0.05])
    f.pos_y[0] = f.pos_y.new_tensor([0.0, 0.0])
    _, rew, term, trunc, _ = ours.step({"adversary_0": 0, "agent_0": 0})
    assert all(term.values()) and not any(trunc.values())
    assert rew["adversary_0"] == 10.0 and rew["agent_0"] == -10.0


def test_unsupported_mpe2_options_are_refused():
    with pytest.raises(NotImplementedError, match="curriculum"):
        simple_tag_v3.parallel_env(curriculum=True)
    with pytest.raises(ValueError, match="num_agent_neighbors"):
        simple_tag_v3.parallel_env(num_agent_neighbors=0)
