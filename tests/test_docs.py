"""The documentation site: it builds in strict mode, every guide's code runs, every env has a page.

Guide pages' ```python blocks run in order as one script, in a fresh process in a scratch folder
(on the CPU target; CUDA kernels under the simulator). A block titled ``title="name.py"`` is
written to that file instead, beside the script, for later blocks to import.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import gymnasium
import pytest

import gpu_zoo
from docs.gen import gallery
from gpu_zoo import registry
from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent
from tests.helpers import built_once, reference

reference("mkdocs", reason="the docs extra is not installed: pip install -e '.[docs]'")

ROOT = Path(__file__).resolve().parents[1]
# Pages whose ```python blocks the tests run: the home page and every guide.
GUIDES = [ROOT / "docs" / "index.md", *sorted((ROOT / "docs" / "guides").glob("*.md"))]
FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


@dataclasses.dataclass(frozen=True)
class Block:
    """A fenced python block: its first line in the page, its code, its file name if titled."""

    line: int
    code: str
    title: str | None


def python_blocks(page: Path) -> list[Block]:
    text = page.read_text()
    out = []
    for m in FENCE.finditer(text):
        title = re.search(r'title="([^"]+)"', m.group(1))
        out.append(Block(text.count("\n", 0, m.start(2)) + 1, m.group(2), title.group(1) if title else None))
    return out


def child_env() -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "NO_MKDOCS_2_WARNING": "1"}
    if os.environ.get("GPU_ZOO_REAL_CUDA") != "1":
        env["NUMBA_ENABLE_CUDASIM"] = "1"  # as in conftest: CUDA kernels under the simulator
    return env


def _build_site(folder: Path):
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder / "site")],
                            cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=900)
    (folder / "result.json").write_text(json.dumps([result.returncode, result.stdout + result.stderr]))


@functools.cache
def built_site() -> tuple[Path, int, str]:
    """The site, built once per test run (`built_once`): (site folder, mkdocs exit code, its output)."""
    folder = built_once("site", _build_site)
    code, output = json.loads((folder / "result.json").read_text())
    return folder / "site", code, output


@pytest.fixture(scope="module")
def site() -> Path:
    path, code, output = built_site()
    assert code == 0, f"mkdocs build --strict failed:\n{output}"
    return path


def test_site_builds_in_strict_mode(site):
    for page in ("index.html", "guides/new_env/index.html", "api/core/index.html", "api/envs/index.html",
                 "benchmarks/index.html", "design/index.html", "gallery/index.html"):
        assert (site / page).is_file(), f"{page} missing from the built site"


def test_every_registered_env_has_a_gallery_page(site):
    index = (site / "gallery" / "index.html").read_text()
    for env_id in gpu_zoo.registered_envs():
        page = site / "gallery" / env_id / "index.html"
        assert page.is_file(), f"no gallery page for {env_id}"
        html = page.read_text()
        assert f'src="../{env_id}.gif"' in html, f"{env_id}: the page does not show its animation"
        assert (site / "gallery" / f"{env_id}.gif").stat().st_size > 0
        for group in gallery.default_layout(gpu_zoo.get_spec(env_id)).groups:
            assert f"<code>{group}</code>" in html, f"{env_id}: group {group} missing from the spaces table"
        assert f'href="{env_id}/"' in index, f"the gallery index does not link {env_id}"
        api = (site / "api" / "envs" / "index.html").read_text()
        assert gpu_zoo.get_spec(env_id).params.__name__ in api, f"{env_id}: params missing from the API page"


def test_home_page_shows_the_fastest_measured_throughput(site):
    best = gallery.headline(ROOT / "benchmarks" / "results")
    html = (site / "index.html").read_text()
    if best is None:
        assert "No benchmark results yet" in html
    else:
        assert f"{best['env_steps_per_s']:.2g} env-steps/s" in html
        assert best["hardware"] in html


def test_api_reference_is_rendered_from_docstrings(site):
    html = (site / "api" / "core" / "index.html").read_text()
    names = ("api.spec.EnvSpec", "api.spec.PerObs", "runtime.batched.BatchedEnv", "faces.pettingzoo.GpuZooParallelEnv")
    for name in names:
        assert f'id="gpu_zoo.core.{name}"' in html, f"{name} missing from the API reference"
    assert "Steps every environment once." in html  # BatchedEnv.step's docstring


@pytest.mark.parametrize("page", GUIDES, ids=lambda p: p.stem)
def test_guide_code_runs(page, tmp_path):
    blocks = python_blocks(page)
    assert any(b.title is None for b in blocks), f"{page.name} has no runnable ```python block"
    files: dict[str, str] = {}
    script = []
    for b in blocks:
        if b.title:
            files[b.title] = files.get(b.title, "") + b.code + "\n\n"
        else:
            script.append(f"# ---- {page.name}, line {b.line}\n{b.code}")
    for name, code in files.items():
        (tmp_path / name).write_text(code)
    (tmp_path / "guide.py").write_text("\n".join(script))
    env = child_env()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    result = subprocess.run([sys.executable, "guide.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, f"{page.name}: code blocks failed:\n{result.stdout}\n{result.stderr}"


def test_block_extraction_finds_titles_and_lines(tmp_path):
    page = tmp_path / "p.md"
    page.write_text('text\n```python title="m.py"\nX = 1\n```\n\n```bash\nls\n```\n```python\nimport m\n```\n')
    blocks = python_blocks(page)
    assert [(b.line, b.title, b.code) for b in blocks] == [(3, "m.py", "X = 1\n"), (10, None, "import m\n")]


# ------------------------------------------------------------------ generator units
@dataclasses.dataclass(frozen=True)
class _MarketParams:
    num_workers: int = 3
    max_cycles: int = 10
    tax: float = 0.25
    """share of income taken by the planner"""


def _noop(s, p, e, a):
    pass


def _market_groups(p):
    return (Group("worker", p.num_workers, (ObsBlock("map", 12), ObsBlock("coins", 1)), gymnasium.spaces.Discrete(50),
                  masked=True),
            Group("planner", 1, (ObsBlock("incomes", p.num_workers),), gymnasium.spaces.MultiDiscrete([22] * 7),
                  masked=True))


MARKET = EnvSpec(id="market_v0", params=_MarketParams, groups=_market_groups,
                 fields=lambda p: (Field("coins", "f32", (p.num_workers + 1,)),), reset=(PerAgent(_noop),),
                 step=(PerAgent(_noop),), observe=(), module=__name__)


def test_generator_handles_several_groups_multidiscrete_and_masks(tmp_path):
    page = gallery.env_page(MARKET, None, tmp_path)
    assert "| `worker` | 3: `worker_0` … `worker_2` | `Box(-inf, inf, (13,), float32)` | `Discrete(50)` | yes |" in page
    planner = "`MultiDiscrete([22, 22, 22, 22, 22, 22, 22])`"
    assert f"| `planner` | 1: `planner_0` | `Box(-inf, inf, (3,), float32)` | {planner} | yes |" in page
    assert "`map` [0:12], `coins` [12:13]" in page
    assert "| `tax` | `0.25` | `float` | yes | share of income taken by the planner |" in page
    assert "| `num_workers` | `3` | `int` | no |" in page
    assert "No benchmark results for this environment yet" in page
    assert page.index("## Agents and spaces") < page.index("## Arguments") < page.index("## Version history")


def test_throughput_keeps_the_newest_gpu_zoo_run_per_configuration(tmp_path, monkeypatch):
    def suite_record(date, rate, status="ok", system="gpu_zoo", workload="market", config=None, device="cuda"):
        return {"schema": "gpu_zoo.benchmarks/1", "workload": workload, "system": system, "device": device,
                "num_envs": 4096, "config": config or {"num_workers": 5}, "status": status, "env_steps_per_s": rate,
                "machine": {"gpu": "NVIDIA H200", "date": date, "cpu_count": 16}}

    suite = [suite_record("2026-03-01", 5e7), suite_record("2026-04-01", 6e7),
             suite_record("2026-04-01", None, "error"), suite_record("2026-04-01", 9e9, system="vmas"),
             suite_record("2026-04-01", 9e9, workload="train_market"),
             suite_record("2026-04-01", 4e7, config={"num_workers": 5, "actions": "fresh"}),
             suite_record("2026-01-15", 3e5, device="cpu")]
    (tmp_path / "e_suite.json").write_text(json.dumps({"schema": "gpu_zoo.benchmarks/1", "records": suite}))
    # a file of another format is not read as records
    (tmp_path / "f_other.json").write_text(json.dumps({"records": [{"env": "market_v0", "env_steps_per_s": 9e9}]}))
    monkeypatch.setitem(registry._ENTRIES, "market_v0", f"{__name__}:MARKET")  # registered for this test only
    rows = gallery.throughput_records(tmp_path, "market_v0")
    assert [(r["hardware"], r["env_steps_per_s"], r["source"]) for r in rows] == [
        ("CPU (16 cores)", 3e5, "e_suite.json"), ("NVIDIA H200", 6e7, "e_suite.json"),
        ("NVIDIA H200", 4e7, "e_suite.json")]
    assert rows[1]["agents"] == 6  # from the layout: 5 workers and the planner
    table = gallery.throughput_table(rows)
    assert "| NVIDIA H200 | 4096 | 6 | num_workers=5 | 6e+07 | 3.6e+08 | `e_suite.json` |" in table
    assert "| NVIDIA H200 | 4096 | 6 | actions=fresh, num_workers=5 | 4e+07 | 2.4e+08 | `e_suite.json` |" in table
