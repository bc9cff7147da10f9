"""What produced a measurement: package versions, git revision, GPU, driver, date, command line."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from functools import cache
from pathlib import Path

# Distribution names whose versions every record carries (None when not installed).
PACKAGES = ("numpy", "numba", "numba-cuda", "torch", "pettingzoo", "gymnasium", "mpe2", "supersuit", "vmas",
            "jax", "jaxlib", "jaxmarl", "rl-warp-drive", "matplotlib")

ROOT = Path(__file__).resolve().parent.parent


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@cache
def git_sha() -> str | None:
    """The checkout's revision, with ``+dirty`` when tracked files differ from it.

    ``GPU_ZOO_GIT_SHA`` wins when set: a copy of the working tree sent to another machine may
    carry a stale ``.git``, or none.
    """
    if os.environ.get("GPU_ZOO_GIT_SHA"):
        return os.environ["GPU_ZOO_GIT_SHA"]
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return sha + ("+dirty" if dirty else "")


@cache
def gpu_description() -> dict:
    """GPU name and driver version from nvidia-smi, or empty when there is none."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return {}
    name, driver, memory = (x.strip() for x in out.stdout.splitlines()[0].split(","))
    return {"gpu": name, "driver": driver, "gpu_memory": memory}


def system_description() -> dict:
    """Versions and machine, the same for every record of one run."""
    return {
        "python": platform.python_version(),
        "versions": {name: package_version(name) for name in PACKAGES},
        "gpu_zoo_git_sha": git_sha(),
        **gpu_description(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "host": platform.node(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(["python", "-m", "benchmarks", *sys.argv[1:]]),
    }
