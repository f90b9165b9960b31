"""The `joust` commands that talk to a running joust over HTTP, through `joust.Client`: they work
against a remote deployment as they do against `joust up` on this machine.

    joust tournament create|list|show|follow|cancel|retry   POST/GET /api/tournaments...
    joust submit FILE                                       POST /api/submissions (CSV, TSV, JSON, JSONL, Parquet)
    joust board                                             GET /api/leaderboard
    joust effects                                           GET /api/leaderboard/effects
    joust judgements list                                   GET /api/judgements

The server is `--url`, else JOUST_URL, else http://127.0.0.1:8000. Writes send the API key:
JOUST_API_KEY, else the file `--api-key-file`, else `<data-dir>/api_key` (the one `joust up`
keeps); never a key on the command line, where `ps` and shell histories would show it.

The API checks every request; these commands only turn flags into a call of the client and its
answer into text. A request the API refuses (4xx) exits 2 with the API's message on stderr; a
server that does not answer or fails (5xx) exits 1.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from joust import AuthError, Client, JoustError, ServerError, Unreachable
from joust.files import CONVERSATIONS as FILE_CONVERSATIONS
from joust.files import FORMATS as FILE_FORMATS
from joust.files import FileError, read_submissions
from joust.types import DryRun, Tournament
from service.cli.formats import OUTPUTS, as_json, plain, write_frame
from service.config import Settings
from service.ops.processes import API_KEY_FILE

# pandas is imported by the one command that builds a frame (the client's other frames come with
# their pandas): every `joust` command builds these parsers, and `up` and its roles start faster
# without it.
if TYPE_CHECKING:
    import pandas as pd

# The page's headline columns: the online Elo, order-dependent, is in the API's rows and `joust export board`.
BOARD_COLUMNS = ["component", "rank", "player", "rating", "ci_low", "ci_high", "win_rate", "wins", "losses",
                 "ties", "matches", "flags"]
LIST_COLUMNS = ["id", "name", "status", "mode", "judge", "matches_total", "matches_done", "matches_failed",
                "spent_usd", "total_spent_usd", "created_at"]
EFFECT_COLUMNS = ["component", "kind", "name", "effect", "ci_low", "ci_high", "bounded"]
JUDGEMENT_COLUMNS = ["id", "outcome", "result", "consistent", "a_model", "a_scenario", "b_model", "b_scenario",
                     "question_id", "created_at"]

SubParsers = argparse._SubParsersAction  # type: ignore[type-arg]


@dataclass(frozen=True)
class Remote:
    """Where the server is and the key to send, with where the key came from (for messages)."""

    url: str
    key: str | None
    key_source: str

    @classmethod
    def of(cls, args: argparse.Namespace) -> Remote:
        settings = Settings.from_env()
        if args.data_dir:
            settings = settings.with_(data_dir=Path(args.data_dir))
        url = args.url or settings.url
        if settings.api_key:
            return cls(url, settings.api_key, "JOUST_API_KEY")
        path = Path(args.api_key_file) if args.api_key_file else settings.data_dir / API_KEY_FILE
        try:
            return cls(url, path.read_text(encoding="utf-8").strip() or None, str(path))
        except FileNotFoundError:
            if args.api_key_file:
                raise SystemExit(f"joust: --api-key-file {path}: no such file") from None
            return cls(url, None, f"none (set JOUST_API_KEY, or keep the key in {path})")
        except OSError as exc:
            raise SystemExit(f"joust: cannot read the API key from {path}: {exc}") from None

    def client(self) -> Client:
        return Client(self.url, self.key)


def _run(command: Callable[[Client, argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A command with its client, its errors as messages and exit codes (2: refused, 1: no answer)."""

    def run(args: argparse.Namespace) -> int:
        remote = Remote.of(args)
        name = " ".join(part for part in ("joust", args.command, getattr(args, "action", None)) if part)
        try:
            with remote.client() as client:
                return command(client, args)
        except AuthError as exc:
            print(f"{name}: {exc.message} (key: {remote.key_source}; server: {remote.url})", file=sys.stderr)
            return 2
        except (Unreachable, ServerError) as exc:
            print(f"{name}: {remote.url}: {exc.message}", file=sys.stderr)
            return 1
        except JoustError as exc:
            print(f"{name}: {exc.message}", file=sys.stderr)
            return 2
        except FileError as exc:
            print(f"{name}: {exc}", file=sys.stderr)
            return 2

    return run


