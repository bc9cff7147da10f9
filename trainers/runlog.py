"""Where a training run reports: a progress bar, progress.csv and TensorBoard scalars, with the same names."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm

COUNTERS = ("iteration", "env_steps", "seconds", "env_steps_per_s")


class RunLog:
    """Writes one row of metrics per log to the CSV, to TensorBoard (step = env-steps) and to the bar.

    A resumed run keeps the rows up to its checkpoint and drops later ones (written after the
    last checkpoint of the interrupted run), in the CSV and in TensorBoard alike, so the logs
    read as those of one uninterrupted run.

    Args:
        out: the run's folder (``progress.csv`` and ``tb/`` go there).
        metrics: names of the metrics after the counters, in column order.
        groups: groups whose returns the progress bar shows.
        total_env_steps: the run's budget, for the bar and its time left.
        start_iteration: iteration of the checkpoint resumed from (0 for a fresh run).
        start_env_steps: env-steps done by then.
    """

    def __init__(self, out: Path, metrics: list[str], groups, total_env_steps: int, start_iteration: int = 0,
                 start_env_steps: int = 0):
        self.columns = [*COUNTERS, *metrics]
        self.groups = tuple(groups)
        self.csv_path = out / "progress.csv"
        kept = self._rows_up_to(start_iteration) if start_iteration else []
        self._fh = open(self.csv_path, "w", newline="")
        self._csv = csv.DictWriter(self._fh, self.columns)
        self._csv.writeheader()
        self._csv.writerows(kept)
        self._fh.flush()
        self.tb = SummaryWriter(str(out / "tb"), purge_step=start_env_steps if start_iteration else None)
        self.bar = tqdm(total=total_env_steps, initial=start_env_steps, unit="env-step", unit_scale=True,
                        dynamic_ncols=True, smoothing=0.3)

    def _rows_up_to(self, iteration: int) -> list[dict]:
        if not self.csv_path.exists():
            return []
        with open(self.csv_path, newline="") as fh:
            rows = [r for r in csv.DictReader(fh) if int(r["iteration"]) <= iteration]
        return [{k: r.get(k, "") for k in self.columns} for r in rows]

    def write(self, row: dict[str, float]):
        self._csv.writerow({k: _fmt(row.get(k, float("nan"))) for k in self.columns})
        self._fh.flush()
        step = int(row["env_steps"])
        for k, v in row.items():
            if k not in ("iteration", "env_steps") and not math.isnan(v):
                self.tb.add_scalar(k, v, step)
        self.bar.set_postfix({f"ret_{g}": _fmt(row.get(f"return/{g}", float("nan")), 3) for g in self.groups},
                             refresh=False)
        self.bar.update(step - self.bar.n)

    def close(self):
        self.bar.close()
        self.tb.close()
        self._fh.close()


def _fmt(v: float, digits: int = 6) -> str:
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e15):
        return str(int(v))
    return "" if math.isnan(v) else f"{v:.{digits}g}"
