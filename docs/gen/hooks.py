"""MkDocs hooks: the gallery and the env API pages, generated from the registry at build time.

Generated pages exist only inside the build (``File.generated``); the animations are drawn once
into a git-ignored cache (``.cache/docs/gifs``, or ``$GPU_ZOO_DOCS_CACHE``) keyed by the sources
they depend on, so a rebuild without changes draws nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import gallery  # docs/gen/gallery.py: MkDocs puts this folder on sys.path while it loads its hooks
from mkdocs.structure.files import File

from gpu_zoo.registry import get_spec, registered_envs

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
HEADLINE_MARK = "<!-- headline-throughput -->"


def _cache_dir() -> Path:
    return Path(os.environ.get("GPU_ZOO_DOCS_CACHE", ROOT / ".cache" / "docs")) / "gifs"


def on_config(config):
    """Lists one gallery page per registered env under the nav's Gallery section."""
    pages = [f"gallery/{env_id}.md" for env_id in registered_envs()]
    for item in config["nav"] or []:
        if isinstance(item, dict) and "Gallery" in item:
            item["Gallery"] = [p for p in item["Gallery"] if p not in pages] + pages
            break
    else:
        raise ValueError("mkdocs.yml: the nav needs a 'Gallery' section (its pages are generated)")
    return config


def on_files(files, config):
    env_ids = registered_envs()
    gifs = gallery.cached_gifs(env_ids, _cache_dir(), engine=os.environ.get("GPU_ZOO_GIF_ENGINE", "sim"))
    names = {env_id: f"{env_id}.gif" for env_id in env_ids}
    for env_id, path in gifs.items():
        files.append(File.generated(config, f"gallery/{names[env_id]}", abs_src_path=str(path)))
        files.append(File.generated(config, f"gallery/{env_id}.md",
                                    content=gallery.env_page(get_spec(env_id), names[env_id], RESULTS)))
    specs = [get_spec(env_id) for env_id in env_ids]
    files.append(File.generated(config, "gallery/index.md", content=gallery.index_page(specs, names)))
    files.append(File.generated(config, "api/envs.md", content=env_api_page(env_ids)))
    return files


def env_api_page(env_ids) -> str:
    """Per env: the params dataclass, the spec's declaration functions and its phases, from their docstrings."""
    out = ["# Environment modules", "",
           "Each environment is one module: a frozen params dataclass, its agent groups and state fields, "
           "its phase functions and its render function, gathered in an `EnvSpec` named `SPEC`. "
           "The rules are on each env's [gallery page](../gallery/index.md).", ""]
    for env_id in env_ids:
        spec = get_spec(env_id)
        page = f"../gallery/{env_id}.md"
        out += [f"## `{env_id}`", "", f"Module `{spec.module}`; rules and spaces: [gallery page]({page}).", "",
                *phase_lines(spec), ""]
        for path in spec_objects(spec):
            out += [f"::: {path}", "    options:", "      heading_level: 3", "      show_root_heading: true",
                    "      show_root_full_path: false", ""]
    return "\n".join(out)


def phase_lines(spec) -> list[str]:
    """The phases of a default configuration, in order: what the kernels run (before a step, within, after)."""
    params = spec.make_params()
    lines = []
    for kind, when in (("reset", "start an episode"), ("step", "make a step"), ("observe", "observe")):
        names = [f"`{getattr(ph.fn, '__name__', ph.fn)}` ({type(ph).__name__})" for ph in spec.phases(kind, params)]
        lines.append(f"- phases that {when}: " + (", ".join(names) or "none"))
    return lines


def spec_objects(spec) -> list[str]:
    """Dotted paths of what a spec is made of, in declaration order, each once."""
    params = spec.make_params()
    fns = [spec.params, spec.groups, spec.fields, spec.constants, spec.render]
    for kind in ("reset", "step", "observe"):
        fns += [phase.fn for phase in spec.phases(kind, params)]
    out = []
    for fn in fns:
        fn = getattr(fn, "py_func", fn)  # a compiled phase: document the Python function it compiles
        if fn is None or getattr(fn, "__name__", "<lambda>") == "<lambda>":
            continue
        path = f"{fn.__module__}.{fn.__qualname__}"
        if path not in out:
            out.append(path)
    return out


def on_page_markdown(markdown, page, config, files):
    """Puts the fastest measured throughput (from ``benchmarks/results``) on the home page."""
    if page.file.src_uri != "index.md" or HEADLINE_MARK not in markdown:
        return markdown
    return markdown.replace(HEADLINE_MARK, headline_text())


def headline_text() -> str:
    best = gallery.headline(RESULTS)
    if best is None:
        return "No benchmark results yet: `python -m benchmarks` writes them to `benchmarks/results/`."
    agents = best.get("agents")
    shape = f"{best['num_envs']} environments" + (f" of {agents} agents" if agents else "")
    config = f" ({gallery.config_text(best['config'])})" if best["config"] else ""
    aps = best.get("agent_steps_per_s")
    return (f"**{best['env_steps_per_s']:.2g} env-steps/s**" + (f" ({aps:.2g} agent-steps/s)" if aps else "")
            + f": [`{best['env']}`](gallery/{best['env']}.md), {shape}{config}, random actions, on one "
            f"{best['hardware']} (`benchmarks/results/{best['source']}`).")
