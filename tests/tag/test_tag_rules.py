"""Tag (continuous) rules on hand-built states: exact rewards, flags and observations."""

import math

import pytest
import torch

from tests.helpers import noop_actions, tag_env

# Agents 0, 1 are taggers; 2, 3, 4 runners. Speeds start at 0 and no-op actions keep them there.


def place(env, xs, ys, e=0):
    env.state.pos_x[e] = torch.tensor(xs, dtype=torch.float32)
    env.state.pos_y[e] = torch.tensor(ys, dtype=torch.float32)


@pytest.fixture
def env():
    env = tag_env(num_envs=1, tagging_distance=0.05, end_of_game_reward_for_runner=0.0)  # reach 0.5
    env.reset(seed=0)
    return env


def test_tag_just_inside_the_distance(env):
    place(env, [5.0, 9.0, 5.0 + 0.499, 1.0, 1.0], [5.0, 9.0, 5.0, 8.0, 2.0])
    _, rew, term, trunc, _ = env.step(noop_actions(env))
    assert rew["runner"][0].tolist() == [-1.0, 0.0, 0.0]
    assert rew["tagger"][0].tolist() == [1.0, 0.0]
    assert term["runner"][0].tolist() == [True, False, False]
    assert not env.state.alive[0, 2]
    assert env.state.runners_left[0] == 2


def test_no_tag_just_outside_the_distance(env):
    place(env, [5.0, 9.0, 5.0 + 0.501, 1.0, 1.0], [5.0, 9.0, 5.0, 8.0, 2.0])
    _, rew, term, _, _ = env.step(noop_actions(env))
    assert rew["runner"][0].tolist() == [0.0, 0.0, 0.0]
    assert rew["tagger"][0].tolist() == [0.0, 0.0]
    assert not term["runner"].any()


def test_one_tagger_tagging_two_runners_is_credited_twice(env):
    place(env, [5.0, 9.0, 5.2, 4.8, 1.0], [5.0, 9.0, 5.0, 5.1, 2.0])
    _, rew, term, _, info = env.step(noop_actions(env))
    assert rew["tagger"][0].tolist() == [2.0, 0.0]
    assert rew["runner"][0].tolist() == [-1.0, -1.0, 0.0]
    assert int(env.state.tags[0, 0]) == 2


def test_a_runner_is_tagged_by_its_nearest_tagger(env):
    place(env, [5.0, 5.3, 5.2, 1.0, 1.0], [5.0, 5.0, 5.0, 8.0, 2.0])
    _, rew, _, _, _ = env.step(noop_actions(env))
    assert rew["tagger"][0].tolist() == [0.0, 1.0]


def test_tagging_every_runner_terminates_everyone(env):
    place(env, [5.0, 2.0, 5.1, 4.9, 2.1], [5.0, 2.0, 5.0, 5.0, 2.0])
    _, rew, term, trunc, info = env.step(noop_actions(env))
    assert bool(info["done"][0])
    assert term["runner"][0].all() and term["tagger"][0].all()
    assert not trunc["tagger"].any()
    # Auto-reset: a fresh episode with everyone back in the game.
    assert env.state.alive[0].all() and int(env.state.t[0]) == 0
    assert int(env.state.ep_count[0]) == 1 and int(env.state.last_len[0]) == 1


def test_edge_is_clipped_with_penalty(env):
    env.set_params(edge_hit_penalty=-0.25)
    place(env, [9.9, 1.0, 3.0, 3.0, 3.0], [5.0, 1.0, 8.0, 2.0, 5.0])
    env.state.heading[0, 0] = 0.0  # facing +x
    env.state.speed[0, 0] = 0.5
    _, rew, _, _, _ = env.step(noop_actions(env))
    assert float(env.state.pos_x[0, 0]) == pytest.approx(10.0)
    assert float(rew["tagger"][0, 0]) == pytest.approx(-0.25)
    assert float(rew["tagger"][0, 1]) == 0.0


def test_acceleration_turn_and_speed_limit():
    env = tag_env(num_envs=1, max_speed=0.3, tagging_distance=0.0)
    env.reset(seed=0)
    place(env, [5.0, 1.0, 8.0, 8.0, 2.0], [5.0, 1.0, 8.0, 2.0, 8.0])
    env.state.heading[0, 0] = 0.0
    acts = noop_actions(env)
    acts["tagger"][0, 0] = torch.tensor([10, 10])  # max acceleration 1.0, max turn +pi/2
    env.step(acts)
    assert float(env.state.heading[0, 0]) == pytest.approx(math.pi / 2, abs=1e-6)
    assert float(env.state.speed[0, 0]) == pytest.approx(0.3)  # clipped to max_speed * skill
    assert float(env.state.acceleration[0, 0]) == 0.0  # reset at the limit
    assert float(env.state.pos_y[0, 0]) == pytest.approx(5.3, abs=1e-5)


