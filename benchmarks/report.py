"""Turns the JSON records into ``docs/benchmarks.md`` and its PNG plots (``docs/benchmarks/``)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from benchmarks.cases import ACTIONS, Case, env_kwargs
from benchmarks.runner import SCHEMA

WORKLOADS = {
    "simple_tag": "MPE simple_tag (4 agents, 2 obstacles)",
    "simple_spread": "MPE simple_spread (3 agents, 3 landmarks)",
    "simple": "MPE simple (1 agent, 1 landmark)",
    "simple_adversary": "MPE simple_adversary (1 adversary, 2 agents, 2 landmarks)",
    "simple_push": "MPE simple_push (1 adversary, 1 agent, 2 landmarks)",
    "simple_speaker_listener": "MPE simple_speaker_listener (a speaker, a listener, 3 landmarks)",
    "simple_reference": "MPE simple_reference (2 speaking agents, 3 landmarks)",
    "simple_crypto": "MPE simple_crypto (3 speakers that never move)",
    "simple_formation": "MPE simple_formation (4 agents round a landmark, matched to points)",
    "simple_line": "MPE simple_line (4 agents between 2 landmarks, matched to points)",
    "simple_world_comm": "MPE simple_world_comm (4 predators, a speaking leader among them, 2 prey, forests, food)",
    "tag_continuous": "Tag continuous (agents per env vary)",
    "tag_gridworld": "Tag gridworld (one runner, 100 x 100 grid, 100-step episodes)",
    "gather_trade_build": "Gather-trade-build",
    "sb3_simple_tag": "stable-baselines3 PPO on simple_tag: our VecEnv against SuperSuit's",
}
# What a reader needs to compare the rows of a workload fairly.
WORKLOAD_NOTES = {
    "simple_tag": "gpu_zoo's simple_tag_v3 keeps positions and velocities in float64, as MPE2 does, so its "
                  "observations match MPE2's bit for bit; JaxMARL and VMAS step in float32.",
    "tag_continuous": "WarpDrive runs one thread per agent in one block per env; it cannot launch more agents "
                      "per env than its kernel's registers allow (recorded as *unsupported*). A Tag step's cost "
                      "follows the agents still in the game (see *Where a Tag step's time goes* below), so rows "
                      "with a `window` in their record are timed over whole episode lengths; the others, older, "
                      "over a short window after the first reset, an episode's dearest part.",
    "tag_gridworld": "Rows with a `window` are timed over whole episodes (100 steps). Our lead over WarpDrive at "
                     "2000 envs depends on the action mode: with fresh actions our step also pays the draws "
                     "(`BatchedEnv.sample_actions`; the gridworld's fresh rows predate its drawing into the action "
                     "buffers with one kernel a group, and pay a few torch kernels a group, tens of microseconds a "
                     "step), which weigh most where the step itself is short; the README states both modes' ratios.",
    "sb3_simple_tag": "SB3 PPO (`n_steps` 64, 4 epochs, 4 minibatches, MLP policy, on the CPU) trained through "
                      "each vector env with the same number of slots (*num_envs* here). *env-steps/s* are SB3 "
                      "timesteps per second of `PPO.learn`, rollouts and updates together. SuperSuit: MPE2's "
                      "simple_tag_v3 with padded observations, one slot per agent, `concat_vec_envs_v1`; gpu_zoo: "
                      "`SB3VecEnv` over one batched env, one slot per adversary, the good agent random.",
}
SYSTEM_NAMES = {"gpu_zoo": "gpu_zoo", "mpe2": "MPE2 (1 core)", "supersuit": "MPE2 + SuperSuit vec env",
                "vmas": "VMAS", "jaxmarl": "JaxMARL jit(vmap) per step", "jaxmarl_scan": "JaxMARL in lax.scan",
                "warpdrive": "WarpDrive 2.7.1 (numba)", "ai_economist": "AI Economist 1.7.1 (1 core)"}


def load_records(results: str | Path) -> list[dict]:
    """Every record of the suite's schema under ``results``; a later run replaces an earlier one of the same case."""
    latest: dict[tuple, dict] = {}
    for path in sorted(Path(results).glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"{path} is not valid JSON: {err}") from None
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            continue  # figures of earlier scripts, kept for history
        for r in data["records"]:
            r["_file"] = path.name
            key = (r["id"], r["machine"].get("gpu") or r["machine"].get("host"))
            # A measurement beats a skip or an error; among equals the later run wins.
            rank = (r["status"] in ("ok", "unsupported"), r["machine"]["date"])
            old = latest.get(key)
            if old is None or rank >= (old["status"] in ("ok", "unsupported"), old["machine"]["date"]):
                latest[key] = r
    return list(latest.values())


def agents_of(r: dict) -> int | None:
    if r.get("agents"):
        return r["agents"]
    c = r.get("config", {})
    if "num_taggers" in c:
        return c["num_taggers"] + c.get("num_runners", 1)
    if r["workload"] == "simple_spread":
        return c.get("N", 3)
    return 4 if r["workload"] in ("simple_tag", "train_simple_tag") else None


def _fmt(v, digits=3) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.{digits}g}" if abs(v) < 1e4 else f"{v:.{digits - 1}e}"
    return str(v)


