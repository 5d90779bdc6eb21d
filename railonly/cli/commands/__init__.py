"""One module per subcommand (railonly.cli registers them)."""

from __future__ import annotations

import argparse
import math


def positive(kind=int):
    """An argparse type: a finite number above 0 (`--bytes -5` used to run iperf3
    into its 120 s timeout, `--timeout nan` to skip every wait)."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError(f"must be a number above 0, got {text!r}")
        return value

    parse.__name__ = kind.__name__
    return parse
