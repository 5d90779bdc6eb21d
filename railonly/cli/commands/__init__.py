"""One module per subcommand (railonly.cli registers them)."""

from __future__ import annotations

import argparse

# --presets, as analyze and resilience --job take it: the job's GPU and model presets
PRESETS_HELP = "GPU and model presets YAML adding to the shipped ones"


def refuse_empty(*options: "tuple[str, str | None, str]") -> None:
    """(flag, value, fix) each: an empty value is a mistake, never "option not given" (`--inventory ''`
    would push to the lab's switches, `--plot ''` wrote ./sweep.png): exit 2 naming the first."""
    from railonly.fabric.input.problems import InputError, Problem

    for flag, value, fix in options:
        if value == "":
            raise InputError([Problem(flag, "is empty", fix, None, "command line")])


def platform_reads(design) -> "dict[str, str]":
    """The platform files a design names, as `refuse_targets` reads: inputs a report must not
    replace, known only once the design is read."""
    return {f"the design's platform file {p}": p for p in design.input_files if p != design.file}


def number(kind=int):
    """An argparse type for every number on the command line: a whole number (int) or a
    finite decimal (float) in ASCII digits, read by safe_text. int() and float() also take
    '٣' as 3 (no switch, kernel or CSV reader does), '1_0' as 10 and, for float, 'nan'."""
    from railonly.fabric.safe_text import decimal, signed_whole

    read = signed_whole if kind is int else decimal

    def parse(text: str):
        value = read(text)
        if value is None:
            what = "a whole number" if kind is int else "a finite number"
            raise argparse.ArgumentTypeError(f"must be {what} written in the digits 0-9, got {text!r}")
        return kind(value)

    parse.__name__ = kind.__name__
    return parse


def positive(kind=int):
    """An argparse type: a number (see :func:`number`) above 0 (`--bytes -5` used to run
    iperf3 into its 120 s timeout, `--timeout nan` to skip every wait)."""
    read = number(kind)

    def parse(text: str):
        try:
            value = read(text)
        except argparse.ArgumentTypeError:
            value = None
        if value is None or value <= 0:
            raise argparse.ArgumentTypeError(f"must be a number above 0, got {text!r}")
        return value

    parse.__name__ = kind.__name__
    return parse
