"""CUDA launch shapes: how threads are spread over envs and agents (no GPU needed to choose one)."""

import json

import pytest
import torch

import gpu_zoo
from gpu_zoo.core.api.tuning import FILL_THREADS, Tuning
from gpu_zoo.core.compiler.launch_shape import launch_shape
from tests.helpers import GRID_SMALL


def test_one_thread_per_agent_rounded_up_to_a_power_of_two():
    assert launch_shape(5, num_envs=1 << 20).threads_per_env == 8
    assert launch_shape(1000, num_envs=2000).threads_per_env == 256  # more agents than lanes: lanes loop


def test_large_observations_get_spare_lanes_while_the_batch_is_small():
    small = launch_shape(5, obs_elements=5010, num_envs=1024)
    assert small.threads_per_env == 128 and small.block == 128
    # Once the envs alone fill the GPU, spare lanes would only idle through the per-agent phases.
    assert launch_shape(5, obs_elements=5010, num_envs=FILL_THREADS // 8).threads_per_env == 8


def test_envs_share_a_block():
    shape = launch_shape(4, num_envs=1 << 20)
    assert (shape.threads_per_env, shape.envs_per_block, shape.grid(1000)) == (4, 32, 32)


def test_the_simulator_keeps_blocks_tiny():
    assert launch_shape(1000, simulator=True, obs_elements=10**6).block == 8
    assert launch_shape(1000, simulator=True, threads_per_env=64).block == 64  # unless asked for more


def test_the_simulator_packs_several_small_envs_in_a_block():
    shape = launch_shape(2, simulator=True)
    assert (shape.threads_per_env, shape.envs_per_block, shape.grid(3)) == (2, 4, 1)  # one block, a slot empty


def test_every_field_starts_on_a_cache_line():
    from gpu_zoo.core.compiler.layout import Layout
    from gpu_zoo.core.runtime.buffers import FIELD_ALIGN, Buffers

    spec = gpu_zoo.get_spec("gather_trade_build_v0")  # fields of all four dtypes; no kernel is compiled
    buffers = Buffers(Layout(spec, spec.make_params()), 3, torch.device("cpu"))
    base = buffers.storage.data_ptr()
    assert {f.dtype for f in buffers.layout.fields.values()} == {"f64", "f32", "i32", "u8"}
    assert all((v.data_ptr() - base) % FIELD_ALIGN == 0 for v in buffers.raw.values())
    spans = sorted((v.data_ptr() - base, v.data_ptr() - base + v.numel() * v.element_size())
                   for v in buffers.raw.values())
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:], strict=False))  # none overlap
    assert spans[-1][1] <= buffers.nbytes()


def test_threads_per_env_overrides():
    assert launch_shape(5, threads_per_env=512).block == 512


@pytest.mark.parametrize("bad", [0, 3, 2048, 2.0, True])
def test_bad_threads_per_env_is_rejected(bad):
    with pytest.raises(ValueError, match="threads_per_env"):
        launch_shape(5, threads_per_env=bad)
    with pytest.raises(ValueError, match="threads_per_env"):
        gpu_zoo.make("tag_gridworld_v0", device="cpu", threads_per_env=bad)


def test_a_register_cap_reaches_the_generated_kernel():
    from gpu_zoo.core.compiler.compile import generate_source
    from gpu_zoo.core.compiler.layout import Layout

    spec = gpu_zoo.get_spec("tag_gridworld_v0")
    layout = Layout(spec, spec.make_params())
    capped = generate_source(layout, "cuda", launch_shape(5, max_registers=64))
    assert capped.count("@partial(cuda.jit, lto=False, max_registers=64)") == 1  # one kernel for a step and a reset
    plain = generate_source(layout, "cuda", launch_shape(5))
    assert "@partial(cuda.jit, lto=False)\ndef drive(" in plain and "max_registers=" not in plain.partition("\n")[2]


_KERNEL_OPTIONS = """
import json
import numba.cuda.decorators as decorators
decorators._have_nvjitlink = lambda: True  # where numba-cuda would link with LTO by default
from gpu_zoo.testing.cuda_compile import _kernels
module, _, _ = _kernels("simple_tag_v3", 64, {})
print(json.dumps({k: module.drive.targetoptions.get(k) for k in ("lto", "max_registers")}))
"""


