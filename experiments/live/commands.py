"""`python -m experiments live ...`: create, stop, list, report and export live experiments."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_parser(commands: Any) -> None:
    live = commands.add_parser(
        "live", help="live A/B experiments on the app's visitors (in TREADWISE_DATABASE_URL's "
        "PostgreSQL, or TREADWISE_DATA_DIR's SQLite)")
    actions = live.add_subparsers(dest="live_command", required=True)
    create = actions.add_parser("create", help="start the experiment a YAML file defines")
    create.add_argument("file", type=Path)
    for name, text in (("stop", "stop a running experiment (visitors get the pickers back)"),
                       ("report", "per-arm rates with anytime-valid intervals, and the call")):
        action = actions.add_parser(name, help=text)
        action.add_argument("name", metavar="NAME")
    export = actions.add_parser("export", help="the experiment's events (or picks) as CSV")
    export.add_argument("name", metavar="NAME")
    export.add_argument("--out", type=Path, default=None, help="file to write (default: stdout)")
    export.add_argument("--picks", action="store_true",
                        help="the side-by-side picks (arm pair, winner) instead of the events")
    actions.add_parser("list", help="every live experiment, newest first")


def live_store() -> Any:
    from experiments.live.store import open_live_store
    from treadwise.settings import Settings

    settings = Settings.from_env()
    return open_live_store(settings.data_dir, settings.database_url)


def run(args: argparse.Namespace) -> int:
    from experiments.live.definition import load_experiment
    from experiments.live.report import events_csv, report

    store = live_store()
    if args.live_command == "create":
        experiment = load_experiment(args.file)
        store.create(experiment.name, experiment.model_dump())
        print(f"live experiment {experiment.name} is running with arms "
              f"{', '.join(arm.name for arm in experiment.arms)}")
    elif args.live_command == "stop":
        store.stop(args.name)
        print(f"live experiment {args.name} is stopped")
    elif args.live_command == "report":
        print(report(store, args.name).text())
    elif args.live_command == "export":
        text = events_csv(store, args.name, picks=args.picks)
        if args.out is None:
            sys.stdout.write(text)
        else:
            args.out.write_text(text, encoding="utf-8")
            print(args.out)
    else:
        for found in store.experiments():
            print(f"{found['name']:<32} {found['status']:<8} {found['created_at']}")
    return 0
