"""Planning and judging are pure: tested on compiled designs and synthetic evidence (no root)."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from railonly.cli import main
from railonly.emulation.checks import judge, probe, check_report as report
from railonly.emulation.checks import check_plan as checks_plan
from railonly.emulation.lab import load_lab
from railonly.emulation.traffic import completion_time as model, patterns

LABS = Path(__file__).resolve().parents[2] / "labs"


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    out = {}
    for d in ("mini-routed", "mini-l2", "mini-baseline"):
        o = tmp_path_factory.mktemp(d)
        assert main(["compile", str(LABS / f"{d}.yml"), "-o", str(o / "out")]) == 0
        out[d] = checks_plan.load(load_lab(o / "out"))
    return out


def test_plan_counts(plans):
    r = plans["mini-routed"]
    assert len(r.reach_pairs()) == 2 * 6 * 5
    assert len(r.bgp) == 2 * 12 and set(r.foreign) == {s for s in r.switches}
    assert all(ps.via for ps in r.paths if ps.cross)
    b = plans["mini-baseline"]
    assert not b.isolation_applies and all(ps.via is None for ps in b.paths)
    l2 = plans["mini-l2"]
    assert l2.mode == "l2" and not l2.bgp and all(ps.l2_switches for ps in l2.paths)


def test_cross_rail_path_goes_through_the_hb_mate(plans):
    cp = plans["mini-routed"]
    for ps in cp.paths:
        if ps.cross:
            s, v, d = cp.gpus[ps.src], cp.gpus[ps.via], cp.gpus[ps.dst]
            assert v.hb == s.hb and v.rail == d.rail and ps.layers[0] == (ps.via,)


def test_reachability_fails_naming_gpu_and_port(plans):
    cp = plans["mini-routed"]
    seen = set(cp.reach_pairs())
    assert all(r.passed for r in judge.reachability(cp, seen))
    lost = {p for p in seen if "hb3-gpu0" in p}
    res = judge.reachability(cp, seen - lost)
    bad = [r for r in res if not r.passed]
    assert len(bad) == len(lost) and all("hb3-gpu0:eth1" in r.detail for r in bad)


def test_isolation_leak_fails(plans):
    cp = plans["mini-l2"]
    g = cp.gpus["hb0-gpu0"]
    probes = [(0, "hb0-gpu0", "broadcast", "ff")]
    assert judge.isolation_probes(cp, {0: {("hb1-gpu0", "eth1")}}, probes)[0].passed
    r = judge.isolation_probes(cp, {0: {("hb1-gpu0", "eth1"), ("hb0-gpu1", "eth1")}}, probes)[0]
    assert not r.passed and "hb0-gpu1:eth1" in r.detail and g.rail == 0


def test_isolation_probe_that_could_not_be_sent_fails(plans):
    cp = plans["mini-routed"]
    probes = [(2, "hb0-gpu0", "packet", "to hb0-gpu1"), (258, "hb1-gpu0", "packet", "to hb1-gpu1")]
    why = "its neighbour table holds no MAC for its gateway 10.0.0.1 on eth1"
    res = {r.id: r for r in judge.isolation_probes(cp, {}, probes, {"hb0-gpu0": why})}
    assert not res["isolation/rail0/hb0-gpu0"].passed and why in res["isolation/rail0/hb0-gpu0"].detail
    assert res["isolation/rail0/hb1-gpu0"].passed  # nothing seen elsewhere, and it was sent


def test_isolation_routes(plans):
    cp = plans["mini-routed"]
    own = [{"dst": p, "dev": "Vlan1000"} for p in cp.rail_subnets[0]]
    assert judge.isolation_routes(cp, {"minir-rail0-leaf0": own})[0].passed
    res = {r.id: r for r in judge.isolation_routes(cp, {s: own for s in cp.foreign})}
    assert res["isolation/minir-rail0-leaf0/routes"].passed
    assert not res["isolation/minir-rail1-leaf0/routes"].passed  # rail 1 switch holding rail 0's subnets
    leaky = own + [{"dst": "default", "gateway": "192.0.2.1"}]
    assert not judge.isolation_routes(cp, {"minir-rail0-leaf0": leaky})[0].passed


def test_path_judging(plans):
    cp = plans["mini-routed"]
    inv = {}
    for a, n in cp.ip_owner.items():
        inv.setdefault(n, a)
    hops, arrived = {}, {}
    for i, ps in enumerate(cp.paths):
        hops[i] = {t: inv[layer[0]] for t, layer in enumerate(ps.layers, 1) if layer}
        arrived[i] = len(ps.layers) + 1
    assert all(r.passed for r in judge.path(cp, hops, arrived))
    i = next(i for i, ps in enumerate(cp.paths) if not ps.cross and len(ps.layers) == 3)
    wrong = dict(hops)
    wrong[i] = {**hops[i], 2: inv[cp.paths[i].layers[0][0]]}  # the leaf answering as if it were a spine
    assert not judge.path(cp, wrong, arrived)[i].passed
    longer = {**arrived, i: arrived[i] + 1}
    assert "expected 3" in judge.path(cp, hops, longer)[i].detail


def test_bgp_and_cabling_judging(plans):
    cp = plans["mini-routed"]
    peers = {s.switch: {} for s in cp.bgp}
    for s in cp.bgp:
        peers[s.switch][s.peer] = {"state": "Established", "pfxRcd": 3}
    routes = {sw: [{"dst": p} for p in want] for sw, want in cp.prefixes.items()}
    assert all(r.passed for r in judge.bgp(cp, peers, routes))
    s0 = cp.bgp[0]
    peers[s0.switch][s0.peer] = {"state": "Active"}
    bad = [r for r in judge.bgp(cp, peers, routes) if not r.passed]
    assert [r.id for r in bad] == [f"bgp/{s0.switch}/{s0.peer}"] and "Active" in bad[0].detail
    heard = {}
    for c in cp.cables:
        heard[(c.a_node, c.a_port)] = {(c.b_node, c.b_port)}
        heard[(c.b_node, c.b_port)] = {(c.a_node, c.a_port)}
    assert all(r.passed for r in judge.cabling(cp, heard))
    c0, c1 = cp.cables[0], cp.cables[1]
    heard[(c0.b_node, c0.b_port)] = {(c1.a_node, c1.a_port)}
    bad = [r for r in judge.cabling(cp, heard) if not r.passed]
    assert len(bad) == 1 and f"hears {c1.a_node}:{c1.a_port}" in bad[0].detail


def test_reports_json_and_junit_shapes():
    res = [judge.Result("reachability/rail0/a->b", "reachability", True, "ok"),
           judge.Result("bgp/s/1.2.3.4", "bgp", False, "s -> 1.2.3.4: Active")]
    doc = report.as_json("demo", res)
    assert doc["passed"] == 1 and doc["failed"] == 1 and doc["results"][1]["id"] == "bgp/s/1.2.3.4"
    root = ET.fromstring(report.as_junit("demo", res).split("\n", 1)[1])
    assert [t.get("name") for t in root.iter("testcase")] == ["reachability/rail0/a->b", "bgp/s/1.2.3.4"]
    assert len(list(root.iter("failure"))) == 1
    assert "FAILED" in report.table("demo", res)
    assert judge.unique(res + res[:1]) == ["reachability/rail0/a->b"]


def test_probe_frames_round_trip():
    p = probe.payload("lab1", probe.K_REACH, 77, 3)
    assert probe.parse_payload(p, "lab1") == (probe.K_REACH, 77, 3)
    assert probe.parse_payload(p, "lab2") is None
    pkt = probe.ip_udp("10.0.0.1", "10.0.0.2", p, ttl=5, ident=9, checksum=True)
    assert probe._csum(pkt[:20]) == 0 and pkt[22:24] == (4791).to_bytes(2, "big")
    f = probe.lldp_frame(b"\x02" * 6, "lab1", "leaf0", "Ethernet8")
    assert probe.parse_lldp(f, "lab1") == ("leaf0", "Ethernet8") and probe.parse_lldp(f, "x") is None
    from scapy.contrib.roce import BTH
    from scapy.layers.inet import IP

    s = IP(pkt)
    assert s.dport == 4791 and s.haslayer(BTH)


def test_traffic_plan_and_model(plans):
    cp, base = plans["mini-routed"], plans["mini-baseline"]
    ring = patterns.plan_flows(cp, "ring-allreduce", 1000)
    assert len(ring) == 12 and all(cp.gpus[f.src].rail == cp.gpus[f.dst].rail for f in ring)
    a2a = patterns.plan_flows(cp, "all-to-all", 1000)
    assert len(a2a) == 12 * 10 and sum(1 for f in a2a if f.via) == 60
    m = model.model(cp, a2a, 100.0, 900.0)
    mb = model.model(base, patterns.plan_flows(base, "all-to-all", 1000), 100.0, 900.0)
    assert m["pipelined"] == pytest.approx(mb["pipelined"])
    # store-and-forward overhead = (HB step) / (NIC step) = (K-1)/K * NIC/HB here
    assert m["store_forward"] / mb["store_forward"] - 1 == pytest.approx(0.5 * 100 / 900, rel=1e-6)


def _run_bpf(prog, frame: bytes, pkttype: int) -> int:
    """A classic-BPF interpreter for the opcodes the probe agent's filter uses."""
    pc, a = 0, 0
    while True:
        code, jt, jf, k = prog[pc]
        if code == 0x20 and k == 0xFFFFF004:
            a = pkttype
        elif code == 0x28:
            a = int.from_bytes(frame[k:k + 2], "big") if k + 2 <= len(frame) else None
        elif code == 0x30:
            a = frame[k] if k < len(frame) else None
        elif code == 0x06:
            return k
        elif code in (0x15, 0x35):
            if a is None:  # a load past the end: the kernel returns 0 (drop)
                return 0
            ok = a == k if code == 0x15 else a >= k
            pc += jt if ok else jf
        else:
            raise AssertionError(hex(code))
        pc += 1