def test_a_kernel_links_its_ptx_without_lto_in_numba_cuda_itself():
    """numba-cuda's own dispatcher gets ``lto=False`` (its decorator factory drops the option)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("numba_cuda")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, "-c", _KERNEL_OPTIONS], env=env, capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1], timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"lto": False, "max_registers": None}


def test_a_split_step_is_three_kernels_with_the_observations_alone_in_the_second():
    from gpu_zoo.core.compiler.compile import generate_source
    from gpu_zoo.core.compiler.layout import Layout

    spec = gpu_zoo.get_spec("tag_gridworld_v0")
    layout = Layout(spec, spec.make_params())
    split = generate_source(layout, "cuda", launch_shape(5, split_observe=True))
    kernels = [line.split("(")[0][4:] for line in split.splitlines() if line.startswith("def step")]
    # the reset is the last kernel's other branch
    assert kernels == ["step_phases", "step_observe", "step_finished"] and "def step_finished(resetting, " in split
    wide = launch_shape(100, split_observe=True, threads_per_env=512)
    assert (wide.phase_threads_per_env, wide.for_phases().envs_per_block, wide.for_phases().block) == (128, 4, 512)
    body = generate_source(layout, "cuda", wide)
    assert body[body.index("def step_phases"):].split("def ")[1].count("lane = tid & 127") == 1
    assert body[body.index("def step_observe"):].split("def ")[1].count("lane = tid & 511") == 1
    observe = split[split.index("def step_observe"):split.index("def step_finished")]
    assert "f_obs_" in observe and "end_agent" not in observe and "begin_env" not in observe
    assert "def drive(resetting, " in generate_source(layout, "cuda", launch_shape(5))
    with pytest.raises(ValueError, match="split_observe must be a bool"):
        gpu_zoo.make("tag_gridworld_v0", device="cpu", split_observe="yes")


def test_wide_blocks_get_a_register_cap_unless_the_shape_is_chosen():
    from gpu_zoo.core.compiler.launch_shape import WIDE_BLOCK_REGISTERS

    assert launch_shape(1000, num_envs=2000).max_registers == WIDE_BLOCK_REGISTERS
    assert launch_shape(1000, num_envs=2000, max_registers=96).max_registers == 96
    assert launch_shape(1000, num_envs=2000, threads_per_env=256).max_registers is None
    assert launch_shape(5, num_envs=2000).max_registers is None


@pytest.mark.parametrize("bad", [8, 256, 64.0, True])
def test_bad_max_registers_is_rejected(bad):
    with pytest.raises(ValueError, match="max_registers"):
        gpu_zoo.make("tag_gridworld_v0", device="cpu", max_registers=bad)


@pytest.mark.parametrize("name", ["no_such_field", "nbr_idx"])  # missing, and a per-agent (2-D) field
def test_a_scratch_name_must_be_a_field_of_shape_n(name):
    import dataclasses

    from gpu_zoo.core import PerAgent
    from gpu_zoo.core.compiler.layout import Layout
    from gpu_zoo.tag.continuous import bin_agent

    spec = gpu_zoo.get_spec("tag_continuous_v0")
    extra = PerAgent(bin_agent, scratch=(name,))
    bad = dataclasses.replace(spec, observe=lambda p: (*spec.phases("observe", p), extra))
    params = spec.make_params(use_full_observation=False, num_other_agents_observed=2)
    with pytest.raises(ValueError, match=f"scratch '{name}' must name a field of shape"):
        _ = Layout(bad, params).scratch_fields
    assert Layout(spec, params).scratch_fields == ("nbr_d2", "nbr_j")


@pytest.mark.parametrize("given, expected", [({}, (512, None)), ({"threads_per_env": 64}, (64, None)),
                                             ({"max_registers": 96}, (256, 96))])
def test_an_envs_preferred_launch_applies_unless_the_caller_chooses(given, expected):
    from gpu_zoo.core.compiler.launch_shape import layout_launch_shape
    from gpu_zoo.core.compiler.layout import Layout

    spec = gpu_zoo.get_spec("tag_continuous_v0")
    layout = Layout(spec, spec.make_params(num_taggers=5, num_runners=95))
    shape = layout_launch_shape(layout, 2000, **given)
    assert (shape.threads_per_env, shape.max_registers) == expected
    launch = spec.tuning.launch
    assert launch(spec.params(num_taggers=5, num_runners=95), 2000) == {"threads_per_env": 512}
    assert launch(spec.params(num_taggers=5, num_runners=95, use_full_observation=False), 2000) == {}


def test_an_env_can_choose_the_split_step_and_a_caller_can_overrule_it():
    import dataclasses

    from gpu_zoo.core.compiler.launch_shape import layout_launch_shape
    from gpu_zoo.core.compiler.layout import Layout

    spec = gpu_zoo.get_spec("tag_gridworld_v0")
    assert not layout_launch_shape(Layout(spec, spec.make_params()), 8).split_observe
    splitting = dataclasses.replace(spec, tuning=Tuning(launch=lambda p, num_envs: {"split_observe": True}))
    layout = Layout(splitting, splitting.make_params())
    assert layout_launch_shape(layout, 8).split_observe
    assert not layout_launch_shape(layout, 8, split_observe=False).split_observe
    assert layout_launch_shape(layout, 8).threads_per_env == layout_launch_shape(Layout(spec, spec.make_params()),
                                                                                 8).threads_per_env


def test_envs_differing_only_in_max_cycles_share_their_kernels():
    """max_cycles is read at run time: no recompile for another episode length, and set_params changes it."""
    from gpu_zoo.core.compiler.layout import Layout

    spec = gpu_zoo.get_spec("tag_gridworld_v0")
    short, long = (Layout(spec, spec.make_params(**{**GRID_SMALL, "max_cycles": n})) for n in (3, 40))
    assert short.key() == long.key() and "max_cycles" not in short.kernel_constants
    env = gpu_zoo.make("tag_gridworld_v0", num_envs=2, device="cpu", **{**GRID_SMALL, "max_cycles": 40})
    env.reset(seed=0)
    env.set_params(max_cycles=2)
    for t in range(2):
        env.step(env.sample_actions(torch.Generator().manual_seed(t)))
    assert (env.state.ep_count == 1).all() and (env.state.last_len == 2).all()
    with pytest.raises(ValueError, match="max_cycles"):
        env.set_params(max_cycles=0)
    assert env.params.max_cycles == 2 and (env.state.max_cycles == 2).all()


def test_a_runtime_value_compiles_nothing_and_a_compile_time_one_compiles_one_module():
    """Float params and max_cycles, set or constructed, reuse the loaded kernels; an agent count gets its own."""
    from numba.core import event

    from gpu_zoo.core.runtime import launch

    gen = torch.Generator().manual_seed(0)
    env = gpu_zoo.make("tag_gridworld_v0", num_envs=2, device="cpu", **GRID_SMALL)
    env.reset(seed=0)
    env.step(env.sample_actions(gen))
    loaded = set(launch._loaded)
    with event.install_recorder("numba:compile") as compiles:
        env.set_params(tag_reward_for_tagger=2.5, wall_hit_penalty=0.5, max_cycles=9)
        env.step(env.sample_actions(gen))
        other = gpu_zoo.make("tag_gridworld_v0", num_envs=3, device="cpu",
                             **{**GRID_SMALL, "max_cycles": 7, "step_cost_for_tagger": 0.25})
        other.reset(seed=1)
        other.step(other.sample_actions(gen))
    assert compiles.buffer == [] and set(launch._loaded) == loaded
    assert other._launcher.module is env._launcher.module
    # one tagger and one runner: the configuration of tests/test_ppo.py, compiled once for both (a test
    # run earlier in this process may have loaded it already, so at most that one module is new)
    more = gpu_zoo.make("tag_gridworld_v0", num_envs=2, device="cpu",
                        **{**GRID_SMALL, "num_taggers": 1, "num_runners": 1})
    assert more._launcher.compile_key != env._launcher.compile_key
    assert more._launcher.module is launch._loaded[more._launcher.compile_key]
    assert set(launch._loaded) - loaded <= {more._launcher.compile_key}


def test_a_few_envs_run_serially_on_the_cpu_and_step_as_the_parallel_driver_does():
    """Up to SERIAL_MAX_ENVS the CPU runs the envs in order (no thread pool); both drivers give the same states."""
    from gpu_zoo.core.api.tuning import SERIAL_MAX_ENVS

    few = gpu_zoo.make("tag_gridworld_v0", num_envs=SERIAL_MAX_ENVS, device="cpu", **GRID_SMALL)
    many = gpu_zoo.make("tag_gridworld_v0", num_envs=SERIAL_MAX_ENVS + 1, device="cpu", **GRID_SMALL)
    assert few._launcher._steps[0][0] is few._launcher.module.step_serial
    assert many._launcher._steps[0][0] is many._launcher.module.step
    few.reset(seed=3)
    many.reset(seed=3)
    gen = torch.Generator().manual_seed(0)
    for _ in range(2 * GRID_SMALL["max_cycles"]):  # auto-resets included
        acts = many.sample_actions(gen)
        many.step(acts)
        few.step({g: a[:SERIAL_MAX_ENVS] for g, a in acts.items()})
        for name, mine in few.buffers.raw.items():
            assert torch.equal(mine, many.buffers.raw[name][:SERIAL_MAX_ENVS]), name


@pytest.mark.parametrize("name", ["num_agents", "tagger_lo", "runner_hi"])
def test_a_param_or_constant_named_like_a_derived_one_is_refused(name):
    """The core derives num_agents and each group's range: a param or constant of the same name would be lost."""
    import dataclasses

    from gpu_zoo.core.compiler.layout import Layout

    spec = gpu_zoo.get_spec("tag_gridworld_v0")
    bad = dataclasses.replace(spec, constants=lambda p: {**spec.constants(p), name: 7})
    with pytest.raises(ValueError, match=f"'{name}'.* derived by the core"):
        _ = Layout(bad, spec.make_params(**GRID_SMALL)).kernel_constants


