"""Unit tests (no root): clab exec translation, whole-lab plans, dry-run, reprogram script."""

from __future__ import annotations

from dataclasses import replace

import pytest

from railonly.cli import main
from railonly.emulation.lab import LabError, link_rates, load_lab
from railonly.emulation.runtime.netns import frr
from railonly.emulation.runtime.netns import lab_plan
from railonly.emulation.runtime.netns import ns_plan as nsplan
from railonly.emulation.runtime.netns.reprogram import reprogram_script
from railonly.emulation.runtime.netns.runtime import NetnsRuntime
from railonly.fabric.outputs import clab_exec

from ..conftest import compile_to, design_text
from .conftest import SONIC_L2


@pytest.fixture(scope="module")
def labs(tmp_path_factory):
    base = tmp_path_factory.mktemp("plans")
    return {
        "routed": load_lab(compile_to(design_text("labs/mini-routed.yml", "plr"), base / "r")),
        "l2": load_lab(compile_to(design_text("labs/mini-l2.yml", "pll"), base / "l")),
        "sonic-l2": load_lab(compile_to(SONIC_L2.format(name="pls"), base / "s")),
    }


def test_exec_translation():
    lines = ["ip link set dev eth1 mtu 9000", "ip addr add 10.0.0.2/29 dev eth1", "sysctl -w net.ipv4.ip_forward=1",
             "ip route add 10.64.0.0/10 via 172.16.0.2 dev hb0 src 10.0.0.2", "ip link add name br0 type bridge",
             "ip link set dev br0 up", "ip link set dev gpu0 master br0"]
    items, sysctls = lab_plan.exec_items("ns", [clab_exec.parse(line) for line in lines])
    assert nsplan.Bridge("ns", "br0", ("gpu0",)) in items
    assert nsplan.Link("ns", "eth1", mtu=9000, up=True) in items
    assert nsplan.Address("ns", "eth1", "10.0.0.2/29") in items
    assert nsplan.Route("ns", "10.64.0.0/10", via="172.16.0.2", dev="hb0", src="10.0.0.2") in items
    assert sysctls == [("net.ipv4.ip_forward", "1")]


@pytest.mark.parametrize("line", ["sh -c reboot", "ip link add x type vlan", "ip route add default table 5 via 1.1.1.1",
                                  "sysctl -w kernel.panic=1", "ip link set dev eth1 down"])
def test_exec_refuses_what_it_cannot_translate(line):
    """One grammar: what the reader refuses the runtime cannot even be handed."""
    with pytest.raises(clab_exec.ExecLineError):
        clab_exec.parse(line)
    with pytest.raises(lab_plan.ExecError):
        lab_plan.exec_items("ns", [tuple(line.split())])


def test_each_exec_form_renders_what_it_parses():
    for line in ["ip link set dev eth1 mtu 9000", "ip link set dev br0 up", "ip link set dev gpu0 master br0",
                 "ip link add name br0 type bridge", "ip addr add 10.0.0.2/29 dev eth1",
                 "ip route add 10.64.0.0/10 via 172.16.0.2 dev hb0", "ip route add 10.64.0.0/10 via 172.16.0.2 dev hb0 src 10.0.0.2",
                 "sysctl -w net.ipv4.conf.all.rp_filter=0"]:
        assert str(clab_exec.parse(line)) == line


def test_routed_plan_shape(labs):
    lab = labs["routed"]
    lp = lab_plan.build(lab)
    plan = lp.plan
    assert len(plan.namespaces) == len(lab.nodes) and all(n.name.startswith("clab-plr-") for n in plan.namespaces)
    assert len(plan.veths) == len(lab.links)
    ends = {(v.a_ns, v.a_dev) for v in plan.veths} | {(v.b_ns, v.b_dev) for v in plan.veths}
    for lk in lab.links:  # every interface carries its fabric.json port name
        for e in (lk.a, lk.b):
            assert (lab.netns(e.node), e.port) in ends
    leaf = lab.netns(f"{lab.name}-rail0-leaf0")
    br = [b for b in plan.bridges if b.netns == leaf]
    assert br == [nsplan.Bridge(leaf, "Vlan1000", ("Ethernet0", "Ethernet8"), mtu=9100)]
    assert nsplan.Address(leaf, "Vlan1000", "10.0.0.1/29") in plan.addresses
    assert nsplan.Address(leaf, "lo", "10.255.0.1/32") in plan.addresses
    assert nsplan.Address(leaf, "Ethernet16", "10.128.0.1/31") in plan.addresses
    hb = [b for b in plan.bridges if b.netns == lab.netns("hb0")]
    assert hb == [nsplan.Bridge(lab.netns("hb0"), "br0", ("gpu0", "gpu1"))]
    assert len(plan.processes) == len(frr.DAEMONS) * len(lab.switches) and set(lp.frr) == set(lab.names("switch"))
    assert lp.bgp_peers["plr-rail0-leaf0"] == 2 and lp.bgp_peers["plr-rail0-spine0"] == 3
    gpu = lab.netns("hb0-gpu0")
    assert ("net.ipv4.ip_forward", "1") in dict(((n.name, n.sysctls) for n in plan.namespaces))[gpu]
    assert nsplan.validate(plan) == []


