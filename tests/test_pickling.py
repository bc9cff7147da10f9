"""Envs pickle, so that spawned worker processes (SuperSuit's, torchrl's, macOS's default) can take them.

A compiled kernel lives in a module generated in its process; an env pickles as what builds it
and its state's bytes, and continues exactly where it stood.
"""

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import gpu_zoo
from gpu_zoo.tag import simple_tag_v3
from tests.helpers import GRID_SMALL, PZ_CONFIGS, reference


def test_a_pickled_batched_env_continues_where_it_stood():
    env = gpu_zoo.make("tag_gridworld_v0", num_envs=3, device="cpu", **GRID_SMALL)
    env.reset(seed=4)
    env.set_params(tag_reward_for_tagger=3.5)
    env.step(env.sample_actions(torch.Generator().manual_seed(0)))
    copy = pickle.loads(pickle.dumps(env))
    assert copy is not env and copy.params == env.params and copy.autoreset and copy.device == env.device
    torch.testing.assert_close(copy.buffers.storage, env.buffers.storage, rtol=0, atol=0)
    for k in range(8):  # past an episode end: the auto-reset draws the same starts
        actions = env.sample_actions(torch.Generator().manual_seed(k + 1))
        env.step(actions)
        copy.step(actions)
        torch.testing.assert_close(copy.buffers.storage, env.buffers.storage, rtol=0, atol=0)


def test_a_pickled_parallel_env_keeps_its_agents_and_spaces():
    env = simple_tag_v3.parallel_env(**PZ_CONFIGS["simple_tag_v3"])
    env.reset(seed=1)
    env.step({a: 1 for a in env.agents})
    copy = pickle.loads(pickle.dumps(env))
    assert copy.agents == env.agents and copy.possible_agents == env.possible_agents
    assert [copy.action_space(a).sample() for a in env.agents] == [env.action_space(a).sample() for a in env.agents]
    actions = {a: 3 for a in env.agents}
    o1, r1, *_ = env.step(actions)
    o2, r2, *_ = copy.step(actions)
    assert r1 == r2 and all(np.array_equal(o1[a], o2[a]) for a in o1)


def test_supersuit_workers_started_by_spawn(tmp_path):
    """SuperSuit's multiprocess vector env when workers are spawned: each unpickles the env in a fresh process."""
    reference("supersuit")
    script = tmp_path / "spawned.py"
    script.write_text(textwrap.dedent(f"""
        import multiprocessing

        import numpy as np
        import supersuit

        from gpu_zoo.tag import simple_tag_v3

        if __name__ == "__main__":
            multiprocessing.set_start_method("spawn", force=True)
            env = supersuit.pettingzoo_env_to_vec_env_v1(supersuit.pad_observations_v0(
                simple_tag_v3.parallel_env(**{PZ_CONFIGS["simple_tag_v3"]!r})))
            env = supersuit.concat_vec_envs_v1(env, 2, num_cpus=2, base_class="stable_baselines3")
            obs = env.reset()
            for _ in range(5):
                obs, rew, dones, infos = env.step([env.action_space.sample() for _ in range(env.num_envs)])
            assert np.isfinite(obs).all() and obs.shape[0] == env.num_envs
            env.close()
            print("spawned workers stepped")
    """))
    repo = str(Path(__file__).resolve().parents[1])
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                         cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": repo})
    assert out.returncode == 0, out.stderr[-3000:]
    assert "spawned workers stepped" in out.stdout


@pytest.mark.cuda
def test_a_pickled_gpu_env_stays_on_its_gpu():
    env = gpu_zoo.make("tag_gridworld_v0", num_envs=64, device="cuda", **GRID_SMALL)
    env.reset(seed=2)
    copy = pickle.loads(pickle.dumps(env))
    assert copy.device == env.device
    for k in range(7):
        actions = env.sample_actions(torch.Generator(device=env.device).manual_seed(k))
        env.step(actions)
        copy.step(actions)
    torch.testing.assert_close(copy.buffers.storage, env.buffers.storage, rtol=0, atol=0)