def _where(r: dict) -> str:
    if r["system"] in ("mpe2", "supersuit"):
        return "cpu"
    return r["device"]


def _row(r: dict) -> str:
    ok = r["status"] == "ok" and r.get("env_steps_per_s")
    roof = r.get("roofline") or {}
    spread = r.get("spread") or [None, None]
    mem = r.get("peak_gpu_mem_bytes")
    variant = "" if r["workload"].startswith("train_") else _variant(r)
    name = SYSTEM_NAMES.get(r["system"], r["system"]) + (f" ({variant})" if variant else "")
    cells = [name, _where(r), _fmt(r["num_envs"]), _fmt(agents_of(r)),
             _fmt(r.get("env_steps_per_s")) if ok else "", f"{_fmt(spread[0])} - {_fmt(spread[1])}" if ok else "",
             _fmt(r.get("agent_steps_per_s")) if ok else "", _fmt(r.get("host_us_per_step")),
             _fmt(mem / 2**20) if mem else "", _fmt(roof.get("achieved_gbps")), _fmt(roof.get("fraction_of_copy"), 2),
             "" if ok else f"{r['status']}: {r.get('reason') or r.get('result', '')}".replace("|", "/")[:200]]
    return "| " + " | ".join(cells) + " |"


_HEADER = ("| system | device | num_envs | agents | env-steps/s (median) | spread (min - max) | agent-steps/s "
           "| host us/step | peak GPU MiB | GB/s moved | of copy BW | note |\n|" + " --- |" * 12)


def _sort_key(r):
    return (r["system"] != "gpu_zoo", r["system"], r["device"], agents_of(r) or 0, r["num_envs"],
            shipped_world_of(r) or "", actions_of(r))


def _rate(r: dict) -> str:
    lo, hi = r.get("spread") or (None, None)
    return f"{_fmt(r['env_steps_per_s'])} [{_fmt(lo)} - {_fmt(hi)}]"


def _machine_of(r: dict) -> str:
    m = r["machine"]
    if not m.get("gpu"):
        return f"CPU only, {m['cpu_count']} cores ({m['host']})"
    return m["gpu"] if r["device"] == "cuda" else f"{m['gpu']} host's CPU, {m['cpu_count']} cores"


def actions_of(r: dict) -> str:
    """How the row's actions were drawn: a key of `benchmarks.cases.ACTIONS`."""
    return (r.get("config") or {}).get("actions", "fixed")


def outputs_of(r: dict) -> str:
    """Whether the row's steps produced their observations, rewards and dones (``kept``) or only the state.

    JaxMARL's records from before ``outputs`` was recorded returned the state alone, so XLA removed
    the observation and reward computations: they time less than an env step and are no peer of a row.
    """
    return r.get("outputs", "dropped" if r["system"] in ("jaxmarl", "jaxmarl_scan") else "kept")


def shipped_world_of(r: dict) -> str | None:
    """The peer's shipped world the row's env starts from (`benchmarks.cases.WORLDS`), if any."""
    return (r.get("config") or {}).get("world")


def _variant(r: dict) -> str:
    """What tells apart our rows of one workload and size: the trainer's settings, the world, the actions."""
    if r["workload"].startswith("train_"):
        return trainer_name(r).removeprefix("gpu_zoo PPO, ")
    parts = [f"{shipped_world_of(r)} world"] if shipped_world_of(r) else []
    parts += ["fresh actions"] if actions_of(r) == "fresh" else []
    return ", ".join(parts + (["state only: no observations or rewards"] if outputs_of(r) == "dropped" else []))


def same_size_peers(records: list[dict], mine: dict) -> list[dict]:
    """The other systems' records of ``mine``'s machine, workload, agents, device, num_envs, world and actions.

    A record whose steps skipped their observations and rewards (`outputs_of`) is no peer.
    """
    return [r for r in records if r["system"] != "gpu_zoo" and outputs_of(r) == "kept"
            and _machine_of(r) == _machine_of(mine)
            and r["workload"] == mine["workload"] and agents_of(r) == agents_of(mine)
            and r["device"] == mine["device"] and r["num_envs"] == mine["num_envs"]
            and shipped_world_of(r) == shipped_world_of(mine) and actions_of(r) == actions_of(mine)]


