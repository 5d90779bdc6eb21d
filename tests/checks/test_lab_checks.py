"""Every check passes on a healthy lab and fails, naming nodes and ports, on the
fault it exists to catch. Faults are made with plain `ip`/`vtysh` commands
(outside the project), except where `railonly lab fault` itself is tested."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET

import pytest

from railonly.cli import main

pytestmark = pytest.mark.netns


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=30).stdout


def check(d, tmp_path, *extra: str) -> tuple[int, dict]:
    out = tmp_path / "check.json"
    rc = main(["lab", "check", str(d.outdir), "--json", str(out), "--timeout", "8", *extra])
    return rc, json.loads(out.read_text())


def failed(doc: dict, check_name: str) -> list[dict]:
    return [r for r in doc["results"] if r["check"] == check_name and not r["passed"]]


def test_healthy_routed_lab_passes_every_check_json_and_junit(routed_shared, tmp_path):
    d = routed_shared
    junit = tmp_path / "check.xml"
    rc, doc = check(d, tmp_path, "--junit", str(junit))
    assert rc == 0, [r for r in doc["results"] if not r["passed"]][:5]
    assert doc["lab"] == d.lab.name and doc["failed"] == 0
    checks = {r["check"] for r in doc["results"]}
    assert checks == {"reachability", "isolation", "path", "bgp", "cabling", "bfd"}
    ids = [r["id"] for r in doc["results"]]
    assert len(ids) == len(set(ids)) == doc["passed"]
    # all same-rail ordered pairs: 2 rails x 6 GPUs -> 2 * 6 * 5
    assert sum(r["check"] == "reachability" for r in doc["results"]) == 60
    # every cable of cabling.csv (NIC ends named hb<d>:rail<r> there) is checked from both ends
    assert sum(r["check"] == "cabling" for r in doc["results"]) == 24
    root = ET.parse(junit).getroot()
    names = [tc.get("name") for tc in root.iter("testcase")]
    assert sorted(names) == sorted(ids)
    assert not list(root.iter("failure"))
    # the forwarding hop of a cross-rail pair is visible and named
    cross = [r for r in doc["results"] if r["id"].startswith("path/cross-rail/")]
    assert cross and all("forwarded by" in r["detail"] for r in cross)


def test_healthy_l2_lab_passes(l2, tmp_path):
    rc, doc = check(l2, tmp_path)
    assert rc == 0, [r for r in doc["results"] if not r["passed"]][:5]
    assert {r["check"] for r in doc["results"]} == {"reachability", "isolation", "path", "cabling"}


def test_gpu_rail_link_down_fails_reachability_naming_the_gpu(routed, tmp_path):
    sh("ip", "-n", routed.ns("hb3-gpu0"), "link", "set", "dev", "eth1", "down")
    rc, doc = check(routed, tmp_path, "--only", "reachability")
    assert rc == 1
    bad = failed(doc, "reachability")
    assert len(bad) == 10  # 5 peers each way on rail 0
    assert all("hb3-gpu0" in r["id"] and "hb3-gpu0:eth1" in r["detail"] for r in bad)


def test_stray_veth_between_l2_rails_fails_isolation(l2, tmp_path):
    ns0, ns1 = l2.ns(l2.sw("rail0-leaf0")), l2.ns(l2.sw("rail1-leaf0"))
    br0 = json.loads(sh("ip", "-n", ns0, "-j", "link", "show", "type", "bridge"))[0]["ifname"]
    br1 = json.loads(sh("ip", "-n", ns1, "-j", "link", "show", "type", "bridge"))[0]["ifname"]
    sh("ip", "link", "add", "stray0", "netns", ns0, "type", "veth", "peer", "name", "stray1", "netns", ns1)
    sh("ip", "-n", ns0, "link", "set", "stray0", "master", br0, "up")
    sh("ip", "-n", ns1, "link", "set", "stray1", "master", br1, "up")
    rc, doc = check(l2, tmp_path, "--only", "isolation")
    assert rc == 1
    bad = failed(doc, "isolation")
    assert any("rail 0" in r["detail"] and "(rail 1)" in r["detail"] for r in bad)


def test_stray_routed_link_between_rails_fails_isolation(routed, tmp_path):
    ns0, ns1 = routed.ns(routed.sw("rail0-leaf0")), routed.ns(routed.sw("rail1-leaf0"))
    sh("ip", "link", "add", "stray0", "netns", ns0, "type", "veth", "peer", "name", "stray1", "netns", ns1)
    sh("ip", "-n", ns0, "addr", "add", "192.0.2.0/31", "dev", "stray0")
    sh("ip", "-n", ns1, "addr", "add", "192.0.2.1/31", "dev", "stray1")
    sh("ip", "-n", ns0, "link", "set", "stray0", "up")
    sh("ip", "-n", ns1, "link", "set", "stray1", "up")
    sh("ip", "-n", ns0, "route", "add", "10.64.0.0/10", "via", "192.0.2.1")
    sh("ip", "-n", ns1, "route", "add", "10.0.0.0/10", "via", "192.0.2.0")
    rc, doc = check(routed, tmp_path, "--only", "isolation")
    assert rc == 1
    bad = {r["id"]: r["detail"] for r in failed(doc, "isolation")}
    key = f"isolation/{routed.sw('rail0-leaf0')}/routes"
    assert key in bad and "192.0.2.1" in bad[key]
    # and a packet really crossed: some GPU of rail 0 reached rail 1
    assert any(k.startswith("isolation/rail0/") and "arrived at" in v for k, v in bad.items())


def test_isolation_fails_a_gpu_whose_frames_cannot_be_sent(routed_shared, tmp_path, monkeypatch):
    # a GPU without its gateway's neighbour entry sends no isolation frame: it must fail, not pass
    from railonly.emulation.checks import probe

    real = probe.Agent.neighbours

    def without_hb3_gpu0(self, asks, workers=4):
        got = real(self, asks, workers)
        assert got.get("hb3-gpu0")  # the healthy lab has the entry
        return {**got, "hb3-gpu0": None}

    monkeypatch.setattr(probe.Agent, "neighbours", without_hb3_gpu0)
    rc, doc = check(routed_shared, tmp_path, "--only", "isolation")
    assert rc == 1
    bad = {r["id"]: r["detail"] for r in failed(doc, "isolation")}
    assert list(bad) == ["isolation/rail0/hb3-gpu0"] and "no MAC for its gateway" in bad["isolation/rail0/hb3-gpu0"]


def test_switch_down_fails_bgp_and_cabling(routed, tmp_path):
    # plain ip: every port of a spine down
    ns = routed.ns(routed.sw("rail0-spine0"))
    for p in routed.lab.ports(routed.sw("rail0-spine0")):
        sh("ip", "-n", ns, "link", "set", "dev", p.port, "down")
    rc, doc = check(routed, tmp_path, "--only", "bgp", "--only", "cabling")
    assert rc == 1
    spine = routed.sw("rail0-spine0")
    assert any(spine in r["id"] for r in failed(doc, "bgp"))
    assert all(spine in r["id"] for r in failed(doc, "cabling"))
    assert len(failed(doc, "cabling")) == 3


def test_leaf_down_fails_reachability(routed, tmp_path):
    ns = routed.ns(routed.sw("rail0-leaf1"))
    for p in routed.lab.ports(routed.sw("rail0-leaf1")):
        sh("ip", "-n", ns, "link", "set", "dev", p.port, "down")
    rc, doc = check(routed, tmp_path, "--only", "reachability")
    assert rc == 1
    bad = failed(doc, "reachability")
    assert bad and all(("hb2-gpu0" in r["id"]) or ("hb3-gpu0" in r["id"]) for r in bad)


def test_bgp_session_shutdown_fails_bgp_naming_the_session(routed, tmp_path):
    from railonly.emulation.checks.checker import vtysh_argv

    conf = (routed.lab.configs_dir / routed.sw("rail0-leaf0") / "frr.conf").read_text()
    asn = next(line.split()[2] for line in conf.splitlines() if line.startswith("router bgp"))
    sh(*vtysh_argv(routed.rt, routed.lab, routed.sw("rail0-leaf0")), "-c", "configure terminal", "-c", f"router bgp {asn}",
       "-c", "neighbor 10.128.0.0 shutdown")
    rc, doc = check(routed, tmp_path, "--only", "bgp")
    assert rc == 1
    ids = {r["id"] for r in failed(doc, "bgp")}
    assert f"bgp/{routed.sw('rail0-leaf0')}/10.128.0.0" in ids and f"bgp/{routed.sw('rail0-spine0')}/10.128.0.1" in ids


def test_cables_swapped_fail_cabling(routed, tmp_path):
    # hb0-gpu0:eth1 <-> rail0-leaf0:Ethernet0 and hb1-gpu0:eth1 <-> rail0-leaf0:Ethernet8, recabled crossed
    g0, g1, leaf = routed.ns("hb0-gpu0"), routed.ns("hb1-gpu0"), routed.ns(routed.sw("rail0-leaf0"))
    sh("ip", "-n", g0, "link", "del", "eth1")
    sh("ip", "-n", g1, "link", "del", "eth1")
    sh("ip", "link", "add", "eth1", "netns", g0, "type", "veth", "peer", "name", "Ethernet8", "netns", leaf)
    sh("ip", "link", "add", "eth1", "netns", g1, "type", "veth", "peer", "name", "Ethernet0", "netns", leaf)
    for ns, dev in ((g0, "eth1"), (g1, "eth1"), (leaf, "Ethernet0"), (leaf, "Ethernet8")):
        sh("ip", "-n", ns, "link", "set", "dev", dev, "up")
    rc, doc = check(routed, tmp_path, "--only", "cabling")
    assert rc == 1
    bad = failed(doc, "cabling")
    assert {r["id"].split("/")[1] for r in bad} == {"R0-T1-00001", "R0-T1-00002"}
    assert any(f"{routed.sw('rail0-leaf0')}:Ethernet0 should hear hb0-gpu0:eth1 but hears hb1-gpu0:eth1" in r["detail"] for r in bad)


def test_lab_fault_command_and_restore(routed, tmp_path):
    out = str(routed.outdir)
    assert main(["lab", "fault", out, "--node", routed.sw("rail1-spine1")]) == 0
    rc, doc = check(routed, tmp_path, "--only", "bgp")
    assert rc == 1 and any(routed.sw("rail1-spine1") in r["id"] for r in failed(doc, "bgp"))
    # with a fault set the wait ends once what fails stays the same, not at the timeout
    rc, doc = check(routed, tmp_path, "--only", "bgp", "--timeout", "60")
    assert rc == 1 and any(routed.sw("rail1-spine1") in r["id"] for r in failed(doc, "bgp"))
    assert doc["timings_s"]["bgp"] < 30 and any(n.startswith("faults set: stopped waiting") for n in doc["notes"]), doc
    assert main(["lab", "fault", out, "--link", "hb2:rail1"]) == 0  # the floor name of hb2-gpu1:eth1
    rc, doc = check(routed, tmp_path, "--only", "reachability")
    assert rc == 1 and all("hb2-gpu1" in r["id"] for r in failed(doc, "reachability"))
    assert main(["lab", "fault", out, "--restore"]) == 0
    rc, doc = check(routed, tmp_path, "--timeout", "30")
    assert rc == 0, [r for r in doc["results"] if not r["passed"]][:5]


def test_not_deployed_exits_3(tmp_path):
    from .conftest import compile_design

    out = compile_design(tmp_path, "mini-l2", "n")
    assert main(["lab", "check", str(out)]) == 3
