"""`site` prefixes every switch name and hostname (and so the MAC derived from it):
two clusters with different sites share no hostname, no MAC, no config folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from cases import CASES  # noqa: E402

from railonly.fabric.compiler import compile_design  # noqa: E402
from railonly.fabric.design.design import parse_design  # noqa: E402


def switches(text: str) -> dict[str, dict]:
    """switch name -> (hostname, mac) as its config says."""
    _, files = compile_design(parse_design(text, "d.yml"))
    out = {}
    for n in json.loads(files["fabric.json"])["nodes"]:
        if n["role"] != "switch":
            continue
        db = json.loads(files[f"configs/{n['name']}/config_db.json"])["DEVICE_METADATA"]["localhost"]
        frr = files[f"configs/{n['name']}/frr.conf"].decode()
        assert f"hostname {db['hostname']}\n" in frr
        out[n["name"]] = db
    return out


def test_two_sites_share_no_hostname_and_no_mac():
    base = CASES["sonic-routed-2tier"]
    a = switches(base.replace("name: sr2", "name: sr2\nsite: ams1"))
    b = switches(base.replace("name: sr2", "name: sr2\nsite: fra2"))
    assert all(name.startswith("ams1-") and db["hostname"] == name for name, db in a.items())
    assert not set(a) & set(b)
    assert not {db["mac"] for db in a.values()} & {db["mac"] for db in b.values()}
    assert {n.removeprefix("ams1-") for n in a} == {n.removeprefix("fra2-") for n in b}  # same fabric otherwise


def test_a_bad_site_is_exit_2_naming_the_key(tmp_path, capsys):
    from railonly.cli import main

    (tmp_path / "d.yml").write_text(CASES["sonic-routed-2tier"] + "site: Bad_Site\n")
    assert main(["compile", str(tmp_path / "d.yml"), "-o", str(tmp_path / "out")]) == 2
    assert "site:" in capsys.readouterr().err
