"""`check_env`: the conformance checks every gpu_zoo env passes, for an env of your own.

    from gpu_zoo.testing import check_env
    check_env("reach_v0", num_walkers=2, max_cycles=8)      # raises AssertionError naming what failed

    python -m gpu_zoo.testing.check reach_v0 --params '{"max_cycles": 8}' --register reach:SPEC

Each check is run whatever the others do; the error lists every one that failed, with its reason.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable

import numpy as np
import torch

CUDA_STEPS = 3  # steps past the first episode's end that the CPU-vs-CUDA comparison runs


def check_env(env_id: str, num_envs: int = 3, cuda: bool = True, **params) -> dict[str, str]:
    """Runs every check on ``env_id`` with ``params`` (keep them small: the CUDA checks interpret every thread).

    - PettingZoo's own tests: the parallel and AEC APIs and seeds of both; ``max_cycles`` ending every
      agent's episode by that step and truncating none before;
    - the batched API: observations inside their spaces, steps writing the same buffers, a seed
      replaying a whole trajectory and another seed differing, auto-resets keeping the final
      observation;
    - bad actions (a missing group, wrong shape, dtype, range) refused with a ValueError, the
      state unchanged and the env usable after;
    - a frame from ``render``;
    - with ``cuda``: the CUDA target under Numba's simulator equal to the CPU target over an
      episode's end and its auto-reset, and the kernels compiled for a GPU where NVVM is installed.

    Returns each check's outcome ("ok", or why it was skipped); raises AssertionError naming every check that failed.
    """
    from gpu_zoo.core.runtime.batched import BatchedEnv
    from gpu_zoo.registry import get_spec

    spec = get_spec(env_id)
    checks: dict[str, Callable[[], str | None]] = {
        "pettingzoo": lambda: _pettingzoo(spec, params),
        "spaces and buffers": lambda: _spaces_and_buffers(BatchedEnv(spec, num_envs, device="cpu", **params)),
        "seeds replay": lambda: _seeds(lambda: BatchedEnv(spec, num_envs, device="cpu", **params)),
        "auto-reset": lambda: _auto_reset(BatchedEnv(spec, num_envs, device="cpu", **params)),
        "bad actions": lambda: _bad_actions(BatchedEnv(spec, num_envs, device="cpu", **params)),
        "render": lambda: _render(BatchedEnv(spec, 1, device="cpu", **params)),
    }
    if cuda:
        checks["cpu vs cuda"] = lambda: _cpu_vs_cuda(env_id, params)
        checks["cuda compile"] = lambda: _cuda_compile(env_id, params)
    outcome, failed = {}, []
    for name, check in checks.items():
        try:
            outcome[name] = check() or "ok"
        except Exception as err:  # noqa: BLE001 - every check runs; each failure is reported
            failed.append(f"{name}: {type(err).__name__}: {err}")
    if failed:
        raise AssertionError(f"{env_id} {params} failed {len(failed)} of {len(checks)} checks:\n- "
                             + "\n- ".join(failed))
    return outcome


def _pettingzoo(spec, params: dict):
    from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

    from gpu_zoo.core.faces.aec import CYCLE_PLAYS, rounds_entry_points, turn_based_entry_points
    from gpu_zoo.core.faces.pettingzoo import entry_points

    if spec.turn_based:
        env, raw_env, _ = turn_based_entry_points(spec)
        api_test(env(**params), num_cycles=30)
        api_test(raw_env(**params), num_cycles=30)
        seed_test(lambda: env(**params), num_cycles=10)
        _max_moves(env(**{**params, "max_cycles": 4}))
        return
    env, parallel_env, *_ = (rounds_entry_points if spec.play in CYCLE_PLAYS else entry_points)(spec)
    parallel_api_test(parallel_env(**params), num_cycles=50)
    parallel_seed_test(lambda: parallel_env(**params), num_cycles=20)
    api_test(env(**params), num_cycles=30)
    seed_test(lambda: env(**params), num_cycles=10)
    if "max_cycles" in spec.params.__dataclass_fields__:
        _max_cycles(parallel_env(**{**params, "max_cycles": 4}))


def _max_cycles(env, limit: int = 4):
    """Every agent out of the game by step ``limit``, none truncated before it.

    PettingZoo's ``max_cycles_test`` also wants an agent to last the whole episode, which an env
    whose agents may all finish early (walkers reaching a target) meets only by chance.
    """
    env.reset(seed=0)
    for agent in env.possible_agents:
        env.action_space(agent).seed(0)
    steps = 0
    while env.agents:
        _, _, _, truncs, _ = env.step({a: env.action_space(a).sample() for a in env.agents})
        steps += 1
        assert steps <= limit, f"agents {env.agents} are still in the game after max_cycles={limit} steps"
        assert steps == limit or not any(truncs.values()), f"agents truncated at step {steps} of max_cycles={limit}"


def _max_moves(env, limit: int = 4):
    """A turn-based game cut short after ``limit`` moves: every agent then truncated (or the game over)."""
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    moves = 0
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            assert moves == limit or term, f"{agent} truncated after {moves} moves of max_cycles={limit}"
            env.step(None)
            continue
        assert moves < limit, f"a move asked of {agent} after max_cycles={limit} moves"
        mask = obs["action_mask"] if isinstance(obs, dict) else None
        env.step(int(rng.choice(np.flatnonzero(mask))) if mask is not None else env.action_space(agent).sample())
        moves += 1


def _spaces_and_buffers(env):
    obs = env.reset(seed=0)
    gen = torch.Generator().manual_seed(0)
    first = None
    for t in range(4):
        for g in env.groups:
            space = env.single_observation_space(g)
            o = obs[g]
            assert o.shape == (env.num_envs, env.group_size(g), *space.shape), f"{g} observations are {tuple(o.shape)}"
            assert torch.isfinite(o).all(), f"non-finite {g} observations at step {t}"
            for row in o.reshape(-1, *space.shape).numpy():
                assert space.contains(row.astype(space.dtype)), f"a {g} observation outside {space} at step {t}: {row}"
        out = env.step(env.sample_actions(gen))
        if first is None:
            first = out
        else:
            for a, b in zip(first[:4], out[:4], strict=True):
                assert all(a[g] is b[g] for g in env.groups), "a step returned new tensors: it should write its buffers"
        obs = out[0]
        for g in env.groups:
            assert torch.isfinite(out[1][g]).all(), f"non-finite {g} rewards at step {t}"


def _trajectory(env, seed: int, steps: int = 12) -> list[torch.Tensor]:
    env.reset(seed=seed)
    out = [env.buffers.storage.clone()]
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        env.step(env.sample_actions(gen))
        out.append(env.buffers.storage.clone())
    return out


def _seeds(make):
    first, again, other = _trajectory(make(), 5), _trajectory(make(), 5), _trajectory(make(), 6)
    for t, (a, b) in enumerate(zip(first, again, strict=True)):
        assert torch.equal(a, b), f"seed 5 does not replay: the state differs at step {t}"
    if all(torch.equal(a, b) for a, b in zip(first, other, strict=True)):
        return "ok; seeds 5 and 6 gave the same trajectory (an env without randomness?)"
    return None


def _auto_reset(env):
    env.reset(seed=1)
    gen = torch.Generator().manual_seed(1)
    for _ in range(env.params.max_cycles + 1):
        obs, _, _, _, info = env.step(env.sample_actions(gen))
        done = info["done"]
        if done.any():
            e = int(done.nonzero()[0, 0])
            assert int(env.state.ep_count[e]) == 1, "an env that ended has not counted its episode"
            assert int(env.state.t[e]) == 0, "an env that ended did not start its next episode"
            for g in env.groups:
                assert torch.isfinite(info["final_obs"][g][e]).all(), f"non-finite final {g} observations"
            return
    raise AssertionError(f"no episode ended within max_cycles + 1 = {env.params.max_cycles + 1} steps")


def _bad_actions(env):
    env.reset(seed=0)
    good = env.sample_actions(torch.Generator().manual_seed(0))
    g = list(env.groups)[-1]
    space = env.single_action_space(g)
    bad = {"a missing group": {k: v for k, v in good.items() if k != g},
           "an unknown group": {**good, "no_such_group": good[g]},
           "a wrong shape": {**good, g: good[g].reshape(-1)[: max(1, good[g].numel() - 1)]},
           "a NumPy array": {**good, g: good[g].numpy()}}
    if hasattr(space, "n") or hasattr(space, "nvec"):
        bad["an action out of range"] = {**good, g: torch.full_like(good[g], 10**6)}
        bad["float actions"] = {**good, g: good[g].float()}
    before = env.buffers.storage.clone()
    for what, actions in bad.items():
        try:
            env.step(actions)
        except ValueError:
            pass
        else:
            raise AssertionError(f"a step with {what} for {g!r} was taken")
        assert torch.equal(env.buffers.storage, before), f"a step refused for {what} changed the state"
    env.step(good)


def _render(env):
    env.reset(seed=0)
    frame = env.render(0)
    assert isinstance(frame, np.ndarray) and frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8, (
        f"render gives {type(frame).__name__} {getattr(frame, 'shape', '')}, not an RGB uint8 frame")


def _cpu_vs_cuda(env_id: str, params: dict) -> str | None:
    """The comparison runs where Numba's CUDA simulator is on: this process, or a fresh one."""
    from gpu_zoo.core.runtime.launch import simulator_enabled

    if simulator_enabled():
        _compare_targets(env_id, params)
        return None
    _in_a_process(env_id, params, {"NUMBA_ENABLE_CUDASIM": "1"}, "--parity")
    return None


