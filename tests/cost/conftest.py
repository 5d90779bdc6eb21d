"""Helpers for the BOM, docs and sweep tests: designs from parameters, CLI runs, goldens."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from railonly.cli import main
from railonly.fabric.design.design import parse_design

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "bom"


def design_text(size: int, count: int, radix: int, share: bool = False, topology: str = "rail-only",
                mode: str = "routed", name: str = "t") -> str:
    return (f"name: {name}\ntopology: {topology}\nhb_domain: {{size: {size}, count: {count}}}\n"
            f"switch: {{radix: {radix}, share_rails: {str(share).lower()}}}\nrail: {{mode: {mode}}}\n")


def make_design(*args, **kw):
    return parse_design(design_text(*args, **kw))


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def assert_golden(name: str, actual: str) -> None:
    """Compare with tests/golden/bom/<name>; REGEN=1 rewrites it on purpose."""
    path = GOLDEN / name
    if os.environ.get("REGEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"golden {path} is missing; run with REGEN=1 to create it")
    expected = path.read_text(encoding="utf-8")
    if expected != actual:
        diff = "\n".join(list(difflib.unified_diff(expected.splitlines(), actual.splitlines(), "golden", "actual", lineterm="", n=2))[:60])
        pytest.fail(f"{path} differs (REGEN=1 regenerates on purpose):\n{diff}")
