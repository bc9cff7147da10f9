"""The benchmark suite end to end on the CPU at tiny sizes: records, their fields, the report (never speed)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks.cases import suite_cases
from benchmarks.ours import step_traffic
from gpu_zoo.testing import nvvm_available
from tests.helpers import built_once

ROOT = Path(__file__).resolve().parent.parent
MACHINE_FIELDS = {"python", "versions", "gpu_zoo_git_sha", "date", "command", "cpu_count"}
RESULT_FIELDS = {"env_steps_per_s", "spread", "samples", "agent_steps_per_s", "agents", "peak_gpu_mem_bytes"}


def _cli(*args, cwd=ROOT):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "benchmarks", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=True)


def _tiny_suite(out: Path):
    _cli("run", "--suite", "all", "--device", "cpu", "--sizes", "tiny", "--out", str(out), "--warm-jobs", "2")


@pytest.fixture(scope="module")
def tiny_run():
    out = built_once("bench", _tiny_suite)  # once per test run, whichever worker asks first
    files = list(out.glob("*.json"))
    assert len(files) == 1, files
    return out, json.loads(files[0].read_text())["records"]


def test_every_case_gets_one_self_describing_record(tiny_run):
    _, records = tiny_run
    assert [r["id"] for r in records] == [c.id for c in suite_cases("all", "cpu", "tiny")]
    for r in records:
        assert r["status"] in ("ok", "skipped", "error", "unsupported"), r
        assert MACHINE_FIELDS <= set(r["machine"]), r["machine"]
        assert {"numpy", "numba", "numba-cuda", "torch"} <= set(r["machine"]["versions"])
        assert "--suite all --device cpu --sizes tiny" in r["machine"]["command"]
        if r["status"] != "ok":
            assert r.get("reason") or r.get("result"), f"{r['id']}: a record that is not ok must say why"


def test_our_envs_and_trainer_are_measured(tiny_run):
    _, records = tiny_run
    ours = {r["workload"]: r for r in records if r["system"] == "gpu_zoo"}
    for workload in ("simple_tag", "tag_continuous", "tag_gridworld", "train_tag_gridworld", "sb3_simple_tag"):
        r = ours[workload]
        assert r["status"] == "ok", r.get("traceback") or r.get("reason")
        assert RESULT_FIELDS <= set(r), sorted(RESULT_FIELDS - set(r))
        lo, hi = r["spread"]
        assert lo <= r["env_steps_per_s"] <= hi and lo > 0
        assert r["agent_steps_per_s"] == pytest.approx(r["env_steps_per_s"] * r["agents"])
        if workload != "sb3_simple_tag":  # compiled ahead by --warm-jobs, in their own processes
            assert r["compile"]["status"] == "ok" and r["compile"]["wall_s"] > 0, r["compile"]
    assert "compile" not in ours["sb3_simple_tag"]
    assert ours["tag_continuous"]["host_us_per_step"] is None  # the CPU target has no separate host cost
    assert ours["tag_continuous"]["bytes_per_env_step"]["total"] > 0
    # Tag is timed over whole episode lengths (its step's cost follows the agents left), with either action mode
    tag = {r["config"].get("actions", "fixed"): r for r in records
           if r["system"] == "gpu_zoo" and r["workload"] == "tag_continuous"}
    assert set(tag) == {"fixed", "fresh"}
    for mode, r in tag.items():
        assert r["status"] == "ok" and r["actions"] == mode and r["window"] == r["steps_per_repeat"] == 6, r


def test_missing_peers_and_envs_are_skipped_with_a_reason(tiny_run):
    _, records = tiny_run
    by_system = {(r["workload"], r["system"]): r for r in records}
    # WarpDrive's Numba backend needs a GPU: on the CPU it is always skipped, installed or not.
    assert by_system[("tag_continuous", "warpdrive")]["status"] == "skipped"
    mpe2 = by_system[("simple_tag", "mpe2")]
    assert mpe2["status"] in ("ok", "skipped")
    if mpe2["status"] == "ok":
        assert mpe2["num_envs"] == 1 and mpe2["env_steps_per_s"] > 0


def test_report_renders_tables_and_plots(tiny_run, tmp_path):
    results, records = tiny_run
    page = tmp_path / "docs" / "benchmarks.md"
    _cli("report", "--results", str(results), "--out", str(page))
    text = page.read_text()
    assert text.startswith("# Benchmarks")
    for heading in ("## MPE simple_tag", "## Tag continuous", "## Tag gridworld", "## End-to-end training"):
        assert heading in text
    assert records[0]["machine"]["command"] in text
    if any(r["system"] == "mpe2" and r["status"] == "ok" for r in records):
        # The CPU headline sets our 8 envs against the fastest peer on this machine.
        cpu = text.split("### CPU", 1)[1].split("##", 1)[0]
        assert "| simple_tag | 8 x 4 |" in cpu and "x** |" in cpu
    # The roofline figure needs GPU rows; CPU runs have none.
    assert "roofline.png" not in text
    for png in ("simple_tag.png", "tag_continuous.png", "tag_gridworld.png", "training.png"):
        data = (tmp_path / "docs" / "benchmarks" / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"benchmarks/{png}" in text


def test_step_traffic_follows_the_layout():
    import gpu_zoo
    from gpu_zoo.core.compiler.layout import Layout

    spec = gpu_zoo.get_spec("tag_gridworld_v0")
    small = step_traffic(Layout(spec, spec.make_params(num_taggers=2, num_runners=1)))
    big = step_traffic(Layout(spec, spec.make_params(num_taggers=8, num_runners=1)))
    assert small["total"] == small["read"] + small["write"]
    # Full observations grow with the square of the agents, so the traffic grows faster than the agents.
    assert big["write"] / small["write"] > 9 / 3
    layout = Layout(spec, spec.make_params(num_taggers=2, num_runners=1))
    obs_bytes = sum(4 * f.shape[0] * f.shape[1] for n, f in layout.fields.items() if n.startswith("obs_"))
    assert small["write"] > obs_bytes  # observations are written, and more besides


def test_full_sizes_cover_the_named_configurations():
    ids = {c.id for c in suite_cases("all", "cuda", "full")}
    for n in (1, 1024, 16384, 131072, 1048576):
        assert f"simple_tag/gpu_zoo/cuda/{n}" in ids
    agents = {c.config["num_taggers"] + c.config["num_runners"] for c in suite_cases("env", "cuda", "full")
              if c.workload == "tag_continuous"}
    assert agents == {5, 100, 640, 1000}
    with pytest.raises(ValueError, match="suite must be one of"):
        suite_cases("speed", "cpu", "tiny")


def test_warpdrive_run_is_matched_by_our_rows():
    import gpu_zoo
    from benchmarks.cases import WARPDRIVE_TAG_RUN, Case
    from benchmarks.worker import train_config

    cases = [c for c in suite_cases("train", "cuda", "full") if c.config.get("run") == "warpdrive_tag_continuous_yaml"]
    assert sorted(c.system for c in cases) == ["gpu_zoo", "gpu_zoo", "warpdrive"]
    assert len({c.id for c in cases}) == 3
    for c in cases:
        env_id, env_kwargs, settings = train_config(c)
        assert env_kwargs == WARPDRIVE_TAG_RUN["env"] and c.num_envs == WARPDRIVE_TAG_RUN["num_envs"]
        assert settings["iterations"] >= 1 and settings["repeats"] >= 1
        if c.system == "gpu_zoo":
            assert env_id == "tag_continuous_v0"
            assert settings["num_steps"] == 250 and settings["hidden"] == 256
    # WarpDrive's env settings are all ours too (same names): the run builds our env unchanged.
    params = gpu_zoo.get_spec("tag_continuous_v0").make_params(**WARPDRIVE_TAG_RUN["env"])
    assert params.num_other_agents_observed == 10 and params.max_cycles == 500
    # A flat training case: every key that is not a setting is the env's.
    flat = Case("train_x", "gpu_zoo", "cpu", 4, {"env_id": "e", "num_steps": 4, "iterations": 1, "repeats": 1,
                                                   "grid_length": 4})
    assert train_config(flat) == ("e", {"grid_length": 4}, {"num_steps": 4, "iterations": 1, "repeats": 1})


def test_warpdrive_yaml_maps_to_our_names():
    from benchmarks.cases import WARPDRIVE_TAG_RUN
    from benchmarks.peers import warpdrive

    try:
        run = warpdrive.shipped_run_config("tag_continuous")
    except (ImportError, warpdrive.Skipped):
        pytest.skip("rl-warp-drive is not installed")
    assert warpdrive.as_our_kwargs(run["env"]) == WARPDRIVE_TAG_RUN["env"]
    assert run["trainer"]["num_envs"] == WARPDRIVE_TAG_RUN["num_envs"]
    per_env = run["trainer"]["train_batch_size"] // run["trainer"]["num_envs"]
    assert per_env == WARPDRIVE_TAG_RUN["num_steps"]


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") != "1", reason="the simulator runs these kernels in CI")
# rows of 29, 36 and 64 floats, and segments of 120 (a warp's 32 lanes take more than one pass)
@pytest.mark.parametrize("envs, taggers, runners", [(2, 1, 4), (2, 1, 5), (2, 2, 8), (1, 1, 120)])
def test_the_16_byte_store_kernel_writes_what_the_row_kernel_writes(envs, taggers, runners):
    import benchmarks.obs_bound as ob

    ob._set_sizes(envs, taggers, runners)
    rng = np.random.default_rng(0)
    state = [rng.random((ob.E, ob.A), dtype=np.float32) * 10 for _ in range(5)]
    alive = (rng.random((ob.E, ob.A)) > 0.3).astype(np.int32)
    ref = np.full((ob.E, ob.A, ob.D), -7.0, np.float32)
    ob.row_kernel[2, 64](*state, alive, ref, False)
    flat = np.full(ob.E * ob.A * ob.D, -7.0, np.float32)
    ob.segment_kernel[ob.E, 128](*state, alive, flat)
    assert (ref != -7.0).all()
    np.testing.assert_array_equal(flat.reshape(ref.shape), ref)


def _record(system, rate, n=131072, workload="simple_spread", status="ok", gpu="NVIDIA H200", outputs="kept",
            **config):
    r = {"system": system, "device": "cpu" if system in ("mpe2", "ai_economist") else "cuda", "num_envs": n,
         "workload": workload, "status": status, "env_steps_per_s": rate, "agents": 3, "config": config,
         "machine": {"gpu": gpu, "cpu_count": 16, "date": "2026-12-02T00:00:00"}}
    if system.startswith("jaxmarl") and outputs is not None:
        r["outputs"] = outputs
    return r


def test_the_readme_table_sets_ours_against_the_fastest_peer_of_the_same_size():
    from benchmarks.report import readme_table

    records = [_record("gpu_zoo", 2e9), _record("jaxmarl", 5e8), _record("jaxmarl_scan", 1e9),
               _record("jaxmarl_scan", 9e9, n=1024),  # another size: not a peer of this row
               _record("jaxmarl_scan", 9e9, gpu="NVIDIA A100")]  # another machine: neither
    rows = [line for line in readme_table(records) if line.startswith("| simple_spread")]
    assert rows == ["| simple_spread | 131,072 x 3 | defaults | full | fixed random | 2e+09 | JaxMARL in lax.scan "
                    "(100 steps a call) | 1e+09 | 2x |"]


def test_a_peer_step_that_skipped_its_observations_is_no_peer():
    from benchmarks.report import headline, readme_table

    records = [_record("gpu_zoo", 2e9), _record("jaxmarl", 5e8),
               _record("jaxmarl_scan", 9e9, outputs="dropped"),  # XLA removed its observations and rewards
               _record("jaxmarl_scan", 8e9, outputs=None)]  # recorded before `outputs` was: the state alone
    rows = [line for line in readme_table(records) if line.startswith("| simple_spread")]
    assert rows == ["| simple_spread | 131,072 x 3 | defaults | full | fixed random | 2e+09 | JaxMARL jit(vmap) per "
                    "step | 5e+08 | 4x |"]
    assert [line.split("|")[-2].strip() for line in headline(records, "cuda")[2:]] == ["**4x**"]


def test_a_fresh_row_names_the_peers_of_its_fixed_twin_it_lacks():
    from benchmarks.report import readme_table

    records = [_record("gpu_zoo", 2e9), _record("jaxmarl_scan", 1e9), _record("vmas", 2e7),
               _record("gpu_zoo", 1e9, actions="fresh"), _record("mpe2", 3e3, n=1)]
    fresh = [line for line in readme_table(records) if line.startswith("| simple_spread") and "fresh random" in line]
    assert fresh == ["| simple_spread | 131,072 x 3 | defaults | full | fresh random each step | 1e+09 | not measured: "
                     "JaxMARL in lax.scan, VMAS | - | - |"]
    records.append(_record("vmas", 1e7, actions="fresh"))
    fresh = [line for line in readme_table(records) if line.startswith("| simple_spread") and "fresh random" in line]
    assert fresh == ["| simple_spread | 131,072 x 3 | defaults | full | fresh random each step | 1e+09 | VMAS | 1e+07 "
                     "| - (not measured: JaxMARL in lax.scan) |"]


def test_a_row_is_set_only_against_peers_of_its_own_world_and_action_mode():
    from benchmarks.report import readme_table

    tag = {"workload": "tag_continuous", "n": 2000}
    yaml_world = {"world": "tag_continuous.yaml", "num_taggers": 5, "num_runners": 95}
    defaults = {"num_taggers": 5, "num_runners": 95}
    records = [_record("gpu_zoo", 5e6, **tag, **yaml_world), _record("warpdrive", 1e6, **tag, **yaml_world),
               _record("gpu_zoo", 4e6, **tag, **yaml_world, actions="fresh"),
               _record("warpdrive", 2e6, **tag, **yaml_world, actions="fresh"),
               _record("gpu_zoo", 7e6, **tag, **defaults), _record("warpdrive", 1e5, **tag, **defaults)]
    for r in records:
        r["agents"] = 100
    rows = [line for line in readme_table(records) if line.startswith("| tag_continuous")]
    shipped = "WarpDrive's tag_continuous.yaml, agent counts changed"
    assert rows == [  # the peer's own shipped world heads the Tag rows, each action mode against its own
        f"| tag_continuous | 2,000 x 100 | {shipped} | 10 nearest | fixed random | 5e+06 | WarpDrive 2.7.1 (numba) "
        "| 1e+06 | 5x |",
        f"| tag_continuous | 2,000 x 100 | {shipped} | 10 nearest | fresh random each step | 4e+06 | WarpDrive 2.7.1 "
        "(numba) | 2e+06 | 2x |",
        "| tag_continuous | 2,000 x 100 | defaults | full | fixed random | 7e+06 | WarpDrive 2.7.1 (numba) | 1e+05 "
        "| 70x |"]


def test_a_shipped_world_gives_its_arguments_under_the_cases_own():
    from benchmarks.cases import WARPDRIVE_TAG_RUN, Case, action_mode, env_kwargs, shipped_world_counts

    case = Case("tag_continuous", "gpu_zoo", "cuda", 2000, {**shipped_world_counts(640), "actions": "fresh"})
    kw = env_kwargs(case)
    assert kw == {**WARPDRIVE_TAG_RUN["env"], "num_taggers": 32, "num_runners": 608}
    assert action_mode(case) == "fresh"
    # ten agents or fewer: the world's 10 nearest become every other agent
    assert env_kwargs(Case("tag_continuous", "gpu_zoo", "cuda", 2000, shipped_world_counts(5)))[
        "num_other_agents_observed"] == 4
    with pytest.raises(ValueError, match="unknown world"):
        env_kwargs(Case("tag_continuous", "gpu_zoo", "cuda", 1, {"world": "nowhere.yaml"}))
    with pytest.raises(ValueError, match="actions must be one of"):
        action_mode(Case("simple_tag", "gpu_zoo", "cuda", 1, {"actions": "sometimes"}))


def test_every_readme_size_is_measured_with_fresh_actions_by_every_gpu_system():
    from benchmarks.cases import GPU_SYSTEMS
    from benchmarks.report import README_ROWS

    cases = suite_cases("env", "cuda", "full")
    fresh = {(c.workload, c.system, c.num_envs, c.config.get("world")) for c in cases
             if c.config.get("actions") == "fresh"}
    for workload, n, _, world in README_ROWS:
        systems = {c.system for c in cases if c.workload == workload and c.num_envs == n
                   and c.config.get("world") == world and c.system in GPU_SYSTEMS and "actions" not in c.config}
        assert systems, (workload, n)
        assert {(workload, s, n, world) for s in systems} <= fresh, (workload, n, world)


def test_the_readme_speed_table_is_the_one_the_committed_records_give():
    from benchmarks.report import README_BEGIN, README_END, load_records, readme_table

    text = (ROOT / "README.md").read_text()
    block = text.split(README_BEGIN, 1)[1].split(README_END, 1)[0].strip("\n")
    assert block == "\n".join(readme_table(load_records(ROOT / "benchmarks" / "results"))), \
        "README's speed table is stale: run python -m benchmarks report"


def test_the_tag_profile_is_rendered_from_its_records(tmp_path):
    from benchmarks.report import profile_section

    assert profile_section(tmp_path) == []  # no profile: no section
    row = {"system": "warpdrive", "world_name": "tag_continuous.yaml", "actions": "fresh", "num_envs": 2000,
           "agents": 640, "wall_us_per_step": 5065.0, "gpu_us_per_step": 4488.0,
           "kernels": {"NumbaTagContinuousStep": 4416.0, "reset_when_done_2d": 19.6},
           "world": {"alive_fraction": 0.075, "fraction_at_a_wall": 0.13}}
    failed = {"system": "gpu_zoo", "world_name": "defaults", "actions": "fixed", "error": "RuntimeError: no GPU"}
    (tmp_path / "profile_tag_x.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(failed) + "\n")
    lines = profile_section(tmp_path)
    assert lines[0] == "## Where a Tag step's time goes"
    rows = [ln for ln in lines if ln.startswith("| WarpDrive")]
    assert rows == ["| WarpDrive 2.7.1 (numba) | tag_continuous.yaml | fresh | 2000 x 640 | 4.49e+03 | 4.42e+03 | "
                    "5.06e+03 | 0.075 | 0.13 | `profile_tag_x.jsonl` |"]
    assert not any("defaults" in ln for ln in lines if ln.startswith("|"))  # a failed run is not a row


def test_jaxmarl_with_and_without_its_outputs_is_rendered_in_pairs(tmp_path):
    from benchmarks.report import jaxmarl_outputs_section

    assert jaxmarl_outputs_section(tmp_path) == []
    rows = [{"workload": "simple_reference", "num_envs": 131072, "mode": "scan", "outputs": o, "env_steps_per_s": v}
            for o, v in (("kept", 1e9), ("dropped", 2e9))]
    rows.append({**rows[0], "mode": "step"})  # no state-only twin: no row
    (tmp_path / "jaxmarl_outputs_x.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = jaxmarl_outputs_section(tmp_path)
    assert [ln for ln in lines if ln.startswith("| simple")] == [
        "| simple_reference | 131072 | scan | 1.00e+09 | 2.00e+09 | 2.00 | `jaxmarl_outputs_x.jsonl` |"]


def test_benchmarl_return_curves_are_read_from_its_scalars(tmp_path):
    from benchmarks.benchmarl_speed import _return_curves

    scalars = tmp_path / "run" / "scalars"
    scalars.mkdir(parents=True)
    (scalars / "eval_adversary_reward_episode_reward_mean.csv").write_text("0,5.2\n2,146.9\n5,223.4\n")
    (scalars / "collection_adversary_reward_episode_reward_mean.csv").write_text("0,7.3\n1,12.6\n")
    (scalars / "timers_iteration_time.csv").write_text("0,2.0\n")
    assert _return_curves(tmp_path) == {
        "collection_adversary_reward_episode_reward_mean": [(0, 7.3), (1, 12.6)],
        "eval_adversary_reward_episode_reward_mean": [(0, 5.2), (2, 146.9), (5, 223.4)]}


def test_cold_start_rows_pair_each_configurations_cold_and_warm_process(tmp_path):
    from benchmarks.report import cold_start_section

    assert cold_start_section(tmp_path) == []
    base = {"device": "cpu", "import_s": 1.5, "llvm_s": 4.0, "command": "python -m benchmarks.cold_start --device cpu",
            "cpu_count": 2, "date": "2026-12-03T20:00:00+00:00"}
    rows = [{**base, "env_id": "simple_v3", "params": {}, "cache": "cold", "first_step_s": 9.04, "compile_s": 8.0},
            {**base, "env_id": "simple_v3", "params": {}, "cache": "warm", "first_step_s": 0.61, "compile_s": 0.0},
            # a later cold run of the same configuration replaces the earlier one
            {**base, "env_id": "simple_v3", "params": {}, "cache": "cold", "first_step_s": 8.5, "compile_s": 7.5},
            # a cold run whose warm twin never came: no row
            {**base, "env_id": "simple_tag_v3", "params": {"max_cycles": 25}, "cache": "cold", "first_step_s": 9.0,
             "compile_s": 8.0}]
    (tmp_path / "cold_start_cpu_x.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = cold_start_section(tmp_path)
    assert [ln for ln in lines if ln.startswith("| simple")] == [
        "| simple_v3 | defaults | cpu | 8.5 | 0.61 | 7.5 | 4.0 | 1.5 | `cold_start_cpu_x.jsonl` |"]
    assert "- `python -m benchmarks.cold_start --device cpu` on 2 CPU cores, 2026-12-03" in lines


_CUDA_TIMERS = """
import contextlib
from numba.cuda import codegen, dispatcher
from benchmarks.cold_start import _time_cuda_compiles
def hooked():
    return (dispatcher.CUDADispatcher.compile, codegen.CUDACodeLibrary.get_cubin, codegen.CUDACodeLibrary.get_asm_strs)
