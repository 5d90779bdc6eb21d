"""Every bad design: exit 2, every problem named (key path, line, constraint,
fix) as in its golden message, nothing written, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from railonly.cli import main

from ..conftest import GOLDEN, assert_golden

BAD = Path(__file__).parent / "bad_designs"


@pytest.mark.parametrize("path", sorted(BAD.glob("*.yml")), ids=lambda p: p.stem)
def test_bad_design_exits_2_with_golden_message(path, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(BAD)  # messages carry the file name as given, keep it relative
    out = tmp_path / "out"
    rc = main(["compile", path.name, "-o", str(out)])
    captured = capsys.readouterr()
    assert rc == 2
    assert not out.exists(), "nothing may be written for a bad design"
    assert list(tmp_path.iterdir()) == []
    assert "Traceback" not in captured.err
    assert "fix:" in captured.err
    assert_golden(GOLDEN / "errors" / f"{path.stem}.txt", captured.err)


def test_missing_design_file(tmp_path, capsys):
    rc = main(["compile", str(tmp_path / "nope.yml"), "-o", str(tmp_path / "out")])
    assert rc == 2 and "file not found" in capsys.readouterr().err


def test_bad_cli_usage_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["compile"])
    assert exc.value.code == 2
