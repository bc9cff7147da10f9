"""The tuning table: every measured performance choice, the core's and each registered env's, as ``docs/tuning.md``.

Regenerate the page with ``python docs/gen/tuning_table.py > docs/tuning.md``.
"""

from __future__ import annotations

from gpu_zoo.core import tuning
from gpu_zoo.core.tuning import Measured
from gpu_zoo.registry import get_spec, registered_envs


def entries() -> list[tuple[str, str, Measured]]:
    """(where, setting, measurement) of every row: the core's constants, then each registered env's `Tuning`."""
    rows = [(f"core: `{name}`", f"`{getattr(tuning, name)!r}`", m) for name, m in tuning.CORE.items()]
    rows += [("core: generated code", m.choice, m) for m in tuning.GENERATED_CODE]
    for env_id in registered_envs():
        rows += [(f"`{env_id}`", m.choice, m) for m in get_spec(env_id).tuning.measured]
    return rows


def markdown() -> str:
    """The table as the docs page."""
    out = ["# Tuning", "",
           "Every performance choice of the kernels that a benchmark made: the core's constants, then each",
           "env's own `Tuning` (`EnvSpec.tuning`). An env without one runs under the core's choices alone.",
           "The figures are one machine's (most are an H200's): on another GPU, run the command again.",
           "A record is the committed results file under `benchmarks/results/` that holds the figure;",
           "where none was kept, the command measures it again.", "",
           "Generated from `gpu_zoo.core.tuning` and the env modules by",
           "`python docs/gen/tuning_table.py > docs/tuning.md`; a test keeps this page equal to it.", ""]
    for where, setting, m in entries():
        out += [f"## {where}: {setting}", "", f"{m.figure[0].upper()}{m.figure[1:]}.", ""]
        if m.record:
            out.append("- Record: " + ", ".join(f"`{path}`" for path in m.record.split(", ")))
        out += [f"- Measure again: `{m.command}`", ""]
    return "\n".join(out)


if __name__ == "__main__":
    print(markdown(), end="")
