"""stable-baselines3 PPO on simple_tag_v3 through two vector envs: gpu_zoo's `SB3VecEnv` and SuperSuit's.

Both give SB3 the same number of vector slots (``num_slots``) and PPO the same settings, so the
difference is what stepping costs. SuperSuit's is the tutorial pipeline: MPE2's env with padded
observations, one slot per agent, ``concat_vec_envs_v1(base_class="stable_baselines3")``. Ours:
one batched env, one slot per adversary; the good agent acts at random (SB3VecEnv's default).
The figure is SB3 timesteps (one per slot and step) per second of ``PPO.learn``: rollouts and
updates together.
"""

from __future__ import annotations

from benchmarks.skip import Skipped
from benchmarks.timing import peak_gpu_memory, time_steps

# SB3's defaults, with shorter rollouts and a batch that scales with the slots (4 minibatches).
N_STEPS, N_EPOCHS, MINIBATCHES = 64, 4, 4


def _ppo(venv, n_steps: int):
    try:
        from stable_baselines3 import PPO
        from stable_baselines3.common.utils import set_random_seed
    except ImportError as err:
        raise Skipped(f"stable-baselines3 is not installed ({err}); pip install stable-baselines3") from err
    set_random_seed(0)  # not PPO(seed=...): it seeds the vector env, and SuperSuit's ConcatVecEnv has no seed()
    return PPO("MlpPolicy", venv, n_steps=n_steps, batch_size=venv.num_envs * n_steps // MINIBATCHES,
               n_epochs=N_EPOCHS, device="cpu", verbose=0)


def _ours(num_slots: int):
    import gpu_zoo
    from gpu_zoo.core.faces.sb3 import SB3VecEnv

    env = gpu_zoo.make("simple_tag_v3", num_envs=num_slots // 3, device="cpu")
    return SB3VecEnv(env, "adversary"), {"vector_envs": env.num_envs, "slots_per_env": 3}


def _supersuit(num_slots: int):
    from benchmarks.peers.mpe2 import supersuit_vec_env

    venv, num_cpus = supersuit_vec_env(num_slots // 4, "stable_baselines3")
    return venv, {"vector_envs": num_slots // 4, "slots_per_env": 4, "num_cpus": num_cpus}


def measure(system: str, num_slots: int, *, repeats: int, tiny: bool) -> dict:
    """SB3 timesteps/s of ``PPO.learn`` over ``repeats`` timed runs of two rollouts and updates each."""
    n_steps = 8 if tiny else N_STEPS
    venv, setup = {"gpu_zoo": _ours, "supersuit": _supersuit}[system](num_slots)
    try:
        model = _ppo(venv, n_steps)
        per_rollout = venv.num_envs * n_steps
        model.learn(per_rollout)  # warm-up: compiles, allocates, fills the first rollout
        timing = time_steps(lambda: model.learn(2 * per_rollout, reset_num_timesteps=False), "cpu",
                            target_s=0.0, repeats=repeats, warmup=0, steps=1)
    finally:
        venv.close()
    rate = timing.summary(2 * per_rollout)
    return {"env_steps_per_s": rate["median"], "spread": rate["spread"], "samples": rate["samples"],
            "agent_steps_per_s": rate["median"], "agents": 1, "sb3_slots": venv.num_envs, **setup,
            **peak_gpu_memory("cpu", None),
            "ppo": {"n_steps": n_steps, "n_epochs": N_EPOCHS, "batch_size": venv.num_envs * n_steps // MINIBATCHES}}
