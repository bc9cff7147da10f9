"""`gpu-zoo compile` fills the kernel cache as a first step would, so that later processes start warm."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_zoo.cli import DEFAULT_COMPILE_ENVS, build_parser, compile_plan, main
from trainers.config import PRESETS, shipped_configurations

ROOT = Path(__file__).resolve().parents[1]


def _plan(*argv):
    parser = build_parser()
    return compile_plan(parser.parse_args(["compile", *argv]), parser)


def test_the_plan_is_every_shipped_configuration_at_its_preset_batch():
    plan = _plan()
    assert [(e, kw) for e, kw, _ in plan] == [(e, kw) for e, kw, _ in shipped_configurations()]
    tag, economy = PRESETS["simple_tag_v3"], PRESETS["gather_trade_build_v0"]
    assert [(kw, n) for e, kw, n in plan if e == "simple_tag_v3"] == [
        ({}, DEFAULT_COMPILE_ENVS), (tag.env_kwargs, tag.num_envs)]
    assert dict((e, n) for e, kw, n in plan if not kw)["gather_trade_build_v0"] == economy.num_envs


def test_named_envs_a_batch_size_and_params_narrow_the_plan():
    assert {n for _, _, n in _plan("simple_v3", "simple_tag_v3", "--num-envs", "64")} == {64}
    assert {e for e, _, _ in _plan("simple_v3", "simple_v3")} == {"simple_v3"}
    assert _plan("simple_v3", "--param", "max_cycles=7", "--param", "continuous_actions=True") == [
        ("simple_v3", {"max_cycles": 7, "continuous_actions": True}, DEFAULT_COMPILE_ENVS)]


@pytest.mark.parametrize("args, message", [
    (["nope_v0"], "unknown env ids ['nope_v0']"),
    (["--param", "max_cycles=3"], "--param needs the ENV_IDs"),
    (["simple_v3", "--param", "max_cycles"], "KEY=VALUE"),
    (["simple_v3", "--num-envs", "0"], "num_envs must be a positive int"),
    (["simple_v3", "--device", "cpu", "--param", "max_cycle=3"], "expected some of ['max_cycles'"),
])
def test_bad_requests_are_refused_naming_what_was_expected(args, message, capsys):
    with pytest.raises(SystemExit):
        main(["compile", *args])
    assert message in capsys.readouterr().err


def test_a_later_process_finds_the_kernels_in_the_cache(tmp_path):
    """Fresh processes on an empty cache: the first compiles and writes files, the second writes none."""
    env = {**os.environ, "GPU_ZOO_CACHE_DIR": str(tmp_path), "NUMBA_CACHE_DIR": str(tmp_path)}
    cmd = [sys.executable, "-m", "gpu_zoo.cli", "compile", "simple_v3", "--device", "cpu", "--num-envs", "2",
           "--param", "max_cycles=5"]

    def run():
        done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    first = run()
    assert first[0] == f"kernel cache: {tmp_path}"
    assert first[1].startswith("[1/1] simple_v3 max_cycles=5, 2 envs on cpu: ") and "compiled, " in first[1]
    assert any(p.suffix == ".py" for p in tmp_path.iterdir())
    assert run()[1].endswith("(already in the cache)")


def test_jobs_compile_configurations_in_processes_of_their_own_and_report_in_plan_order(tmp_path):
    """Each process compiles exactly its configuration: the defaults, then the preset's (kernels shared)."""
    env = {**os.environ, "GPU_ZOO_CACHE_DIR": str(tmp_path), "NUMBA_CACHE_DIR": str(tmp_path)}
    cmd = [sys.executable, "-m", "gpu_zoo.cli", "compile", "simple_v3", "--device", "cpu", "--num-envs", "2"]

    def run(*extra):
        return subprocess.run([*cmd, *extra], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)

    done = run("--jobs", "2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"kernel cache: {tmp_path}" and len(lines) == 4
    assert lines[1].startswith("[1/2] simple_v3 defaults, 2 envs on cpu: ")
    assert lines[2].startswith("[2/2] simple_v3 max_cycles=25, 2 envs on cpu: ")
    assert lines[3].endswith(" files added to the cache") and int(lines[3].split()[0]) > 0
    assert run("--jobs", "2").stdout.splitlines()[-1] == "all already in the cache"
    # a process refuses its configuration: the others stop, its error is the command's
    refused = subprocess.run([*cmd[:4], "simple_tag_v3", *cmd[4:], "--param", "max_cycle=3", "--jobs", "2"], env=env,
                             cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "unknown argument(s) ['max_cycle']" in refused.stderr
    assert "[1/2]" not in refused.stdout
    assert "--jobs must be a positive int, got 0" in run("--jobs", "0").stderr
