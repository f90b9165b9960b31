"""The `joust` command: `up` runs everything on one machine; `api`, `worker` and `scheduler`
run one role each against REDIS_URL and DATABASE_URL (docker compose, several machines);
`import` and `export` move judgements and boards in and out of the store (no Redis needed);
`tournament`, `submit`, `board`, `judgements` and `judges` talk to a running joust over HTTP
(`service.cli.remote_cli`, `service.cli.remote_judges`)."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from service.cli import remote_cli, remote_judges
from service.config import Settings, SettingsError

API_SWITCH_INTERVAL_S = 0.001  # the API process's thread switch interval (Python's default: 0.005)

if TYPE_CHECKING:
    from service.store import Store
    from service.usecases.importers import ImportSummary


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
    from service.ops.processes import run_up

    if args.workers < 1:
        raise SystemExit("joust up: --workers must be at least 1")
    from service.ops.redis_server import RedisServerError

    try:
        return run_up(_settings(args), host=args.host, port=args.port, workers=args.workers)
    except RedisServerError as exc:  # no binary, or it would not start: one line, not a traceback
        raise SystemExit(f"joust up: {exc}") from None


def cmd_api(args: argparse.Namespace) -> int:
    import uvicorn

    from service.ops import heap
    from service.ops.data_dir import ensure_api_key
    from service.web.app import create_app

    settings = _settings(args)
    _need_redis(settings)
    settings = ensure_api_key(settings)
    # A request waits for the interpreter lock while the pages' background refits hold it: hand it
    # over every millisecond rather than every 5, so a page is not queued behind a 400-player fit.
    sys.setswitchinterval(API_SWITCH_INTERVAL_S)
    heap.tune()  # see service.ops.heap: a large long-lived heap, and a start that reads every judgement
    # log_config=None: uvicorn's loggers propagate to the root logger `main` set up (text or JSON).
    uvicorn.run(create_app(settings, own_process=True), host=args.host, port=args.port, log_level=args.log_level, log_config=None)
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    # The CLI is the composition root, the one layer that may start workers; imported here so
    # that the other roles never load the workers' code (nor a provider's SDK).
    from workers.worker_process import run_worker

    settings = _settings(args)
    _need_redis(settings)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return int(run_worker(settings, name=args.name, log_level=args.log_level))


def cmd_scheduler(args: argparse.Namespace) -> int:
    from redis import Redis

    from service.ops.scheduler import Scheduler
    from service.store import Store
    from service.store.queue import JobQueue

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

    from service.ops.liveness import out_of_space, scheduler_alive, worker_alive

    settings = _settings(args)
    try:
        redis = Redis.from_url(_need_redis(settings), socket_connect_timeout=3, socket_timeout=3)
        alive = worker_alive(redis, settings.queue_name) if args.role == "worker" else scheduler_alive(redis)
        full = out_of_space(redis, settings.resolved_database_url)
    except RedisError as exc:
        print(f"joust healthcheck: Redis unreachable: {exc}", file=sys.stderr)
        return 1
    if not alive:
        print(f"joust healthcheck: no live {args.role} on this host", file=sys.stderr)
    for shortage in full:
        print(f"joust healthcheck: {shortage.line()}", file=sys.stderr)
    return 0 if alive and not full else 1


def _open_store(settings: Settings) -> Store:
    from service.store import Store

    if not settings.database_url:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    return Store(settings.resolved_database_url)


def _import_one(args: argparse.Namespace, store: Store) -> ImportSummary:
    from service.usecases.importers.alpaca import load_annotations, load_outputs
    from service.usecases.importers.battles import load_battles
    from service.usecases.importers.cqa import load_cqa
    from service.usecases.progress import wanted

    path = Path(args.path)
    if args.kind == "battles":
        return load_battles(store, path, judge=args.judge, fmt=args.format, human=args.human,
                            progress=wanted(args.progress))
    if args.kind == "alpaca-outputs":
        return load_outputs(store, path, scenario=args.scenario)
    if args.kind == "alpaca-annotations":
        return load_annotations(store, path, scenario=args.scenario)
    return load_cqa(store, path)


def cmd_import(args: argparse.Namespace) -> int:
    """Load a file into the store in one transaction and print a one-line summary."""
    from service.usecases.importers import ImportFailed

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
    """Write judgements or a board as CSV, JSONL or Parquet, to stdout or -o FILE."""
    from leaderboard.board_slice import BoardSlice
    from leaderboard.judges import ChosenBy, UnknownJudge
    from service.store import NotFound
    from service.usecases import exporters

    settings = _settings(args)
    store = _open_store(settings)
    try:
        if args.what == "judgements":
            rows = exporters.judgement_rows(store, tournament_id=args.tournament, judge=args.judge)
            write = exporters.write_judgements
        else:
            choice = exporters.board_judge(store, tournament_id=args.tournament, judge=args.judge)
            rows = [] if choice.judge is None else exporters.board_rows(
                store, exporters.LEVELS[args.by], k=settings.elo_k, tournament_id=args.tournament, judge=choice.judge,
                part=BoardSlice(turn=args.turn, majority=args.votes == "majority"))
            if choice.chosen_by is not ChosenBy.NAMED:  # say whose board it is; stdout holds only the board
                others = ", ".join(o.judge for o in choice.others) or "none"
                print(f"joust export: the board of judge {choice.judge} ({choice.chosen_by.value}); "
                      f"other judges (--judge): {others}", file=sys.stderr)
            write = exporters.write_board
    except (NotFound, UnknownJudge) as exc:
        print(f"joust export: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()
    from service.usecases.progress import wanted

    progress = wanted(args.progress)
    binary = args.format == "parquet"
    try:
        if args.output in (None, "-"):
            try:
                write(rows, args.format, sys.stdout.buffer if binary else sys.stdout, progress=progress)
                sys.stdout.flush()
            except BrokenPipeError:  # `joust export ... | head`: the reader took what it wanted
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        else:
            with open(args.output, "wb") if binary else open(args.output, "w", encoding="utf-8", newline="") as out:
                write(rows, args.format, out, progress=progress)
    except exporters.ExportError as exc:
        print(f"joust export: {exc}", file=sys.stderr)
        return 2
    return 0


def _add_import_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    imp = sub.add_parser("import", help="load battles, AlpacaEval or Comparative-QA files into the store")
    kinds = imp.add_subparsers(dest="kind", required=True)
    battles = kinds.add_parser("battles", help="model_a, model_b, winner (Chatbot Arena, MT-Bench), left, right, "
                                               "winner (LLMFAO), or what `joust export judgements` wrote; CSV, TSV, "
                                               "JSON, JSONL or Parquet")
    battles.add_argument("path", metavar="FILE")
    battles.add_argument("--judge", default=None, help="file every row as import/NAME (human/NAME with --human), "
                                                       "whatever its judge or voter column says (default: each "
                                                       "row's judge or voter, else the file name)")
    battles.add_argument("--human", action="store_true",
                         help="the verdicts are human votes (human/NAME, the reference of judge health), filed on "
                              "the stored submissions of their (question_id, model, scenario)")
    battles.add_argument("--format", choices=["csv", "tsv", "json", "jsonl", "parquet"], default=None,
                         help="default: from the file extension (Parquet needs pyarrow)")
    battles.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                         help="count the rows read on stderr (default: when stderr is a terminal)")
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
    exp = sub.add_parser("export", help="write judgements or a leaderboard as CSV, JSONL or Parquet")
    whats = exp.add_subparsers(dest="what", required=True)
    judgements = whats.add_parser("judgements", help="one row per counted judgement, in resolve order")
    board = whats.add_parser("board", help="the leaderboard rows, best first")
    board.add_argument("--by", choices=["model", "scenario", "model+scenario", "system"], default="model")
    board.add_argument("--turn", type=remote_cli._positive, default=None, metavar="N",
                       help="only turn N of multi-turn questions")
    board.add_argument("--votes", choices=["each", "majority"], default="each",
                       help="each: every verdict (default); majority: each pair once, by its verdicts' majority")
    for parser in (judgements, board):
        parser.add_argument("--tournament", type=int, default=None, help="only this tournament and its runs")
        parser.add_argument("--judge", default=None, metavar="SPEC", help=(
            "only this judge (`human`: every human voter)" if parser is judgements else
            "this judge's board (`human`: every human voter); without it, the judge the API would show "
            "(named on stderr): a board never pools judges"))
        parser.add_argument("--format", choices=["csv", "jsonl", "parquet"], default="csv",
                            help="parquet needs pyarrow")
        parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                            help="count the rows written on stderr (default: when stderr is a terminal)")
        parser.add_argument("-o", "--output", default=None, help="file to write (default: stdout)")
        parser.add_argument("--data-dir", default=None)
        parser.set_defaults(func=cmd_export)


def cmd_keys(args: argparse.Namespace) -> int:
    """`joust keys create|list|revoke`, on the store directly (as an admin on this machine)."""
    import json

    from service.store import Conflict, NotFound, Scope

    store = _open_store(_settings(args))
    try:
        if args.action == "create":
            try:
                key, secret = store.create_api_key(args.name, [Scope(x) for x in args.scope or []])
            except (ValueError, Conflict) as exc:
                print(f"joust keys create: {exc}", file=sys.stderr)
                return 2
            print(json.dumps({**key.as_dict(), "secret": secret}, indent=2))
            print("keep the secret now: it is not stored and cannot be shown again", file=sys.stderr)
        elif args.action == "list":
            for key in store.list_api_keys():
                state = "revoked" if key.revoked else "active"
                scopes = ",".join(x.value for x in key.scopes) or "(read only)"
                print(f"{key.id}\t{key.name}\t{key.prefix}…\t{scopes}\t{state}")
        else:
            try:
                key = store.revoke_api_key(args.id)
            except NotFound as exc:
                print(f"joust keys revoke: {exc}", file=sys.stderr)
                return 2
            print(f"revoked key {key.id} ({key.name})")
    finally:
        store.close()
    return 0


def _add_keys_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    keys = sub.add_parser("keys", help="issue, list and revoke named API keys with scopes")
    actions = keys.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="issue a key; prints its secret once")
    create.add_argument("name", help="letters, digits, '-', '_', '.'; never reused")
    create.add_argument("--scope", action="append", choices=["submit", "vote", "run", "admin"],
                        help="what it may do (repeat; none: it may only read)")
    listing = actions.add_parser("list", help="every key (never a secret)")
    revoke = actions.add_parser("revoke", help="revoke a key by its id")
    revoke.add_argument("id", type=int)
    for parser in (create, listing, revoke):
        parser.add_argument("--data-dir", default=None)
        parser.set_defaults(func=cmd_keys)


def build_parser() -> argparse.ArgumentParser:
    """The command line, one sub-command per role."""
    parser = argparse.ArgumentParser(prog="joust", description=__doc__)
    parser.add_argument("--log-level", default=None, choices=["debug", "info", "warning", "error"],
                        help="default: info for the processes (up, api, worker, scheduler), warning "
                             "for every other command, whose output is its own")
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
    remote_cli.add_parsers(sub)
    remote_judges.add_parser(sub)
    _add_keys_parsers(sub)
    return parser


PROCESSES = frozenset({"up", "api", "worker", "scheduler"})
"""The commands that run a process: they log at info by default."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `joust` command."""
    # One BLAS thread per process unless told otherwise: the rating fits are small matrices,
    # where a second thread costs more than it gives, and the API serves requests in threads.
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    args = build_parser().parse_args(argv)
    from service.ops.logs import configure

    if args.log_level is None:
        args.log_level = "info" if args.command in PROCESSES else "warning"
    try:
        configure(Settings.from_env().log_format, args.log_level)
    except SettingsError as exc:
        print(f"joust: {exc}", file=sys.stderr)
        return 2
    if args.command in PROCESSES - {"up"}:  # a role `joust up` started ends with it (service.ops.orphans)
        from service.ops.orphans import watch_supervisor

        watch_supervisor()
    try:
        return int(args.func(args) or 0)
    except SettingsError as exc:
        print(f"joust: {exc}", file=sys.stderr)
        return 2

