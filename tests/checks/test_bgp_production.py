"""BGP as production fabrics run it, in a real two-tier routed lab (docs/bgp.md):
RFC 7938 ASNs, valley-free export, BFD on every fabric session, and the failover
time after a spine goes down."""

from __future__ import annotations

import json
import subprocess

import pytest

from railonly.cli import main

pytestmark = pytest.mark.netns


def vtysh_json(d, switch: str, command: str):
    from railonly.emulation.lab import run_dir
    from railonly.emulation.runtime.netns import frr

    inst = frr.instance(run_dir(d.lab.name), switch, d.ns(switch))
    res = frr.vtysh(inst, command)
    assert res.ok, res.stderr
    return json.loads(res.stdout)


def leaf_prefixes(d) -> dict[str, str]:
    """GPU subnet -> the leaf that owns it."""
    return {v.subnet: n.name for n in d.lab.fabric.switches if n.tier == 1 for v in n.vlans}


def spines(d) -> list[str]:
    return sorted(n.name for n in d.lab.fabric.switches if n.tier == 2)


def test_every_spine_holds_exactly_one_path_per_leaf_prefix_and_bfd_is_up(routed_shared, tmp_path):
    d = routed_shared
    out = tmp_path / "c.json"
    assert main(["lab", "check", str(d.outdir), "--only", "bgp", "--only", "bfd", "--json", str(out), "--timeout", "30"]) == 0
    doc = json.loads(out.read_text())
    bfd = [r for r in doc["results"] if r["check"] == "bfd"]
    # 2 rails x (3 leaves x 2 uplinks) sessions, each seen from both ends
    assert len(bfd) == 24 and all(r["passed"] and r["detail"].endswith("BFD up, detect 3 x 300 ms") for r in bfd), bfd
    owners = leaf_prefixes(d)
    for sp in spines(d):
        rail = sp.split("-spine")[0]
        table = vtysh_json(d, sp, "show bgp ipv4 unicast json")["routes"]
        for prefix, leaf in owners.items():
            if not leaf.startswith(rail + "-"):
                assert prefix not in table  # another rail: never here
                continue
            paths = table.get(prefix, [])
            assert len(paths) == 1, f"{sp} holds {len(paths)} paths to {prefix}: valley paths through other leaves"
            assert len(paths[0]["path"].split()) == 1  # learned from the leaf itself


def test_spines_of_a_rail_share_one_asn_leaves_have_their_own(routed_shared):
    sw = routed_shared.lab.fabric.switches
    for rail in (0, 1):
        spine_asns = {n.asn for n in sw if n.tier == 2 and n.rails == [rail]}
        leaf_asns = [n.asn for n in sw if n.tier == 1 and n.rails == [rail]]
        assert len(spine_asns) == 1 and len(set(leaf_asns)) == len(leaf_asns) == 3
        assert not spine_asns & set(leaf_asns)


def test_failover_after_a_spine_fault_is_reported_and_restored(routed, tmp_path):
    sp, other = spines(routed)[:2]
    # right after the other spine of the rail was restored: `lab fault --restore` returns once its
    # FRR is started, its sessions come some 6 s later, and every pair passes through sp meanwhile.
    # The failover of sp measured that comeback (5.5 s) until it waited for the fabric to be whole.
    assert main(["lab", "fault", str(routed.outdir), "--node", other]) == 0
    assert main(["lab", "fault", str(routed.outdir), "--restore"]) == 0
    out = tmp_path / "f.json"
    rc = main(["lab", "check", str(routed.outdir), "--failover", sp, "--json", str(out), "--timeout", "30"])
    doc = json.loads(out.read_text())
    assert rc == 0, doc["results"]
    res = {r["id"]: r for r in doc["results"]}
    fo = res[f"failover/{sp}"]
    assert fo["passed"] and "every pair passes again" in fo["detail"]
    seconds = float(fo["detail"].split("again ")[1].split(" s ")[0])
    assert 0 <= seconds < 3, fo["detail"]  # 0.1-0.3 s measured; 5.5 s was the other spine's comeback
    assert any("before the fault" in n for n in doc["notes"]), doc["notes"]  # it waited, and said so
    assert res[f"failover/{sp}/restored"]["passed"]
    assert not (routed.outdir / ".lab" / "faults.json").exists()  # restored, nothing left recorded
    # the spine is back: its FRR answers again
    rc = subprocess.run(["ip", "netns", "exec", routed.ns(sp), "true"]).returncode
    assert rc == 0
    # and so is its ECMP share: the rail's leaf routes the other leaves' subnets over both spines
    # (with kernel nexthop objects, FRR 8.4 left them on one spine after a restore until a redeploy)
    leaf = sp.split("-spine")[0] + "-leaf0"
    out = subprocess.run(["ip", "-n", routed.ns(leaf), "-j", "-4", "route", "show", "proto", "bgp"],
                         capture_output=True, text=True).stdout
    gpu_routes = [r for r in json.loads(out or "[]") if r["dst"].startswith("10.0.")]
    assert gpu_routes and all(len(r.get("nexthops", ())) == 2 for r in gpu_routes), gpu_routes


def test_valley_free_export_holds_with_one_asn_per_switch_too(routed_per_switch):
    # per-switch ASNs: AS-path loop prevention no longer blocks spine -> leaf -> spine;
    # the from-above community on the leaves' exports does
    d = routed_per_switch
    sw = d.lab.fabric.switches
    assert len({n.asn for n in sw}) == len(sw)
    owners = leaf_prefixes(d)
    main(["lab", "check", str(d.outdir), "--only", "bgp", "--timeout", "30"])
    for sp in spines(d):
        table = vtysh_json(d, sp, "show bgp ipv4 unicast json")["routes"]
        for prefix, leaf in owners.items():
            if leaf.startswith(sp.split("-spine")[0] + "-"):
                assert len(table.get(prefix, [])) == 1, (sp, prefix, table.get(prefix))


@pytest.fixture
def routed_own_bfd(tmp_path, monkeypatch):
    """mini-routed under a BFD budget of 10 packets/s: its 24 session ends run at 2,400 ms."""
    from railonly.fabric.design import routing
    from .conftest import _deploy

    monkeypatch.setattr(routing, "LAB_BFD_PACKETS_PER_S", 10)
    yield from _deploy(tmp_path, "mini-routed", "f")


def test_a_lab_with_bfd_timers_of_its_own_runs_them_on_every_session(routed_own_bfd, tmp_path):
    d = routed_own_bfd
    assert "lab/configs/" in next(d.outdir.glob("*.clab.yml")).read_text()
    out = tmp_path / "c.json"
    assert main(["lab", "check", str(d.outdir), "--only", "bgp", "--only", "bfd", "--json", str(out), "--timeout", "60"]) == 0
    bfd = [r for r in json.loads(out.read_text())["results"] if r["check"] == "bfd"]
    # bfdd took the profile (sent to it by vtysh -b), both ends agreed on it
    assert len(bfd) == 24 and all(r["passed"] and r["detail"].endswith("detect 3 x 2400 ms") for r in bfd), bfd
