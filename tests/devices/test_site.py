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


def switch_names_and_macs(text: str) -> tuple[set[str], set[str]]:
    """Every switch name an OUTDIR prints (fabric.json, configs/, each config's hostname,
    cabling.csv, NetBox) and every MAC in it: all must agree, so the sets are the names."""
    import csv
    import io
    import re

    _, files = compile_design(parse_design(text, "d.yml"))
    fabric = {n["name"] for n in json.loads(files["fabric.json"])["nodes"] if n["role"] == "switch"}
    names, macs = set(), set()
    for path, body in files.items():
        if not path.startswith("configs/"):
            continue
        sw, conf = path.split("/")[1], body.decode()
        names.add(sw)
        names.update(re.findall(r"^hostname (\S+)$", conf, re.M))  # frr.conf, EOS startup-config
        if path.endswith("config_db.json"):
            meta = json.loads(conf)["DEVICE_METADATA"]["localhost"]
            names.add(meta["hostname"])
            macs.add(meta["mac"])
    cabling = list(csv.DictReader(io.StringIO(files["cabling.csv"].decode())))
    cabled = {r[f"{end}_device"] for r in cabling for end in "ab"}
    netbox = {r["name"] for r in csv.DictReader(io.StringIO(files["netbox_devices.csv"].decode())) if r["role"] != "gpu-server"}
    assert names == fabric == netbox and fabric <= cabled, "every file names the switches alike"
    assert len(macs) == sum(1 for p in files if p.endswith("config_db.json")), "one MAC per SONiC switch"
    return names, macs


def test_two_designs_with_different_names_share_no_hostname_and_no_mac():
    """The default site is the design's name (issue 21): two clusters compiled from the same
    shape, one renamed, have disjoint switch names and MACs in every file, both vendors."""
    base = CASES["mixed-routed-2tier"]  # SONiC leaves, EOS spines
    a_names, a_macs = switch_names_and_macs(base)
    b_names, b_macs = switch_names_and_macs(base.replace("name: mx2", "name: fra2"))
    assert a_names and all(n.startswith("mx2-rail") for n in a_names)
    assert all(n.startswith("fra2-rail") for n in b_names)
    assert not a_names & b_names and not a_macs & b_macs
    assert {n.removeprefix("mx2-") for n in a_names} == {n.removeprefix("fra2-") for n in b_names}


def test_site_given_overrides_the_name_and_an_empty_site_opts_out():
    base = CASES["sonic-routed-2tier"]
    named, _ = switch_names_and_macs(base.replace("name: sr2", "name: sr2\nsite: ams1"))
    bare, bare_macs = switch_names_and_macs(base.replace("name: sr2", 'name: sr2\nsite: ""'))
    assert all(n.startswith("ams1-rail") for n in named)
    assert "rail0-leaf0" in bare and all(n.startswith("rail") for n in bare)  # one cluster, names as before
    _, default_macs = switch_names_and_macs(base)
    assert not bare_macs & default_macs
