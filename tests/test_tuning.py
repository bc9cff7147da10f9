"""The tuning table: one place for every measured choice, each with its figure, record and command.

The figures are kept outside the package (`benchmarks/tuning_records.py`); an env's `Tuning` holds
its knobs alone.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import gpu_zoo
from benchmarks.tuning_records import ENVS, Measured
from docs.gen import tuning_table
from gpu_zoo.core import Tuning

ROOT = Path(__file__).resolve().parents[1]


def test_the_docs_page_is_the_table():
    page = (ROOT / "docs" / "tuning.md").read_text()
    assert page == tuning_table.markdown(), "docs/tuning.md is stale: python -m docs.gen.tuning_table > docs/tuning.md"


def test_every_record_the_table_names_is_committed():
    named = [path for _, _, m in tuning_table.entries() if m.record for path in m.record.split(", ")]
    assert [path for path in named if not (ROOT / path).exists()] == []


@pytest.mark.parametrize("env_id", gpu_zoo.registered_envs())
def test_an_env_that_tunes_says_what_measured_it(env_id):
    tuning = gpu_zoo.get_spec(env_id).tuning
    if tuning.launch is not None or tuning.observe_by_block or tuning.cpu_inline_helpers is not None:
        assert ENVS.get(env_id), f"{env_id}: a Tuning with knobs set has its benchmarks in benchmarks/tuning_records.py"


def test_every_env_record_names_a_registered_env():
    assert sorted(set(ENVS) - set(gpu_zoo.registered_envs())) == []


def test_the_package_imports_nothing_from_benchmarks():
    """The records name the package's choices, never the other way round: gpu_zoo runs without ``benchmarks/``."""
    found = []
    for path in sorted((ROOT / "gpu_zoo").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] == "benchmarks"]
    assert found == []


def test_the_table_holds_the_core_constants_and_every_envs_choices():
    rows = tuning_table.entries()
    where = [w for w, _, _ in rows]
    for name in ("FILL_THREADS", "OBS_ELEMENTS_PER_LANE", "WIDE_BLOCK_REGISTERS", "SERIAL_MAX_ENVS",
                 "ONE_OBS_LOOP_ELEMENTS"):
        assert f"core: `{name}`" in where
    for env_id in ("simple_spread_v3", "simple_reference_v3", "simple_world_comm_v3", "tag_continuous_v0",
                   "gather_trade_build_v0"):
        assert f"`{env_id}`" in where


@pytest.mark.parametrize("kw,message", [
    (dict(launch=3), "Tuning.launch must be a function"),
    (dict(observe_by_block="yes"), "observe_by_block must be a bool"),
    (dict(measured=(Measured("a", "b", "", "c"),)), "unexpected keyword argument 'measured'"),
    (dict(cpu_inline_helpers="window"), "cpu_inline_helpers must be a tuple of function names"),
    (dict(cpu_inline_helpers=("window", "")), "cpu_inline_helpers must be a tuple of function names"),
], ids=["launch", "by_block", "measured", "inline_str", "inline_empty_name"])
def test_malformed_tuning_is_refused(kw, message):
    with pytest.raises(TypeError, match=message):
        Tuning(**kw)


def test_a_measurement_names_its_figure_and_command():
    with pytest.raises(TypeError, match="Measured.figure must be a non-empty str"):
        Measured("max_registers 64", "", "", "python -m benchmarks.probe x")
    with pytest.raises(TypeError, match="Measured.record must be a str"):
        Measured("max_registers 64", "1.4e9", None, "python -m benchmarks.probe x")
    with pytest.raises(TypeError, match="Measured.note must be a str"):
        Measured("max_registers 64", "1.4e9", "", "python -m benchmarks.probe x", note=None)


def test_a_spec_takes_only_a_tuning():
    spec = gpu_zoo.get_spec("simple_v3")
    with pytest.raises(TypeError, match="tuning must be a gpu_zoo.core.api.tuning.Tuning"):
        dataclasses.replace(spec, tuning={"threads_per_env": 4})


def _cpu_source(spec) -> str:
    from gpu_zoo.core.compiler.compile import generate_source
    from gpu_zoo.core.compiler.layout import Layout

    return generate_source(Layout(spec, spec.make_params()), "cpu", None)


def test_cpu_inline_helpers_inline_only_the_named_helpers_of_an_observation():
    """The economy's observation inlines its map helper and calls the rest; other envs inline everything."""
    from gpu_zoo.core.compiler.speed.rebuild import cpu_inline_only
    from gpu_zoo.economy import market, observation

    src = _cpu_source(gpu_zoo.get_spec("gather_trade_build_v0"))
    assert "_obs_of_worker = cpu_inline_only(_obs_of_worker, ('window',), _inline)" in src
    assert "cpu_inline_only(" not in _cpu_source(gpu_zoo.get_spec("simple_tag_v3"))
    twin = cpu_inline_only(observation.observe_worker, ("window",), {})
    calls = twin.py_func.__globals__
    assert calls["window"] is not observation.window and calls["window"].targetoptions.get("inline") == "always"
    assert calls["price_levels"] is market.price_levels  # called, compiled once


def test_an_inlined_helper_no_observation_calls_is_refused_naming_the_ones_they_call():
    spec = gpu_zoo.get_spec("gather_trade_build_v0")
    bad = dataclasses.replace(spec, tuning=Tuning(cpu_inline_helpers=("windw",)))
    with pytest.raises(ValueError, match=r"names \['windw'\], which no observation function calls; they call "
                                         r"\[.*'window'"):
        _cpu_source(bad)