def _compare_targets(env_id: str, params: dict):
    from gpu_zoo.core.runtime.batched import BatchedEnv
    from gpu_zoo.registry import get_spec

    spec = get_spec(env_id)
    cpu = BatchedEnv(spec, 2, device="cpu", **params)
    sim = BatchedEnv(spec, 2, device="cpu", target="cuda", **params)
    gen = torch.Generator().manual_seed(3)
    cpu.reset(seed=11)
    sim.reset(seed=11)
    for t in range(cpu.params.max_cycles + CUDA_STEPS + 1):
        assert_same_state(cpu, sim, f"after {t} steps")
        actions = cpu.sample_actions(gen)
        cpu.step(actions)
        sim.step(actions)


def assert_same_state(cpu, other, where: str):
    """Every field of two batched envs equal; scratch fields, which hold nothing between steps, aside.

    Integers and booleans exactly, floats within a tight tolerance (a GPU fuses multiply-adds).
    """
    for name, a in cpu.buffers.raw.items():
        if name in cpu.layout.scratch_fields:
            continue
        b = other.buffers.raw[name].cpu()
        if a.is_floating_point():
            torch.testing.assert_close(b, a, rtol=1e-5, atol=2e-5, msg=lambda m, n=name: f"{where}, field {n}: {m}")
        else:
            assert torch.equal(a, b), f"{where}, field {name}: {a} != {b}"


