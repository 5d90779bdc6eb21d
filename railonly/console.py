"""Terminal output of the commands: how much to print and whether in colour.

Every command takes ``-q`` (only failures and errors), ``-v`` (details, e.g.
per-flow lines; repeatable) and ``--no-color``. Colour marks PASS/FAIL and
ok/FAILED with rich, only when stdout is a terminal and neither
``--no-color`` nor the ``NO_COLOR`` environment variable (no-color.org) says
otherwise; anywhere else the text is byte for byte the plain one. Reports
stay plain text where they are made (pure code); colour is added here, on
the way out.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

# Words painted, as whole words: the verdicts and non-zero failure counts.
_RED = r"\b(FAIL|FAILED|NOT converged|[1-9][0-9,]* failed)\b"
_GREEN = r"\b(PASS|ok|passed|[0-9][0-9,]* passed)\b"


@dataclass
class Settings:
    quiet: bool = False
    verbose: int = 0
    color: bool = False


settings = Settings()


def color_wanted(no_color: bool = False, stream=None, environ=None) -> bool:
    environ = os.environ if environ is None else environ
    stream = stream or sys.stdout
    if no_color or environ.get("NO_COLOR") or environ.get("TERM") == "dumb":
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def configure(quiet: bool = False, verbose: int = 0, no_color: bool = False) -> Settings:
    settings.quiet, settings.verbose = bool(quiet), int(verbose or 0)
    settings.color = color_wanted(no_color)
    return settings


def paint(text: str):
    """`text` as a rich Text with the verdict words coloured."""
    from rich.text import Text

    t = Text(text)
    t.highlight_regex(_RED, "bold red")
    t.highlight_regex(_GREEN, "green")
    return t


def out(text: str, stream=None) -> None:
    """Print a report line or block to stdout (or `stream`), in colour when wanted."""
    stream = stream or sys.stdout
    if not settings.color:
        print(text, file=stream)
        return
    from rich.console import Console

    Console(file=stream, force_terminal=True, highlight=False, soft_wrap=True, emoji=False).print(paint(text))


def info(text: str) -> None:
    """A progress or phase line on stderr; silent with -q."""
    if not settings.quiet:
        print(text, file=sys.stderr, flush=True)


def detail(text: str) -> None:
    """A detail line on stderr, only with -v."""
    if settings.verbose:
        print(text, file=sys.stderr, flush=True)


class Bar:
    """A Progress reporter (fabric.progress protocol: step(label, done, total)) drawn
    with rich on a terminal: one line per phase, a bar while counts arrive. Use as a
    context manager; on a non-terminal it prints the plain phase lines instead."""

    def __init__(self, stream=None):
        from railonly.fabric.progress import Stderr

        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)()) and not os.environ.get("TERM") == "dumb"
        self.plain = None if self.tty else Stderr(self.stream)
        self.bar = None
        self.task = None
        self.label = ""

    def __enter__(self):
        if self.tty:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            console = Console(file=self.stream, no_color=not settings.color)
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), console=console, transient=False)
            self.bar.start()
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            if self.task is not None:
                self._finish()
            self.bar.stop()
        return False

    def _finish(self):
        t = self.bar.tasks[-1]
        self.bar.update(self.task, total=t.total or 1, completed=t.total or 1)

    def step(self, label: str, done: int = 0, total: int = 0) -> None:
        if self.plain is not None:
            self.plain.step(label, done, total)
            return
        if self.bar is None:
            return
        if label != self.label:
            if self.task is not None:
                self._finish()
            self.label = label
            self.task = self.bar.add_task(label, total=total or None)
        if total:
            self.bar.update(self.task, total=total, completed=done)


class Lines:
    """The same reporter off a terminal (or with -v): phase lines on stderr unless -q."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __init__(self, prefix: str = "  .. "):
        self.prefix = prefix
        self.label = None

    def step(self, label: str, done: int = 0, total: int = 0) -> None:
        if total:
            return  # counts feed a bar; per-item lines are the caller's (detail)
        if label != self.label:
            self.label = label
            info(f"{self.prefix}{label}")


def reporter(stream=None):
    """A context-managed progress reporter for long lab work: a rich bar on a
    terminal (unless -q or -v), plain lines otherwise."""
    stream = stream or sys.stderr
    tty = bool(getattr(stream, "isatty", lambda: False)()) and os.environ.get("TERM") != "dumb"
    if tty and not settings.quiet and not settings.verbose:
        return Bar(stream)
    return Lines()
