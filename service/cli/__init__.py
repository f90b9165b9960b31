"""The command line, `joust`: the composition root, the one layer that may import every other and
start workers (`commands`), and the commands that talk to a running joust over HTTP through the
Python client (`remote_cli`, `remote_judges`)."""
from service.cli.commands import build_parser, main

__all__ = ["build_parser", "main"]
