"""railonly stands on its own: the schemas it checks against ship inside the
package (with license and sources), a missing libyang binding is an
environment problem (exit 3), and the lab files are checked against their
published schemas."""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

import pytest

from railonly import cli
from railonly.fabric.validate import lab_schemas, sonic_yang

from ..conftest import REPO

DATA = Path(sonic_yang.__file__).resolve().parent / "data"


def _sources_table(folder: Path) -> dict[str, str]:
    """file -> sha256 as recorded in folder/SOURCES.md (every backticked 64-hex cell)."""
    out = {}
    for line in (folder / "SOURCES.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        digests = [c.strip("`") for c in cells if re.fullmatch(r"`[0-9a-f]{64}`", c)]
        if digests and cells[0].startswith("`"):
            out[cells[0].strip("`")] = digests[0]
    return out


def test_models_are_read_from_the_package():
    assert sonic_yang.PACKAGED_YANG_DIR == DATA / "sonic-yang"
    assert len(list(sonic_yang.PACKAGED_YANG_DIR.glob("*.yang"))) >= 140
    assert lab_schemas.CLAB_SCHEMA.parent == DATA == lab_schemas.CLABERNETES_CRD.parent


@pytest.mark.parametrize("folder", ["", "sonic-yang"])
def test_every_shipped_file_is_listed_with_its_sha256(folder):
    root = DATA / folder
    recorded = _sources_table(root)
    shipped = {p.relative_to(root).as_posix() for p in root.rglob("*")
               if p.is_file() and p.name != "SOURCES.md" and (folder or p.parent == root)}
    assert shipped == set(recorded), "SOURCES.md and the folder disagree"
    wrong = [f for f, h in recorded.items() if hashlib.sha256((root / f).read_bytes()).hexdigest() != h]
    assert not wrong, f"changed since SOURCES.md was written: {wrong}"


def test_each_data_folder_carries_its_licenses():
    assert "Apache License" in (DATA / "sonic-yang" / "LICENSE").read_text()
    for name in ("LICENSE.containerlab", "LICENSE.clabernetes"):
        assert "Redistribution" in (DATA / name).read_text()


def test_missing_libyang_binding_is_exit_3_naming_the_fix(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "oopt_gnpy_libyang", None)  # import now raises ImportError
    rc = cli.main(["compile", str(REPO / "labs" / "mini-routed.yml"), "-o", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 3, err
    assert "libyang" in err and "pip install oopt-gnpy-libyang" in err
    assert "railonly bug" not in err
    assert not (tmp_path / "o").exists()


def test_missing_models_folder_is_exit_3(tmp_path, monkeypatch, capsys):
    out = tmp_path / "o"
    assert cli.main(["-q", "compile", str(REPO / "labs" / "mini-routed.yml"), "-o", str(out)]) == 0
    monkeypatch.setattr(sonic_yang, "YANG_DIR", tmp_path / "nothing-here")
    assert cli.main(["validate", str(out)]) == 3
    assert "no SONiC YANG models" in capsys.readouterr().err


def test_missing_vtysh_is_exit_3_before_any_result(tmp_path, monkeypatch, capsys):
    """It was `FAIL frr/<all>` among the results and exit 1: an incomplete install reported
    as failing configs (validate.md: exit 3 naming what to install)."""
    out = tmp_path / "o"
    assert cli.main(["-q", "compile", str(REPO / "labs" / "mini-routed.yml"), "-o", str(out)]) == 0
    capsys.readouterr()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert cli.main(["validate", str(out)]) == 3
    captured = capsys.readouterr()
    assert "'vtysh' is not installed (Debian package 'frr'" in captured.err and "FAIL" not in captured.out
    # compile skips the FRR parse alone there (troubleshooting.md), its other checks run
    assert cli.main(["-q", "compile", str(REPO / "labs" / "mini-routed.yml"), "-o", str(tmp_path / "o2")]) == 0


def test_validate_checks_the_lab_files_against_their_schemas(tmp_path, capsys):
    out = tmp_path / "o"
    assert cli.main(["-q", "compile", str(REPO / "labs" / "mini-routed.yml"), "-o", str(out)]) == 0
    capsys.readouterr()
    assert cli.main(["validate", str(out), "--json", str(tmp_path / "r.json")]) == 0
    import json

    ids = {r["id"]: r["passed"] for r in json.loads((tmp_path / "r.json").read_text())["results"]}
    assert ids["schema/minir.clab.yml"] and ids["schema/minir.clabernetes.yaml"]

    clab = out / "minir.clab.yml"
    clab.write_text(clab.read_text().replace("kind: linux", "kind: not-a-kind", 1))
    topo = out / "minir.clabernetes.yaml"
    topo.write_text(topo.read_text().replace("connectivity: vxlan", "connectivity: carrier-pigeon", 1))
    assert cli.main(["validate", str(out), "--no-manifest"]) == 1
    text = capsys.readouterr().out
    assert re.search(r"FAIL.*schema/minir\.clab\.yml", text) and "not-a-kind" in text
    assert re.search(r"FAIL.*schema/minir\.clabernetes\.yaml", text)


def test_no_code_or_test_reads_outside_the_repository():
    """No path into the sibling reference folder (its relative path, or one joined from its
    name), no citation of files not in the repo. This test reads only the repository."""
    bad = re.compile(r"""\.\./shared|["']shared["']\s*[/)\],]|/\s*["']shared["']|"""
                     r"""\bContract [1-6]\b|\b(?:PAPER|ANALYSIS|EMULATION|ARCHITECTURE)\.md\b""")
    me = Path(__file__).resolve()
    hits = [f"{p.relative_to(REPO)}:{i}: {line.strip()[:80]}"
            for top in ("fabric", "emulation", "railonly", "tests", "templates", "bench")
            for p in sorted((REPO / top).rglob("*.py")) if p.resolve() != me
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if bad.search(line)]
    assert not hits, "\n".join(hits)