def test_packet_filter_keeps_lldp_and_isolation_probes_only():
    mac = bytes(6)
    lab = "bpf"
    lldp = probe.lldp_frame(mac, lab, "n", "p")
    def frame(kind):
        return probe.ether(b"\xff" * 6, mac, probe.ETH_P_IP, probe.ip_udp("10.0.0.1", "10.0.0.2", probe.payload(lab, kind, 7)))
    arp = probe.ether(b"\xff" * 6, mac, 0x0806, bytes(28))
    keep = lambda f, t=0: _run_bpf(probe._BPF, f, t) > 0  # noqa: E731
    assert keep(lldp) and not keep(lldp, probe.PACKET_OUTGOING)
    assert keep(frame(probe.K_ISO_BCAST)) and keep(frame(probe.K_ISO_UNKNOWN)) and keep(frame(probe.K_ISO_ROUTED))
    assert not keep(frame(probe.K_REACH)) and not keep(frame(probe.K_PATH)) and not keep(arp)
    assert not keep(frame(probe.K_ISO_BCAST), probe.PACKET_OUTGOING)


def test_cabling_csv_floor_names_map_to_the_labs_gpu_nodes(plans):
    """cabling.csv names a NIC end `hb0:rail0`; the cabling check still plans every cable, each end
    as the lab names it (the GPU's namespace, port eth1)."""
    for name, plan in plans.items():
        fabric_cables = {(lk.a.node, lk.a.port, lk.b.node, lk.b.port) for lk in plan_fabric(name).cables()}
        planned = {(c.a_node, c.a_port, c.b_node, c.b_port) for c in plan.cables}
        assert planned == fabric_cables, name


