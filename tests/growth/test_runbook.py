"""`railonly diff OLD NEW --runbook FILE.md`: dgx-h100-1k grown from 128 to 144 domains past
hb_domain.planned, as a runbook: summary, cable work by rail and rack, push waves."""

from __future__ import annotations

import json
import re

import pytest

from railonly.cli import main

from .conftest import lab_1k
from .test_diff import _compile


@pytest.fixture(scope="module")
def growth(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runbook")
    old, new = _compile(lab_1k(128), tmp / "n128"), _compile(lab_1k(144), tmp / "n144")
    md, js = tmp / "runbook.md", tmp / "plan.json"
    assert main(["diff", old, new, "--no-diffs", "-q", "--runbook", str(md), "--json", str(js)]) == 1
    return md.read_text(), json.loads(js.read_text())


def test_runbook_is_markdown_with_summary_cable_work_and_waves(growth):
    md, _ = growth
    heads = [line for line in md.splitlines() if line.startswith("## ")]
    assert heads == ["## Summary", "## 1. Cable work", "## 2. Push waves"]
    summary = md.split("## Summary\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert summary[0] == "- cables: 384 to add, 1,008 to move, 0 to remove, 0 relabelled, 0 refitted"
    # growth renumbers nothing: the one fabric-wide BGP effect is said, in one line
    assert "- no existing switch changes its ASN or name: BGP sessions of unchanged links stay up" in summary
    assert any(line.startswith("- 16 switch(es) added: dgx1k-rail0-leaf4, dgx1k-rail0-spine2") for line in summary)
    # cable work: by rail, then rack; each cable by label and both ends
    assert "### rail 0, rack dgx1k-rail0-leaf4\n" in md and "### rail 7, rack dgx1k-rail7-leaf4\n" in md
    assert "- [ ] add `R0-T1-00129`: hb128:rail0 to dgx1k-rail0-leaf4:Ethernet0\n" in md
    assert ("- [ ] move `R0-T2-00003`: end at dgx1k-rail0-leaf0:Ethernet272 stays; unplug dgx1k-rail0-spine0:Ethernet8, "
            "plug into dgx1k-rail0-spine2:Ethernet0\n") in md
    rails = [int(m) for m in re.findall(r"^### rail (\d+), rack", md, re.M)]
    assert rails == sorted(rails) and set(rails) == set(range(8))
    # then the waves, canary first, after the cable work
    assert md.index("## 1. Cable work") < md.index("### Canary") < md.index("### Wave 1")
    assert md.count("- checks: BGP sessions established, as many as before;") == md.count("\n### Canary") + md.count("\n### Wave ")


def test_runbook_waves_change_one_switch_per_rail_and_tier_at_once(growth):
    _, doc = growth
    rb = doc["runbook"]
    waves = rb["waves"]
    assert waves[0]["name"] == "canary" and len(waves[0]["switches"]) == 1
    seen = []
    for w in waves:
        groups = [(re.match(r"dgx1k-rail(\d+)-", s["device"]).group(1), "spine" in s["device"]) for s in w["switches"]]
        assert len(groups) == len(set(groups)), w  # at most one per rail and tier
        seen += [s["device"] for s in w["switches"]]
    assert len(seen) == len(set(seen)) == 8 * 4 + 8 * 2 + 16  # 32 leaves and 16 spines change, 16 switches are new
    marks = {s["device"]: s["mark"] for w in waves for s in w["switches"]}
    assert marks["dgx1k-rail0-leaf4"] == marks["dgx1k-rail0-spine2"] == "hitless"  # new, not in service yet
    assert marks["dgx1k-rail0-spine0"] == "disruptive"  # its BGP neighbours change: drained first
    assert all(s["drain"] == (s["mark"] == "disruptive") for w in waves for s in w["switches"])
    assert rb["summary"][0].startswith("cables: 384 to add")
    assert {g["rail"] for g in rb["cable_work"]} == {str(r) for r in range(8)}


def test_runbook_says_when_every_spine_is_renumbered(tmp_path, capsys):
    """Another ASN base renumbers every switch: the summary says it in one line."""
    old = _compile(lab_1k(128), tmp_path / "a")
    new = _compile(lab_1k(128) + "bgp: {asn_base: 4200100000}\n", tmp_path / "b")
    md = tmp_path / "r.md"
    assert main(["diff", old, new, "--no-diffs", "-q", "--runbook", str(md)]) == 1
    text = md.read_text()
    assert "- every spine's ASN changes: all fabric BGP sessions reset\n" in text
    assert "need a full config reload: DEVICE_METADATA|localhost|bgp_asn changes (read at start-up)" in text


@pytest.mark.parametrize("text", ['{"PORT": {', "[]", "null", '{"PORT": 5}'])
def test_a_config_db_that_is_no_config_db_is_named_not_a_traceback(text, tmp_path, capsys):
    """Finding: a truncated config_db.json (or `[]`, `null`) on either side of a runbook diff
    was a JSONDecodeError or AttributeError traceback."""
    small = "name: rb\nhb_domain: {size: 2, count: 4}\nswitch: {radix: 4, platform: sonic}\nrail: {mode: routed}\n"
    old = _compile(small, tmp_path / "a")
    new = _compile(small.replace("count: 4", "count: 6"), tmp_path / "b")
    bad = tmp_path / "b" / "configs" / "rb-rail0-leaf0" / "config_db.json"
    bad.write_text(text)
    for args in ((old, new), (new, old)):
        rc = main(["diff", *args, "--no-diffs", "-q", "--runbook", str(tmp_path / "r.md")])
        err = capsys.readouterr().err
        assert rc == 2 and f"{bad}:" in err and "Traceback" not in err, err
        assert not (tmp_path / "r.md").exists()
