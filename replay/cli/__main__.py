"""``python -m replay.cli``: the same command line as ``replay``."""

from replay.cli.app import run

run()
