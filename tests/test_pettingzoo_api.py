"""PettingZoo's own conformance tests, through gpu_zoo's conformance kit, on every registered environment."""

import os
from types import SimpleNamespace

import numpy as np
import pytest
from pettingzoo.test import render_test

import gpu_zoo
from gpu_zoo.core.faces.aec import CYCLE_PLAYS, rounds_entry_points, turn_based_entry_points
from gpu_zoo.core.faces.pettingzoo import entry_points
from gpu_zoo.tag import tag_continuous_v0
from gpu_zoo.testing import check_env
from tests.helpers import PZ_CONFIGS, TAG_SMALL, reference


def versioned_module(env_id: str) -> SimpleNamespace:
    """What an env's versioned module offers (``env``, ``parallel_env``, ...), built from its registered spec."""
    spec = gpu_zoo.get_spec(env_id)
    if spec.turn_based:
        env, raw_env, batched_env = turn_based_entry_points(spec)
        return SimpleNamespace(env=env, raw_env=raw_env, batched_env=batched_env)
    env, parallel_env, raw_env, batched_env = (rounds_entry_points if spec.play in CYCLE_PLAYS else entry_points)(spec)
    return SimpleNamespace(env=env, parallel_env=parallel_env, raw_env=raw_env, batched_env=batched_env)


# every registered env, each in its small configuration (a registered env without one fails here)
MODULES = {name: (versioned_module(name), PZ_CONFIGS[name]) for name in gpu_zoo.registered_envs()}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_registered_env_passes_the_conformance_kit(name):
    """`gpu_zoo.testing.check_env`, the kit users run on their own envs, on every registered one.

    It runs PettingZoo's parallel and AEC API and seed tests, max_cycles, the batched contract,
    seed replay, auto-resets, bad actions and render. Its CUDA half runs in registry-wide suites of
    its own (`tests/test_parity.py`, `tests/test_cuda_compile.py`) on the same configurations.
    """
    outcome = check_env(name, cuda=False, **MODULES[name][1])
    assert set(outcome) == {"pettingzoo", "spaces and buffers", "seeds replay", "auto-reset", "bad actions", "render"}
    assert set(outcome.values()) == {"ok"}, outcome


@pytest.mark.parametrize("name", sorted(MODULES))
def test_render(name):
    reference("pygame")
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    mod, kw = MODULES[name]
    render_test(lambda render_mode=None: mod.env(render_mode=render_mode, **kw))


def test_agents_leave_and_never_return():
    env = tag_continuous_v0.parallel_env(**TAG_SMALL, tagging_distance=1.0)  # every runner is tagged at once
    env.reset(seed=0)
    obs, rew, term, trunc, info = env.step({a: env.action_space(a).sample() for a in env.agents})
    assert all(term.values()) and env.agents == []
    assert rew["tagger_0"] + rew["tagger_1"] == 3.0
    assert env.step({}) == ({}, {}, {}, {}, {})


def test_bad_parallel_actions():
    env = tag_continuous_v0.parallel_env(**TAG_SMALL)
    with pytest.raises(RuntimeError, match="reset"):
        env.step({})
    env.reset(seed=0)
    acts = {a: env.action_space(a).sample() for a in env.agents}
    with pytest.raises(ValueError, match="unknown agent"):
        env.step({**acts, "wolf_0": np.array([0, 0])})
    with pytest.raises(ValueError, match="no action for live agent"):
        env.step({k: v for k, v in acts.items() if k != "runner_1"})
    with pytest.raises(ValueError, match="element of MultiDiscrete"):
        env.step({**acts, "runner_1": np.array([99, 0])})
    obs, *_ = env.step(acts)
    assert set(obs) == set(env.possible_agents)


def test_state_and_spaces():
    env = tag_continuous_v0.parallel_env(**TAG_SMALL)
    obs, _ = env.reset(seed=0)
    assert env.state().shape == env.state_space.shape
    assert env.observation_space("runner_0") is env.observation_space("runner_0")
    assert env.observation_space("runner_0") is not env.observation_space("runner_1")
    assert all(env.observation_space(a).contains(o) for a, o in obs.items())


def test_numpy_integer_seeds_and_refused_seeds():
    """A NumPy integer seeds as the int it holds; a refused seed resets nothing, ``agents`` included."""
    env = tag_continuous_v0.parallel_env(**TAG_SMALL, tagging_distance=1.0)  # every runner is tagged at once
    want, _ = env.reset(seed=3)
    want_action = env.action_space("runner_0").sample()
    got, _ = env.reset(seed=np.int64(3))
    assert all(np.array_equal(got[a], want[a]) for a in want)
    assert np.array_equal(env.action_space("runner_0").sample(), want_action)
    env.step({a: env.action_space(a).sample() for a in env.agents})
    left = list(env.agents)
    assert left == ["tagger_0", "tagger_1"] or left == []
    t = int(env.batched.state.t[0])
    for bad, error in (("3", TypeError), (True, TypeError), (-1, ValueError), (2.5, TypeError)):
        with pytest.raises(error, match="seed"):
            env.reset(seed=bad)
        assert env.agents == left and int(env.batched.state.t[0]) == t, "a refused reset changed the env"
