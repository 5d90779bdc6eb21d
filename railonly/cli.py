"""The `railonly` command line (Contract 2).

Each subcommand lives in railonly/commands/<name>.py with `register(subparsers)`
that sets `func` (args -> exit code). Exit codes: 0 success, 1 a check failed,
2 invalid input, 3 environment or runtime failure. User errors never show a
traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from railonly import __version__
from railonly.fabric.problems import InputError

# Subcommand modules, in help order. A module missing here is simply absent.
COMMANDS = ["compile", "bom", "sweep", "analyze", "validate", "diff", "lab", "push", "demo"]

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_ENV = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # exit 2 with a hint, as argparse does, minus the noise
        self.print_usage(sys.stderr)
        sys.stderr.write(f"error: {message}\n  fix: see '{self.prog} --help'\n")
        raise SystemExit(EXIT_INPUT)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="railonly", description="Design, build and test Rail-only GPU cluster networks.")
    parser.add_argument("--version", action="version", version=f"railonly {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        try:
            mod = importlib.import_module(f"railonly.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"railonly.commands.{name}":
                continue
            raise
        mod.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_INPUT
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        for p in exc.problems:
            print(p.format(), file=sys.stderr)
        n = len(exc.problems)
        print(f"{n} problem{'s' if n != 1 else ''} found; nothing was written.", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (EnvironmentProblem, *_environment_errors()) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ENV


class EnvironmentProblem(Exception):
    """Not root, a tool missing, a runtime that failed (exit 3). Raise from commands."""


def _environment_errors() -> tuple[type[Exception], ...]:
    """Environment errors raised below the CLI (emulation), also exit 3."""
    from railonly.proc import ToolMissing
    from railonly.emulation.runtime.protocol import RuntimeProblem
    from railonly.fabric.writer import WriteFailed

    return (ToolMissing, RuntimeProblem, WriteFailed)
