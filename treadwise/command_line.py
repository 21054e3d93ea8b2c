"""Command line: chat with a persona, export or delete leads, list personas and models."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

EXIT_OK, EXIT_PROVIDER, EXIT_USAGE = 0, 1, 2
USAGE_ERRORS = {"config", "input_rejected"}


def build_parser() -> argparse.ArgumentParser:
    from treadwise.agent.strategies import DEFAULT_STRATEGY, strategy_names
    from treadwise.models import default_spec
    from treadwise.personas import DEFAULT_PERSONA, load_personas
    from treadwise.settings import ROUTING_MODES

    parser = argparse.ArgumentParser(prog="python -m treadwise",
                                     description="TreadWise persona chatbot and tools.")
    commands = parser.add_subparsers(dest="command", required=True)

    chat = commands.add_parser("chat", help="send one message and print the answer")
    chat.add_argument("--persona", default=DEFAULT_PERSONA,
                      help=f"one of {', '.join(load_personas())} (default: {DEFAULT_PERSONA})")
    chat.add_argument("--model", default=default_spec(),
                      help="offline (rule-based, the default), local:smollm2 or "
                      "local:/path/to/model.gguf (llama.cpp), openai:MODEL, "
                      "google_genai:MODEL, or any provider:model init_chat_model knows")
    chat.add_argument("--temperature", type=float, default=0.0, help="from 0 to 2")
    chat.add_argument("--strategy", default=DEFAULT_STRATEGY,
                      help=f"how the turn thinks: {', '.join(strategy_names())} (default: "
                      "react, the reason/tools loop)")
    chat.add_argument("--seed", type=int, default=None,
                      help="sampling seed (local and OpenAI models; the offline model's "
                      "phrasing above temperature 0)")
    chat.add_argument("--routing", default=None, metavar="{" + ",".join(ROUTING_MODES) + "}",
                      help="on: each call binds only the tools the message needs, with a "
                      "compact prompt; compact: the compact prompt, every tool; off: every "
                      "tool and the business profile in the prompt (default: "
                      "TREADWISE_ROUTING, else on)")
    chat.add_argument("--thread", default=None, help="conversation id; reuse it to continue")
    chat.add_argument("--json", action="store_true", help="print one JSON object")
    chat.add_argument("message", help="what you want to ask")

    leads = commands.add_parser("leads", help="work with stored customer leads")
    lead_commands = leads.add_subparsers(dest="leads_command", required=True)
    export = lead_commands.add_parser("export", help="export leads as CSV or JSON lines")
    export.add_argument("--format", choices=["csv", "jsonl"], default="csv")
    export.add_argument("--out", default="-", help="file to write (default: standard output)")
    delete = lead_commands.add_parser(
        "delete", help="delete every lead of an address and the questions of its conversations")
    delete.add_argument("--email", required=True, help="the address whose data goes")
    purge = lead_commands.add_parser(
        "purge", help="delete leads, questions and conversations older than the retention")
    purge.add_argument("--days", type=float, default=None,
                       help="keep this many days (default: TREADWISE_RETENTION_DAYS)")

    commands.add_parser("personas", help="list the personas")
    commands.add_parser("models", help="list the models usable with the keys set here")
    return parser


def _chat(args: argparse.Namespace) -> int:
    """One turn: the arguments become one TurnRequest, checked once here (exit 2 when a value
    cannot be used, as JSON with --json), then the agent runs it."""
    from treadwise.agent import Agent
    from treadwise.agent.request import InvalidRequest, TurnRequest
    from treadwise.agent.turn_events import refused
    from treadwise.settings import Settings

    settings = Settings.from_env()
    try:
        request = TurnRequest.read(persona=args.persona, model=args.model,
                                   temperature=args.temperature, seed=args.seed,
                                   strategy=args.strategy, routing=args.routing,
                                   thread_id=args.thread, personas_dir=settings.personas_dir)
    except InvalidRequest as exc:
        result = refused(exc, persona=args.persona, model=args.model,
                         thread_id=args.thread or "")
    else:
        result = Agent(settings).run(args.message, request)
    code = EXIT_OK
    if result.error is not None:
        code = EXIT_USAGE if result.error.type in USAGE_ERRORS else EXIT_PROVIDER
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
    elif result.error is not None:
        print(f"error: {result.error.message}", file=sys.stderr)
    else:
        print(result.answer)
        for path in result.artifacts:
            print(f"[saved {path}]")
        print(f"[{result.persona} | {result.model} | thread {result.thread_id}]", file=sys.stderr)
    return code


def _leads(args: argparse.Namespace) -> int:
    from treadwise.settings import Settings
    from treadwise.storage import open_store
    from treadwise.storage.leads import StoreUnavailable

    settings = Settings.from_env()
    try:
        store = open_store(settings.data_dir, settings.database_url)
        if args.leads_command == "delete":
            print(f"deleted {store.delete_email(args.email).describe()}", file=sys.stderr)
        elif args.leads_command == "purge":
            return _purge(store, settings, args.days)
        else:
            from treadwise.storage.lead_export import export_leads

            print(f"exported {_export(store, args, export_leads)} leads", file=sys.stderr)
    except StoreUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_PROVIDER
    return EXIT_OK


def _purge(store: Any, settings: Any, days: float | None) -> int:
    from treadwise.storage.memory import open_checkpointer
    from treadwise.storage.retention import purge

    days = settings.retention_days if days is None else days
    if days <= 0:
        print("error: give --days N (or set TREADWISE_RETENTION_DAYS); nothing was deleted",
              file=sys.stderr)
        return EXIT_USAGE
    done = purge(days, store, open_checkpointer(settings.data_dir, settings.database_url))
    print(f"deleted {done.describe()} older than {days:g} days", file=sys.stderr)
    return EXIT_OK


def _export(store: Any, args: argparse.Namespace, export_leads: Any) -> int:
    if args.out == "-":
        return export_leads(store, args.format, sys.stdout)
    with open(args.out, "w", encoding="utf-8", newline="") as out:
        return export_leads(store, args.format, out)


def _personas(args: argparse.Namespace) -> int:
    from treadwise.personas import load_personas

    for persona in load_personas().values():
        print(f"{persona.key:<10} {persona.name}: {persona.description}")
    return EXIT_OK


def _models(args: argparse.Namespace) -> int:
    from treadwise.models import available_specs, label

    for spec in available_specs():
        print(f"{spec:<32} {label(spec)}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    handlers = {"chat": _chat, "leads": _leads, "personas": _personas, "models": _models}
    try:
        return handlers[args.command](args)
    except KeyboardInterrupt:
        return 130
    except (OSError, ValueError) as exc:
        from treadwise.errors import redact

        print(f"error: {redact(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - the contract is one line, never a traceback
        from treadwise.errors import redact

        print(f"error: internal error ({type(exc).__name__}): {redact(str(exc))[:300]}",
              file=sys.stderr)
        return EXIT_PROVIDER
