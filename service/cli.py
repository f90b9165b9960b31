"""The `joust` command: `up` runs everything on one machine; `api`, `worker` and `scheduler`
run one role each against REDIS_URL and DATABASE_URL (docker compose, several machines);
`import` and `export` move judgements and boards in and out of the store (no Redis needed);
`tournament create` starts a tournament, or with `--dry-run` only counts its calls and cost."""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .config import Settings, SettingsError

if TYPE_CHECKING:
    from .importers import ImportSummary
    from .store import Store


def _settings(args: argparse.Namespace) -> Settings:
    settings = Settings.from_env()
    if getattr(args, "data_dir", None):
        settings = settings.with_(data_dir=Path(args.data_dir))
    return settings


def _need_redis(settings: Settings) -> str:
    if not settings.redis_url:
        raise SystemExit("joust: REDIS_URL is not set (only `joust up` starts a Redis of its own)")
    return settings.redis_url


def cmd_up(args: argparse.Namespace) -> int:
    from .processes import run_up

    if args.workers < 1:
        raise SystemExit("joust up: --workers must be at least 1")
    from .redis_server import RedisServerError

    try:
        return run_up(_settings(args), host=args.host, port=args.port, workers=args.workers)
    except RedisServerError as exc:  # no binary, or it would not start: one line, not a traceback
        raise SystemExit(f"joust up: {exc}") from None


def cmd_api(args: argparse.Namespace) -> int:
    import uvicorn

    from .app import create_app
    from .processes import ensure_api_key

    settings = _settings(args)
    _need_redis(settings)
    settings = ensure_api_key(settings)
    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level=args.log_level)
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    import importlib

    settings = _settings(args)
    _need_redis(settings)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    # The worker role runs the workers package's code, which the service names only by dotted
    # path (as it names jobs), never imports.
    run_worker = importlib.import_module("workers.process").run_worker
    return int(run_worker(settings, name=args.name, log_level=args.log_level))


def cmd_scheduler(args: argparse.Namespace) -> int:
    from redis import Redis

    from .queue import JobQueue
    from .scheduler import Scheduler
    from .store import Store

    settings = _settings(args)
    redis = Redis.from_url(_need_redis(settings))
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    store = Store(settings.resolved_database_url)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    Scheduler(store, JobQueue(redis, settings.queue_name, settings.match_timeout_s / 2), settings).run(stop)
    store.close()
    return 0


def cmd_healthcheck(args: argparse.Namespace) -> int:
    from redis import Redis
    from redis.exceptions import RedisError

    from .liveness import scheduler_alive, worker_alive

    settings = _settings(args)
    try:
        redis = Redis.from_url(_need_redis(settings), socket_connect_timeout=3, socket_timeout=3)
        alive = worker_alive(redis, settings.queue_name) if args.role == "worker" else scheduler_alive(redis)
    except RedisError as exc:
        print(f"joust healthcheck: Redis unreachable: {exc}", file=sys.stderr)
        return 1
    if not alive:
        print(f"joust healthcheck: no live {args.role} on this host", file=sys.stderr)
    return 0 if alive else 1


def _open_store(settings: Settings) -> Store:
    from .store import Store

    if not settings.database_url:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    return Store(settings.resolved_database_url)


def _import_one(args: argparse.Namespace, store: Store) -> ImportSummary:
    from .importers.alpaca import load_annotations, load_outputs
    from .importers.battles import load_battles
    from .importers.cqa import load_cqa

    path = Path(args.path)
    if args.kind == "battles":
        return load_battles(store, path, judge=args.judge, fmt=args.format, human=args.human)
    if args.kind == "alpaca-outputs":
        return load_outputs(store, path, scenario=args.scenario)
    if args.kind == "alpaca-annotations":
        return load_annotations(store, path, scenario=args.scenario)
    return load_cqa(store, path)


