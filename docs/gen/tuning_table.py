"""The tuning table: every measured performance choice, the core's and each registered env's, as ``docs/tuning.md``.

Regenerate the page from the repository's root with ``python -m docs.gen.tuning_table > docs/tuning.md``.
"""

from __future__ import annotations

from benchmarks import tuning_records
from benchmarks.tuning_records import Measured
from gpu_zoo.core.api import tuning
from gpu_zoo.registry import registered_envs


def entries() -> list[tuple[str, str, Measured]]:
    """(where, setting, measurement) of every row: the core's constants, then each registered env's choices."""
    rows = [(f"core: `{name}`", f"`{getattr(tuning, name)!r}`", m) for name, m in tuning_records.CORE.items()]
    rows += [("core: generated code", m.choice, m) for m in tuning_records.GENERATED_CODE]
    for env_id in registered_envs():
        rows += [(f"`{env_id}`", m.choice, m) for m in tuning_records.ENVS.get(env_id, ())]
    return rows


def markdown() -> str:
    """The table as the docs page."""
    out = ["# Tuning", "",
           "Every performance choice of the kernels that a benchmark made: the core's constants, then each",
           "env's own (its `Tuning`, `EnvSpec.tuning`, and the form of its functions). An env without any",
           "runs under the core's choices alone.",
           "The figures are one machine's (most are an H200's): on another GPU, run the command again.",
           "A record is the committed results file under `benchmarks/results/` that holds the figure;",
           "where none was kept, the command measures it again.", "",
           "Generated from `benchmarks/tuning_records.py` (the constants' values from `gpu_zoo.core.api.tuning`) by",
           "`python -m docs.gen.tuning_table > docs/tuning.md`; a test keeps this page equal to it.", ""]
    for where, setting, m in entries():
        out += [f"## {where}: {setting}", "", f"{m.figure[0].upper()}{m.figure[1:]}.", ""]
        if m.note:
            out += [f"{m.note[0].upper()}{m.note[1:]}.", ""]
        if m.record:
            out.append("- Record: " + ", ".join(f"`{path}`" for path in m.record.split(", ")))
        out += [f"- Measure again: `{m.command}`", ""]
    return "\n".join(out)


if __name__ == "__main__":
    print(markdown(), end="")
