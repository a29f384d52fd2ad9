"""`python -m jobset.commands CMD ...`: the user commands without the rest of `jobset`.

The same parser and dispatch `jobset.cli` wires in (`add_user_commands`,
`run_user_command`); used by the tests and handy where only the SDK is installed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from jobset.commands import add_user_commands, run_user_command


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jobset", description="JobSet user commands")
    add_user_commands(parser.add_subparsers(dest="command", required=True))
    return run_user_command(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
