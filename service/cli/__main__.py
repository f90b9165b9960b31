"""`python -m service.cli`: what `joust up` starts each role with."""
import sys

from service.cli.commands import main

sys.exit(main())