def _cuda_compile(env_id: str, params: dict) -> str | None:
    from gpu_zoo.testing.cuda_compile import compile_kernels, nvvm_available

    if not nvvm_available():
        return "skipped: no NVVM (pip install nvidia-cuda-nvcc-cu12 nvidia-cuda-nvrtc-cu12)"
    compile_kernels(env_id, **params)
    return None


def _in_a_process(env_id: str, params: dict, env_vars: dict, flag: str):
    from gpu_zoo.registry import entry

    env = {**os.environ, **env_vars, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    cmd = [sys.executable, "-m", "gpu_zoo.testing.check", env_id, "--params", json.dumps(params),
           "--register", entry(env_id), flag]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode:
        lines = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
        raise AssertionError(lines[-1] if lines else f"the checking process exited with {done.returncode}")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m gpu_zoo.testing.check", description=__doc__.splitlines()[0])
    ap.add_argument("env_id")
    ap.add_argument("--params", default="{}", help="JSON object of constructor arguments (small ones)")
    ap.add_argument("--import", dest="modules", action="append", default=[],
                    help="a module to import first (one that registers the env)")
    ap.add_argument("--register", default=None, metavar="MODULE:ATTRIBUTE", help="the env's spec, to register it")
    ap.add_argument("--parity", action="store_true", help="only the CPU-vs-CUDA comparison (the simulator on)")
    ap.add_argument("--no-cuda", action="store_true", help="skip the CUDA checks")
    ns = ap.parse_args(argv)
    for m in ns.modules:
        importlib.import_module(m)
    if ns.register:
        from gpu_zoo.registry import register

        register(ns.env_id, ns.register)
    params = json.loads(ns.params)
    if ns.parity:
        _compare_targets(ns.env_id, params)
        return
    for name, result in check_env(ns.env_id, cuda=not ns.no_cuda, **params).items():
        print(f"{name}: {result}")


if __name__ == "__main__":
    main()
