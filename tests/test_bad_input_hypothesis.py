"""Actions of every dtype, shape and range, and runtime params of any value, through every face of every env.

A refused call must change nothing: the env afterwards equals a fresh one reset with the same seed
(random streams included), and an accepted one equals that fresh env stepped with the same actions.
"""

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpu_zoo
from gpu_zoo.core.api.params import ParamTypeError
from gpu_zoo.core.faces.aec import GpuZooAECEnv
from gpu_zoo.core.faces.pettingzoo import GpuZooParallelEnv
from gpu_zoo.core.faces.sb3 import SB3VecEnv
from gpu_zoo.core.runtime.batched import BatchedEnv
from tests.helpers import PZ_CONFIGS

ENVS = gpu_zoo.registered_envs()  # each with its small configuration (tests/helpers.py)
# The same examples on every run, so CI's verdict is the code's (hypothesis --hypothesis-seed=N explores others)
SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
DTYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.float16, np.float32, np.float64, np.bool_)
SEED = 4


@st.composite
def arrays_near(draw, shape: tuple, high: int):
    """Arrays of any dtype, of ``shape`` or a shape next to it, of values in range or just outside, or not finite."""
    kind = draw(st.sampled_from(["same", "fewer", "more", "scalar"]))
    if kind == "fewer" and shape:
        shape = shape[:-1] if len(shape) > 1 else (max(0, shape[0] - 1),)
    elif kind == "more":
        shape = (*shape, 1)
    elif kind == "scalar":
        shape = ()
    dtype = draw(st.sampled_from(DTYPES))
    values = draw(st.lists(st.one_of(st.integers(-2, high + 1), st.floats(allow_nan=True, allow_infinity=True)),
                           min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    with np.errstate(all="ignore"):
        return np.array(values, dtype=np.float64).astype(dtype).reshape(shape)


def high_of(space) -> int:
    if hasattr(space, "nvec"):
        return int(space.nvec.max())
    return int(space.n) if hasattr(space, "n") else 2


def make_batched(env_id):
    return BatchedEnv(gpu_zoo.get_spec(env_id), 2, device="cpu", **PZ_CONFIGS[env_id])


@pytest.fixture(scope="module", params=ENVS)
def batched(request):
    return make_batched(request.param), make_batched(request.param)


def reset_both(envs):
    for env in envs:
        env.reset(seed=SEED)


@SETTINGS
@given(data=st.data())
def test_batched_actions(batched, data):
    env, ref = batched
    reset_both(batched)
    group = data.draw(st.sampled_from(list(env.groups)))
    actions = env.sample_actions(torch.Generator().manual_seed(0))
    shape = tuple(env.actions[group].shape)
    actions[group] = torch.from_numpy(data.draw(arrays_near(shape, high_of(env.single_action_space(group)))))
    try:
        env.step(actions)
    except ValueError:
        assert torch.equal(env.buffers.storage, ref.buffers.storage), "a refused step changed the state"
        return
    ref.step({g: a.to(ref.actions[g].dtype) for g, a in actions.items()})
    assert torch.equal(env.buffers.storage, ref.buffers.storage)


TURN_BASED = tuple(e for e in ENVS if gpu_zoo.get_spec(e).turn_based)


@pytest.fixture(scope="module", params=[e for e in ENVS if e not in TURN_BASED])
def parallel(request):
    return [GpuZooParallelEnv(gpu_zoo.get_spec(request.param), **PZ_CONFIGS[request.param]) for _ in range(2)]


@SETTINGS
@given(data=st.data())
def test_pettingzoo_actions(parallel, data):
    env, ref = parallel
    for e in parallel:
        e.reset(seed=SEED)
        for agent in e.possible_agents:
            e.action_space(agent).seed(SEED)
    actions = {a: env.action_space(a).sample() for a in env.agents}
    agent = data.draw(st.sampled_from(env.agents))
    space = env.action_space(agent)
    actions[agent] = data.draw(st.one_of(arrays_near(space.shape, high_of(space)), st.none(), st.text(max_size=2),
                                         st.integers(-3, 30), st.floats()))
    try:
        env.step(actions)
    except ValueError:
        assert torch.equal(env._env.buffers.storage, ref._env.buffers.storage), "a refused step changed the state"
        assert env.agents == ref.agents
        return
    ref.step({a: np.asarray(v).astype(ref.action_space(a).dtype) for a, v in actions.items()})
    assert torch.equal(env._env.buffers.storage, ref._env.buffers.storage)


@pytest.fixture(scope="module", params=TURN_BASED)
def turns(request):
    return [GpuZooAECEnv(gpu_zoo.get_spec(request.param), **PZ_CONFIGS[request.param]) for _ in range(2)]


@SETTINGS
@given(data=st.data())
def test_turn_based_pettingzoo_moves(turns, data):
    """A move of any value after a few legal ones: a legal one taken, anything else refused with nothing changed."""
    env, ref = turns
    for e in turns:
        e.reset(seed=SEED)
    for _ in range(data.draw(st.integers(0, 4))):
        move = int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0])
        env.step(move)
        ref.step(move)
    space = env.action_space(env.agent_selection)
    move = data.draw(st.one_of(arrays_near(space.shape, high_of(space)), st.none(), st.text(max_size=2),
                               st.integers(-3, 30), st.floats()))
    try:
        env.step(move)
    except ValueError:
        assert torch.equal(env.batched.buffers.storage, ref.batched.buffers.storage), "a refused move changed the state"
        assert (env.agent_selection, env.rewards, env.terminations) == (ref.agent_selection, ref.rewards,
                                                                       ref.terminations)
        return
    ref.step(int(move))
    assert torch.equal(env.batched.buffers.storage, ref.batched.buffers.storage)


