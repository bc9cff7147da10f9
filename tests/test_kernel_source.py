"""`gpu-zoo show-kernel` prints the very source gpu_zoo compiles, without compiling anything."""

from pathlib import Path

import pytest

import gpu_zoo
from gpu_zoo.cli import main
from gpu_zoo.core.compiler.kernel_source import kernel_source
from gpu_zoo.core.runtime.batched import BatchedEnv
from tests.helpers import PZ_CONFIGS


@pytest.mark.parametrize("target", ["cpu", "cuda"], ids=["cpu-target", "gpu-target"])  # "cuda" marks GPU-only tests
def test_the_printed_source_is_the_module_the_env_runs(target, cuda_device):
    kw = PZ_CONFIGS["simple_tag_v3"]
    device = "cpu" if target == "cpu" else cuda_device
    env = BatchedEnv(gpu_zoo.get_spec("simple_tag_v3"), 3, device=device, target=target, **kw)
    ran = Path(env._launcher.module.__file__).read_text()
    kind = target if target == "cpu" or cuda_device.type == "cuda" else "cudasim"
    assert kernel_source("simple_tag_v3", kind, 3, **kw) == ran


def test_the_command_prints_the_kernels_of_the_asked_configuration(capsys):
    assert main(["show-kernel", "simple_tag_v3", "--target", "cuda", "--num-envs", "4096",
                 "--param", "num_adversaries=5", "--param", "continuous_actions=True"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# gpu_zoo kernels for simple_tag_v3, target cuda, launch LaunchShape(")
    assert "@partial(cuda.jit, lto=False)\ndef drive(resetting, " in out
    assert out == kernel_source("simple_tag_v3", "cuda", 4096, num_adversaries=5, continuous_actions=True)
    main(["show-kernel", "simple_spread_v3", "--target", "cpu"])
    assert "prange" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--param", "num_adversarie=5"], "unknown argument"),
    (["--param", "num_adversaries"], "KEY=VALUE"),
    (["--param", "threads_per_env=3"], "power of two"),
    (["--num-envs", "0"], "num_envs must be a positive int"),
])
def test_bad_requests_are_refused_naming_what_was_expected(args, message, capsys):
    with pytest.raises(SystemExit):
        main(["show-kernel", "simple_tag_v3", *args])
    assert message in capsys.readouterr().err


def test_the_cpu_driver_holds_each_reset_phase_once_for_a_reset_and_an_auto_reset():
    """Step and reset share one CPU driver, which writes the env's reset phases and observation once."""
    src = kernel_source("gather_trade_build_v0", "cpu", 4)
    driver = src.split("def _drive_serial(", 1)[1].split("\ndef ", 1)[0]
    assert driver.count("world__reset_tile(") == 1
    # the observation: once after the step's phases, once after a reset or restart
    assert driver.count("observation__sort_incomes(") == 2
    assert "episode__reset_env(" in driver and "episode__restart_env(" in driver
    assert "\nstep = partial(_drive, False)" in src and "\nreset_serial = partial(_drive_serial, True)" in src


def test_the_cuda_kernel_holds_each_reset_phase_once_for_a_reset_and_an_auto_reset():
    """On CUDA a step and a reset are one kernel too, its flag a kernel argument."""
    for kw, kernel in (({}, "drive"), ({"split_observe": True}, "step_finished")):
        src = kernel_source("gather_trade_build_v0", "cuda", 64, **kw)
        body = src.split(f"def {kernel}(resetting, ", 1)[1].split("\ndef ", 1)[0]
        assert body.count("world__reset_tile(") == 1 and "\ndef reset(" not in src
        assert "episode__reset_env(" in body and "episode__restart_env(" in body
        # the tail runs where a reset or a restart says so, each branch setting the flag it reads
        assert "        restart = ok\n    else:" in body and "        restart = fin and f_autoreset[e] != 0" in body
        assert "\n    if restart:" in body


def test_the_cpu_drivers_read_state_fields_from_the_kernel_arguments():
    """No tuple of every field's array where a call's fields are known: Numba loaded it whole at each use."""
    import re

    src = kernel_source("gather_trade_build_v0", "cpu", 4)
    for driver in ("_drive", "_drive_serial"):
        body = src.split(f"def {driver}(", 1)[1].split("\ndef ", 1)[0]
        assert "State(f_" not in body and not re.search(r"(?<![\w.])s\b", body)
        assert re.search(r"p = _params\(_State\d+\(f_params, f_max_cycles\), e\)", body)
        assert "(_State" in body.split("idle = f_finished[e] != 0", 1)[1]
    # a callee whose fields cannot be told still gets the whole state, built in the loop
    push = kernel_source("simple_push_v3", "cpu", 4).split("def _drive_serial(", 1)[1].split("\ndef ", 1)[0]
    assert "        s = State(*((f_rew, " in push


def test_the_kernels_name_hashes_every_module_their_phases_call_into():
    """Numba's cache sees only the generated module: a helper module's change must name a new kernel."""
    import sys

    from gpu_zoo.core.compiler.compile import _sources_reached
    from gpu_zoo.core.compiler.layout import Layout
    from gpu_zoo.core.compiler.plan import stages

    spec = gpu_zoo.get_spec("chess_v6")  # phases in chess.py call the move generator in chess_moves.py
    step, reset = stages(Layout(spec, spec.make_params()))
    phases = [getattr(sys.modules[m], n) for st in (step, reset) for m, n in st.imports.values()]
    assert {"chess.py", "chess_moves.py", "boards.py"} <= {Path(f).name for f in _sources_reached(phases)}