def test_shaping_scaled_with_ratio(labs):
    lab = labs["routed"]
    plan = lab_plan.build(lab).plan
    rates = {(s.netns, s.dev): (s.rate_mbit, s.kind) for s in plan.shaping}
    assert rates[(lab.netns("hb0-gpu0"), "eth1")] == (100.0, "tbf")
    assert rates[(lab.netns(f"{lab.name}-rail0-leaf0"), "Ethernet0")] == (100.0, "tbf")
    assert rates[(lab.netns("hb0-gpu0"), "hb0")] == (900.0, "htb")  # 3600/400 = 9x the NIC
    assert rates[(lab.netns("hb0"), "gpu0")] == (900.0, "htb")
    assert len(plan.shaping) == 2 * len(lab.links)
    assert not lab_plan.build(lab, shaping=False).plan.shaping


def test_nic_mbps_from_fabric(labs):
    lab = labs["routed"]
    head = lab.fabric.design
    lab.fabric.design = replace(head, lab_nic_mbps=50)
    try:
        assert link_rates(lab) == (50.0, 450.0)
    finally:
        lab.fabric.design = head


def test_l2_switch_bridges_inside_switch_namespace(labs):
    for key in ("l2", "sonic-l2"):
        lab = labs[key]
        plan = lab_plan.build(lab).plan
        sw = lab.netns(f"{lab.name}-rail0-leaf0")
        (br,) = [b for b in plan.bridges if b.netns == sw]
        assert br.name == "Vlan1000" and set(br.ports) == {p.port for p in lab.ports(f"{lab.name}-rail0-leaf0")}
        assert not plan.processes  # no BGP on L2 rails
        assert ("net.ipv4.ip_forward", "0") in dict((n.name, n.sysctls) for n in plan.namespaces)[sw]


def test_broken_config_is_a_lab_error(labs, tmp_path):
    import shutil

    lab = labs["routed"]
    bad = tmp_path / "cfg"
    shutil.copytree(lab.configs_dir / "plr-rail0-leaf0", bad)
    (bad / "config_db.json").write_text("{not json")
    with pytest.raises(LabError, match="not valid JSON"):
        lab_plan.build(lab, config_dirs={"plr-rail0-leaf0": str(bad)})


def test_big_lab_raises_gc_thresh():
    assert nsplan.neigh_gc_sysctls(20) == ()
    assert dict(nsplan.neigh_gc_sysctls(1100))["net.ipv4.neigh.default.gc_thresh3"] == str(64 * 1100)


def test_dry_run_without_root(labs, capsys):
    assert main(["lab", "deploy", str(labs["routed"].outdir), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "netns add clab-plr-plr-rail0-leaf0" in out and "HB links 900 Mbit/s" in out
    assert "/usr/lib/frr/bgpd" in out


def test_dry_run_is_pure_text(labs):
    assert NetnsRuntime().dry_run(labs["l2"]).count("netns add ") == len(labs["l2"].nodes)


def test_reprogram_script():
    items = [nsplan.Bridge("ns", "Vlan10", ("Ethernet0",), mtu=9100), nsplan.Link("ns", "Ethernet0", mtu=9100, up=False),
             nsplan.Address("ns", "lo", "10.255.0.1/32")]
    s = reprogram_script("ns", items, ["Ethernet0"], ["Vlan1000"]).splitlines()
    assert s[0] == "link del dev Vlan1000"
    assert "addr flush dev Ethernet0 scope global" in s and "addr flush dev lo scope global" in s
    assert s.index("link add Vlan10 mtu 9100 type bridge stp_state 0") < s.index("link set dev Ethernet0 master Vlan10")
    assert "link set dev Ethernet0 mtu 9100 down" in s and s[-1] == "addr add 10.255.0.1/32 dev lo"