def plan_fabric(name):
    """The fabric graph of a design, as the lab reads it back from the fabric.json compile writes."""
    from railonly.fabric.compiler import compile_design
    from railonly.fabric.design.design import load_design
    from railonly.fabric.graph import fabric_json

    _, files = compile_design(load_design(str(LABS / f"{name}.yml")))
    return fabric_json.parse(files[fabric_json.FILE].decode())


def test_fault_link_spec_takes_the_floor_name():
    from railonly.fabric.design.physical import Naming

    nodes = plan_fabric("mini-routed").nodes
    names = Naming(nodes)
    assert names.graph_end("hb3", "rail1") == ("hb3-gpu1", "eth1")
    assert names.graph_end("minir-rail0-leaf0", "Ethernet0") == ("minir-rail0-leaf0", "Ethernet0")
    assert names.graph_end("hb0", "gpu1") == ("hb0", "gpu1")  # the HB node's own ports are not NICs


def test_a_lost_probe_is_retried_past_the_deadline_before_its_pair_fails():
    from railonly.emulation.checks import checker as checks_run

    class Agent:
        pumped = 0

        def pump(self, seconds):
            self.pumped += 1

    missing = [3, 2, 1, 1, 1, 1, 1]  # what each round still has to send

    def send():
        return missing.pop(0)

    ag = Agent()
    # a deadline already past after the first round (a large lab's first round outlasts it):
    # the lost probes are re-sent MIN_RETRIES times anyway, then judged
    assert checks_run._rounds(ag, send, timeout=0.0, settle=0.0) == 1 + checks_run.MIN_RETRIES
    arrived = [3, 1, 0]
    assert checks_run._rounds(ag, lambda: arrived.pop(0), timeout=0.0, settle=0.0) == 2  # all answered


