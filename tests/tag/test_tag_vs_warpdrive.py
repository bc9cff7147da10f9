"""Tag continuous against WarpDrive's own ``TagContinuous`` (its Python step), step for step from one state.

WarpDrive draws which agent ids are taggers; a seed is picked under which they are the first ids,
as ours are, so the agent orders agree. Both then play the same random actions for a whole
episode: positions, speeds, headings, accelerations, who is in the game, rewards and every
observation element (terminal ones included) must agree to float32 rounding.
"""

import numpy as np
import pytest
import torch

import gpu_zoo
from tests.helpers import reference

tag_module = reference("example_envs.tag_continuous.tag_continuous",
                       reason="WarpDrive is not installed (pip install --no-deps rl-warp-drive==2.7.1 gym)")

BASE = dict(grid_length=4.0, episode_length=40, tagging_distance=0.08, max_acceleration=0.3, min_acceleration=-0.3,
            edge_hit_penalty=-0.5, step_penalty_for_tagger=-0.1, step_reward_for_runner=0.05,
            tag_reward_for_tagger=2.0, tag_penalty_for_runner=-3.0, end_of_game_reward_for_runner=1.5)


# Positions drift apart by a few float32 rounding steps: WarpDrive's NumPy float32 sin and cos
# are not the correctly rounded ones the kernel uses. Every discrete outcome must still agree.
CLOSE = dict(rtol=1e-5, atol=1e-5)


def warpdrive_env(num_taggers, num_runners, **kw):
    for seed in range(5000):
        env = tag_module.TagContinuous(num_taggers=num_taggers, num_runners=num_runners, seed=seed,
                                       env_backend="cpu", **kw)
        if sorted(env.taggers) == list(range(num_taggers)):
            return env
    raise RuntimeError("no seed puts WarpDrive's taggers first")


def state_of(wd, t):
    g = wd.global_state
    return {"pos_x": g["loc_x"][t], "pos_y": g["loc_y"][t], "speed": g["speed"][t], "heading": g["direction"][t],
            "acceleration": g["acceleration"][t]}


CASES = {
    "full": dict(use_full_observation=True),
    "nearest": dict(use_full_observation=False, num_other_agents_observed=3),
    "all_tagged": dict(use_full_observation=True, tagging_distance=0.3),  # ends early: no runner left
    "nearest_all_tagged": dict(use_full_observation=False, num_other_agents_observed=3, tagging_distance=0.3),
    "runners_stay": dict(use_full_observation=False, num_other_agents_observed=3, runner_exits_game_after_tagged=False),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("action_seed", [1, 2])
def test_steps_match_warpdrive(case, action_seed):
    kw = {**BASE, **CASES[case]}
    n_t, n_r = 2, 5
    wd = warpdrive_env(n_t, n_r, **kw)
    ours_kw = {k: v for k, v in kw.items() if k != "episode_length"}
    env = gpu_zoo.make("tag_continuous_v0", num_envs=1, device="cpu", num_taggers=n_t, num_runners=n_r,
                       max_cycles=kw["episode_length"], **ours_kw)
    wd.reset()
    env.reset(seed=0)
    start = state_of(wd, 0)
    for name in ("pos_x", "pos_y", "heading"):  # WarpDrive's start; speeds and accelerations start at 0 in both
        getattr(env.state, name)[0] = torch.as_tensor(start[name], dtype=torch.float32)
    rng = np.random.default_rng(action_seed)
    levels = [kw.get("num_acceleration_levels", 10) + 1, kw.get("num_turn_levels", 10) + 1]
    for t in range(1, kw["episode_length"] + 1):
        acts = rng.integers(0, levels, size=(n_t + n_r, 2))
        obs, rew, done, _ = wd.step({i: acts[i] for i in range(n_t + n_r)})
        o_obs, o_rew, _, _, info = env.step({"tagger": torch.as_tensor(acts[None, :n_t]),
                                             "runner": torch.as_tensor(acts[None, n_t:])})
        ended = bool(info["done"][0])
        assert ended == done["__all__"], t
        seen = info["final_obs"] if ended else o_obs  # ours has already restarted the env
        np.testing.assert_allclose(torch.cat([seen["tagger"][0], seen["runner"][0]]).numpy(),
                                   np.stack([obs[i] for i in range(n_t + n_r)]), err_msg=f"obs, t={t}", **CLOSE)
        np.testing.assert_allclose(torch.cat([o_rew["tagger"][0], o_rew["runner"][0]]).numpy(),
                                   [rew[i] for i in range(n_t + n_r)], atol=1e-6, err_msg=f"rewards, t={t}")
        if ended:
            break
        for name, value in state_of(wd, t).items():
            np.testing.assert_allclose(getattr(env.state, name)[0].numpy(), value, err_msg=f"{name}, t={t}", **CLOSE)
        assert env.state.alive[0].tolist() == wd.still_in_the_game.tolist(), t
    assert ended