def headline(records: list[dict], device: str) -> list[str]:
    """gpu_zoo / best peer at each size both ran (same machine, workload, agents and num_envs).

    ``device="cuda"`` sets our GPU rows against GPU peers; CPU-only peers (MPE2, SuperSuit) count
    at their own best size against every size of ours, as they cannot batch on a device.
    """
    ok = [r for r in records if r["status"] == "ok" and r.get("env_steps_per_s")]
    ours = {(_machine_of(r), r["workload"], agents_of(r), r["num_envs"], _variant(r)): r for r in ok
            if r["system"] == "gpu_zoo" and r["device"] == device}
    lines = []
    for (machine, workload, agents, n, variant), mine in sorted(ours.items(), key=lambda kv: (kv[0][1], kv[0][2] or 0,
                                                                                              kv[0][3], kv[0][4])):
        # and the CPU-only ones at any size (those of this size are among the first already)
        peers = same_size_peers(ok, mine) + [
            r for r in ok if r["system"] in ("mpe2", "supersuit") and _machine_of(r) == machine
            and r["workload"] == workload and agents_of(r) == agents and (r["device"], r["num_envs"]) != (device, n)]
        if not peers:
            continue
        best = max(peers, key=lambda r: r["env_steps_per_s"])
        ratio = mine["env_steps_per_s"] / best["env_steps_per_s"]
        size = "" if best["num_envs"] == n else f" ({best['num_envs']} envs)"
        what = f"{workload} ({variant})" if variant else workload
        lines.append(f"| {machine} | {what} | {n} x {agents} | {_rate(mine)} | "
                     f"{SYSTEM_NAMES.get(best['system'], best['system'])}, {_where(best)}{size} | {_rate(best)} | "
                     f"**{ratio:.3g}x** |")
    if not lines:
        return []
    return [f"| machine | workload | num_envs x agents | gpu_zoo ({device}): median [min - max] env-steps/s "
            "| best peer | its env-steps/s | ratio |", "| --- | --- | --- | --- | --- | --- | --- |", *lines]


def _plot(path: Path, title: str, xlabel: str, series: dict[str, list[tuple[float, float]]]):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4.8))
    colors = plt.get_cmap("tab20").colors
    for i, (name, pts) in enumerate(sorted(series.items())):
        pts = sorted(pts)
        ours = name.startswith("gpu_zoo")
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name, color=colors[i % len(colors)],
                linestyle="--" if "(cpu" in name else "-", linewidth=2.8 if ours else 1.4, zorder=3 if ours else 2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("env-steps/s")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _bars(path: Path, title: str, bars: dict[str, float], xlabel: str = "env-steps/s (rollout + PPO update)",
          log: bool = True):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 0.6 + 0.45 * len(bars)))
    names = sorted(bars)
    ax.barh(names, [bars[n] for n in names])
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _machine_short(r: dict) -> str:
    m = r["machine"]
    return f"{m['gpu'].replace('NVIDIA ', '')} host" if m.get("gpu") else f"{m['cpu_count']}-core host"


def _series(records, x) -> dict[str, list[tuple[float, float]]]:
    out = defaultdict(list)
    for r in records:
        if r["status"] == "ok" and r.get("env_steps_per_s"):
            name = f"{SYSTEM_NAMES.get(r['system'], r['system'])} ({_where(r)}, {_machine_short(r)})"
            out[name].append((x(r), r["env_steps_per_s"]))
    return out


def _machines(records, short: bool = False) -> list[str]:
    """One line per run that produced ``records``: command, machine, date, and (unless short) versions."""
    seen = {}
    for r in records:
        m = r["machine"]
        seen[(m.get("gpu") or m["host"], m["date"][:10], m["command"])] = m
    lines = []
    for m in seen.values():
        v = m["versions"]
        gpu = f"{m['gpu']} (driver {m['driver']})" if m.get("gpu") else f"CPU only ({m['cpu_count']} cores)"
        pkgs = ", ".join(f"{k} {val}" for k, val in v.items() if val)
        if short:
            lines.append(f"- `{m['command']}` on {gpu}, {m['date']}")
            continue
        lines.append(f"- `{m['command']}` on {gpu}, {m['cpu_count']} CPU cores, {m['date']}, gpu_zoo "
                     f"`{m['gpu_zoo_git_sha']}`; Python {m['python']}; {pkgs}")
    return sorted(lines)


def _system_notes(records) -> list[str]:
    """Each system's own description of how it was stepped, from its records."""
    notes = defaultdict(set)
    for r in records:
        if r.get("notes"):
            notes[SYSTEM_NAMES.get(r["system"], r["system"]) if not r["workload"].startswith("train_")
                  else trainer_name(r).split(",")[0]].add(r["notes"])
    return [f"- **{name}**: " + "; ".join(sorted(n)) for name, n in sorted(notes.items())]


def trainer_name(r: dict) -> str:
    """Who trained, and with how much optimisation per rollout."""
    if r["system"] == "warpdrive":
        return "WarpDrive 2.7.1 A2C (its trainer)"
    c = r.get("config", {})
    epochs, mbs = c.get("update_epochs", 4), c.get("num_minibatches", 4)
    return f"gpu_zoo PPO, {epochs} epoch{'s' * (epochs != 1)} x {mbs} minibatch{'es' * (mbs != 1)}"