def _progress(args: argparse.Namespace) -> TextIO | None:
    """Where to draw a bar: stderr when asked (--progress) or when it is a terminal."""
    wanted = args.progress if args.progress is not None else sys.stderr.isatty()
    return sys.stderr if wanted else None


# ---- tournaments ----------------------------------------------------------------------------


def cmd_create(client: Client, args: argparse.Namespace) -> int:
    made = client.tournament(
        name=args.name, mode=args.mode, judge=args.judge, order=args.order, criteria=args.criteria,
        models=args.model, scenarios=args.scenario, questions=args.question, opponents=args.opponents,
        seed=args.seed, budget=args.budget, rpm=args.rpm, tpm=args.tpm, delivery=args.delivery,
        schedule=args.schedule, level=args.level, round_size=args.round_size, max_calls=args.max_calls,
        target_ci_width=args.target_ci_width, anchors=args.anchor, baseline=args.baseline,
        reference_model=args.reference_model,
        reference_scenario=args.reference_scenario, judges=args.judges, aggregation=args.aggregation,
        panel=args.panel, dry_run=args.dry_run)
    if isinstance(made, DryRun):
        print(as_json(plain(made)))
        return 0
    print(as_json({"id": made.id, "status": made.status.value, "matches_total": made.matches_total,
                   "queued": made.queued}), flush=True)
    return _follow(client, made.id, args) if args.follow else 0


def cmd_list(client: Client, args: argparse.Namespace) -> int:
    import pandas as pd

    rows = [plain(t) for t in client.tournaments()]
    frame = pd.DataFrame.from_records(rows, columns=LIST_COLUMNS)
    frame["created_at"] = pd.to_datetime(frame["created_at"], unit="s", utc=True).dt.strftime("%Y-%m-%d %H:%M:%S")
    write_frame(frame, args.format, empty="no tournaments")
    return 0


def cmd_show(client: Client, args: argparse.Namespace) -> int:
    print(json.dumps(plain(client.status(args.id)), ensure_ascii=False, indent=2, default=str))
    return 0


def cmd_cancel(client: Client, args: argparse.Namespace) -> int:
    run = client.cancel(args.id)
    stopped = run.extra.get("stopped") or {}
    print(as_json({"id": run.id, "status": run.status.value, "matches_done": run.matches_done,
                   "matches_cancelled": run.matches_cancelled, "stopped": stopped}))
    print(f"joust tournament cancel: tournament {run.id}: {_stopped_words(run, stopped)}", file=sys.stderr)
    return 0


def _stopped_words(run: Tournament, stopped: dict[str, Any]) -> str:
    """What a cancel stopped, in words (a schedule whose first run had finished still reads done)."""
    runs, n = list(stopped.get("runs") or ()), int(stopped.get("matches") or 0)
    said = [f"its schedule ({run.schedule}) is stopped, no more runs will start"] if stopped.get("schedule") else []
    said += [f"run{'s' if len(runs) > 1 else ''} {', '.join(map(str, runs))} {'are' if len(runs) > 1 else 'is'} "
             "cancelled"] if runs else []
    said += [f"{n} unjudged match{'es are' if n > 1 else ' is'} cancelled"] if n else []
    return "; ".join(said) if said else f"nothing to stop (it is {run.status.value})"


def cmd_retry(client: Client, args: argparse.Namespace) -> int:
    run = client.retry(args.id)
    print(as_json({"id": run.id, "status": run.status.value, "retried": run.extra.get("retried")}), flush=True)
    return _follow(client, run.id, args) if args.follow else 0


def cmd_follow(client: Client, args: argparse.Namespace) -> int:
    return _follow(client, args.id, args)


