"""Traffic on a real lab: interface counters account for the bytes the report
claims, no flow beats its shaped rate, cross-rail flows are forwarded by the
GPU the plan names."""

from __future__ import annotations

import json
import subprocess

import pytest

from railonly.cli import main
from railonly.emulation.checks import check_plan as checks_plan
from railonly.emulation.traffic import completion_time as model, iperf3, patterns

pytestmark = pytest.mark.netns


def counters(ns: str) -> dict[str, dict]:
    out = subprocess.run(["ip", "-n", ns, "-s", "-j", "link"], check=True, capture_output=True, text=True).stdout
    return {l["ifname"]: l["stats64"] for l in json.loads(out)}


@pytest.mark.parametrize("pattern", ["ring-allreduce", "all-to-all"])
def test_counters_account_for_reported_bytes(routed_shared, tmp_path, pattern):
    d = routed_shared
    cp = checks_plan.load(d.lab)
    before = {g: counters(d.ns(g)) for g in cp.gpus}
    out = tmp_path / "t.json"
    rc = main(["lab", "traffic", str(d.outdir), "--pattern", pattern, "--bytes", "2000000", "--json", str(out)])
    after = {g: counters(d.ns(g)) for g in cp.gpus}
    rep = json.loads(out.read_text())
    # the timing verdict (pass, fail outside the tolerance, or inconclusive on a saturated host) is
    # judged elsewhere; here: every flow completed and the exit code is the verdict's
    assert rc == {"pass": 0, "fail": 1, "inconclusive": 3}[rep["verdict"]] and rep["failed_flows"] == 0
    assert rep["pattern"] == pattern and rep["completion_s"] > 0 and rep["model_completion_s"] > 0
    n = len(cp.gpus)
    assert len(rep["flows"]) == (n if pattern == "ring-allreduce" else n * (n - 2))
    nic = rep["nic_gbps_emulated"] * 1000
    hb = rep["hb_gbps_emulated"] * 1000
    flows = []
    for f in rep["flows"]:
        assert 0 < f["bytes"] <= f["bytes_written"]
        # no flow beats its shaped rate: a token bucket lets through at most
        # rate * t + burst (the tbf burst of the lab's NIC shaping: 128 KiB, + a jumbo frame)
        assert f["bytes"] <= nic * 1e6 / 8 * f["seconds"] + 128 * 1024 + 9000, f
        if f["via"]:
            g, v = cp.gpus[f["src"]], cp.gpus[f["via"]]
            assert v.hb == g.hb and v.rail == cp.gpus[f["dst"]].rail
        flows.append(patterns.Flow(f["src"], f["dst"], f["via"], f["bytes"]))
    # every byte the report claims crossed the links the plan says: tx counters on
    # each GPU's NIC and HB port are at least the claimed load (plus headers), and not
    # wildly more (what the receiver did not read was still sent: bytes_written bounds it)
    claimed = model.link_loads(flows)
    # before the timed steps the host-capacity probe sends one flow from every GPU over HB and one over its rail
    cap = rep["host_capacity"] or {}
    probe = {"hb": cap.get("bytes_per_flow", 0), "nic": cap.get("nic_bytes_per_flow", 0)}
    written = model.link_loads([patterns.Flow(f["src"], f["dst"], f["via"], f["bytes_written"]) for f in rep["flows"]])
    for (g, kind, direction), nbytes in claimed.items():
        if direction != "out":
            continue
        dev = cp.gpus[g].port if kind == "nic" else cp.gpus[g].hb_port
        tx = after[g][dev]["tx"]["bytes"] - before[g][dev]["tx"]["bytes"]
        assert tx >= nbytes, (g, dev, tx, nbytes)
        assert tx <= (written[(g, kind, direction)] + probe[kind]) * 1.10 + 200_000, (g, dev, tx, written[(g, kind, direction)])
    assert hb > nic


