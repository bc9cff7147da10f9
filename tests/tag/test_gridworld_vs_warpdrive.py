"""Tag gridworld against WarpDrive's own ``TagGridWorld`` (its Python step): whole episodes, same actions.

From WarpDrive's fixed start (``random_start=False``), every observation (the terminal one
included), reward and the episode's end must agree exactly, with full and partial observations.
"""

import numpy as np
import pytest
import torch

import gpu_zoo
from tests.helpers import reference

grid_module = reference("example_envs.tag_gridworld.tag_gridworld",
                        reason="WarpDrive is not installed (pip install --no-deps rl-warp-drive==2.7.1 gym)")

NUM_TAGGERS, GRID, STEPS = 3, 4, 30


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("action_seed", range(4))
def test_episodes_match_warpdrive(full, action_seed):
    wd = grid_module.TagGridWorld(num_taggers=NUM_TAGGERS, grid_length=GRID, episode_length=STEPS,
                                  use_full_observation=full, wall_hit_penalty=0.25, step_cost_for_tagger=0.05)
    env = gpu_zoo.make("tag_gridworld_v0", num_envs=1, device="cpu", num_taggers=NUM_TAGGERS, num_runners=1,
                       grid_length=GRID, max_cycles=STEPS, use_full_observation=full, random_start=False,
                       wall_hit_penalty=0.25, step_cost_for_tagger=0.05)
    first = wd.reset()
    env.reset(seed=0)
    n = NUM_TAGGERS + 1
    ours = torch.cat([env.obs["tagger"][0], env.obs["runner"][0]]).numpy()
    np.testing.assert_allclose(ours, np.stack([first[i] for i in range(n)]), atol=1e-6)
    rng = np.random.default_rng(action_seed)
    for t in range(1, STEPS + 1):
        acts = rng.integers(0, 5, size=n)
        obs, rew, done, _ = wd.step({i: int(acts[i]) for i in range(n)})
        o_obs, o_rew, _, _, info = env.step({"tagger": torch.as_tensor(acts[None, :NUM_TAGGERS]),
                                             "runner": torch.as_tensor(acts[None, NUM_TAGGERS:])})
        ended = bool(info["done"][0])
        assert ended == done["__all__"], t
        seen = info["final_obs"] if ended else o_obs
        np.testing.assert_allclose(torch.cat([seen["tagger"][0], seen["runner"][0]]).numpy(),
                                   np.stack([obs[i] for i in range(n)]), atol=1e-6, err_msg=f"obs, t={t}")
        np.testing.assert_allclose(torch.cat([o_rew["tagger"][0], o_rew["runner"][0]]).numpy(),
                                   [rew[i] for i in range(n)], atol=1e-6, err_msg=f"rewards, t={t}")
        if ended:
            break
