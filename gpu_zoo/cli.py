"""The ``gpu-zoo`` command: train PPO on an env, evaluate a checkpoint against random play.

gpu-zoo train tag_gridworld_v0                        # its preset, to runs/tag_gridworld_v0/
gpu-zoo train simple_tag_v3 --num-envs 16384 --total-env-steps 50000000 --device cuda
gpu-zoo train --resume runs/tag_gridworld_v0/checkpoint.pt --total-env-steps 8000000
gpu-zoo eval runs/tag_gridworld_v0/checkpoint.pt --episodes 100 --gif out.gif
gpu-zoo presets
gpu-zoo show-kernel simple_tag_v3 --target cuda --param num_adversaries=5   # the generated kernel source
gpu-zoo compile --device cuda --jobs 8               # fill the kernel cache: every env, defaults and presets
torchrun --standalone --nproc-per-node=4 -m gpu_zoo.cli train simple_tag_v3 --device cuda   # 4 GPUs

Training, evaluation and the presets are the bundled PPO trainer's (``trainers/``), a separate
top-level package beside gpu_zoo that imports it. Importing gpu_zoo, this module included, never
imports the trainer: the parser (a train flag per `Args` field) and the commands import what they
use of it when they run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import TYPE_CHECKING

import torch
from torch.distributed.elastic.multiprocessing.errors import record

if TYPE_CHECKING:
    from trainers.config import Args

DEFAULT_COMPILE_ENVS = 1024
"""``gpu-zoo compile``'s batch size where neither the command nor a preset names one."""
_TYPES = {"int": int, "float": float, "float | None": float, "str": str, "str | None": str, "dict": json.loads}


def _trainer_config():
    """The trainer's settings, ``trainers.config``, imported on use.

    The trainer is a separate top-level package that imports gpu_zoo: gpu_zoo importing it back at
    import time would tie the two into one circle. What needs its settings imports them here: the
    train parser (a flag per `Args` field), train, presets and compile's preset configurations
    (train and eval import the trainer's loop and evaluation likewise, in their commands).
    """
    from trainers import config

    return config


def _add_args_flags(parser: argparse.ArgumentParser):
    """One flag per `Args` field, documented by the field's docstring; unset flags stay absent."""
    config = _trainer_config()
    docs = config.field_docs()
    for f in dataclasses.fields(config.Args):
        flag = "--" + f.name.replace("_", "-")
        helptext = docs.get(f.name, "")
        if f.type == "bool":
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS, help=helptext)
        else:
            parser.add_argument(flag, type=_TYPES[f.type], default=argparse.SUPPRESS, help=helptext,
                                metavar="JSON" if f.type == "dict" else f.name.split("_")[-1].upper())


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="gpu-zoo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    tr = sub.add_parser("train", help="train PPO (one policy per agent group)",
                        description="Train PPO. Settings start from ENV_ID's preset (gpu-zoo presets); flags override.")
    tr.add_argument("env", nargs="?", metavar="ENV_ID",
                    help="registered env id (default: the checkpoint's with --resume)")
    tr.add_argument("--resume", default=None, metavar="CHECKPOINT",
                    help=f"continue a run exactly; only {', '.join(_trainer_config().RUN_CONTROL)} may change")
    _add_args_flags(tr)
    ev = sub.add_parser("eval", help="evaluate a checkpoint against random play on the same episodes")
    ev.add_argument("checkpoint")
    ev.add_argument("--episodes", type=int, default=100, help="episodes per policy set (default 100)")
    ev.add_argument("--gif", default=None, metavar="PATH", help="write one episode of the trained policies here")
    ev.add_argument("--seed", type=int, default=12345, help="seed of the episodes (the same for both policy sets)")
    ev.add_argument("--device", default=None, help="cuda or cpu (default: cuda if usable)")
    ev.add_argument("--greedy", action="store_true", help="take the most likely action instead of sampling")
    sub.add_parser("presets", help="list the presets")
    sk = sub.add_parser("show-kernel", help="print the kernel source gpu_zoo generates for an env (nothing compiled)",
                        description="Print the Python source of ENV_ID's step and reset kernels as gpu_zoo generates "
                                    "and compiles it, for reading what runs.")
    sk.add_argument("env", metavar="ENV_ID", help="registered env id")
    sk.add_argument("--target", choices=("cpu", "cuda", "cudasim"), default="cuda",
                    help="cpu: Numba's parallel CPU loops; cuda: the GPU kernels (default); cudasim: the simulator's")
    sk.add_argument("--num-envs", type=int, default=1024, help="batch size, which picks the CUDA launch shape")
    sk.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                    help="a constructor argument (a Python literal, else a string); repeat for more; launch "
                         "options (threads_per_env, max_registers, split_observe, block) too")
    co = sub.add_parser("compile", help="compile kernels into the cache now, so that later runs start warm",
                        description="Compile the kernels of ENV_IDs (default: every registered env) into the "
                                    "kernel cache, as a first step would: each env's defaults and its preset's "
                                    "configuration, or the one --param names. Later processes on this cache "
                                    "(GPU_ZOO_CACHE_DIR, else ~/.cache/gpu_zoo) start warm.")
    co.add_argument("env", nargs="*", metavar="ENV_ID", help="registered env ids (default: all)")
    co.add_argument("--device", default=None, help="cuda or cpu (default: cuda if usable)")
    co.add_argument("--num-envs", type=int, default=None,
                    help="batch size, which picks the CUDA launch shape: the one the run will use (default: the "
                         f"preset's for a preset's configuration, else {DEFAULT_COMPILE_ENVS})")
    co.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                    help="a constructor argument or launch option, as for show-kernel; needs ENV_IDs and "
                         "compiles only that configuration")
    co.add_argument("--jobs", type=int, default=1,
                    help="configurations compiled at once, each in a process of its own (a compile is one core's "
                         "work; default 1)")
    co.add_argument("--plan-index", type=int, default=None, help=argparse.SUPPRESS)  # one entry, for --jobs
    return ap


