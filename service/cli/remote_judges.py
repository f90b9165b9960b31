"""`joust judges`: judge health from a running joust (GET /api/judges through `joust.Client`), the
companion of `joust board`: one row per judge, measured against the reference voters `--humans`
names (names or patterns such as 'human/expert_*', repeated or comma-separated: a panel of any
size), over one `--turn` when given. Kept apart from `service.cli.remote_cli`, whose runner and server
options it shares (and the output formats of `service.cli.formats`), so each module stays one
screenful of commands.

stdout holds only the table; stderr says which reference voters it was measured against.
"""
from __future__ import annotations

import argparse
import sys

from joust import Client
from service.cli.formats import OUTPUTS, write_frame
from service.cli.remote_cli import SubParsers, _positive, _remote_options, _run

COLUMNS = ["judge", "calls", "judgements", "consistency", "first_position_win_rate", "tie_rate", "parse_failure_rate",
           "longer_wins_rate", "human_agreement", "human_votes", "human_agreement_decided", "human_decided_votes",
           "human_alpha", "human_alpha_low", "human_alpha_high"]
NAMED = 3  # reference voters named on stderr


def cmd_judges(client: Client, args: argparse.Namespace) -> int:
    health = client.judges(args.judge, humans=args.humans, turn=args.turn)
    humans = list(health.attrs.get("humans") or [])
    named = ", ".join(humans[:NAMED]) + (f" and {len(humans) - NAMED} more" if len(humans) > NAMED else "")
    print(f"{len(humans)} reference voters: {named or 'none'}" + (f"; turn {args.turn}" if args.turn else ""),
          file=sys.stderr)
    shown = health[[c for c in COLUMNS if c in health.columns]]
    if args.format == "table" and not shown.empty:  # rates need three decimals, not a rating's one
        print(shown.to_string(index=False, na_rep="-", float_format=lambda x: f"{x:.3f}"))
    else:
        write_frame(shown, args.format, empty="no judges")
    return 0


def add_parser(sub: SubParsers) -> None:
    """`joust judges` on the `joust` command line."""
    judges = sub.add_parser("judges", parents=[_remote_options()], help="judge health (GET /api/judges)")
    judges.add_argument("--judge", default=None, metavar="SPEC", help="only this judge")
    judges.add_argument("--humans", action="append", default=None, metavar="NAME",
                        help="a reference voter, human/<voter>, or a pattern where * is any run of characters "
                             "(quote it: 'human/expert_*'); repeat or separate by commas (default: every voter)")
    judges.add_argument("--turn", type=_positive, default=None, metavar="N",
                        help="only the judgements on turn N of multi-turn questions")
    judges.add_argument("--format", choices=OUTPUTS, default="table")
    judges.set_defaults(func=_run(cmd_judges))