def test_an_envs_preferred_launch_may_depend_on_the_number_of_envs_and_the_simulator_caps_it():
    from gpu_zoo.core.compiler.launch_shape import layout_launch_shape
    from gpu_zoo.core.compiler.layout import Layout

    spec = gpu_zoo.get_spec("simple_world_comm_v3")
    layout = Layout(spec, spec.make_params())
    assert layout_launch_shape(layout, 1024).threads_per_env == 32  # few envs: spare lanes pay
    assert layout_launch_shape(layout, 131072).threads_per_env == 4
    assert layout_launch_shape(layout, 1024, simulator=True).threads_per_env == 8  # lanes are OS threads there
    assert layout_launch_shape(layout, 1024, threads_per_env=2).threads_per_env == 2


_MAKE_AND_STEP = """
import json, sys, time
from numba.core import event
import torch, gpu_zoo
spent = []
with event.install_timer("numba:compile", spent.append):
    print("ready", flush=True)
    sys.stdin.readline()  # both processes start compiling together
    env = gpu_zoo.make("simple_v3", num_envs=2, device="cpu", max_cycles=5)
    env.reset(seed=1)
    env.step(env.sample_actions(torch.Generator().manual_seed(0)))
print(json.dumps({"compile_s": sum(spent), "obs": env.state.obs_agent.tolist()}))
"""


