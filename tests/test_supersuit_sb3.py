"""The SuperSuit + stable-baselines3 tutorial pipeline, run on gpu_zoo's PettingZoo envs."""

import numpy as np
import pytest

from tests.helpers import GRID_SMALL, PZ_CONFIGS, reference

supersuit = reference("supersuit")
sb3 = reference("stable_baselines3")

from gpu_zoo.tag import simple_tag_v3, tag_continuous_v0, tag_gridworld_v0  # noqa: E402

CASES = {
    # spaces differ between adversaries and good agents: pad them, as the tutorials do
    "simple_tag_v3": lambda: supersuit.pad_action_space_v0(
        supersuit.pad_observations_v0(simple_tag_v3.parallel_env(**PZ_CONFIGS["simple_tag_v3"]))),
    # runners leave the game when tagged: black death keeps them as zero-observation agents
    "tag_continuous_v0": lambda: supersuit.black_death_v3(
        tag_continuous_v0.parallel_env(**PZ_CONFIGS["tag_continuous_v0"], tagging_distance=0.2)),
    "tag_gridworld_v0": lambda: supersuit.black_death_v3(
        tag_gridworld_v0.parallel_env(**PZ_CONFIGS["tag_gridworld_v0"])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_sb3_ppo_learns_through_supersuit(name):
    env = supersuit.pettingzoo_env_to_vec_env_v1(CASES[name]())
    env = supersuit.concat_vec_envs_v1(env, 2, num_cpus=1, base_class="stable_baselines3")
    # No seed= here: SB3 would call ConcatVecEnv.seed, which SuperSuit 3.11 no longer has.
    model = sb3.PPO("MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=1, verbose=0)
    model.learn(total_timesteps=512)
    obs = env.reset()
    actions, _ = model.predict(obs)
    obs, rewards, dones, infos = env.step(actions)
    assert obs.shape[0] == rewards.shape[0] == env.num_envs
    env.close()


def test_multiprocess_vector_env_survives_fork():
    """SuperSuit forks worker processes; the CPU kernels' threading layer must survive that."""
    env = supersuit.pettingzoo_env_to_vec_env_v1(supersuit.pad_observations_v0(
        simple_tag_v3.parallel_env(**PZ_CONFIGS["simple_tag_v3"])))
    env.reset(seed=0)  # the parent runs a parallel kernel before forking
    env = supersuit.concat_vec_envs_v1(env, 2, num_cpus=2, base_class="stable_baselines3")
    env.reset()
    for _ in range(7):
        env.step([env.action_space.sample() for _ in range(env.num_envs)])
    env.close()


def test_sb3_trains_on_the_batched_env_directly():
    """gpu_zoo's own VecEnv: one slot per (env, tagger), the runner driven by a random policy."""
    from stable_baselines3.common.vec_env import VecMonitor

    import gpu_zoo
    from gpu_zoo.core.faces.sb3 import SB3VecEnv

    batched = gpu_zoo.make("tag_gridworld_v0", num_envs=32, device="cpu", **GRID_SMALL)
    venv = VecMonitor(SB3VecEnv(batched, "tagger"))
    assert venv.num_envs == 64
    model = sb3.PPO("MlpPolicy", venv, n_steps=32, batch_size=256, n_epochs=2, verbose=0)
    model.learn(total_timesteps=4096)
    assert len(model.ep_info_buffer) > 0
    assert all(info["l"] <= GRID_SMALL["max_cycles"] for info in model.ep_info_buffer)


def test_sb3_vecenv_reports_episode_ends():
    import gpu_zoo
    from gpu_zoo.core.faces.sb3 import SB3VecEnv

    batched = gpu_zoo.make("tag_gridworld_v0", num_envs=4, device="cpu", **GRID_SMALL)
    venv = SB3VecEnv(batched, "tagger")
    venv.seed(5)
    obs = venv.reset()
    assert obs.shape == (8, batched.single_observation_space("tagger").shape[0])
    time_idx = batched.layout.groups["tagger"].obs_offsets["time"][0]
    ended = np.zeros(8, bool)
    for _ in range(GRID_SMALL["max_cycles"]):
        obs, rew, dones, infos = venv.step(batched.sample_actions()["tagger"].reshape(8).numpy())
        ended |= dones
        for i in np.flatnonzero(dones):
            assert "terminal_observation" in infos[i]
            if infos[i]["TimeLimit.truncated"]:
                assert infos[i]["terminal_observation"][time_idx] == 1.0 and obs[i][time_idx] == 0.0
    assert ended.all(), "every episode ends by the time limit at the latest"


def test_maskable_ppo_trains_the_economys_workers_and_never_takes_a_masked_action():
    """sb3-contrib's MaskablePPO through the VecEnv's action_masks: each step's actions inside that step's masks."""
    sb3_contrib = reference("sb3_contrib")
    import gpu_zoo
    from gpu_zoo.core.faces.sb3 import SB3VecEnv

    batched = gpu_zoo.make("gather_trade_build_v0", num_envs=4, device="cpu", **PZ_CONFIGS["gather_trade_build_v0"])
    venv = SB3VecEnv(batched, "worker")
    assert venv.has_attr("action_masks")
    assert not SB3VecEnv(gpu_zoo.make("tag_gridworld_v0", num_envs=2, device="cpu", **GRID_SMALL),
                         "tagger").has_attr("action_masks")
    masks = venv.action_masks()
    assert masks.shape == (venv.num_envs, venv.action_space.n) and masks.dtype == bool
    assert all(np.array_equal(a, b) for a, b in zip(venv.env_method("action_masks"), masks, strict=True))
    inside, blocked = [], []
    step_async = venv.step_async

    def checked(actions):
        now = venv.action_masks()
        inside.append(bool(now[np.arange(len(actions)), actions].all()))
        blocked.append(not now.all())
        step_async(actions)

    venv.step_async = checked
    model = sb3_contrib.MaskablePPO("MlpPolicy", venv, n_steps=16, batch_size=64, n_epochs=1, verbose=0, seed=0)
    model.learn(total_timesteps=3 * 16 * venv.num_envs)
    assert len(inside) >= 48 and all(inside), "a masked action was taken"
    assert any(blocked), "the masks forbade something, or this would prove nothing"


def test_the_readmes_sb3_example_runs_as_written_in_minutes():
    """The README's SB3 snippet, run as a user would paste it: its settings must suit thousands of slots.

    With SB3's defaults the same snippet's first rollout alone is millions of samples (hours on a
    small CPU); the time limit is far above what the snippet takes and far below that.
    """
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    blocks = re.findall(r"^```python\n(.*?)^```", (root / "README.md").read_text(), re.MULTILINE | re.DOTALL)
    snippet = next(b for b in blocks if "SB3VecEnv" in b)
    result = subprocess.run([sys.executable, "-c", snippet + "\nprint('learned', model.num_timesteps)\n"], cwd=root,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert int(result.stdout.split("learned")[-1]) >= 100_000
