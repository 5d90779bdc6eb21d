"""The `railonly` command line (docs/commands/index.md).

Each subcommand lives in railonly/cli/commands/<name>.py with `register(subparsers)`
that sets `func` (args -> exit code). Exit codes: 0 success, 1 a check failed,
2 invalid input, 3 environment or runtime failure. User errors never show a
traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from railonly import __version__
from railonly.fabric.input.problems import InputError

# Subcommand modules, in help order. A module missing here is simply absent.
COMMANDS = ["compile", "bom", "sweep", "analyze", "resilience", "validate", "diff", "lab", "push", "demo", "completion"]

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_ENV = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    """Every parser (the top level and each subcommand) takes the output options,
    so `railonly -q lab check X` and `railonly lab check X -q` both work. The
    subcommands' defaults are SUPPRESS, or they would clobber a top-level -q."""

    def __init__(self, *args, output_defaults=argparse.SUPPRESS, **kwargs):
        super().__init__(*args, **kwargs)
        g = self.add_argument_group("output")
        g.add_argument("-q", "--quiet", action="store_true", default=output_defaults,
                       help="print only failures and errors (no progress, no summary on success)")
        g.add_argument("-v", "--verbose", action="count", default=output_defaults,
                       help="print details too (per-flow lines, every phase); repeatable")
        g.add_argument("--no-color", action="store_true", default=output_defaults,
                       help="plain text even on a terminal (also: NO_COLOR=1)")

    def error(self, message: str):  # exit 2 with a hint, as argparse does, minus the noise
        self.print_usage(sys.stderr)
        sys.stderr.write(f"error: {message}\n  fix: see '{self.prog} --help'\n")
        raise SystemExit(EXIT_INPUT)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with `only` the one subcommand a run names: each
    command module imports what it needs, and the other ten cost a run 0.06 s."""
    parser = _Parser(prog="railonly", description="Design, build and test Rail-only GPU cluster networks.",
                     output_defaults=None)
    parser.add_argument("--version", action="version", version=f"railonly {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in [only] if only else COMMANDS:
        try:
            mod = importlib.import_module(f"railonly.cli.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"railonly.cli.commands.{name}":
                continue
            raise
        mod.register(sub)
    if not only:  # for `railonly completion`, which builds the whole parser
        _completion_hints(parser)
    return parser


def _command_named(argv: list[str]) -> str | None:
    """The subcommand `argv` runs, when its first word that is not an option names one
    (the top-level options take no values); None: the whole parser decides (top-level
    help or version, a typo)."""
    for word in argv:
        if word in ("-h", "--help", "--version"):
            return None
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def _completion_hints(parser: argparse.ArgumentParser) -> None:
    """Tell shell completion (shtab) which arguments are files and which folders."""
    import shtab

    for action in parser._actions:
        meta = str(action.metavar or "")
        if meta.endswith((".yml", "FILE")):
            action.complete = shtab.FILE
        elif meta in ("OUTDIR", "DIR", "OLD_OUTDIR", "NEW_OUTDIR"):
            action.complete = shtab.DIRECTORY
        for sub in (action.choices or {}).values() if isinstance(action, argparse._SubParsersAction) else ():
            _completion_hints(sub)


def main(argv: list[str] | None = None) -> int:
    from railonly.reportfile import ReportNotWritten

    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(_command_named(argv))
    args = parser.parse_args(argv)
    from railonly import console

    args.quiet, args.verbose = bool(args.quiet), int(args.verbose or 0)
    console.configure(args.quiet, args.verbose, bool(args.no_color))
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_INPUT
    from railonly.proc import interrupt_exit, terminate_as_interrupt

    from contextlib import nullcontext

    # SIGTERM cleans up as Ctrl-C does (every finally runs) in the lab commands, whose state
    # outlives them (nftables tables, agents, a failover's switch), and in push (its device
    # threads finish or roll back, the probes' pings are stopped; killed, it left a switch
    # drained and the pings running). The commands that fork worker pools (compile,
    # validate) keep SIGTERM's default: a worker that inherited the handler hung a 32k compile
    # in CI once (Pool.terminate); forked children now get the default action (proc.py), but
    # those commands leave nothing behind that a cleanup would remove.
    try:
        with terminate_as_interrupt() if args.command in ("lab", "push") else nullcontext():
            return int(args.func(args) or 0)
    except InputError as exc:
        from railonly.fabric.input.problems import report_lines

        for line in report_lines(exc.problems):
            print(line, file=sys.stderr)
        n = len(exc.problems)
        print(f"{n:,} problem{'s' if n != 1 else ''} found; nothing was written.", file=sys.stderr)
        return EXIT_INPUT
    except ReportNotWritten as exc:  # the path as given: escaped, it may hold a terminal's escape sequence
        from railonly.fabric.safe_text import printable

        print(f"error: {printable(str(exc), lines=False)}\n  fix: give a writable file path for the report", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (proc.Terminated): 130 or 143
        code = interrupt_exit(exc)
        print("terminated" if code == 143 else "interrupted", file=sys.stderr)
        return code
    except BrokenPipeError:  # `railonly ... | head`: the reader left; say nothing more
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (EnvironmentProblem, *_environment_errors()) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ENV
    except OSError as exc:  # the file system refused (disk full, read-only, gone): name the path, no traceback
        where = exc.filename or "a file"
        print(f"error: {where}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ENV


class EnvironmentProblem(Exception):
    """Not root, a tool missing, a runtime that failed (exit 3). Raise from commands."""


def _environment_errors() -> tuple[type[Exception], ...]:
    """Environment errors raised below the CLI (emulation), also exit 3."""
    from railonly.emulation.runtime.protocol import RuntimeProblem
    from railonly.fabric.outdir.previous import Changed
    from railonly.fabric.outdir.writer import WriteFailed
    from railonly.fabric.validate.sonic_yang import YangUnavailable
    from railonly.proc import ToolMissing

    return (ToolMissing, RuntimeProblem, WriteFailed, YangUnavailable, Changed)
