"""Kernel functions rebuilt for CUDA and the simulator pass the state on narrowed: one state type per set of fields."""

import inspect
import linecache
import os
import subprocess
import sys
from collections import namedtuple

import numpy as np

from gpu_zoo.core.api.jit import kernel_fn
from gpu_zoo.core.compiler.speed import rebuild
from tests.helpers import require_nvvm


@kernel_fn
def _draw(s, e):
    return s.seed[e] + s.t[e]


@kernel_fn
def _reward_phase(s, e):
    s.rew[e] = _draw(s, e)  # "s" in a comment or a string is not the state


@kernel_fn
def _observe_phase(s, e):
    s.obs[e] = np.float32(2.0) * _draw(s, e)


@kernel_fn
def _passes_it_second(e, s):
    return _draw(s, e)


@kernel_fn
def _indexes_it(s, e):
    return _draw(s, e) + s[0][e]


Whole = namedtuple("Whole", ["rew", "obs", "seed", "t"])


def _state(n: int = 4) -> Whole:
    return Whole(np.zeros(n, np.float32), np.zeros(n, np.float32), np.arange(n, dtype=np.float32),
                 np.full(n, 10, np.float32))


def test_a_call_passing_the_state_gives_the_callee_only_its_fields():
    memo: dict = {}
    phase = rebuild.rebuild(_reward_phase, rebuild.plain, memo)
    narrow = [v for k, v in phase.__globals__.items() if k.startswith("_NarrowState")]
    assert [t._fields for t in narrow] == [("seed", "t")]
    s = _state()
    for e in range(4):
        phase(s, e)
    assert s.rew.tolist() == [10.0, 11.0, 12.0, 13.0]


def test_callers_of_different_states_pass_a_helper_one_type():
    memo: dict = {}
    types_of = [{v for k, v in rebuild.rebuild(f, rebuild.plain, memo).__globals__.items()
                 if k.startswith("_NarrowState")} for f in (_reward_phase, _observe_phase)]
    assert types_of[0] == types_of[1] and len(types_of[0]) == 1


@kernel_fn
def _calls_a_local_of_a_helpers_name(s, e):
    _draw = _reward_phase
    return _draw(s, e)


def test_any_other_use_of_the_state_keeps_the_plain_twin():
    assert rebuild._narrowed_twin(_passes_it_second.py_func, {}) is None
    assert rebuild._narrowed_twin(_indexes_it.py_func, {}) is None
    assert rebuild._narrowed_twin(_calls_a_local_of_a_helpers_name.py_func, {}) is None


@kernel_fn
def _tax(s, p, e):
    return s.seed[e] * p.rate


@kernel_fn
def _limit(t, p, e):
    return t[e] + p.cap


@kernel_fn
def _no_params(s, p, e):
    return s.t[e]


@kernel_fn
def _params_phase(s, p, e):
    s.rew[e] = _tax(s, p, e) + _limit(s.t, p, e) + _no_params(s, p, e)


@kernel_fn
def _indexes_the_params(s, p, e):
    s.rew[e] = _tax(s, p, e) + p[0]


Params = namedtuple("Params", ["rate", "cap", "unused"])


def test_a_call_passing_the_params_gives_the_callee_only_the_params_it_reads():
    memo: dict = {}
    phase = rebuild.rebuild(_params_phase, rebuild.plain, memo)
    params = [v._fields for k, v in phase.__globals__.items() if k.startswith("_NarrowParams")]
    assert sorted(params) == [("cap",), ("rate",)]  # wherever the params are passed; none for _no_params
    s = _state()
    for e in range(4):
        phase(s, Params(np.float32(2.0), np.float32(0.5), None), e)
    assert s.rew.tolist() == [20.5, 22.5, 24.5, 26.5]  # seed * rate + (t + cap) + t


def test_params_used_any_other_way_are_passed_whole():
    twin = rebuild._narrowed_twin(_indexes_the_params.py_func, {})
    names = twin.__code__.co_names  # the state is still narrowed
    assert any(n.startswith("_NarrowState") for n in names) and not any(n.startswith("_NarrowParams") for n in names)


