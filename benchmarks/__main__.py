"""The benchmark suite: ``python -m benchmarks run ...`` measures, ``python -m benchmarks report`` writes the page.

python -m benchmarks run --suite all --device cuda --out benchmarks/results/
python -m benchmarks run --suite env --device cpu --warm-jobs 14 --out benchmarks/results/   # a many-core host
python -m benchmarks run --suite env --device cpu --sizes tiny --out /tmp/bench
python -m benchmarks report --results benchmarks/results/ --out docs/benchmarks.md --readme README.md
"""

from __future__ import annotations

import argparse


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="measure a suite; one process per case")
    run.add_argument("--suite", choices=("env", "train", "all"), default="all")
    run.add_argument("--device", choices=("cuda", "cpu"), required=True)
    run.add_argument("--out", default="benchmarks/results/", help="folder for the JSON records")
    run.add_argument("--sizes", choices=("tiny", "full"), default="full")
    run.add_argument("--only", default=None, help="regular expression on case ids (workload/system/device/num_envs)")
    run.add_argument("--budget-s", type=float, default=None, help="record the cases left after this as skipped")
    run.add_argument("--case-timeout-s", type=float, default=240.0)
    run.add_argument("--label", default=None, help="machine label in the file name (default: GPU or host name)")
    run.add_argument("--warm-jobs", type=int, default=0,
                     help="first compile our kernels this many processes at a time (many-core hosts)")
    rep = sub.add_parser("report", help="turn the JSON records into docs/benchmarks.md and its plots")
    rep.add_argument("--results", default="benchmarks/results/")
    rep.add_argument("--out", default="docs/benchmarks.md")
    rep.add_argument("--readme", default=None, help="a README whose speed-table block to rewrite from the records")
    args = ap.parse_args(argv)
    if args.command == "run":
        from benchmarks.runner import run_suite

        path = run_suite(args.suite, args.device, args.out, args.sizes, args.only, args.budget_s,
                         args.case_timeout_s, args.label, args.warm_jobs)
        print(f"wrote {path}")
    else:
        from benchmarks.report import load_records, write_readme_table, write_report

        print(f"wrote {write_report(args.results, args.out)}")
        if args.readme:
            print(f"wrote {write_readme_table(load_records(args.results), args.readme)}")


if __name__ == "__main__":
    main()
