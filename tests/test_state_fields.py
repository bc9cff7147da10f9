"""Each kernel call passes only the state fields its callee uses (`gpu_zoo.core.compiler.speed.state_fields`)."""

import ast
import re

from numba import njit

from gpu_zoo.core.compiler.kernel_source import kernel_source
from gpu_zoo.core.compiler.speed import state_fields as sf
from gpu_zoo.core.compiler.speed.state_fields import state_fields


@njit
def _reads_two(s, e):
    return s.pos_x[e] + s.pos_y[e]


@njit
def _writes_one_and_calls(s, e):
    s.rew[e] = _reads_two(s, e)


@njit
def _passes_it_on_second(e, s):
    return _reads_two(s, e)


@njit
def _indexes_the_tuple(s, e):
    return s[0][e]


@njit
def _iterates_the_tuple(s, e):
    total = 0.0
    for field in s:
        total += field[e]
    return total


def test_a_function_uses_its_attributes_and_those_of_the_functions_it_passes_the_state():
    assert state_fields(_reads_two) == {"pos_x", "pos_y"}
    assert state_fields(_writes_one_and_calls) == {"rew", "pos_x", "pos_y"}
    assert state_fields(_passes_it_on_second, 1) == {"pos_x", "pos_y"}


def test_any_other_use_of_the_state_needs_all_of_it():
    assert state_fields(_indexes_the_tuple) is None
    assert state_fields(_iterates_the_tuple) is None


def test_the_answers_are_kept_on_disk_by_the_code_of_each_function(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_ZOO_CACHE_DIR", str(tmp_path))
    for name, fresh in (("_memo", {}), ("_disk", None), ("_dirty", False)):
        monkeypatch.setattr(sf, name, fresh)
    assert state_fields(_writes_one_and_calls) == {"rew", "pos_x", "pos_y"}
    sf.flush()  # generate_source does this once per module
    kept = (tmp_path / "state_fields.json").read_text()
    assert "_writes_one_and_calls" in kept and "_reads_two" in kept


def test_a_kept_answer_naming_a_callee_no_longer_there_is_read_again(tmp_path, monkeypatch):
    """A callee moved to another module since the answer was kept: its caller's code is unchanged."""
    monkeypatch.setenv("GPU_ZOO_CACHE_DIR", str(tmp_path))
    for name, fresh in (("_memo", {}), ("_disk", None), ("_dirty", False)):
        monkeypatch.setattr(sf, name, fresh)
    assert state_fields(_writes_one_and_calls) == {"rew", "pos_x", "pos_y"}
    disk, moved = sf._load_disk(), 0
    for answer in disk.values():
        if answer is not None:
            moved += len(answer[1])
            answer[1] = [["gpu_zoo.moved_away", qualname, i] for _, qualname, i in answer[1]]
    assert moved
    monkeypatch.setattr(sf, "_memo", {})
    assert state_fields(_writes_one_and_calls) == {"rew", "pos_x", "pos_y"}


def test_the_economys_cpu_driver_passes_each_phase_only_its_fields():
    src = kernel_source("gather_trade_build_v0", "cpu", 4)
    driver = src.split("def _drive_serial(", 1)[1].split("\ndef ", 1)[0]
    types = dict(re.findall(r"^(_State\d+) = narrow_type\('State', \(([^)]*)\)\)", src, re.M))
    assert types, "no call passes part of the state"
    # the copy of the final observation reads the observations and writes their copies, nothing else
    copy = re.search(r"_elem1\((_State\d+)\(", driver).group(1)
    assert set(re.findall(r"'(\w+)'", types[copy])) == {"obs_worker", "final_obs_worker", "obs_planner",
                                                         "final_obs_planner"}
    called = re.findall(r"(\w+)\((s|_State\d+)\(?", driver)
    assert sum(arg != "s" for _, arg in called) > 20


def test_the_cuda_kernel_passes_each_call_only_its_fields():
    src = kernel_source("gather_trade_build_v0", "cuda", 64)
    body = src.split("def drive(resetting, ", 1)[1]
    narrowed = re.findall(r"\w+\((_State\d+)\(", body)
    assert len(narrowed) > 20
    # no call gets the whole state: the kernel reads its fields off its arguments and builds no state tuple
    assert not re.findall(r"(\w+)\(s[,)]", body) and "State(" not in body.replace("_State", "")
    # and the params each phase reads, no more
    assert len(re.findall(r"\w+\(_State\d+\([^)]*\), _Params\d+\(", body)) > 20


def test_no_generated_call_passes_more_than_30_arguments():
    # CPython passes them as a list grown one append at a time: Numba's IR then grows as their square
    for target in ("cpu", "cuda"):
        tree = ast.parse(kernel_source("gather_trade_build_v0", target, 64))
        widths = [len(node.args) for node in ast.walk(tree) if isinstance(node, ast.Call)]
        assert max(widths) <= 30, target
        assert any(isinstance(a, ast.Starred) for node in ast.walk(tree) if isinstance(node, ast.Call)
                   for a in node.args), "the economy's state has more than 30 fields: it is spread from tuples"