@pytest.fixture(scope="module", params=ENVS)
def vec(request):
    envs = [make_batched(request.param) for _ in range(2)]
    return [SB3VecEnv(e, list(e.groups)[0]) for e in envs]


@SETTINGS
@given(data=st.data())
def test_sb3_actions(vec, data):
    env, ref = vec
    for v in vec:
        v.seed(SEED)
        v.reset()
    shape = (env.num_envs, *env.action_space.shape)
    actions = data.draw(arrays_near(shape, high_of(env.action_space)))
    torch.manual_seed(SEED)  # the other groups' random actions: drawn alike for both envs
    before = torch.get_rng_state()
    env.step_async(actions)
    try:
        env.step_wait()
    except ValueError:
        assert torch.equal(env.env.buffers.storage, ref.env.buffers.storage), "a refused step changed the state"
        assert torch.equal(torch.get_rng_state(), before), "a refused step drew random numbers"
        return
    torch.manual_seed(SEED)
    ref.step_async(actions.astype(ref.action_space.dtype))
    ref.step_wait()
    assert torch.equal(env.env.buffers.storage, ref.env.buffers.storage)


@pytest.fixture(scope="module", params=ENVS)
def with_params(request):
    env = make_batched(request.param)
    if not env.layout.runtime_params:
        pytest.skip(f"{request.param} has no runtime params")
    return env


@SETTINGS
@given(data=st.data())
def test_runtime_params_of_any_value(with_params, data):
    """Any value of the runtime params: refused, changing nothing, or taken, the env stepping finitely in its spaces."""
    env = with_params
    names = list(env.layout.runtime_params)
    chosen = data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
    values = {n: data.draw(st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                                     st.floats(0, 10).map(lambda x, n=n: x * max(1.0, abs(getattr(env.params, n)))),
                                     st.integers(-5, 5), st.booleans(), st.text(max_size=2)))
              for n in chosen}
    before, params = env.state.params.clone(), env.params
    try:
        env.set_params(**values)
    except (ValueError, ParamTypeError):
        assert torch.equal(env.state.params, before) and env.params == params, "a refused set_params changed them"
        return
    try:
        obs = env.reset(seed=SEED)
        gen = torch.Generator().manual_seed(0)
        for t in range(6):
            for g in env.groups:
                space = env.single_observation_space(g)
                assert torch.isfinite(obs[g]).all(), f"non-finite {g} observations at step {t} with {values}"
                rows = obs[g].reshape(-1, *space.shape).numpy()
                assert all(space.contains(r) for r in rows), f"{g} observations outside {space} with {values}"
            obs, rew, *_ = env.step(env.sample_actions(gen))
            assert all(torch.isfinite(r).all() for r in rew.values()), f"non-finite rewards with {values}"
    finally:
        env.set_params(**{n: getattr(params, n) for n in chosen})


def _int_params(env_id: str) -> list[str]:
    import dataclasses
    import typing

    cls = gpu_zoo.get_spec(env_id).params
    hints = typing.get_type_hints(cls)
    return [f.name for f in dataclasses.fields(cls) if int in (typing.get_args(hints[f.name]) or (hints[f.name],))]


@pytest.mark.parametrize("env_id", gpu_zoo.registered_envs())
def test_every_count_refuses_a_negative_a_bool_and_a_fraction_by_name(env_id):
    """Counts and sizes become compile-time constants: a wrong one is refused, naming it, before anything compiles."""
    names = _int_params(env_id)
    assert names, f"{env_id} has no int params"
    for name in names:
        for value in (-1, True, 2.5):
            with pytest.raises(ValueError, match=name):
                gpu_zoo.make(env_id, num_envs=1, device="cpu", **{name: value})