def test_bfd_and_bgp_are_judged_on_the_same_last_round(monkeypatch):
    """Right after a fault BFD still read up (its detect time not yet over) and was never read
    again while BGP was polled, failing, until the timeout: `bfd` passed beside a failed `bgp`
    session on the same link. BFD is read every round BGP is."""
    from types import SimpleNamespace

    from railonly.emulation.checks import checker

    reads = []
    monkeypatch.setattr(checker, "bgp_peers", lambda rt, lab, s: {})
    monkeypatch.setattr(checker, "kernel_routes_many", lambda rt, lab, sws: {s: [] for s in sws})
    monkeypatch.setattr(checker, "_bgp_done", lambda cp, peers, routes: False)  # the session stays down

    def bfd_peers(rt, lab, s):
        reads.append(s)
        return ["up"] if len(reads) == 1 else ["down"]  # up at the first read only

    monkeypatch.setattr(checker, "bfd_peers", bfd_peers)
    monkeypatch.setattr(judge, "bfd", lambda cp, sessions: [SimpleNamespace(passed=v == ["up"]) for v in sessions.values()])
    cp = SimpleNamespace(bgp=[SimpleNamespace(switch="leaf0", bfd=True)], prefixes={"leaf0": []}, foreign={})
    st = checker.collect_switches(None, None, cp, 1.2, bgp=True, bfd=True)
    assert len(reads) >= 2 and st.bfd == {"leaf0": ["down"]}


def test_send_errors_are_one_note_per_cause_with_a_count():
    """One downed link: each round's frame send failed alike, and check printed the note five times."""
    from railonly.emulation.checks.checker import counted_notes

    errs = ["leaf0:Ethernet8: send: Network is down", "hb1-gpu1:eth1: send: Network is down"] * 5
    assert counted_notes(errs) == ["leaf0:Ethernet8: send: Network is down (5 times)",
                                   "hb1-gpu1:eth1: send: Network is down (5 times)"]
    assert counted_notes(["a: send: x"]) == ["a: send: x"]
    many = [f"n{i}: send: x" for i in range(12)] * 2
    got = counted_notes(many)
    assert len(got) == 11 and got[-1] == "... and 2 more distinct send errors (4 in all)"
