"""The learning curve of a run as a PNG, drawn from its progress.csv."""

from __future__ import annotations

import csv
import math
from pathlib import Path


def plot_learning_curve(csv_path: Path, png_path: Path, groups, trained_groups,
                        baselines: dict[str, float] | None = None, title: str = ""):
    """One panel per group: mean episode return per agent against env-steps.

    ``baselines`` (group -> return when every group plays at random) are drawn as dashed lines.
    """
    import matplotlib  # here, not at the module's import: a run's start-up does not wait for it

    matplotlib.use("Agg")  # files only: no display is needed or wanted
    import matplotlib.pyplot as plt

    with open(csv_path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    groups = list(groups)
    fig, axes = plt.subplots(1, len(groups), figsize=(4.5 * len(groups), 3.4), squeeze=False)
    steps = [float(r["env_steps"]) for r in rows]
    for i, (ax, g) in enumerate(zip(axes[0], groups, strict=True)):
        values = [float(r[f"return/{g}"]) if r.get(f"return/{g}") else math.nan for r in rows]
        ax.plot(steps, values, color=f"C{i}", label="training" if g in trained_groups else "acting at random")
        if baselines and g in baselines:
            ax.axhline(baselines[g], color="grey", linestyle="--", label="all groups random")
        ax.set_title(g)
        ax.set_xlabel("env-steps")
        ax.set_ylabel("episode return per agent")
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)
    plt.close(fig)