def test_processes_compiling_one_configuration_at_once_compile_it_once(tmp_path):
    """The second process waits on the first's lock, then loads what it wrote to the cache."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "GPU_ZOO_CACHE_DIR": str(tmp_path / "kernels"), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    procs = [subprocess.Popen([sys.executable, "-c", _MAKE_AND_STEP], env=env, text=True, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE) for _ in range(2)]
    for proc in procs:
        assert proc.stdout.readline().strip() == "ready"
    for proc in procs:
        proc.stdin.write("\n")
        proc.stdin.flush()
    out = [json.loads(proc.communicate(timeout=600)[0].strip().splitlines()[-1]) for proc in procs]
    assert all(proc.returncode == 0 for proc in procs)
    first, second = sorted(r["compile_s"] for r in out)
    assert second > 1.0 and first < 0.1 * second, out  # one compiled the kernels, the other loaded them
    assert out[0]["obs"] == out[1]["obs"]


@pytest.mark.parametrize("kw,message", [
    (dict(threads_per_env=True), "threads_per_env must be a power of two in"),
    (dict(threads_per_env=48), "threads_per_env must be a power of two in"),
    (dict(threads_per_env=2048), "threads_per_env must be a power of two in"),
    (dict(max_registers=8.0 * 8), "max_registers must be an int in"),
    (dict(max_registers=True), "max_registers must be an int in"),
    (dict(max_registers=300), "max_registers must be an int in"),
    (dict(split_observe=1), "split_observe must be a bool"),
], ids=["tpe_bool", "tpe_not_pow2", "tpe_big", "regs_float", "regs_bool", "regs_big", "split_int"])
def test_launch_options_of_the_wrong_type_or_range_are_refused_naming_what_is_expected(kw, message):
    with pytest.raises(ValueError, match=message):
        launch_shape(4, **kw)

