"""A lab built short of its build-out (hb_domain.planned > count) runs: spines of the
build-out with few leaves under them converge and pass every check."""

from __future__ import annotations

import json

import pytest

from railonly.cli import main

from ..conftest import compile_to, unique

pytestmark = pytest.mark.netns

PARTIAL = ("name: {name}\nhb_domain: {{size: 2, count: 3, planned: 6}}\n"
           "switch: {{radix: 4, platform: sonic}}\nrail: {{mode: routed}}\n")


def test_partial_build_out_passes_every_check(deployer, outdirs, tmp_path):
    name = unique("grow")
    outdir = compile_to(PARTIAL.format(name=name), outdirs / "grow")
    fabric = json.loads((outdir / "fabric.json").read_text())
    switches = {n["name"] for n in fabric["nodes"] if n["role"] == "switch"}
    # two of three leaves per rail (the second half full), both spines of the build-out
    assert switches == {f"{name}-rail{r}-{s}" for r in (0, 1) for s in ("leaf0", "leaf1", "spine0", "spine1")}
    lab, res = deployer.deploy(outdir)
    assert res.bgp_converged, res.bgp
    report = tmp_path / "check.json"
    rc = main(["lab", "check", str(outdir), "--json", str(report), "--timeout", "8"])
    doc = json.loads(report.read_text())
    assert rc == 0, [r for r in doc["results"] if not r["passed"]][:5]
    assert {r["check"] for r in doc["results"]} == {"reachability", "isolation", "path", "bgp", "cabling", "bfd"}


PACKED_BASELINE = ("name: {name}\ntopology: rail-optimized\nhb_domain: {{size: 5, count: 2}}\n"
                   "switch: {{radix: 8, platform: sonic}}\nrail: {{mode: routed}}\n")


def test_packed_baseline_passes_every_check(deployer, outdirs, tmp_path):
    # 5 rails of 2 GPUs at radix 8: leaves carry 2 whole rails each (3 leaves), under 2 spines
    name = unique("pack")
    outdir = compile_to(PACKED_BASELINE.format(name=name), outdirs / "pack")
    fabric = json.loads((outdir / "fabric.json").read_text())
    leaves = {n["name"]: n["rails"] for n in fabric["nodes"] if n["role"] == "switch" and n["tier"] == 1}
    assert leaves == {f"{name}-rails0-1": [0, 1], f"{name}-rails2-3": [2, 3], f"{name}-rail4-leaf0": [4]}
    lab, res = deployer.deploy(outdir)
    assert res.bgp_converged, res.bgp
    report = tmp_path / "check.json"
    rc = main(["lab", "check", str(outdir), "--json", str(report), "--timeout", "8"])
    doc = json.loads(report.read_text())
    assert rc == 0, [r for r in doc["results"] if not r["passed"]][:5]
