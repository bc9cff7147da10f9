"""The environment gallery: one Markdown page per registered environment, derived from its spec.

Nothing on a page is typed by hand: the text is the env module's docstring (Markdown), the
spaces table comes from the `Layout` of the default params, the arguments table from the params
dataclass, the animation from an episode rendered with random actions, and the throughput table
from the benchmark results in ``benchmarks/results/*.json``. A new env in the registry gets its
page with no change here.

    python docs/gen/gallery.py OUT_DIR            # pages and GIFs, as the docs build makes them
    python docs/gen/gallery.py OUT_DIR --no-gifs  # pages only

The docs build (`hooks`, beside this file) makes the pages inside the site.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import hashlib
import importlib.util
import inspect
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import gymnasium
import numpy as np

import gpu_zoo.core
from gpu_zoo.core.api.spec import EnvSpec
from gpu_zoo.core.compiler.layout import Layout
from gpu_zoo.registry import get_spec, registered_envs

ROOT = Path(__file__).resolve().parents[2]
"""The repository: this file is ``docs/gen/gallery.py``."""

GIF_FRAMES = 60
"""At most this many frames per animation (the episode's first steps)."""
GIF_SIZE = 240
"""Width and height of an animation, in pixels."""
GIF_SEED = 0
GIF_FPS = 12
ENGINES = {"sim": "cuda", "cpu": "cpu"}
"""How the animations are drawn -> the kernel target: the CUDA simulator, or the CPU kernel."""

# Smaller worlds than the defaults, where the default one would show a few dots on a big map.
GIF_PARAMS: dict[str, dict] = {
    "tag_gridworld_v0": dict(grid_length=15, num_taggers=3, num_runners=3),
}


# ---------------------------------------------------------------------- docstring
@dataclass(frozen=True)
class EnvDoc:
    """An env module's docstring, split for the page: title line, body and version history."""

    summary: str
    body: str
    version_history: str


def env_doc(spec: EnvSpec) -> EnvDoc:
    module = sys.modules.get(spec.module) or importlib.import_module(spec.module)
    doc = inspect.cleandoc(module.__doc__ or "")
    if not doc:
        raise ValueError(f"{spec.id}: module {spec.module} has no docstring; the gallery page is made from it")
    history = ""
    match = re.search(r"^## Version history\s*$", doc, flags=re.MULTILINE | re.IGNORECASE)
    if match:
        history = doc[match.end():].strip()
        doc = doc[:match.start()].rstrip()
    summary, _, body = doc.partition("\n")
    return EnvDoc(summary.strip(), body.strip(), history)


# ---------------------------------------------------------------------- spec tables
def describe_space(space: gymnasium.spaces.Space) -> str:
    """A short, exact description of a space, e.g. ``Box(-inf, inf, (78,), float32)``."""
    if isinstance(space, gymnasium.spaces.Discrete):
        return f"Discrete({int(space.n)})"
    if isinstance(space, gymnasium.spaces.MultiDiscrete):
        return f"MultiDiscrete({[int(n) for n in space.nvec]})"
    if isinstance(space, gymnasium.spaces.Box):
        low, high = np.unique(space.low), np.unique(space.high)
        lo = f"{low[0]:g}" if low.size == 1 else "low"
        hi = f"{high[0]:g}" if high.size == 1 else "high"
        return f"Box({lo}, {hi}, {space.shape}, {space.dtype})"
    return str(space)


def default_layout(spec: EnvSpec) -> Layout:
    """The `Layout` of an env with its default params (no kernel is compiled)."""
    return Layout(spec, spec.make_params())


def groups_table(spec: EnvSpec) -> str:
    """Agent groups with their names, observation and action spaces, for the default params."""
    layout = default_layout(spec)
    masked_any = any(getattr(gi.group, "masked", False) for gi in layout.groups.values())
    head = ["group", "agents", "observation space", "action space"] + (["action mask"] if masked_any else [])
    rows = [head, ["---"] * len(head)]
    for name, gi in layout.groups.items():
        agents = f"`{name}_0`" if gi.count == 1 else f"`{name}_0` … `{name}_{gi.count - 1}`"
        row = [f"`{name}`", f"{gi.count}: {agents}", f"`{describe_space(gi.observation_space)}`",
               f"`{describe_space(gi.action_space)}`"]
        if masked_any:
            row.append("yes" if getattr(gi.group, "masked", False) else "no")
        rows.append(row)
    return "\n".join("| " + " | ".join(r) + " |" for r in rows)


def observation_blocks(spec: EnvSpec) -> str:
    """Each group's observation vector as named slices (offset and size), for the default params."""
    layout = default_layout(spec)
    lines = []
    for name, gi in layout.groups.items():
        parts = [f"`{block}` [{start}:{start + size}]" for block, (start, size) in gi.obs_offsets.items()]
        lines.append(f"- `{name}` ({gi.group.obs_size}): " + ", ".join(parts))
    return "\n".join(lines)


def _field_docs(cls: type) -> dict[str, str]:
    """Attribute docstrings (a string right under a field) of a dataclass, read from its source."""
    try:
        tree = ast.parse(inspect.cleandoc("\n" + inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    out = {}
    for node, nxt in zip(body, body[1:], strict=False):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
            out[node.target.id] = " ".join(nxt.value.value.split())
    return out


def _default_repr(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "required"
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, float):
        return f"{value:.6g}"
    return repr(value)


def params_table(spec: EnvSpec) -> str:
    """Constructor arguments with defaults; float ones can change at run time (``set_params``)."""
    runtime = set(default_layout(spec).live_params)
    docs = _field_docs(spec.params)
    rows = ["| argument | default | type | changeable at run time | meaning |", "| --- | --- | --- | --- | --- |"]
    for f in dataclasses.fields(spec.params):
        kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        live = "yes" if f.name in runtime else "no"
        meaning = docs.get(f.name, "").replace("|", "\\|")
        rows.append(f"| `{f.name}` | `{_default_repr(f)}` | `{kind}` | {live} | {meaning} |")
    return "\n".join(rows)


# ---------------------------------------------------------------------- throughput
RESULTS_SCHEMA = "gpu_zoo.benchmarks/1"  # benchmarks.runner.SCHEMA: the suite's records (benchmarks/ is not installed)

def throughput_records(results_dir: Path, env_id: str) -> list[dict]:
    """gpu_zoo's measurements of ``env_id``, newest per (hardware, configuration), fastest first.

    Reads the benchmark suite's files, ``results_dir/*.json`` of schema ``gpu_zoo.benchmarks/1``
    (one record per case, ``workload`` being the id without its version; other files are not
    records). Baselines (other systems), failed cases and training runs are left out. Each row has
    ``hardware``, ``num_envs``, ``agents``, ``config``, ``env_steps_per_s``,
    ``agent_steps_per_s``, ``date`` and ``source`` (the file name).
    """
    newest: dict[tuple, dict] = {}
    for path in sorted(Path(results_dir).glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise ValueError(f"benchmark results {path} are not valid JSON: {err}") from err
        if not isinstance(data, dict) or data.get("schema") != RESULTS_SCHEMA:
            continue
        for rec in data["records"]:
            row = _suite_row(rec, env_id)
            if row is None:
                continue
            row["source"] = path.name
            key = (row["hardware"], row["num_envs"], json.dumps(row["config"], sort_keys=True, default=str))
            if key not in newest or row["date"] >= newest[key]["date"]:
                newest[key] = row
    return sorted(newest.values(), key=lambda r: (r["hardware"], -r["env_steps_per_s"]))


def _suite_row(rec: dict, env_id: str) -> dict | None:
    rate = rec.get("env_steps_per_s")
    if (rec.get("workload") != env_id.rsplit("_v", 1)[0] or rec.get("system") != "gpu_zoo"
            or rec.get("status", "ok") != "ok" or not isinstance(rate, int | float)):
        return None
    machine = rec.get("machine", {})
    config = {k: v for k, v in rec.get("config", {}).items() if not isinstance(v, dict)}
    agents = rec.get("agents") or _agents(env_id, config)
    return {"hardware": hardware_name(rec.get("device", ""), machine), "num_envs": rec.get("num_envs"),
            "agents": agents, "config": config, "env_steps_per_s": float(rate),
            "agent_steps_per_s": rec.get("agent_steps_per_s") or (rate * agents if agents else None),
            "date": machine.get("date", "")}


def _agents(env_id: str, config: dict) -> int | None:
    """Agents per env of a measured configuration, from the env's layout (measurement settings ignored)."""
    spec = get_spec(env_id)
    names = {f.name for f in dataclasses.fields(spec.params)}
    try:
        return Layout(spec, spec.make_params(**{k: v for k, v in config.items() if k in names})).num_agents
    except (TypeError, ValueError):
        return None


def hardware_name(device: str, machine: dict) -> str:
    """The GPU's name (``NVIDIA H200``) for a CUDA run, ``CPU`` (with its core count when recorded) otherwise."""
    if str(device).startswith("cuda"):
        return machine.get("gpu") or "GPU"
    return f"CPU ({machine['cpu_count']} cores)" if machine.get("cpu_count") else "CPU"


def config_text(config: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(config.items())) or "defaults"


def throughput_table(records: list[dict]) -> str:
    rows = ["| hardware | num_envs | agents | configuration | env-steps/s | agent-steps/s | results file |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in records:
        aps = r["agent_steps_per_s"]
        rows.append(f"| {r['hardware']} | {r['num_envs']} | {r['agents'] or ''} | {config_text(r['config'])} "
                    f"| {r['env_steps_per_s']:.2g} | {'' if aps is None else f'{aps:.2g}'} | `{r['source']}` |")
    return "\n".join(rows)


def headline(results_dir: Path) -> dict | None:
    """The fastest GPU measurement of any registered env (else the fastest of all), for the home page."""
    best = None
    for env_id in registered_envs():
        for r in throughput_records(results_dir, env_id):
            rank = (not r["hardware"].startswith("CPU"), r["env_steps_per_s"])
            if best is None or rank > best[0]:
                best = (rank, {**r, "env": env_id})
    return None if best is None else best[1]


# ---------------------------------------------------------------------- animation
def gif_params(env_id: str) -> dict:
    return dict(GIF_PARAMS.get(env_id, {}))


def episode_frames(env_id: str, target: str = "cpu", frames: int = GIF_FRAMES, size: int = GIF_SIZE,
                   seed: int = GIF_SEED) -> list[np.ndarray]:
    """Frames of one episode of ``env_id`` (its first ``frames - 1`` steps) under uniformly random actions.

    Args:
        env_id: a registered id.
        target: ``"cpu"``, or ``"cuda"`` (on a CPU device that is Numba's CUDA simulator, which
            needs no compilation: cheaper than the CPU kernel for a one-off short episode).
        frames: at most this many frames, the start state included.
        size: output width and height in pixels.
        seed: the episode's seed (the actions are drawn from it too).
    """
    import torch
    from PIL import Image

    from gpu_zoo.core.runtime.batched import BatchedEnv

    spec = get_spec(env_id)
    if spec.render is None:
        raise ValueError(f"{env_id} has no render function: its gallery page needs one")
    env = BatchedEnv(spec, 1, device="cpu", target=target, autoreset=False, validate=False, **gif_params(env_id))
    gen = torch.Generator().manual_seed(seed)
    sized = "size" in inspect.signature(spec.render).parameters

    def frame():
        if sized:  # drawn at the final size: crisp, few colours, a small GIF
            return spec.render(env.env_state(0), env.params, size=size)
        image = env.render(0)
        return np.asarray(Image.fromarray(image).resize((size, size), Image.Resampling.NEAREST))

    env.reset(seed=seed)
    out = [frame()]
    while len(out) < frames:
        _, _, _, _, info = env.step(env.sample_actions(gen))
        out.append(frame())
        if bool(info["done"][0]):
            break
    return out


def write_episode_gif(env_id: str, path: Path, target: str = "cpu") -> int:
    """Writes the animation of ``env_id`` to ``path``; returns its frame count."""
    from gpu_zoo.core.api.render import write_gif

    frames = episode_frames(env_id, target=target)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.gif")
    write_gif(frames, tmp, fps=GIF_FPS)
    os.replace(tmp, path)  # a build interrupted mid-write leaves no truncated GIF in the cache
    return len(frames)


def gif_key(env_id: str) -> str:
    """Changes when what the animation shows may change: the env's sources and the GIF settings."""
    spec = get_spec(env_id)
    h = hashlib.sha256(repr((env_id, gif_params(env_id), GIF_FRAMES, GIF_SIZE, GIF_SEED, GIF_FPS)).encode())
    core = Path(gpu_zoo.core.__file__).parent
    sources = [__file__, importlib.util.find_spec(spec.module).origin, *sorted(str(p) for p in core.rglob("*.py"))]
    for src in sources:
        h.update(Path(src).read_bytes())
    return h.hexdigest()[:16]


def cached_gifs(env_ids, cache_dir: Path, engine: str = "sim") -> dict[str, Path]:
    """The animation of each env from ``cache_dir``, drawing the missing ones in one subprocess.

    ``engine="sim"`` runs the CUDA kernel under Numba's simulator (switched on before Numba is
    imported, hence the subprocess): an interpreted 60-step episode costs seconds, where compiling
    a CPU kernel (``engine="cpu"``) costs about half a minute per env on a 2-core machine.
    """
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    paths = {i: cache_dir / f"{i}-{gif_key(i)}.gif" for i in env_ids}
    missing = [i for i, p in paths.items() if not p.exists()]
    for env_id in missing:  # drawings of older sources
        for stale in cache_dir.glob(f"{env_id}-*.gif"):
            stale.unlink()
    if missing:
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {list(ENGINES)}, got {engine!r}")
        env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1" if engine == "sim" else "0"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        with tempfile.TemporaryDirectory(dir=cache_dir) as drawing:
            cmd = [sys.executable, str(Path(__file__).resolve()), "--gifs-only", "--engine", engine, drawing, *missing]
            result = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if result.returncode != 0:
                raise RuntimeError(f"drawing the gallery animations failed:\n{result.stdout}\n{result.stderr}")
            for env_id in missing:  # named here, by the keys of the sources this process has read
                os.replace(Path(drawing) / f"{env_id}.gif", paths[env_id])
    return paths


# ---------------------------------------------------------------------- pages
def import_line(spec: EnvSpec) -> str | None:
    """``from gpu_zoo.tag import tag_gridworld_v0`` when the versioned module exists beside the env's."""
    package = spec.module.rpartition(".")[0]
    if package and importlib.util.find_spec(f"{package}.{spec.id}") is not None:
        return f"from {package} import {spec.id}"
    return None


def env_page(spec: EnvSpec, gif_name: str | None, results_dir: Path) -> str:
    """The Markdown gallery page of one env."""
    env_id = spec.id
    doc = env_doc(spec)
    intro, _, sections = doc.body.partition("\n## ")
    if intro.startswith("## "):
        intro, sections = "", intro[3:]
    out = [f"# {env_id}", ""]
    if gif_name:
        config = ", ".join(f"{k}={v!r}" for k, v in gif_params(env_id).items()) or "default arguments"
        out += [f"![{env_id}: one episode with random actions]({gif_name}){{ width=\"{GIF_SIZE}\" }}", "",
                f"*One episode with uniformly random actions ({config}; at most {GIF_FRAMES} frames).*", ""]
    out += [doc.summary, "", intro.strip(), ""]
    imp = import_line(spec)
    out += ["```python", "import gpu_zoo", *([imp] if imp else []), ""]
    if imp:
        out.append(f"env = {env_id}.parallel_env()  # PettingZoo ParallelEnv")
    out += [f'batched = gpu_zoo.make("{env_id}", num_envs=4096)  # batched tensors',
            "```", ""]
    out += ["## Agents and spaces", "", "With the default arguments:", "", groups_table(spec), "",
            "Observation vectors, by named block:", "", observation_blocks(spec), ""]
    if sections:
        out += ["## " + sections.strip(), ""]
    out += ["## Arguments", "", params_table(spec), ""]
    records = throughput_records(results_dir, env_id)
    out += ["## Throughput", ""]
    if records:
        out += ["Measured by the benchmarks in `benchmarks/` (random actions, auto-resets included):", "",
                throughput_table(records), ""]
    else:
        out += ["No benchmark results for this environment yet (`benchmarks/results/`).", ""]
    out += ["## Version history", "", doc.version_history or "Not recorded in the module docstring.", ""]
    return "\n".join(out)


def index_page(specs, gif_names: dict[str, str]) -> str:
    """The gallery's front page: a grid of animated thumbnails."""
    out = ["# Environment gallery", "",
           "Every environment registered in `gpu_zoo.registry`, each animated with uniformly random actions.", "",
           '<div class="grid cards" markdown>', ""]
    for spec in specs:
        env_id, summary = spec.id, env_doc(spec).summary
        thumb = f"[![{env_id}]({gif_names[env_id]}){{ width=\"160\" }}]({env_id}.md)" if env_id in gif_names else ""
        out += [f"-   {thumb}", "", f"    **[`{env_id}`]({env_id}.md)**", "", f"    {summary}", ""]
    out += ["</div>", ""]
    return "\n".join(out)


def write_pages(out_dir: Path, results_dir: Path, gifs: dict[str, Path] | None = None, env_ids=None) -> list[Path]:
    """Writes ``index.md`` and one ``<id>.md`` per env (plus the GIFs given) into ``out_dir``."""
    import shutil

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    env_ids = tuple(env_ids or registered_envs())
    names = {}
    for env_id, src in (gifs or {}).items():
        names[env_id] = f"{env_id}.gif"
        shutil.copyfile(src, out_dir / names[env_id])
    written = [out_dir / "index.md"]
    written[0].write_text(index_page([get_spec(i) for i in env_ids], names))
    for env_id in env_ids:
        path = out_dir / f"{env_id}.md"
        path.write_text(env_page(get_spec(env_id), names.get(env_id), results_dir))
        written.append(path)
    return written


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="folder for the pages (or, with --gifs-only, the GIFs)")
    ap.add_argument("env_ids", nargs="*", help="env ids (default: every registered one)")
    ap.add_argument("--results", default=str(ROOT / "benchmarks" / "results"),
                    help="folder of benchmark result JSON files")
    ap.add_argument("--no-gifs", action="store_true", help="pages only")
    ap.add_argument("--gifs-only", action="store_true", help="only draw the GIFs, as OUT/<id>.gif")
    ap.add_argument("--engine", default="sim", choices=tuple(ENGINES),
                    help="draw the GIFs with the CUDA kernel under Numba's simulator (no compile) or the CPU kernel")
    a = ap.parse_args(argv)
    env_ids = a.env_ids or list(registered_envs())
    out = Path(a.out)
    if a.gifs_only:
        warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)  # the simulator's RNG wrap
        for env_id in env_ids:
            n = write_episode_gif(env_id, out / f"{env_id}.gif", target=ENGINES[a.engine])
            print(f"{env_id}: {n} frames", flush=True)
        return
    gifs = None if a.no_gifs else cached_gifs(env_ids, out / ".gifs", engine=a.engine)
    for path in write_pages(out, Path(a.results), gifs, env_ids):
        print(path)


if __name__ == "__main__":
    main()
