"""Progress reporting for long compiles, kept out of the pure code's way.

Producers call ``progress.step(label, done, total)``; the CLI installs a
reporter that prints to stderr (only for big designs or when asked), tests
install none.
"""

from __future__ import annotations

import sys
import time
from typing import Protocol


class Progress(Protocol):
    def step(self, label: str, done: int = 0, total: int = 0) -> None: ...


class Silent:
    def step(self, label: str, done: int = 0, total: int = 0) -> None:
        pass


class Stderr:
    """Prints a phase line when it starts, and counts at most every half second."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.t0 = time.monotonic()
        self.last = 0.0
        self.label = ""

    def step(self, label: str, done: int = 0, total: int = 0) -> None:
        now = time.monotonic()
        if label != self.label:
            self.label = label
            self.last = now
            self.stream.write(f"[{now - self.t0:6.1f}s] {label}\n")
        elif total and (now - self.last >= 0.5 or done == total):
            self.last = now
            self.stream.write(f"[{now - self.t0:6.1f}s] {label}: {done:,}/{total:,}\n")
        self.stream.flush()