def test_the_rebuilt_function_keeps_its_file_and_lines():
    twin = rebuild._narrowed_twin(_reward_phase.py_func, {})
    assert twin.__code__.co_filename == _reward_phase.py_func.__code__.co_filename
    assert twin.__code__.co_firstlineno == _reward_phase.py_func.__code__.co_firstlineno
    assert inspect.getsource(twin) == inspect.getsource(_reward_phase.py_func)


def _overloads_of_the_helper() -> int:
    """Compiles, with NVVM, a kernel calling both phases; the helper's compiles (simulator off)."""
    from gpu_zoo.core.compiler.speed import compat
    from gpu_zoo.testing.cuda_compile import _compute_capability

    cuda = compat.import_cuda()
    memo: dict = {}
    reward = rebuild.rebuild(_reward_phase, rebuild.cuda_device, memo)
    observe = rebuild.rebuild(_observe_phase, rebuild.cuda_device, memo)
    RewardState = namedtuple("RewardState", ["rew", "seed", "t"])
    ObserveState = namedtuple("ObserveState", ["obs", "seed", "t"])

    def kernel(rew, obs, seed, t):
        e = cuda.grid(1)
        if e < rew.shape[0]:
            reward(RewardState(rew, seed, t), e)
            observe(ObserveState(obs, seed, t), e)

    with _compute_capability((9, 0)):
        cuda.compile_ptx(kernel, "void(float32[:], float32[:], float32[:], float32[:])", cc=(9, 0))
    return len(memo[_draw].overloads)


def test_on_cuda_a_helper_compiles_once_for_all_its_callers():
    require_nvvm()
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}  # real kernels compile
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    code = "from tests.test_rebuild import _overloads_of_the_helper as f; print(f())"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-1] == "1"


@kernel_fn
def _scaled(x, k):
    return x * k


@kernel_fn
def _pick(t, k):
    return t[k]  # a tuple of two types: indexed only by a literal


def _literal_overloads() -> list[int]:
    """Compiles, with NVVM, a kernel calling helpers with constants; each helper's compiles (simulator off)."""
    from gpu_zoo.core.compiler.speed import compat
    from gpu_zoo.testing.cuda_compile import _compute_capability

    cuda = compat.import_cuda()
    memo: dict = {}
    scaled = rebuild.rebuild(_scaled, rebuild.cuda_device, memo)
    pick = rebuild.rebuild(_pick, rebuild.cuda_device, memo)

    def kernel(out):
        e = cuda.grid(1)
        if e < out.shape[0]:
            t = (np.float32(1.5), np.int64(2))
            out[e] = scaled(out[e], 2) + scaled(out[e], 3) + pick(t, 0) + pick(t, 1)

    with _compute_capability((9, 0)):
        cuda.compile_ptx(kernel, "void(float32[:])", cc=(9, 0))
    return [len(memo[_scaled].overloads), len(memo[_pick].overloads)]


def test_on_cuda_constant_arguments_compile_a_helper_once_unless_it_needs_them():
    require_nvvm()
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    code = "from tests.test_rebuild import _literal_overloads as f; print(*f())"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-2:] == ["1", "2"]  # _pick compiles per index: it types only with the literal


def test_a_source_file_changed_since_its_import_keeps_the_plain_twin(tmp_path, monkeypatch):
    module = tmp_path / "edited_env.py"
    module.write_text("from gpu_zoo.core.api.jit import kernel_fn\n"
                      "from tests.test_rebuild import _draw\n\n\n"
                      "@kernel_fn\n"
                      "def phase(s, e):\n"
                      "    s.rew[e] = _draw(s, e)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import edited_env

    assert rebuild._narrowed_twin(edited_env.phase.py_func, {}) is not None
    module.write_text(module.read_text().replace("_draw(s, e)", "_draw(s, e) + 1"))
    linecache.checkcache(str(module))
    assert rebuild._narrowed_twin(edited_env.phase.py_func, {}) is None