def _literal(text: str):
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _params(ns, parser) -> dict:
    params = {}
    for item in ns.param:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"--param takes KEY=VALUE, got {item!r}")
        params[key] = _literal(value)
    return params


def cmd_show_kernel(ns, parser) -> int:
    from gpu_zoo.core.compiler.kernel_source import kernel_source

    params = _params(ns, parser)
    try:
        print(kernel_source(ns.env, ns.target, ns.num_envs, **params), end="")
    except (TypeError, ValueError) as err:
        parser.error(str(err))
    return 0


def compile_plan(ns, parser) -> list[tuple[str, dict, int]]:
    """(env id, constructor arguments, batch size) for each configuration ``gpu-zoo compile`` asks for."""
    import gpu_zoo
    from gpu_zoo.core.api.params import check_count

    params = _params(ns, parser)
    if params and not ns.env:
        parser.error("--param needs the ENV_IDs it applies to")
    unknown = [e for e in ns.env if e not in gpu_zoo.registered_envs()]
    if unknown:
        parser.error(f"unknown env ids {unknown}; registered: {', '.join(gpu_zoo.registered_envs())}")
    if ns.num_envs is not None:
        try:
            check_count("num_envs", ns.num_envs)
        except (TypeError, ValueError) as err:
            parser.error(str(err))
    envs = list(dict.fromkeys(ns.env)) or None
    plan = [(e, params, None) for e in envs] if params else _trainer_config().shipped_configurations(envs)
    return [(e, kw, ns.num_envs or n or DEFAULT_COMPILE_ENVS) for e, kw, n in plan]


def cmd_compile(ns, parser) -> int:
    from gpu_zoo.core.compiler.precompile import cache_folders

    plan = compile_plan(ns, parser)
    if ns.jobs < 1:
        parser.error(f"--jobs must be a positive int, got {ns.jobs}")
    if ns.plan_index is not None:  # a process of `_compile_in_processes`: the same plan, one entry
        done = _precompiled(*plan[ns.plan_index], ns.device, parser)
        print(json.dumps({"device": done.device, "seconds": done.seconds}), flush=True)
        return 0
    print(f"kernel cache: {', '.join(map(str, cache_folders()))}", flush=True)
    if ns.jobs > 1 and len(plan) > 1:
        return _compile_in_processes(plan, ns)
    for k, (env_id, params, num_envs) in enumerate(plan, 1):
        done = _precompiled(env_id, params, num_envs, ns.device, parser)
        what = f"compiled, {len(done.written)} files" if done.written else "already in the cache"
        print(f"[{k}/{len(plan)}] {_said(env_id, params, num_envs, done.device, done.seconds)} ({what})", flush=True)
    return 0


def _config(params: dict) -> str:
    return ", ".join(f"{key}={v!r}" for key, v in params.items()) or "defaults"


def _said(env_id: str, params: dict, num_envs: int, device: str, seconds: float) -> str:
    return f"{env_id} {_config(params)}, {num_envs} envs on {device}: {seconds:.1f} s"


def _precompiled(env_id: str, params: dict, num_envs: int, device, parser):
    """One configuration's first step taken (`gpu_zoo.core.compiler.precompile`); a refused one ends the command."""
    from gpu_zoo.core.compiler.precompile import precompile

    try:
        return precompile(env_id, num_envs, device, **params)
    except (TypeError, ValueError, RuntimeError) as err:  # a bad argument, or no usable device
        parser.error(f"{env_id} ({_config(params)}): {err}")