def _follow(client: Client, tid: int, args: argparse.Namespace) -> int:
    """Wait for the run with a bar on stderr, then print its board; 0 when it ended done, else 1."""
    final = client.wait(tid, progress=_progress(args) or False, poll=args.poll, timeout=args.timeout)
    print(f"tournament {tid}: {final.status.value}" + (f" ({final.stopped_reason})" if final.stopped_reason else ""),
          file=sys.stderr)
    board = client.leaderboard(args.by, tournament=tid)
    write_frame(_board_columns(board), args.format, empty="no judgements on this board")
    return 0 if final.status.value == "done" else 1


# ---- submissions and boards ----------------------------------------------------------------


def cmd_submit(client: Client, args: argparse.Namespace) -> int:
    frame = read_submissions(args.path, args.format, args.conversations)
    refs = client.submit_refs(frame, metadata=args.metadata or ())
    if args.ids:
        sys.stdout.writelines(f"{ref.id}\n" for ref in refs)
        return 0
    created = sum(ref.created for ref in refs)
    print(f"submitted {len(refs)} rows from {Path(args.path).name}: {created} new, {len(refs) - created} existing")
    return 0


def cmd_board(client: Client, args: argparse.Namespace) -> int:
    board = client.leaderboard(args.by, judge=args.judge, tournament=args.tournament, dimension=args.dimension,
                               ties=args.ties, turn=args.turn, votes=args.votes, intervals=args.intervals)
    write_frame(_board_columns(board), args.format, empty="no judgements on this board")
    if "ci_missing" in board.columns and board["ci_missing"].notna().any():  # stdout holds only the board
        print("no interval (-): " + ", ".join(f"{p} {why}" for p, why in zip(board.player, board.ci_missing) if why),
              file=sys.stderr)
    if (nu := board.attrs.get("tie_parameter")) is not None:
        print(f"tie parameter nu {_number(nu['nu'])} [{_number(nu['ci_low'])}, {_number(nu['ci_high'])}]"
              f" (component 1); equal players tie {_number(nu['tie_probability_equal'])}", file=sys.stderr)
    if board.attrs.get("ties_note"):
        print(board.attrs["ties_note"], file=sys.stderr)
    return 0


def cmd_effects(client: Client, args: argparse.Namespace) -> int:
    found = client.effects(judge=args.judge, tournament=args.tournament, turn=args.turn, votes=args.votes)
    if found.attrs.get("judge") is not None:  # stdout holds only the effects, which compare within a component
        print(f"judge {found.attrs['judge']} ({found.attrs['judge_chosen_by']})", file=sys.stderr)
    write_frame(found[EFFECT_COLUMNS], args.format, empty="no effects: no group holds two models or two scenarios")
    return 0


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def cmd_judgements(client: Client, args: argparse.Namespace) -> int:
    found = client.find_judgements(judge=args.judge, level=args.level, player=args.player, opponent=args.opponent,
                                   question_id=args.question, filter=args.filter, tournament=args.tournament,
                                   limit=args.limit)
    frame = found[[c for c in JUDGEMENT_COLUMNS if c in found.columns]].assign(
        created_at=found["created_at"].dt.strftime("%Y-%m-%d %H:%M:%S"))
    if found.attrs.get("judge") is not None:
        print(f"judge {found.attrs['judge']} ({found.attrs['judge_chosen_by']}), newest first", file=sys.stderr)
    write_frame(frame, args.format, empty="no judgements")
    return 0


def _board_columns(board: pd.DataFrame) -> pd.DataFrame:
    """The board's columns for the terminal; `flags` as their kinds, comma-separated."""
    shown = board[[c for c in BOARD_COLUMNS if c in board.columns]].copy()
    if "flags" in shown.columns:
        shown["flags"] = [",".join(f.kind for f in flags) for flags in shown["flags"]]
    return shown


# ---- the parsers ----------------------------------------------------------------------------


