"""Golden configs (byte for byte; REGEN=1 rewrites them) and their validation."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from cases import CASES, compiled, config_files  # noqa: E402

from railonly.fabric.validate import validator as run

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "configs"


def _assert_golden(path: Path, data: bytes) -> None:
    import os

    if os.environ.get("REGEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return
    assert path.exists(), f"golden {path.relative_to(REPO)} missing; run with REGEN=1"
    assert path.read_bytes() == data, f"{path.relative_to(REPO)} differs from the golden (REGEN=1 to accept)"


@pytest.mark.parametrize("case", sorted(CASES))
def test_configs_match_goldens(case):
    files = config_files(compiled(case))
    assert files
    for path, data in sorted(files.items()):
        _assert_golden(GOLDEN / case / path, data)
    if (GOLDEN / case).exists():
        on_disk = {str(p.relative_to(GOLDEN / case)) for p in (GOLDEN / case).rglob("*") if p.is_file()}
        assert on_disk == set(files), "golden dir has files the compiler no longer writes (REGEN=1 after deleting it)"


@pytest.mark.parametrize("case", sorted(CASES))
def test_goldens_pass_yang_frr_and_crosscheck(case):
    """Every golden config_db.json against the YANG models, every frr.conf through vtysh -C."""
    files = compiled(case)
    golden = {p: (GOLDEN / case / p).read_bytes() for p in config_files(files) if (GOLDEN / case / p).exists()}
    blobs = dict(files, **golden)
    read = run.memory_reader(blobs)
    results = run.validate(read, run.load_fabric(read, "<golden>"))
    bad = [f"{r.id}: {r.detail}" for r in results if not r.passed]
    assert not bad, "\n".join(bad)
    checks = {r.check for r in results}
    if any(p.endswith("config_db.json") for p in golden):
        assert "yang" in checks
    if any(p.endswith("frr.conf") for p in golden):
        assert "frr" in checks


def test_compile_is_deterministic():
    for case in ("sonic-routed-2tier", "eos-routed-2tier"):
        assert compiled(case) == compiled(case)