def cmd_import(args: argparse.Namespace) -> int:
    """Load a file into the store in one transaction and print a one-line summary."""
    from .importers import ImportFailed

    store = _open_store(_settings(args))
    try:
        print(_import_one(args, store).line())
    except ImportFailed as exc:
        print(f"joust import: {exc}; nothing was stored", file=sys.stderr)
        return 2
    finally:
        store.close()
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Write judgements or a board as CSV or JSONL, to stdout or -o FILE."""
    from . import exporters
    from .store import NotFound

    settings = _settings(args)
    store = _open_store(settings)
    try:
        if args.what == "judgements":
            rows = exporters.judgement_rows(store, tournament_id=args.tournament, judge=args.judge)
            write = exporters.write_judgements
        else:
            rows = exporters.board_rows(store, exporters.LEVELS[args.by], k=settings.elo_k,
                                        tournament_id=args.tournament, judge=args.judge)
            write = exporters.write_board
    except NotFound as exc:
        print(f"joust export: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()
    if args.output in (None, "-"):
        try:
            write(rows, args.format, sys.stdout)
            sys.stdout.flush()
        except BrokenPipeError:  # `joust export ... | head`: the reader took what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    else:
        with open(args.output, "w", encoding="utf-8", newline="") as out:
            write(rows, args.format, out)
    return 0


def cmd_tournament(args: argparse.Namespace) -> int:
    """Start a tournament (needs REDIS_URL), or with --dry-run print what it would take."""
    import json
    from dataclasses import asdict

    from pydantic import TypeAdapter

    from . import tournaments
    from .api_models import TournamentIn
    from .routes.common import ApiError, validate
    from .routes.tournaments import build_spec, check_spec

    settings = _settings(args)
    fields = {"name": args.name, "mode": args.mode, "opponents": args.opponents, "seed": args.seed,
              "judge": args.judge, "order": args.order, "criteria": args.criteria, "models": args.model,
              "scenarios": args.scenario, "questions": args.question, "budget": args.budget}
    store = _open_store(settings)
    try:
        try:  # the API's own checks, every one of them
            request = validate(TypeAdapter(TournamentIn), {k: v for k, v in fields.items() if v is not None})
            spec = check_spec(build_spec(request, settings), settings, store)
        except ApiError as exc:
            print(f"joust tournament: {exc.message}", file=sys.stderr)
            return 2
        if args.dry_run:
            out = {**asdict(tournaments.dry_run(store, spec, settings.price_table())), "seed": spec.seed}
        else:
            from redis import Redis

            from .queue import JobQueue

            queue = JobQueue(Redis.from_url(_need_redis(settings)), settings.queue_name, settings.match_timeout_s / 2)
            run = tournaments.launch(store, queue, request.name, spec)
            out = {"id": run.id, "status": store.get_tournament(run.id)["status"],
                   "matches_total": run.matches_total, "queued": run.queued}
    finally:
        store.close()
    print(json.dumps(out))
    return 0


def _add_tournament_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tournament = sub.add_parser("tournament", help="start a tournament, or count what it would take")
    actions = tournament.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="plan and start a tournament (POST /api/tournaments)")
    create.add_argument("--dry-run", action="store_true",
                        help="print matches, calls, cached and estimated_cost_usd; create nothing (no Redis needed)")
    create.add_argument("--name", default=None)
    create.add_argument("--mode", choices=["round_robin", "sampled"], default=None)
    create.add_argument("--opponents", type=int, default=None, help="sampled mode: opponents per submission")
    create.add_argument("--seed", type=int, default=None, help="sampled mode: the plan's seed")
    create.add_argument("--judge", default=None, metavar="SPEC", help="default: JOUST_JUDGE")
    create.add_argument("--order", choices=["both", "single"], default=None)
    create.add_argument("--criteria", default=None)
    for name in ("model", "scenario", "question"):
        create.add_argument(f"--{name}", action="append", default=None, metavar=name.upper(),
                            help=f"only this {name} (repeat for several)")
    create.add_argument("--budget", type=float, default=None, metavar="USD", help="stop the run once it spent this")
    create.add_argument("--data-dir", default=None)
    create.set_defaults(func=cmd_tournament)


def _add_import_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    imp = sub.add_parser("import", help="load battles, AlpacaEval or Comparative-QA files into the store")
    kinds = imp.add_subparsers(dest="kind", required=True)
    battles = kinds.add_parser("battles", help="model_a, model_b, winner (Chatbot Arena, MT-Bench), left, right, "
                                               "winner (LLMFAO), or what `joust export judgements` wrote; CSV, JSON "
                                               "or JSONL")
    battles.add_argument("path", metavar="FILE")
    battles.add_argument("--judge", default=None, help="file every row as import/NAME (human/NAME with --human), "
                                                       "whatever its judge or voter column says (default: each "
                                                       "row's judge or voter, else the file name)")
    battles.add_argument("--human", action="store_true",
                         help="the verdicts are human votes (human/NAME, the reference of judge health), filed on "
                              "the stored submissions of their (question_id, model, scenario)")
    battles.add_argument("--format", choices=["csv", "tsv", "json", "jsonl"], default=None,
                         help="default: from the file extension")
    for kind, what in (("alpaca-outputs", "an AlpacaEval model_outputs.json"),
                       ("alpaca-annotations", "an AlpacaEval annotations.json")):
        parser = kinds.add_parser(kind, help=what)
        parser.add_argument("path", metavar="FILE")
        parser.add_argument("--scenario", default="default", help="scenario of the outputs (default: default)")
    cqa = kinds.add_parser("cqa", help="a cqa_evaluation directory: summaries, rubric scores, derived judgements")
    cqa.add_argument("path", metavar="DIR")
    for parser in kinds.choices.values():
        parser.add_argument("--data-dir", default=None)
        parser.set_defaults(func=cmd_import)


def _add_export_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    exp = sub.add_parser("export", help="write judgements or a leaderboard as CSV or JSONL")
    whats = exp.add_subparsers(dest="what", required=True)
    judgements = whats.add_parser("judgements", help="one row per counted judgement, in resolve order")
    board = whats.add_parser("board", help="the leaderboard rows, best first")
    board.add_argument("--by", choices=["model", "scenario", "model+scenario", "system"], default="model")
    for parser in (judgements, board):
        parser.add_argument("--tournament", type=int, default=None, help="only this tournament and its runs")
        parser.add_argument("--judge", default=None, metavar="SPEC", help="only this judge")
        parser.add_argument("--format", choices=["csv", "jsonl"], default="csv")
        parser.add_argument("-o", "--output", default=None, help="file to write (default: stdout)")
        parser.add_argument("--data-dir", default=None)
        parser.set_defaults(func=cmd_export)


def build_parser() -> argparse.ArgumentParser:
    """The command line, one sub-command per role."""
    parser = argparse.ArgumentParser(prog="joust", description=__doc__)
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    sub = parser.add_subparsers(dest="command", required=True)

    up = sub.add_parser("up", help="run Redis, the API and page, N workers and the scheduler")
    up.add_argument("--host", default="127.0.0.1")
    up.add_argument("--port", type=int, default=8000)
    up.add_argument("--workers", type=int, default=2)
    up.add_argument("--data-dir", default=None, help="database and Redis files (default ./joust-data)")
    up.set_defaults(func=cmd_up)

    api = sub.add_parser("api", help="run the HTTP API and page")
    api.add_argument("--host", default="127.0.0.1")
    api.add_argument("--port", type=int, default=8000)
    api.add_argument("--data-dir", default=None)
    api.set_defaults(func=cmd_api)

    worker = sub.add_parser("worker", help="run one RQ worker that judges matches")
    worker.add_argument("--name", default=None)
    worker.add_argument("--data-dir", default=None)
    worker.set_defaults(func=cmd_worker)

    sched = sub.add_parser("scheduler", help="run recurring tournaments and re-hand lost matches")
    sched.add_argument("--data-dir", default=None)
    sched.set_defaults(func=cmd_scheduler)

    health = sub.add_parser("healthcheck", help="exit 0 when this host's worker or scheduler is alive")
    health.add_argument("role", choices=["worker", "scheduler"])
    health.set_defaults(func=cmd_healthcheck)

    _add_import_parsers(sub)
    _add_export_parsers(sub)
    _add_tournament_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `joust` command."""
    # One BLAS thread per process unless told otherwise: the rating fits are small matrices,
    # where a second thread costs more than it gives, and the API serves requests in threads.
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        return int(args.func(args) or 0)
    except SettingsError as exc:
        print(f"joust: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
