"""Numbers read from outside text: ASCII digits only, never a traceback.

str.isdigit() takes '²' (which int() then refuses: a ValueError) and '٣' (which int()
reads as 3, though no switch, kernel or CSV reader does); int() alone takes ' 3', '+3'
and '1_0'. Every whole number railonly reads from a file, the environment or the
command line goes through safe_text.whole.
"""

from __future__ import annotations

import argparse
import os

import pytest

from railonly import cli
from railonly.fabric import parallel
from railonly.fabric.input import limits
from railonly.fabric.safe_text import decimal, natural, signed_whole, whole

NOT_WHOLE = ["", " 3", "3 ", "+3", "-3", "1_0", "1.5", "²", "\u0663", "3\n", "0x10", "9" * 5000]


def test_whole_reads_ascii_digits_only():
    assert [whole(t) for t in ("0", "7", "042", "4294967295")] == [0, 7, 42, 4294967295]
    assert [t for t in NOT_WHOLE if whole(t) is not None] == []


def test_natural_orders_digit_runs_as_numbers_and_takes_any_text():
    names = ["rail10-leaf0", "rail2-leaf10", "rail2-leaf9", "rail2-leaf0", "rail2"]
    assert sorted(names, key=natural) == ["rail2", "rail2-leaf0", "rail2-leaf9", "rail2-leaf10", "rail10-leaf0"]
    assert sorted(["R10-T1-00001", "R2-T1-00007"], key=natural) == ["R2-T1-00007", "R10-T1-00001"]
    assert sorted(["x\u0663", "x²", "x3", "1a", "a1"], key=natural) == ["1a", "a1", "x3", "x²", "x\u0663"]


@pytest.mark.parametrize("text", ["²", "\u0663", "-1", "0"])
def test_numbers_from_the_environment_fall_back_to_the_default(text, monkeypatch):
    monkeypatch.setenv("RAILONLY_JOBS", text)
    assert parallel.jobs() == max(1, min(os.cpu_count() or 1, 8))
    monkeypatch.setenv(limits.GPUS.env, text)
    assert limits.GPUS.value == limits.GPUS.default


@pytest.mark.parametrize("text", ["²", "\u0663\u0662"])
def test_numbers_on_the_command_line_are_refused_by_name(text, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a regression would write sweep/ here, not into the checkout
    assert cli.main(["sweep", "--radix", text]) == 2
    err = capsys.readouterr().err
    assert "--radix" in err and "whole numbers" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_decimal_and_signed_whole_read_ascii_only():
    assert [decimal(t) for t in ("2", "-0.5", "+.5", "1e3", "3.")] == [2.0, -0.5, 0.5, 1000.0, 3.0]
    assert [t for t in ("", " 3", "1_0", "\u0663", "1\u0663", "nan", "inf", "1e999", "0x10", "3\n", "e3")
            if decimal(t) is not None] == []
    assert [signed_whole(t) for t in ("-3", "+3", "0")] == [-3, 3, 0]
    assert [t for t in ("-", "+", "--3", "-\u0663", " 3") if signed_whole(t) is not None] == []


def _number_actions(parser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _number_actions(sub, (*path, name))
        elif action.type is not None:
            yield path, action


def test_every_number_on_the_command_line_has_the_shared_type():
    """argparse's int() and float() read '٣' as 3: every int or float option is typed by
    railonly.cli.commands.number (or positive, built on it)."""
    typed = [(path, a) for path, a in _number_actions(cli.build_parser()) if a.type is not str]
    assert len(typed) >= 14
    for path, action in typed:
        assert action.type not in (int, float), (path, action.option_strings)
        assert action.type.__module__ == "railonly.cli.commands" and action.type("3") == 3, (path, action.option_strings)
        with pytest.raises(argparse.ArgumentTypeError):
            action.type("\u0663")


@pytest.mark.parametrize("argv, flag", [
    (["compile", "MINI", "-o", "out", "--lab-domains", "\u0663"], "--lab-domains"),
    (["analyze", "MINI", "JOB", "--sweep", "k=\u0663"], "--sweep"),
    (["analyze", "MINI", "JOB", "--oversub", "\u0662"], "--oversub"),
    (["push", "out", "--timeout", "\u0663"], "--timeout"),
    (["diff", "a", "b", "--max-per-group", "\u0663"], "--max-per-group"),
])
def test_non_ascii_digits_in_a_number_option_are_refused_by_name(argv, flag, capsys, tmp_path, monkeypatch):
    """`compile --lab-domains ٣` compiled a 3-domain lab slice; `analyze --sweep k=٣` swept k=3."""
    from ..conftest import REPO

    monkeypatch.chdir(tmp_path)
    job = next(iter(sorted((REPO / "labs" / "jobs").glob("*.yml"))))
    argv = [str(REPO / "labs" / "mini-l2.yml") if a == "MINI" else str(job) if a == "JOB" else a for a in argv]
    try:
        rc = cli.main(argv)
    except SystemExit as exc:
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2 and flag in err and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []
