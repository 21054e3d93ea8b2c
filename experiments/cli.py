"""Command line: parse the arguments and hand each command (run, report, list, show...) on."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from treadwise.settings import process_environment

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
    run.add_argument("--resume", type=Path, default=None, metavar="RUN",
                     help="finish an interrupted run (a run folder, or a database run's name): "
                     "skip its finished cases, append the rest")
    run.add_argument("--strict", action="store_true",
                     help="fail (exit 2) instead of skipping models whose key or package is "
                     "missing")
    run.add_argument("--limit", type=_positive, default=None, metavar="N",
                     help="run at most N more cases (resume later for the rest)")
    run.add_argument("--no-report", action="store_true", help="skip the report at the end")
    run.add_argument("--retry-errors", action="store_true",
                     help="with --resume: run again only the cases whose latest row is an "
                     "error (provider or harness failure)")
    run.add_argument("--cache", nargs="?", const=True, default=False, type=Path,
                     metavar="FILE", help="answer identical model requests from a response "
                     "cache (default file: OUT/.cache/responses.sqlite)")
    run.add_argument("--cluster", default=process_environment().get("DASK_SCHEDULER_ADDRESS"),
                     metavar="ADDRESS", help="run the cases on the Dask scheduler at ADDRESS "
                     "(tcp://host:8786; default $DASK_SCHEDULER_ADDRESS), or 'local' for a "
                     "LocalCluster on this machine")

    report = commands.add_parser("report", help="(re)write the report of a run from its CSV, "
                                 "or of a database run from the database")
    report.add_argument("run_dir", type=Path, metavar="RUN",
                        help="a run folder, or the name of a database run")
    report.add_argument("--no-charts", action="store_true", help="tables and text only")
    report.add_argument("--out", type=Path, default=Path("results"),
                        help="for a database run named alone: the folder that receives RUN/ "
                        "(default: results)")

    export = commands.add_parser("export", help="write a database run as a "
                                 "run folder (results.csv, transcripts.jsonl, meta.json)")
    export.add_argument("run", metavar="RUN")
    export.add_argument("--out", type=Path, default=Path("results"),
                        help="the folder that receives RUN/ (default: results)")

    listing = commands.add_parser("list", help="list runs, newest first")
    listing.add_argument("--out", type=Path, default=Path("results"))

    show = commands.add_parser("show", help="print one case's transcript")
    show.add_argument("run_dir", type=Path, metavar="RUN")
    show.add_argument("case", metavar="CASE",
                      help="a case key, or any part of one that only one case has")
    show.add_argument("--json", action="store_true", help="the transcript's JSON line")

    compare = commands.add_parser("compare", help="compare run B against run A: cases paired "
                                  "on scenario, repeat and every factor the runs share")
    compare.add_argument("run_a", type=Path, metavar="RUN_A")
    compare.add_argument("run_b", type=Path, metavar="RUN_B")
    compare.add_argument("--out", type=Path, default=Path("results"),
                         help="folder that receives the comparison folder compare-A-vs-B "
                         "(default: results)")
    planned = commands.add_parser(
        "power", help="how many scenarios a grid needs to find a difference with 80% power")
    planned.add_argument("--detect", type=float, required=True, metavar="D",
                         help="the difference to find, a fraction (0.10 for ten points)")
    source = planned.add_mutually_exclusive_group()
    source.add_argument("--from", dest="run", type=Path, default=None, metavar="RUN",
                        help="an earlier run: its scenario spread and its report's family")
    source.add_argument("--grid", type=Path, default=None,
                        help="a grid file (default: the default grid), with a conservative "
                        "spread")
    from experiments.live.commands import add_parser as add_live

    add_live(commands)
    return parser


def _run(args: argparse.Namespace) -> int:
    from experiments.run.runner import run_sweep

    if args.resume is not None and args.grid is not None:
        print("note: --resume uses the grid saved with the run; --grid is ignored",
              file=sys.stderr)
    print(run_sweep(args.grid, resume=args.resume, out_dir=args.out, strict=args.strict,
                    limit=args.limit, report=not args.no_report,
                    retry_errors=args.retry_errors, cache=args.cache, cluster=args.cluster))
    return EXIT_OK


def _report(args: argparse.Namespace) -> int:
    from experiments.analyse.report import write_report
    from experiments.store import open_run

    print(write_report(open_run(args.run_dir, args.out), charts=not args.no_charts))
    return EXIT_OK


def _export(args: argparse.Namespace) -> int:
    from experiments.store import database_run

    print(database_run(args.run, args.out).export())
    return EXIT_OK


def _list(args: argparse.Namespace) -> int:
    from experiments.store import list_runs

    for run in list_runs(args.out):
        report = "database" if run.shared else "report" if run.has_report else "no report"
        print(f"{run.id:<40} {run.created:%Y-%m-%d %H:%M} {run.rows:>6} rows  {report:<9} "
              f"{run.status}{'  (Dask cluster)' if run.cluster else ''}")
    return EXIT_OK


def _show(args: argparse.Namespace) -> int:
    import json

    from experiments.analyse.transcript_text import render
    from experiments.store import open_run

    transcript = open_run(args.run_dir).transcript(args.case)
    print(json.dumps(transcript, ensure_ascii=False) if args.json else render(transcript))
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    from experiments.analyse.compare import NothingToPair, compare_runs
    from experiments.store import open_run

    try:
        result = compare_runs(open_run(args.run_a), open_run(args.run_b), args.out)
    except NothingToPair as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(result.report.read_text(encoding="utf-8").split("\n\n|", 1)[0].strip())
    print(result.report)
    return EXIT_OK


def _power(args: argparse.Namespace) -> int:
    from experiments.analyse.planning import plan

    print("\n".join(plan(args.detect, args.run, args.grid).lines()))
    return EXIT_OK


def _live(args: argparse.Namespace) -> int:
    from experiments.live.commands import run
    from treadwise.storage.leads import StoreUnavailable

    try:
        return run(args)
    except StoreUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handlers = {"run": _run, "report": _report, "list": _list, "show": _show,
                "compare": _compare, "export": _export, "live": _live, "power": _power}
    try:
        return handlers[args.command](args)
    except KeyboardInterrupt:
        print("interrupted: finish it with python -m experiments run --resume RUN (the run "
              "named above)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