def _compile_in_processes(plan, ns) -> int:
    """``plan``'s configurations ``ns.jobs`` at a time, each in a fresh ``gpu-zoo compile`` process.

    Numba compiles on one core and holds a lock in its process; processes compile side by side.
    Each is given this command's own arguments and the index of its entry, so it compiles exactly
    that configuration. Two configurations sharing kernels compile them once: the later waits on
    the first's lock (`gpu_zoo.core.compiler.compile.compile_lock`), then loads them. Lines print in the
    plan's order; the files are counted once all are done, since neighbours write side by side.
    The first process to fail stops the others; its error is the command's.
    """
    import subprocess
    import tempfile
    import time

    from gpu_zoo.core.compiler.precompile import cache_files

    base = [sys.executable, "-m", "gpu_zoo.cli", "compile", *ns.env, *(["--device", ns.device] if ns.device else []),
            *(["--num-envs", str(ns.num_envs)] if ns.num_envs is not None else []),
            *(f"--param={item}" for item in ns.param)]
    before = cache_files()
    waiting, running, lines, shown = list(range(len(plan))), {}, {}, 0
    try:
        while shown < len(plan):
            while waiting and len(running) < ns.jobs:
                k = waiting.pop(0)
                out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")  # pipes could fill and block
                running[k] = (subprocess.Popen([*base, "--plan-index", str(k)], stdout=out, stderr=err), out, err)
            for k, (proc, out, err) in list(running.items()):
                if proc.poll() is None:
                    continue
                del running[k]
                out.seek(0), err.seek(0)
                if proc.returncode:
                    sys.stderr.write(err.read())
                    return proc.returncode if proc.returncode > 0 else 1  # killed by a signal: 1
                lines[k] = json.loads(out.read().strip().splitlines()[-1])
            while shown in lines:
                done = lines.pop(shown)
                print(f"[{shown + 1}/{len(plan)}] {_said(*plan[shown], done['device'], done['seconds'])}", flush=True)
                shown += 1
            time.sleep(0.05)
    finally:
        for proc, _, _ in running.values():
            proc.terminate()
            proc.wait()
    added = len(cache_files() - before)
    print(f"{added} files added to the cache" if added else "all already in the cache", flush=True)
    return 0


def args_for_train(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> Args:
    config = _trainer_config()
    given = {k: v for k, v in vars(ns).items() if k not in ("command", "env", "resume")}
    if ns.env is not None:
        if given.get("env_id", ns.env) != ns.env:
            parser.error(f"two env ids: ENV_ID {ns.env} and --env-id {given['env_id']}")
        given["env_id"] = ns.env
    if not ns.resume:
        return config.with_overrides(config.preset(given.get("env_id", config.Args.env_id)), **given)
    saved = config.Args(**torch.load(ns.resume, map_location="cpu", weights_only=False)["args"])
    changed = config.changed_settings(saved, given)
    if changed:
        parser.error(f"--resume continues {ns.resume} with its own settings; it cannot change {changed} "
                     f"(only {', '.join(config.RUN_CONTROL)})")
    return dataclasses.replace(saved, **given)


def cmd_train(ns, parser) -> int:
    from trainers import distributed
    from trainers.loop import train  # here: --help and presets need no torch start-up beyond the import

    args = args_for_train(ns, parser)
    try:
        train(args, resume=ns.resume)
    except KeyboardInterrupt:
        return 130  # the shell's code for an interrupted command
    finally:
        distributed.leave()
    return 0


def cmd_eval(ns) -> int:
    from trainers.evaluate import compare, load_checkpoint

    args, policies = load_checkpoint(ns.checkpoint, ns.device)
    result = compare(args, policies, ns.episodes, ns.seed, gif=ns.gif, device=ns.device, greedy=ns.greedy)
    print(result.table())
    print(result.summary())
    if ns.gif:
        print(f"wrote {ns.gif}")
    return 0


def cmd_presets() -> int:
    for name, p in _trainer_config().PRESETS.items():
        groups = p.train_groups or "all groups"
        print(f"{name:<24} {p.num_envs} envs x {p.num_steps} steps, {p.total_env_steps:,} env-steps, "
              f"trains {groups}; env {json.dumps(p.env_kwargs)}")
    return 0


@record  # under torchrun: a rank's error goes to the file torchrun reads to report the root cause
def main(argv=None) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    if ns.command == "train":
        code = cmd_train(ns, parser)
    elif ns.command == "eval":
        code = cmd_eval(ns)
    elif ns.command == "show-kernel":
        code = cmd_show_kernel(ns, parser)
    elif ns.command == "compile":
        code = cmd_compile(ns, parser)
    else:
        code = cmd_presets()
    if argv is None:
        sys.exit(code)
    return code


if __name__ == "__main__":
    main()
