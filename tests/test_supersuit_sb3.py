"""The SuperSuit + stable-baselines3 tutorial pipeline, run on gpu_zoo's PettingZoo envs."""

import pytest

supersuit = pytest.importorskip("supersuit")
sb3 = pytest.importorskip("stable_baselines3")

from gpu_zoo.tag import simple_tag_v3, tag_continuous_v0, tag_gridworld_v0  # noqa: E402

CASES = {
    # spaces differ between adversaries and good agents: pad them, as the tutorials do
    "simple_tag_v3": lambda: supersuit.pad_action_space_v0(
        supersuit.pad_observations_v0(simple_tag_v3.parallel_env(max_cycles=10))),
    # runners leave the game when tagged: black death keeps them as zero-observation agents
    "tag_continuous_v0": lambda: supersuit.black_death_v3(
        tag_continuous_v0.parallel_env(num_taggers=1, num_runners=2, max_cycles=10, tagging_distance=0.2)),
    "tag_gridworld_v0": lambda: supersuit.black_death_v3(
        tag_gridworld_v0.parallel_env(num_taggers=2, num_runners=1, grid_length=4, max_cycles=10)),
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
        simple_tag_v3.parallel_env(num_good=1, num_adversaries=1, num_obstacles=0, max_cycles=5)))
    env.reset(seed=0)  # the parent runs a parallel kernel before forking
    env = supersuit.concat_vec_envs_v1(env, 2, num_cpus=2, base_class="stable_baselines3")
    env.reset()
    for _ in range(7):
        env.step([env.action_space.sample() for _ in range(env.num_envs)])
    env.close()
