"""Command line: run (or resume) a sweep, report on a run, list runs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _positive(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {raw!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m experiments",
        description="Sweep TreadWise personas x models x temperatures over scripted scenarios.")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run a grid (or resume a run) and write its report")
    run.add_argument("--grid", type=Path, default=None,
                     help="grid file (default: experiments/grids/default.yaml, offline only)")
    run.add_argument("--out", type=Path, default=Path("results"),
                     help="folder that receives the run folder (default: results)")
    run.add_argument("--resume", type=Path, default=None, metavar="RUN_DIR",
                     help="finish an interrupted run: skip its finished cases, append the rest")
    run.add_argument("--strict", action="store_true",
                     help="fail (exit 2) instead of skipping models whose key or package is "
                     "missing")
    run.add_argument("--limit", type=_positive, default=None, metavar="N",
                     help="run at most N more cases (resume later for the rest)")
    run.add_argument("--no-report", action="store_true", help="skip the report at the end")

    report = commands.add_parser("report", help="(re)write the report of a run from its CSV")
    report.add_argument("run_dir", type=Path, metavar="RUN_DIR")

    listing = commands.add_parser("list", help="list runs, newest first")
    listing.add_argument("--out", type=Path, default=Path("results"))
    return parser


def _run(args: argparse.Namespace) -> int:
    from experiments.runner import run_sweep

    if args.resume is not None and args.grid is not None:
        print("note: --resume uses the grid saved in the run folder; --grid is ignored",
              file=sys.stderr)
    run_dir = run_sweep(args.grid, out_dir=args.out, resume=args.resume, strict=args.strict,
                        limit=args.limit, report=not args.no_report)
    print(run_dir)
    return EXIT_OK


def _report(args: argparse.Namespace) -> int:
    from experiments.report import write_report

    print(write_report(args.run_dir))
    return EXIT_OK


def _list(args: argparse.Namespace) -> int:
    from experiments.runs import list_runs

    for run in list_runs(args.out):
        report = "report" if run.has_report else "no report"
        print(f"{run.id:<40} {run.created:%Y-%m-%d %H:%M} {run.rows:>6} rows  {report:<9} "
              f"{run.status}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handlers = {"run": _run, "report": _report, "list": _list}
    try:
        return handlers[args.command](args)
    except KeyboardInterrupt:
        print("interrupted: finish it with python -m experiments run --resume RUN_DIR (the run "
              "folder named above)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
