"""`railonly push --only-changed OLD_OUTDIR` against a deployed lab: only the devices
whose configs differ from OLD_OUTDIR are contacted."""

from __future__ import annotations

import json
import shutil

import pytest

from railonly.cli import main

pytestmark = pytest.mark.netns


def test_only_changed_devices_are_pushed(pushlab, tmp_path, capsys):
    outdir, lab = pushlab
    old = tmp_path / "old"
    shutil.copytree(outdir, old, ignore=shutil.ignore_patterns(".lab"))
    sw = f"{lab.name}-rail1-spine0"
    p = outdir / "configs" / sw / "config_db.json"
    db = json.loads(p.read_text())
    db["PORT"]["Ethernet0"]["mtu"] = "4444"
    p.write_text(json.dumps(db, indent=4, sort_keys=True) + "\n")
    rc = main(["push", str(outdir), "--only-changed", str(old), "--dry-run"])
    out = capsys.readouterr().out
    assert rc == 1, out  # the one changed device differs from what it runs
    assert "1 device(s): 1 ok, 0 failed; dry run" in out
    rows = [line.split()[0] for line in out.splitlines() if line.startswith(f"{lab.name}-")]
    assert rows == [sw]
    assert '+            "mtu": "4444",' in out