def test_switch_link_counters_place_every_inter_leaf_byte(routed_shared, tmp_path):
    """The placement-aware model reads real counters: per step, the bytes the leaves' uplinks
    carried are the bytes of the flows that leave their leaf (each crosses one uplink), and
    the placed model is the larger of the ideal and the busiest link's bytes at its rate."""
    d = routed_shared
    cp = checks_plan.load(d.lab)
    out = tmp_path / "t.json"
    rc = main(["lab", "traffic", str(d.outdir), "--pattern", "all-to-all", "--bytes", "4000000", "--json", str(out)])
    rep = json.loads(out.read_text())
    assert rc == {"pass": 0, "fail": 1, "inconclusive": 3}[rep["verdict"]] and rep["failed_flows"] == 0
    assert rep["streams"] == 4 and all(f["streams"] == 4 for f in rep["flows"])
    # persistent socket agents (no process per flow): every planned byte is read and timed
    assert rep["agents"] == "sockets"
    assert all(f["bytes"] == f["bytes_written"] == rep["bytes_per_flow"] for f in rep["flows"])
    tiers = {n.name: n.tier for n in d.lab.fabric.nodes}
    rates = {dl.name: dl.bytes_per_s for dl in iperf3.directed_links(d.lab, 100)}
    for st in rep["steps"]:
        flows = [f for f in rep["flows"] if f["step"] == st["step"]]
        # the NIC leg of a forwarded flow starts at the forwarding GPU
        crossing = [f for f in flows if cp.gpus[f["via"] or f["src"]].leaf != cp.gpus[f["dst"]].leaf]
        # every byte the receivers got crossed an uplink; what a sender wrote may partly have
        # stayed in its socket buffer when iperf3 ended the -n test, so it bounds from above only
        received = sum(f["bytes"] for f in crossing)
        written = sum(f["bytes_written"] for f in crossing)
        up = sum(v for k, v in st["link_bytes"].items()
                 if tiers.get(k.split(":")[0]) == 1 and tiers.get(k.split("->")[1]) == 2)
        assert received <= up <= rep["bytes_per_flow"] * 0.05 * len(flows) + written * 1.06, (st["step"], up, received, written)
        assert st["model_placed_s"] >= st["model_ideal_s"]
        # the placed model: the busiest of every shaped link, GPU NICs and HB ports included
        b = st["bound"]
        assert b["bytes"] == st["link_bytes"][b["link"]]
        assert b["seconds"] == pytest.approx(max(v / rates[k] for k, v in st["link_bytes"].items()), abs=1e-4)
        assert st["model_placed_s"] == pytest.approx(max(st["model_ideal_s"], b["seconds"]), abs=2e-4)
        if st["ecmp"]:
            assert st["link_bytes"][st["ecmp"]["busiest"]] / rates[st["ecmp"]["busiest"]] <= b["seconds"] + 1e-4
    assert rep["model_placed_s"] == pytest.approx(sum(s["model_placed_s"] for s in rep["steps"]), abs=1e-3)
    assert rep["network_s"] == pytest.approx(sum(s["measured_s"] for s in rep["steps"]), abs=1e-3)
    assert rep["overhead_s"] > 0 and rep["host_cpu"]["windows"] == len(rep["steps"])


def test_busy_loops_pinning_every_cpu_make_the_verdict_inconclusive_exit_3(routed_shared, tmp_path):
    """A real saturated host (not a sampled fake): one busy loop per CPU, killed by PID."""
    import os
    import sys
    import time

    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    out = tmp_path / "t.json"
    try:
        time.sleep(1)
        rc = main(["lab", "traffic", str(routed_shared.outdir), "--pattern", "all-to-all", "--bytes", "2000000",
                   "--json", str(out), "-q"])
    finally:
        for p in loops:
            p.kill()
            p.wait()
    rep = json.loads(out.read_text())
    assert rc == 3 and rep["verdict"] == "inconclusive" and rep["host_cpu"]["saturated"], rep["verdict"]
    assert rep["network_s"] > 0 and rep["model_placed_s"] > 0  # the figures are kept beside the verdict