before = hooked()
spent = {"numba:compile": 0.0, "numba:llvm_lock": 0.0}
with contextlib.ExitStack() as stack:
    _time_cuda_compiles(spent, stack)
    assert all(a is not b for a, b in zip(hooked(), before))
    class Fake:
        def __init__(self): self._cubin_cache = {(9, 0): b"cubin"}
        def _ensure_cc(self, cc): return cc
    assert codegen.CUDACodeLibrary.get_cubin(Fake(), cc=(9, 0)) == b"cubin"
assert hooked() == before
assert spent["numba:llvm_lock"] > 0 and spent["numba:compile"] == 0
print("ok")
"""


def test_cold_start_times_numba_cuda_where_it_compiles_and_puts_it_back():
    """The hooks a cold CUDA child installs exist in the installed numba-cuda, time, and are removed after."""
    pytest.importorskip("numba_cuda")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}  # the real numba.cuda, not the simulator
    done = subprocess.run([sys.executable, "-c", _CUDA_TIMERS], env=env, cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_cold_start_covers_every_env_and_each_preset_configuration():
    import gpu_zoo
    from benchmarks.cold_start import configurations
    from trainers.config import PRESETS

    configs = configurations()
    assert {e for e, _ in configs} == set(gpu_zoo.registered_envs())
    assert all((e, {}) in configs for e in gpu_zoo.registered_envs())
    for env_id, preset in PRESETS.items():
        if preset.env_kwargs:
            assert (env_id, preset.env_kwargs) in configs


@pytest.mark.skipif(not nvvm_available(), reason="needs NVVM: pip install nvidia-cuda-nvcc-cu12 nvidia-cuda-nvrtc-cu12")
def test_cuda_compile_stages_times_each_stage_of_a_real_compile_and_the_report_shows_it(tmp_path):
    pytest.importorskip("numba_cuda")
    from benchmarks.cuda_compile_stages import measure
    from benchmarks.report import cuda_compile_stages_section

    row = measure("simple_v3", {}, timeout=300)
    assert row["front_s"] > 0 and row["ptx_s"] > 0 and (row["link_s"] is None or row["link_s"] > 0)
    # the kernel, then each device function it reaches; the kernel types them all, so it is slowest
    assert row["compiles"] >= row["functions"] > 5 and row["slowest"][0][0] == "drive"
    record = {"env_id": "simple_v3", "params": {}, "num_envs": 1024, **row,
              "command": "python -m benchmarks.cuda_compile_stages",
              "cpu_count": 2, "date": "2026-12-07T00:00:00+00:00"}
    older = {**record, "front_s": 99.0, "date": "2026-12-01T00:00:00+00:00"}
    (tmp_path / "cuda_compile_stages_a.jsonl").write_text(json.dumps(older) + "\n" + json.dumps(record) + "\n")
    rows = [line for line in cuda_compile_stages_section(tmp_path) if line.startswith("| simple_v3 ")]
    assert len(rows) == 1 and f"| {row['front_s']:.1f} |" in rows[0]  # the newest record only
    assert cuda_compile_stages_section(tmp_path / "none") == []


def test_the_board_game_table_reads_both_record_schemas(tmp_path):
    from benchmarks.report import classic_section

    common = {"env": "x", "kwargs": {}, "bytes_per_env_step": 100, "bandwidth_share": 0.5, "gpu": "G", "label": "l"}
    new = {"schema": "gpu_zoo.classic_speed/3", "game": "tictactoe", "num_envs": 8, **common,
           "gpu_zoo_steps_per_s": {"fused": 4e8, "per_step": 1e8, "draw_only": 9e8},
           "pgx_steps_per_s": {"fused": 2e8, "per_step": 4e8}}
    old = {"schema": "gpu_zoo.classic_speed/2", "game": "go_9x9", "num_envs": 8, **common,
           "gpu_zoo_steps_per_s": 3e6, "pgx_steps_per_s": 6e6}
    (tmp_path / "classic_speed_l.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (new, old)))
    rows = [line for line in classic_section(tmp_path) if line.startswith("| go_9x9") or line.startswith("| tic")]
    assert rows == ["| go_9x9 | 8 | 3.00e+06 | 6.00e+06 | 0.5 |  |  |  |  | 100 | 0.5 | G |",
                    "| tictactoe | 8 | 4.00e+08 | 2.00e+08 | 2 | 1.00e+08 | 4.00e+08 | 0.25 | 9.00e+08 | 100 | 0.5 "
                    "| G |"]
    assert classic_section(tmp_path / "none") == []