def _positive(text: str) -> int:
    """A count of at least 1, or the option's error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is less than 1")
    return value


def _remote_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    where = common.add_argument_group("server")
    where.add_argument("--url", default=None, help="the joust server (default: JOUST_URL, else http://127.0.0.1:8000)")
    where.add_argument("--api-key-file", default=None, metavar="FILE",
                       help="a file holding the API key (default: JOUST_API_KEY, else <data-dir>/api_key)")
    where.add_argument("--data-dir", default=None, help="where to find api_key (default: JOUST_DATA_DIR, ./joust-data)")
    return common


def _follow_options(parser: argparse.ArgumentParser, *, flag: bool) -> None:
    if flag:
        parser.add_argument("--follow", action="store_true", help="then wait with a progress bar and print the board")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="draw the progress bar on stderr (default: when stderr is a terminal)")
    parser.add_argument("--poll", type=float, default=1.0, metavar="S", help="seconds between polls (default 1)")
    parser.add_argument("--timeout", type=float, default=None, metavar="S", help="give up waiting after S seconds")
    parser.add_argument("--by", default="model", help="the board's level: model, scenario, model+scenario")
    parser.add_argument("--format", choices=OUTPUTS, default="table", help="the board as a table, CSV or JSON")


def _create_parser(actions: SubParsers, common: argparse.ArgumentParser) -> None:
    create = actions.add_parser("create", parents=[common], help="start a tournament (POST /api/tournaments)")
    create.add_argument("--dry-run", action="store_true", help="print matches, calls, cached, estimated_cost_usd; "
                                                               "create nothing")
    create.add_argument("--name", default=None)
    create.add_argument("--mode", default=None, help="round_robin (default), sampled, adaptive, anchored, "
                                                          "baseline")
    create.add_argument("--judge", default=None, metavar="SPEC", help="provider/model (default: the server's)")
    create.add_argument("--order", default=None, help="both (default) or single")
    create.add_argument("--criteria", default=None, help="overall (default), dimensions, compqa, factsim")
    for name in ("model", "scenario", "question"):
        create.add_argument(f"--{name}", action="append", default=None, metavar=name.upper(),
                            help=f"only this {name} (repeat for several)")
    create.add_argument("--opponents", type=int, default=None, help="sampled: opponents per submission")
    create.add_argument("--seed", type=int, default=None, help="sampled: the plan's seed")
    create.add_argument("--budget", type=float, default=None, metavar="USD", help="stop the run once it spent this")
    create.add_argument("--rpm", type=float, default=None, help="this run's requests per minute")
    create.add_argument("--tpm", type=float, default=None, help="this run's tokens per minute")
    create.add_argument("--delivery", default=None, help="live or batch (Message Batches, half price)")
    create.add_argument("--schedule", default=None, metavar="CRON", help="recur on this five-field cron (UTC)")
    create.add_argument("--level", default=None, help="adaptive, anchored, baseline: model, scenario, "
                                                           "model+scenario")
    create.add_argument("--round-size", type=int, default=None, help="adaptive: pairs per round")
    create.add_argument("--max-calls", type=int, default=None, help="adaptive: judge calls the run may make")
    create.add_argument("--target-ci-width", type=float, default=None, help="adaptive: stop at this interval width")
    create.add_argument("--anchor", action="append", default=None, help="anchored: an anchor player (3 or more)")
    create.add_argument("--baseline", default=None, metavar="PLAYER",
                        help="baseline: the player every other meets (at --level)")
    create.add_argument("--reference-model", default=None,
                        help="the model whose output on each question is the judge's reference answer")
    create.add_argument("--reference-scenario", default=None, help="its scenario (default: default)")
    create.add_argument("--judges", action="append", default=None, metavar="SPEC",
                        help="a judge panel's member (repeat for each; instead of --judge)")
    create.add_argument("--aggregation", default=None, help="a panel's: majority (default) or separate")
    create.add_argument("--panel", default=None, metavar="NAME", help="a panel's name (default: its members)")
    _follow_options(create, flag=True)
    create.set_defaults(func=_run(cmd_create))


def add_parsers(sub: SubParsers) -> None:
    """`tournament`, `submit`, `board` and `judgements` on the `joust` command line."""
    common = _remote_options()
    tournament = sub.add_parser("tournament", help="start, list, show, follow, cancel or retry tournaments")
    actions = tournament.add_subparsers(dest="action", required=True)
    _create_parser(actions, common)
    listing = actions.add_parser("list", parents=[common], help="every tournament, newest first")
    listing.add_argument("--format", choices=OUTPUTS, default="table")
    listing.set_defaults(func=_run(cmd_list))
    for action, what, command in (("show", "a tournament's status, as JSON", cmd_show),
                                  ("follow", "a progress bar until the run ends, then its board", cmd_follow),
                                  ("cancel", "cancel its unjudged matches, schedule and runs in flight", cmd_cancel),
                                  ("retry", "hand a finished run's failed matches out again", cmd_retry)):
        parser = actions.add_parser(action, parents=[common], help=what)
        parser.add_argument("id", type=int, metavar="ID")
        if action in ("follow", "retry"):
            _follow_options(parser, flag=action == "retry")
        parser.set_defaults(func=_run(command))

    submit = sub.add_parser("submit", parents=[common], help="send generator outputs from a file (POST /api/submissions)")
    submit.add_argument("path", metavar="FILE", help="columns question, model, output; optional scenario, "
                                                     "question_id, metadata")
    submit.add_argument("--format", choices=FILE_FORMATS, default=None, help="default: from the file extension")
    submit.add_argument("--metadata", action="append", default=None, metavar="COLUMN",
                        help="store this column in each row's metadata (repeat for several)")
    submit.add_argument("--conversations", choices=FILE_CONVERSATIONS, default="turns",
                        help="an output that is a list of {role, content} turns: each turn its own question "
                             "(question_id#turn2, ...; the default), or the whole conversation judged as one")
    submit.add_argument("--ids", action="store_true", help="print each row's submission id, one per line")
    submit.set_defaults(func=_run(cmd_submit))

    board = sub.add_parser("board", parents=[common], help="the leaderboard (GET /api/leaderboard)")
    board.add_argument("--by", default="model", help="model (default), scenario, model+scenario")
    board.add_argument("--tournament", type=int, default=None, metavar="ID", help="only this tournament and its runs")
    board.add_argument("--dimension", default=None, help="rank by one dimension of `dimensions` judgements")
    board.add_argument("--ties", default="half",
                       help="half: a tie is half a win each way (default); davidson: Davidson's tie model "
                            "(nu on stderr)")
    board.add_argument("--intervals", default="closed",
                       help="closed: from the fit (default); bootstrap: questions resampled, seeded")
    effects = sub.add_parser("effects", parents=[common],
                             help="model and scenario effects (GET /api/leaderboard/effects)")
    effects.add_argument("--tournament", type=int, default=None, metavar="ID", help="only this tournament and its runs")
    effects.set_defaults(func=_run(cmd_effects))
    for parser in (board, effects):
        parser.add_argument("--judge", default=None, metavar="SPEC", help="this judge's (default: the server's)")
        parser.add_argument("--turn", type=_positive, default=None, metavar="N",
                            help="only turn N of multi-turn questions")
        parser.add_argument("--votes", default="each", help="each: every verdict (default); majority: each pair once")
        parser.add_argument("--format", choices=OUTPUTS, default="table")
    board.set_defaults(func=_run(cmd_board))

    judgements = sub.add_parser("judgements", help="the judgements behind a board's numbers")
    judgement_actions = judgements.add_subparsers(dest="action", required=True)
    listing = judgement_actions.add_parser("list", parents=[common], help="one judge's judgements, newest first "
                                                                          "(GET /api/judgements)")
    listing.add_argument("--judge", default=None, metavar="SPEC", help="this judge's (default: the board's judge)")
    listing.add_argument("--level", default="model", help="what --player and --opponent name: model (default), "
                                                          "scenario, model+scenario")
    listing.add_argument("--player", default=None, help="only judgements with this player on one side")
    listing.add_argument("--opponent", default=None, help="with --player: and this one on the other side")
    listing.add_argument("--question", default=None, metavar="QUESTION_ID", help="only this question's")
    listing.add_argument("--filter", default=None, help="inconsistent, ties or decided")
    listing.add_argument("--tournament", type=int, default=None, metavar="ID", help="only this tournament and its runs")
    listing.add_argument("--limit", type=_positive, default=100, metavar="N",
                         help="at most N, the newest (default 100)")
    listing.add_argument("--format", choices=OUTPUTS, default="table")
    listing.set_defaults(func=_run(cmd_judgements))