def training_section(train: list[dict], img_dir: Path) -> list[str]:
    """Our trainer's throughput per env, then our trainer against WarpDrive's on WarpDrive's own run."""
    ok = [r for r in train if r["status"] == "ok" and r.get("env_steps_per_s")]
    lines = ["## End-to-end training (rollout + update)", "",
             "Env-steps per second of whole training iterations: the policy acts in every env for *num_steps* "
             "steps, then the networks update on that batch, everything on one device.", ""]
    bars = {f"{r['workload'][6:]}, {r['num_envs']} x {agents_of(r)} ({r['device']}): {trainer_name(r)}":
            r["env_steps_per_s"] for r in ok}
    if bars:
        png = img_dir / "training.png"
        _bars(png, "End-to-end training throughput", bars)
        lines += [f"![training]({img_dir.name}/{png.name})", ""]
    matched = [r for r in train if r.get("config", {}).get("run")]
    mine = [r for r in train if r not in matched]
    if mine:
        lines += ["### Our trainer (`trainers/ppo.py`, 4 epochs x 4 minibatches, two 64-wide layers)", "",
                  _HEADER.replace("| system |", "| trainer |"),
                  *(_row(r).replace("| gpu_zoo |", f"| gpu_zoo PPO: {r['workload'][6:]} |", 1) for r in mine), ""]
    if matched:
        theirs = [r for r in ok if r in matched and r["system"] == "warpdrive"]
        lines += ["### Against WarpDrive's trainer on its own run", "",
                  "WarpDrive's shipped `warp_drive/training/run_configs/tag_continuous.yaml`: 100 envs of 10 taggers "
                  "and 100 runners observing their 10 nearest, 500-step episodes, 25000 env-steps per iteration, "
                  "two 256-wide layers per policy. Our trainer trains the same env at the same sizes and widths "
                  "(the WarpDrive row checks its YAML against our configuration). A2C takes one gradient step per "
                  "rollout: the matching row of ours takes one too (1 epoch x 1 minibatch); the other runs our "
                  "PPO defaults, 16 gradient steps per rollout.", "",
                  "| trainer | env-steps/s (median) | spread (min - max) | agent-steps/s | peak GPU MiB "
                  "| / WarpDrive |", "| --- | --- | --- | --- | --- | --- |"]
        for r in sorted(matched, key=lambda r: (r["system"] == "warpdrive", trainer_name(r))):
            if not (r["status"] == "ok" and r.get("env_steps_per_s")):
                lines.append(f"| {trainer_name(r)} | {r['status']}: {(r.get('reason') or '')[:160]} | | | | |")
                continue
            lo, hi = r.get("spread") or (None, None)
            mem = r.get("peak_gpu_mem_bytes")
            ratio = (f"**{r['env_steps_per_s'] / theirs[0]['env_steps_per_s']:.3g}x**"
                     if theirs and r["system"] != "warpdrive" else "")
            lines.append(f"| {trainer_name(r)} | {_fmt(r['env_steps_per_s'])} | {_fmt(lo)} - {_fmt(hi)} | "
                         f"{_fmt(r.get('agent_steps_per_s'))} | {_fmt(mem / 2**20) if mem else ''} | {ratio} |")
        lines.append("")
    return [*lines, "Produced by (versions under Runs):", "", *_machines(train, short=True), ""]