def test_end_of_game_reward_and_truncation():
    env = tag_env(num_envs=1, tagging_distance=0.0, end_of_game_reward_for_runner=2.5)
    env.reset(seed=0)
    for _ in range(5):
        _, rew, term, trunc, _ = env.step(noop_actions(env))
        assert not trunc["runner"].any()
    _, rew, term, trunc, info = env.step(noop_actions(env))
    assert rew["runner"][0].tolist() == [2.5, 2.5, 2.5]
    assert trunc["runner"][0].all() and trunc["tagger"][0].all() and not term["runner"].any()
    assert torch.equal(env.state.last_ret[0, 2:], torch.full((3,), 2.5))


def test_full_observation_layout(env):
    place(env, [5.0, 9.0, 1.0, 1.0, 1.0], [5.0, 9.0, 1.0, 8.0, 2.0])
    obs, *_ = env.step(noop_actions(env))
    o = obs["tagger"][0, 0]
    gi = env.layout.groups["tagger"]
    start, k = gi.obs_offsets["rel_x"]
    scale = math.sqrt(2.0) * 10.0
    assert o[start:start + k].tolist() == pytest.approx([4.0 / scale, -4.0 / scale, -4.0 / scale, -4.0 / scale])
    s, n = gi.obs_offsets["is_tagger"]
    assert o[s:s + n].tolist() == [1.0, 0.0, 0.0, 0.0]
    s, _ = gi.obs_offsets["time"]
    assert float(o[s]) == pytest.approx(1 / 6)


def test_tagged_runner_gets_a_real_terminal_observation_then_only_who_is_who(env):
    """WarpDrive's full observation of an agent out of the game: zeros but the is_tagger and alive blocks."""
    place(env, [5.0, 9.0, 5.1, 1.0, 1.0], [5.0, 9.0, 5.0, 8.0, 2.0])
    obs, *_ = env.step(noop_actions(env))
    assert obs["runner"][0, 0].any()
    assert obs["tagger"][0, 0, 6 * 4:7 * 4].tolist() == [1.0, 1.0, 1.0, 1.0]  # it was tagged after the look
    obs, *_ = env.step(noop_actions(env))
    blocks = obs["runner"][0, 0, :28].reshape(7, 4)  # others: taggers 0, 1 and runners 1, 2
    assert not blocks[:5].any() and obs["runner"][0, 0, 28] == 0.0  # relative features and time
    assert blocks[5].tolist() == [1.0, 1.0, 0.0, 0.0] and blocks[6].tolist() == [1.0, 1.0, 1.0, 1.0]
    assert obs["tagger"][0, 0, 6 * 4:7 * 4].tolist() == [1.0, 0.0, 1.0, 1.0]  # now out of the game
    assert obs["runner"][0, 1].any()


def test_with_nearest_agents_an_agent_out_of_the_game_sees_zeros():
    env = tag_env(num_envs=1, tagging_distance=0.05, use_full_observation=False, num_other_agents_observed=2)
    env.reset(seed=0)
    place(env, [5.0, 9.0, 5.1, 1.0, 1.0], [5.0, 9.0, 5.0, 8.0, 2.0])
    obs, *_ = env.step(noop_actions(env))
    assert obs["runner"][0, 0].any()
    obs, *_ = env.step(noop_actions(env))
    assert not obs["runner"][0, 0].any() and obs["runner"][0, 1].any()


def test_a_tagged_runner_stops_at_the_next_step_facing_heading_0(env):
    place(env, [5.0, 9.0, 5.1, 1.0, 1.0], [5.0, 9.0, 5.0, 8.0, 2.0])
    env.state.speed[0, 2], env.state.heading[0, 2] = 0.2, 1.0
    env.step(noop_actions(env))
    assert not env.state.alive[0, 2] and float(env.state.speed[0, 2]) == pytest.approx(0.2)  # moved, then tagged
    x = float(env.state.pos_x[0, 2])
    env.step(noop_actions(env))
    assert float(env.state.speed[0, 2]) == 0.0 and float(env.state.heading[0, 2]) == 0.0
    assert float(env.state.pos_x[0, 2]) == x


def test_own_state_is_observed_only_when_asked():
    plain = tag_env(num_envs=1)
    own = tag_env(num_envs=1, observe_own_state=True)
    D = plain.single_observation_space("tagger").shape[0]
    assert own.single_observation_space("tagger").shape[0] == D + 5
    own.reset(seed=0)
    s = own.state
    s.pos_x[0, 1], s.pos_y[0, 1], s.heading[0, 1] = 2.5, 7.5, math.pi / 2
    obs, *_ = own.step(noop_actions(own))
    x, y = float(s.pos_x[0, 1]), float(s.pos_y[0, 1])
    expect = [x / 10.0, y / 10.0, float(s.speed[0, 1]), math.cos(math.pi / 2), 1.0]
    assert obs["tagger"][0, 1, D:].tolist() == pytest.approx(expect, abs=1e-6)
    plain.reset(seed=0)
    own.reset(seed=0)
    torch.testing.assert_close(own.obs["runner"][..., :D], plain.obs["runner"])  # the rest is unchanged
