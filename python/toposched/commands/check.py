"""`toposched check`: re-check a finished run from its output files."""

from __future__ import annotations

import argparse

NAME = "check"
HELP = "re-check a finished run from its output files"
DESCRIPTION = (
    "Re-check a run from jobs.parquet and fabric.json alone: start >= submit, no node held twice, "
    "and with --interference-free the SC18 invariants (no leaf/pod shared by two spanning jobs at any instant)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", metavar="DIR", help="a directory written by toposched simulate")
    parser.add_argument("--interference-free", action="store_true", help="also check invariants I1 and I2")


def run(args: argparse.Namespace) -> int:
    from ..check import check_run_dir

    problems = check_run_dir(args.out, interference_free=args.interference_free)
    for p in problems:
        print(p)
    print(f"{problems.total:,} problem(s) found" if problems else "schedule OK")
    return 1 if problems else 0