def profile_section(results: str | Path) -> list[str]:
    """The `benchmarks.profile_tag` records: each system's GPU time per step against the agents still in the game."""
    rows = []
    for path in sorted(Path(results).glob("profile_tag*.jsonl")):
        rows += [(path.name, json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
    ok = [(f, r) for f, r in rows if "error" not in r]
    if not ok:
        return []
    lines = ["## Where a Tag step's time goes", "",
             "`python -m benchmarks.profile_tag` steps each system under torch's profiler (every kernel of the "
             "process, Numba's included) after 20 warm-up steps (WarpDrive: 100 more, counting finished envs). "
             "WarpDrive looks for each agent's nearest among the agents still in the game with a selection sort "
             "in global memory, O(k n) per agent, so its step costs far more while many agents are left: the "
             "same world and size can differ tenfold depending on how fast runners are tagged, which the world "
             "(arena size, tagging distance, episode length) and the actions (fixed, or fresh each step) decide. "
             "That, not the world's constants as such, is why WarpDrive's rate at 640 agents moves so much between "
             "worlds and action modes. Our step bins the agents in a grid and searches the nearest cells, so it "
             "moves much less.", "",
             "| system | world | actions | envs x agents | GPU us per step | step kernel us | wall us per step "
             "| agents still in the game | at a wall | file |", "|" + " --- |" * 10]
    for f, r in ok:
        step_us = max(r["kernels"].values()) if r.get("kernels") else None
        w = r.get("world", {})
        lines.append(f"| {SYSTEM_NAMES.get(r['system'], r['system'])} | {r['world_name']} | {r['actions']} | "
                     f"{r['num_envs']} x {r['agents']} | {_fmt(r['gpu_us_per_step'])} | {_fmt(step_us)} | "
                     f"{_fmt(r['wall_us_per_step'])} | {_fmt(w.get('alive_fraction'), 2)} | "
                     f"{_fmt(w.get('fraction_at_a_wall'), 2)} | `{f}` |")
    return [*lines, ""]


def jaxmarl_outputs_section(results: str | Path) -> list[str]:
    """JaxMARL's step with its observations, rewards and dones returned against the state alone, same process."""
    rows = []
    for path in sorted(Path(results).glob("jaxmarl_outputs*.jsonl")):
        rows += [(path.name, json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
    pairs = defaultdict(dict)
    for f, r in rows:
        pairs[(f, r["workload"], r["num_envs"], r["mode"])][r["outputs"]] = r
    lines = ["## JaxMARL's outputs", "",
             "A jitted call whose result leaves out the observations and rewards lets XLA remove their computation "
             "as dead code: it times the physics and the resets, not an env step. Our JaxMARL rows return every "
             "step's observations, rewards and dones (stacked over the scan, as a trainer's rollout keeps them); "
             "JaxMARL records from before 2026-12-03 returned the state alone and are no peer of any row. "
             "Same process, one after the other (`benchmarks.peers.jaxmarl.measure(..., outputs=...)`):", "",
             "| scenario | num_envs | mode | outputs returned | state only | state only / returned | file |",
             "|" + " --- |" * 7]
    table = [f"| {workload} | {n} | {mode} | {_fmt(by['kept']['env_steps_per_s'])} | "
             f"{_fmt(by['dropped']['env_steps_per_s'])} | "
             f"{by['dropped']['env_steps_per_s'] / by['kept']['env_steps_per_s']:.2f} | `{f}` |"
             for (f, workload, n, mode), by in sorted(pairs.items()) if {"kept", "dropped"} <= by.keys()]
    return [*lines, *table, ""] if table else []


def cold_start_section(results: str | Path) -> list[str]:
    """From ``make`` to the end of the first step, cold and warm, from `benchmarks.cold_start`'s records.

    Each configuration on each device shows its newest cold and warm pair only.
    """
    runs = {}
    for path in sorted(Path(results).glob("cold_start_*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                if r.get("profiled"):  # slowed by the profiler: its tables are read, not its times
                    continue
                runs[(path.name, r["env_id"], json.dumps(r["params"], sort_keys=True), r["cache"])] = r
    by_file = defaultdict(dict)
    for (f, env_id, params, cache), r in runs.items():
        by_file[(f, env_id, params)][cache] = r
    pairs = {}
    for (f, env_id, params), by in by_file.items():
        if {"cold", "warm"} <= by.keys():
            key = (env_id, params, by["cold"]["device"])
            if key not in pairs or by["cold"]["date"] > pairs[key][1]["cold"]["date"]:
                pairs[key] = (f, by)
    pairs = {(f, env_id, params): by for (env_id, params, _), (f, by) in pairs.items()}
    lines = ["## Cold start", "",
             "From `gpu_zoo.make(env_id, num_envs=4, device=...)` to the end of the first `step`, each in a fresh "
             "process (`python -m benchmarks.cold_start`): *cold* with empty kernel caches (a user's first run), "
             "*warm* on the caches the cold process filled (every later run). Imports (torch, numba, gpu_zoo) "
             "come before the clock and are listed apart. *compile* is Numba's compile time in the cold "
             "process, of which *LLVM* is LLVM's optimisation and code generation; the rest is Numba's front end "
             "(typing, inlining, lowering).", "",
             "| env | configuration | device | cold first step (s) | warm first step (s) | compile (s) | LLVM (s) "
             "| imports, warm (s) | file |",
             "|" + " --- |" * 9]
    table = []
    for (f, env_id, params), by in sorted(pairs.items()):
        cold, warm = by.get("cold"), by.get("warm")
        if cold is None or warm is None:
            continue
        config = ", ".join(f"{k}={v}" for k, v in json.loads(params).items()) or "defaults"
        # numba-cuda reports its compiles through its own event module; older records carry 0 for them
        timed = cold["compile_s"] > 0 or cold["device"] == "cpu"
        compile_s, llvm_s = (f"{cold['compile_s']:.1f}", f"{cold['llvm_s']:.1f}") if timed else ("-", "-")
        table.append(f"| {env_id} | {config} | {cold['device']} | {cold['first_step_s']:.1f} | "
                     f"{warm['first_step_s']:.2f} | {compile_s} | {llvm_s} | {warm['import_s']:.1f} | `{f}` |")
    if not table:
        return []
    lines += ["A `-` under compile: numba-cuda's compiles were not timed in that run. On CUDA, *LLVM* is NVVM and "
              "ptxas making the cubin. `--jobs N` in a command: N configurations were measured at once, each in its "
              "own processes. Records with `cuda_import_s` count numba-cuda's import "
              "in a cold CUDA first step, where a user pays it; a warm process loads its cubins without it. Older "
              "CUDA records imported it before the clock.", ""]
    commands = sorted({f"`{r['command']}` on {r.get('gpu') or str(r['cpu_count']) + ' CPU cores'}, {r['date'][:10]}"
                       for by in pairs.values() if {"cold", "warm"} <= by.keys() for r in by.values()})
    return [*lines, *table, "", *(f"- {c}" for c in commands), ""]


def cuda_compile_stages_section(results: str | Path) -> list[str]:
    """A cold CUDA compile by stage, from `benchmarks.cuda_compile_stages`'s records (each configuration's newest)."""
    newest = {}
    for path in sorted(Path(results).glob("cuda_compile_stages_*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                key = (r["env_id"], json.dumps(r["params"], sort_keys=True))
                if key not in newest or r["date"] > newest[key]["date"]:
                    newest[key] = r
    if not newest:
        return []
    lines = ["## A cold CUDA compile by stage", "",
             "Where the compile in a cold CUDA first step goes, measured on a CPU without a GPU "
             "(`python -m benchmarks.cuda_compile_stages`), each configuration in a fresh process with an empty cache "
             f"at the launch shape for {'/'.join(sorted({str(r['num_envs']) for r in newest.values()}))} envs: "
             "numba-cuda's *front end* (bytecode, typing and lowering of the kernel and of "
             "every device function it reaches; *compiles* counts them, one per function and argument types), "
             "NVVM making the *PTX*, and ptxas *linking* the cubin. *slowest* are the functions with the most time "
             "in their own compile (their callees' compiles excluded).", "",
             "| env | configuration | front end (s) | PTX (s) | link (s) | compiles (functions) | slowest (s) |",
             "|" + " --- |" * 7]
    for (env_id, params), r in sorted(newest.items()):
        config = ", ".join(f"{k}={v}" for k, v in json.loads(params).items()) or "defaults"
        link = "-" if r["link_s"] is None else f"{r['link_s']:.1f}"
        slowest = ", ".join(f"{name} {t:.2f}" + (f" (x{n})" if n > 1 else "") for name, t, n in r["slowest"][:3])
        lines.append(f"| {env_id} | {config} | {r['front_s']:.1f} | {r['ptx_s']:.1f} | {link} | "
                     f"{r['compiles']} ({r['functions']}) | {slowest} |")
    commands = sorted({f"`{r['command']}` on {r['cpu_count']} CPU cores, {r['date'][:10]}" for r in newest.values()})
    return [*lines, "", *(f"- {c}" for c in commands), ""]


def classic_section(results: str | Path) -> list[str]:
    """PettingZoo's board games against pgx, from `benchmarks.classic_speed`'s records (newest per game and size)."""
    rows = {}
    for path in sorted(Path(results).glob("classic_speed_*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                if r.get("schema") == "gpu_zoo.classic_speed/2":  # one mode: a Python loop against pgx's scan
                    r = {**r, "gpu_zoo_steps_per_s": {"loop": r["gpu_zoo_steps_per_s"]},
                         "pgx_steps_per_s": {"scan": r["pgx_steps_per_s"]}}
                rows.setdefault((r["game"], r["num_envs"]), r)
    if not rows:
        return []
    lines = ["## PettingZoo's board games against pgx", "",
             "Random legal moves drawn on the device, auto-reset, `python -m benchmarks.classic_speed`. *fused*: "
             "the moves with no Python between them (gpu_zoo's CUDA graph of 100 moves, pgx's `lax.scan`); "
             "*per step*: one call a move (gpu_zoo's `sample_actions` and `step`, pgx's jitted move). "
             "*draw only*: gpu_zoo's fused graph without the steps. Older records (schema /2) timed gpu_zoo's "
             "Python loop against pgx's scan.", "",
             "| game | num_envs | gpu_zoo fused | pgx fused | ratio | gpu_zoo per step | pgx per step | ratio "
             "| draw only | bytes/env-step | of copy BW | GPU |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (game, n), r in sorted(rows.items()):
        ours, theirs = r["gpu_zoo_steps_per_s"], r["pgx_steps_per_s"] or {}
        fused_ours, fused_theirs = ours.get("fused", ours.get("loop")), theirs.get("fused", theirs.get("scan"))
        cells = [fused_ours, fused_theirs, fused_theirs and fused_ours / fused_theirs, ours.get("per_step"),
                 theirs.get("per_step"), theirs.get("per_step") and ours["per_step"] / theirs["per_step"],
                 ours.get("draw_only")]
        lines.append(f"| {game} | {n} | " + " | ".join("" if v is None else _fmt(v) for v in cells)
                     + f" | {r['bytes_per_env_step']} | {_fmt(r['bandwidth_share'], 2)} | {r['gpu']} |")
    return lines + [""]


def write_report(results: str | Path, out: str | Path) -> Path:
    """Writes the page and its plots; returns the page's path."""
    records = load_records(results)
    if not records:
        raise ValueError(f"no records of schema {SCHEMA} under {results}: run `python -m benchmarks run` first")
    out = Path(out)
    img_dir = out.parent / out.stem
    img_dir.mkdir(parents=True, exist_ok=True)
    by_workload = defaultdict(list)
    for r in records:
        by_workload[r["workload"]].append(r)
    lines = ["# Benchmarks", "",
             "Generated by `python -m benchmarks report` from the JSON records in `benchmarks/results/` "
             "(one record per measurement, with the command, machine and versions that produced it). "
             "Every configuration runs in its own process; each figure is the median of timed repeats after a "
             "warm-up, with the clock read after a device synchronisation (CUDA events for GPU work). "
             "Actions are random: *fixed* (drawn once, before the clock: the env step alone) unless a row says "
             "*fresh actions* (drawn on the device before every step, inside the clock); auto-resets are included. "
             "*roofline* is the bytes one env-step must "
             "move (counted from the env's layout: every field read once, written once if the step changes it) "
             "times env-steps/s, as a fraction of the device-to-device copy bandwidth measured in the same process.",
             "", "## Headline: gpu_zoo / best peer", "",
             "Each row sets one of our measurements against the fastest other system measured on the same "
             "machine for the same workload and size.", "", "### GPU", ""]
    lines += headline(records, "cuda") or ["No GPU workload has both a gpu_zoo and a peer measurement yet."]
    lines += ["", "### CPU", ""]
    lines += headline(records, "cpu") or ["No CPU workload has both a gpu_zoo and a peer measurement yet."]
    lines += ["", "## How each system is driven", "", *_system_notes(records), ""]
    roof = {f"{r['workload']} {r['num_envs']} x {agents_of(r)}": r["roofline"]["fraction_of_copy"]
            for r in records if r["status"] == "ok" and r["system"] == "gpu_zoo" and r.get("roofline")}
    if roof:
        _bars(img_dir / "roofline.png", "gpu_zoo (GPU): bytes moved / copy bandwidth", roof,
              "fraction of the copy bandwidth measured in the same process", log=False)
        lines += ["## Roofline", "", "How close each of our GPU rows comes to moving memory as fast as a plain copy "
                  "(columns *GB/s moved* and *of copy BW* in the tables; the layout's bytes per env-step are in "
                  "each record's `bytes_per_env_step`). Rows far below 1 are bound by launch latency (few envs) "
                  "or by arithmetic and synchronisation inside the step (k-nearest search, many agents).", "",
                  f"![roofline]({img_dir.name}/roofline.png)", ""]
    lines += profile_section(results)
    lines += jaxmarl_outputs_section(results)
    lines += classic_section(results)
    lines += cold_start_section(results)
    lines += cuda_compile_stages_section(results)
    lines += ["## Runs", "", *_machines(records), ""]
    plots = {
        "simple_tag": ("num_envs", lambda r: r["num_envs"]),
        "simple_spread": ("num_envs", lambda r: r["num_envs"]),
        "tag_continuous": ("agents per env", agents_of),
        "tag_gridworld": ("num_envs", lambda r: r["num_envs"]),
    }
    for workload, title in WORKLOADS.items():
        rs = sorted(by_workload.get(workload, []), key=_sort_key)
        if not rs:
            continue
        lines += [f"## {title}", ""]
        if workload in WORKLOAD_NOTES:
            lines += [WORKLOAD_NOTES[workload], ""]
        if workload in plots:
            xlabel, x = plots[workload]
            png = img_dir / f"{workload}.png"
            _plot(png, title, xlabel, _series(rs, x))
            lines += [f"![{title}]({img_dir.name}/{png.name})", ""]
        lines += [_HEADER, *(_row(r) for r in rs), "", "Produced by (versions under Runs):", "",
                  *_machines(rs, short=True), ""]
    train = sorted((r for r in records if r["workload"].startswith("train_")), key=_sort_key)
    if train:
        lines += training_section(train, img_dir)
    out.write_text("\n".join(lines) + "\n")
    return out


# ------------------------------------------------------------------ the README's speed table
README_ROWS = (
    ("simple_tag", 1048576, None, None), ("simple_tag", 16384, None, None), ("simple_tag", 1024, None, None),
    ("simple_spread", 131072, None, None), ("simple_spread", 1048576, None, None),
    ("simple_speaker_listener", 131072, None, None),
    ("simple_reference", 131072, None, None), ("simple_reference", 1048576, None, None),
    ("simple_world_comm", 131072, None, None), ("simple_world_comm", 1024, None, None),
    # WarpDrive's own shipped world first: the like-for-like Tag comparison
    ("tag_continuous", 2000, 100, "tag_continuous.yaml"), ("tag_continuous", 2000, 640, "tag_continuous.yaml"),
    ("tag_continuous", 2000, 1000, "tag_continuous.yaml"), ("tag_continuous", 2000, 5, "tag_continuous.yaml"),
    ("tag_continuous", 2000, 5, None), ("tag_continuous", 2000, 100, None), ("tag_continuous", 2000, 640, None),
    ("tag_continuous", 2000, 1000, None), ("tag_gridworld", 2000, 5, None), ("tag_gridworld", 2000, 51, None),
    ("gather_trade_build", 65536, None, None),
)
"""(workload, num_envs, agents per env or None, shipped world or None) of each row of the README's table, GPU
records of one machine; each row once per action mode measured."""

README_BEGIN = "<!-- speed table: written by `python -m benchmarks report --readme README.md`; do not edit -->"
README_END = "<!-- end of speed table -->"
_COUNTS = ("num_taggers", "num_runners", "use_full_observation", "num_other_agents_observed", "world", "actions")
_REFERENCE_ACTIONS = {"mpe2": "random, drawn ahead", "supersuit": "random", "ai_economist": "masked random, each step"}
_WORLD_NAMES = {"tag_continuous.yaml": "WarpDrive's tag_continuous.yaml, agent counts changed"}


def action_mode(r: dict) -> str:
    """How a record's system drew its actions, and how many steps one call ran."""
    if r["system"] in _REFERENCE_ACTIONS:
        return _REFERENCE_ACTIONS[r["system"]]
    drawn = "fresh random each step" if actions_of(r) == "fresh" else "fixed random"
    if r["system"] == "jaxmarl":
        return f"{drawn}, a call a step"
    if r["system"] == "jaxmarl_scan":
        return f"{drawn}, {r.get('steps_per_call', 100)} steps a call"
    return drawn


def world_of(r: dict) -> str:
    """The row's world: a peer's shipped one, and the constructor arguments set beyond the agent counts."""
    extra = {k: v for k, v in (r.get("config") or {}).items() if k not in _COUNTS and not isinstance(v, dict)}
    shipped = shipped_world_of(r)
    parts = ([_WORLD_NAMES.get(shipped, shipped)] if shipped else []) + [f"{k}={v}" for k, v in sorted(extra.items())]
    return ", ".join(parts) or "defaults"


def observation_mode(r: dict) -> str:
    c = env_kwargs(Case(r["workload"], r["system"], r["device"], r["num_envs"], r.get("config") or {}))
    if c.get("use_full_observation", True):
        return "full"
    k = c.get("num_other_agents_observed")
    return f"{k} nearest" if k else "partial"


def readme_table(records: list[dict], gpu: str = "NVIDIA H200") -> list[str]:
    """`README_ROWS` from the records of ``gpu``: ours against the fastest peer at the same size.

    The world and the observation and action modes are said per row; a CPU-only reference package,
    when it is all there is, appears as a figure without a ratio.
    """
    ok = [r for r in records if r["machine"].get("gpu") == gpu and r["status"] in ("ok", "unsupported")]
    lines = [f"On one {gpu} (auto-resets included; *actions*: how both sides of a row draw their actions):", "",
             "| workload | num_envs x agents | world | observations | actions | gpu_zoo env-steps/s "
             "| best other system | its env-steps/s | ratio |", "|" + " --- |" * 9]
    for workload, n, agents, world in README_ROWS:
        for actions in ACTIONS:
            mine = [r for r in ok if r["system"] == "gpu_zoo" and r["device"] == "cuda" and r["workload"] == workload
                    and r["num_envs"] == n and r["status"] == "ok" and (agents is None or agents_of(r) == agents)
                    and shipped_world_of(r) == world and actions_of(r) == actions]
            if mine:
                lines += _readme_row(records, ok, max(mine, key=lambda r: r["machine"]["date"]))
    return lines + ["", "*world* `defaults`: each system's constructor defaults, the same world on both sides of a row "
                    "(MPE2's for the MPE scenarios, WarpDrive's constructor's for Tag). *actions* `fixed random`: "
                    "one random action per agent drawn before the clock, so the row times the env step alone; "
                    "`fresh random each step`: new random actions drawn on the device before every step and timed "
                    "with it (what a random-policy loop or a trainer's sampler pays); JaxMARL's in-graph draws and "
                    "steps per call are said in its cell."]


def _readme_row(records: list[dict], ok: list[dict], me: dict) -> list[str]:
    """One README row: ``me`` against the fastest peer of the same size, world and action mode."""
    same = same_size_peers(ok, me)
    measured = [r for r in same if r["status"] == "ok"]
    # the peers the fixed-action row of this size has: a fresh-action row missing one of them claims no ratio
    fixed_twin = {**me, "config": {k: v for k, v in (me.get("config") or {}).items() if k != "actions"}}
    missing = sorted({SYSTEM_NAMES.get(r["system"], r["system"]) for r in same_size_peers(ok, fixed_twin)}
                     - {SYSTEM_NAMES.get(r["system"], r["system"]) for r in same})
    # a reference package that steps one env on one CPU core: its figure, from whichever machine ran it
    reference = [r for r in records if r["system"] in ("mpe2", "ai_economist") and r["workload"] == me["workload"]
                 and r["status"] == "ok"]
    head = (f"| {me['workload']} | {me['num_envs']:,} x {agents_of(me)} | {world_of(me)} | {observation_mode(me)} | "
            f"{action_mode(me)} | {me['env_steps_per_s']:.3g} | ")
    if measured:
        best = max(measured, key=lambda r: r["env_steps_per_s"])
        peer = SYSTEM_NAMES.get(best["system"], best["system"])
        if best["system"] == "jaxmarl_scan":
            peer += f" ({best.get('steps_per_call', 100)} steps a call)"
        ratio = me["env_steps_per_s"] / best["env_steps_per_s"]
        if missing:
            return [head + f"{peer} | {best['env_steps_per_s']:.3g} | - (not measured: {', '.join(missing)}) |"]
        return [head + f"{peer} | {best['env_steps_per_s']:.3g} | {ratio:.3g}x |"]
    if missing:  # no peer measured in this mode, though the fixed-action row has some
        return [head + f"not measured: {', '.join(missing)} | - | - |"]
    if same:  # every peer refused this size
        return [head + f"{SYSTEM_NAMES.get(same[0]['system'], same[0]['system'])}: cannot run it | - | - |"]
    if reference:
        ref = max(reference, key=lambda r: r["env_steps_per_s"])
        peer = f"{SYSTEM_NAMES.get(ref['system'], ref['system'])} ({action_mode(ref)}, 1 env)"
        return [head + f"{peer} | {ref['env_steps_per_s']:.3g} | - |"]
    return []


def write_readme_table(records: list[dict], readme: str | Path) -> Path:
    """Replaces the README's block between `README_BEGIN` and `README_END` with `readme_table`."""
    path = Path(readme)
    text = path.read_text()
    if README_BEGIN not in text or README_END not in text:
        raise ValueError(f"{path} has no speed-table block: put {README_BEGIN!r} and {README_END!r} where it goes")
    before, rest = text.split(README_BEGIN, 1)
    _, after = rest.split(README_END, 1)
    path.write_text(before + README_BEGIN + "\n" + "\n".join(readme_table(records)) + "\n" + README_END + after)
    return path
