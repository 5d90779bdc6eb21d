"""Numbers read from outside text: ASCII digits only, never a traceback.

str.isdigit() takes '²' (which int() then refuses: a ValueError) and '٣' (which int()
reads as 3, though no switch, kernel or CSV reader does); int() alone takes ' 3', '+3'
and '1_0'. Every whole number railonly reads from a file, the environment or the
command line goes through safe_text.whole.
"""

from __future__ import annotations

import os

import pytest

from railonly import cli
from railonly.fabric import parallel
from railonly.fabric.input import limits
from railonly.fabric.safe_text import natural, whole

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
