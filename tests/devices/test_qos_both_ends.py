"""RoCE QoS on both ends (docs/qos.md): EOS gets the PFC watchdog and the queue
scheduling SONiC gets, from the same plan; every server gets the NIC side."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from cases import CASES, compiled  # noqa: E402

from railonly.fabric.compiler import compile_design  # noqa: E402
from railonly.fabric.design.design import parse_design  # noqa: E402


def test_eos_scheduling_and_watchdog_equal_sonics():
    files = compiled("mixed-routed-2tier")  # SONiC leaves, EOS spines: one plan, two vendors
    db = json.loads(files["configs/mx2-rail0-leaf0/config_db.json"])
    eos = files["configs/mx2-rail0-spine0/startup-config"].decode()
    sched = db["SCHEDULER"]
    queue = db["QUEUE"]
    port = next(p for p in db["PORT_QOS_MAP"])
    def of_queue(q: int) -> dict:  # ConfigDB keys name ranges of queues, e.g. Ethernet0|0-2
        for key, v in queue.items():
            name, _, span = key.partition("|")
            lo, _, hi = span.partition("-")
            if name == port and int(lo) <= q <= int(hi or lo):
                return sched[v["scheduler"]]
        raise AssertionError(f"no QUEUE entry for {port} queue {q}")

    weight = {q: of_queue(q) for q in (0, 3, 6)}
    block = eos.split("interface Ethernet1\n", 1)[1].split("\n!\n", 1)[0]
    for q, s in weight.items():
        m = re.search(rf"   tx-queue {q}\n((?:      .*\n?)+)", block)
        assert m, f"tx-queue {q} missing"
        body = m.group(1)
        if s["type"] == "STRICT":
            assert "      priority strict" in body
        else:
            assert "      no priority" in body and f"      bandwidth percent {s['weight']}" in body
    assert "random-detect ecn" in re.search(r"   tx-queue 3\n((?:      .*\n?)+)", block).group(1)
    # the watchdog: SONiC detects and restores after 200 ms, polling every 100 ms
    wd = db["PFC_WD"]
    detect = int(wd[port]["detection_time"]) / 1000
    assert f"priority-flow-control pause watchdog default timeout {detect}" in eos
    assert f"priority-flow-control pause watchdog default recovery-time {int(wd[port]['restoration_time']) / 1000}" in eos
    assert f"priority-flow-control pause watchdog default polling-interval {int(wd['GLOBAL']['POLL_INTERVAL']) / 1000}" in eos
    assert f"priority-flow-control pause watchdog action {wd[port]['action']}" in eos


def test_every_server_gets_the_nic_side_from_the_design():
    text = CASES["sonic-routed-2tier"] + "qos: {roce_dscp: 24, roce_priority: 4, cnp_dscp: 46, cnp_priority: 5}\n"
    _, files = compile_design(parse_design(text, "q.yml"))
    servers = {p.split("/")[1] for p in files if p.startswith("hosts/")}
    assert servers and all(f"hosts/{s}/roce-qos.sh" in files for s in servers)
    sh = files["hosts/hb0/roce-qos.sh"].decode()
    for nic in ("rail0", "rail1"):
        assert f"mlnx_qos -i {nic} --trust dscp\n" in sh
        assert f"mlnx_qos -i {nic} --dscp2prio set,24,4\n" in sh and f"mlnx_qos -i {nic} --dscp2prio set,46,5\n" in sh
        assert f"mlnx_qos -i {nic} --pfc 0,0,0,0,1,0,0,0\n" in sh  # lossless on the RoCE priority only
        assert f"echo 1 > /sys/class/net/{nic}/ecn/roce_np/enable/4\n" in sh
        assert f"echo 1 > /sys/class/net/{nic}/ecn/roce_rp/enable/4\n" in sh
        assert f"echo 46 > /sys/class/net/{nic}/ecn/roce_np/cnp_dscp\n" in sh
        assert f"echo 5 > /sys/class/net/{nic}/ecn/roce_np/cnp_802p_prio\n" in sh
    assert sh.count("cma_roce_tos -d \"$dev\" -t 96\n") == 2  # ToS = DSCP 24 << 2, as NCCL_IB_TC
    assert "NCCL_IB_TC=96" in files["hosts/hb0/nccl.env"].decode()
    assert subprocess.run(["sh", "-n"], input=sh, text=True).returncode == 0


def _cable_lengths(text: str) -> dict[str, set[str]]:
    """switch -> the CABLE_LENGTH values of its config_db.json, for a compiled design."""
    _, files = compile_design(parse_design(text, "q.yml"))
    return {p.split("/")[1]: set(json.loads(t)["CABLE_LENGTH"]["AZURE"].values())
            for p, t in files.items() if p.endswith("config_db.json")}


MODEL = """name: {name}
topology: rail-only
hb_domain: {{size: 8, count: 4, gbps: 3600}}
nic: {{gbps: 400}}
switch: {{model: {model}, breakout: 2x400G}}
rail: {{mode: routed}}
"""


def test_traditional_buffer_cable_length_is_a_published_profile_length():
    """A traditional-buffer SONiC switch (Broadcom: Dell Z9864F, and generic ones) looks
    CABLE_LENGTH up verbatim in the hwsku's pg_profile_lookup.ini (5m, 40m, 300m) and makes
    no lossless PG for another length: a 30 m cable is written 40m, a 45 m one 300m. An
    NVIDIA switch (dynamic buffer model) sizes headroom from the cable's own length."""
    dell = _cable_lengths(MODEL.format(name="dz", model="dell-z9864f"))
    assert dell and set().union(*dell.values()) == {"40m"}, dell  # 30 m NIC cables
    dell45 = _cable_lengths(MODEL.format(name="dz", model="dell-z9864f") + "cabling: {nic_leaf_m: 45}\n")
    assert set().union(*dell45.values()) == {"300m"}, dell45
    nv = _cable_lengths(MODEL.format(name="nv", model="nvidia-sn5600"))
    assert set().union(*nv.values()) == {"30m"}, nv
    from railonly.fabric.devices.qos import pg_profile_cable_length
    assert [pg_profile_cable_length(m) for m in (3, 5, 6, 30, 40, 41, 100, 300, 500)] == \
        ["5m", "5m", "40m", "40m", "40m", "300m", "300m", "300m", "500m"]
