"""Shared test helpers: repo paths and golden-file comparison.

Goldens are regenerated only on purpose: `REGEN=1 make test` (or REGEN=1
pytest ...) rewrites them; otherwise a difference fails with a diff.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "golden"
SHARED = REPO.parent / "shared"


def assert_golden(path: Path, actual: str | bytes) -> None:
    """Compare `actual` with the golden file at `path` byte for byte."""
    data = actual.encode() if isinstance(actual, str) else actual
    if os.environ.get("REGEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return
    if not path.exists():
        pytest.fail(f"golden {path.relative_to(REPO)} is missing; run with REGEN=1 to create it")
    expected = path.read_bytes()
    if expected != data:
        diff = difflib.unified_diff(
            expected.decode(errors="replace").splitlines(), data.decode(errors="replace").splitlines(),
            "golden", "actual", lineterm="", n=2,
        )
        text = "\n".join(list(diff)[:60])
        pytest.fail(f"{path.relative_to(REPO)} differs (REGEN=1 regenerates on purpose):\n{text}")


@pytest.fixture
def repo() -> Path:
    return REPO
