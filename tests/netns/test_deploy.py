"""Real deploys (root): routed two-tier SONiC with FRR, L2 EOS, routed EOS (BGP from
the translated startup-config). Every lab is destroyed by the module fixture, pass or fail."""

from __future__ import annotations

import ipaddress
import json
import shutil
import time

import pytest

from railonly import proc
from railonly.emulation.runtime.netns import frr, lab_plan, pids, setns
from railonly.emulation.runtime.netns.reprogram import apply_switch_config
from railonly.fabric.outputs import clab_exec

from ..conftest import compile_to, design_text, unique
from .conftest import EOS_ROUTED, leftovers, own_processes

pytestmark = pytest.mark.netns


def sh(ns: str, *argv: str, timeout: float = 15) -> proc.Result:
    return proc.run(list(argv), netns=ns, timeout=timeout)


def addr(lab, node: str, port: str = "eth1") -> str:
    ip = next(p.ip for p in lab.ports(node) if p.port == port)
    return str(ipaddress.ip_interface(ip).ip)


def ping(lab, src: str, dst_ip: str, *extra: str) -> bool:
    return sh(lab.netns(src), "ping", "-n", "-c", "1", "-W", "2", *extra, dst_ip).ok


@pytest.fixture(scope="module")
def routed(deployer, outdirs):
    lab, res = deployer.deploy(compile_to(design_text("labs/mini-routed.yml", unique("r")), outdirs / "routed"))
    return lab, res


@pytest.fixture(scope="module")
def l2(deployer, outdirs):
    return deployer.deploy(compile_to(design_text("labs/mini-l2.yml", unique("l")), outdirs / "l2"))


@pytest.fixture(scope="module")
def eos_routed(deployer, outdirs):
    return deployer.deploy(compile_to(EOS_ROUTED.format(name=unique("e")), outdirs / "eosr"))


def eventually(fn, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not fn():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def bgp_states(lab) -> dict[str, dict[str, str]]:
    return {sw: frr.peer_states(inst) for sw, inst in lab_plan.build(lab).frr.items()}


@pytest.mark.parametrize("which", ["routed", "eos_routed"])
def test_bgp_established(which, request):
    lab, res = request.getfixturevalue(which)
    assert res.bgp_converged, res.bgp
    states = bgp_states(lab)
    assert set(states) == set(lab.names("switch"))
    for sw, st in states.items():  # vtysh json, asked again after deploy returned
        assert st and all(s == "Established" for s in st.values()), (sw, st)
    assert len(states[f"{lab.name}-rail0-spine0"]) == 3


def test_same_rail_ping_across_the_clos(routed):
    lab, _ = routed
    assert ping(lab, "hb0-gpu0", addr(lab, "hb5-gpu0"))  # leaf0 -> spine -> leaf2
    assert ping(lab, "hb1-gpu1", addr(lab, "hb4-gpu1"))


def test_cross_rail_goes_through_the_hb_domain(routed):
    lab, _ = routed
    dst = addr(lab, "hb5-gpu1")  # rail 1, another HB domain
    sibling_hb = addr(lab, "hb0-gpu1", "hb0")
    got = sh(lab.netns("hb0-gpu0"), "ip", "-j", "route", "get", dst)
    route = json.loads(got.stdout)[0]
    assert (route["gateway"], route["dev"]) == (sibling_hb, "hb0"), route
    tr = sh(lab.netns("hb0-gpu0"), "traceroute", "-n", "-q", "1", "-w", "1", "-m", "2", dst, timeout=20)
    first = tr.stdout.splitlines()[1].split()
    assert first[1] in (sibling_hb, addr(lab, "hb0-gpu1")), tr.stdout  # the sibling GPU forwards it
    assert ping(lab, "hb0-gpu0", dst)


def test_rail_nic_cannot_reach_another_rail(routed):
    lab, _ = routed
    ns = lab.netns("hb0-gpu0")
    dst = addr(lab, "hb5-gpu1")
    other_rail = next(r for r in lab.nodes["hb0-gpu0"].exec if isinstance(r, clab_exec.RouteAdd) and r.dev == "hb0")
    assert sh(ns, "ip", "route", "del", other_rail.dst).ok
    try:
        assert not ping(lab, "hb0-gpu0", dst, "-I", "eth1")
    finally:
        assert sh(ns, *str(other_rail).split()).ok
    # and the rail's own switch has no route to the other rail at all
    got = sh(lab.netns(f"{lab.name}-rail0-leaf0"), "ip", "route", "get", dst)
    assert not got.ok and "unreachable" in (got.stderr + got.stdout).lower(), got


def test_switch_programmed_from_its_config(routed):
    lab, _ = routed
    ns = lab.netns(f"{lab.name}-rail0-leaf0")
    links = {d["ifname"]: d for d in json.loads(sh(ns, "ip", "-d", "-j", "link", "show").stdout)}
    for p in lab.ports(f"{lab.name}-rail0-leaf0"):
        assert p.port in links and links[p.port]["mtu"] == 9100
    assert links["Vlan1000"]["linkinfo"]["info_kind"] == "bridge"
    assert links["Ethernet0"]["master"] == "Vlan1000" and "master" not in links["Ethernet16"]
    addrs = {(i["ifname"], f"{a['local']}/{a['prefixlen']}") for i in json.loads(sh(ns, "ip", "-j", "addr").stdout)
             for a in i["addr_info"] if a.get("scope") == "global"}
    assert {("Vlan1000", "10.0.0.1/29"), ("lo", "10.255.0.1/32"), ("Ethernet16", "10.128.0.1/31")} <= addrs
    q = sh(lab.netns("hb0-gpu0"), "tc", "-j", "qdisc", "show", "dev", "eth1")
    assert json.loads(q.stdout)[0]["kind"] == "tbf"


def test_redeploy_is_a_noop(routed, deployer):
    lab, _ = routed
    assert deployer.rt.deploy(lab).noop
    assert deployer.rt.status(lab).running


def test_l2_eos_lab(l2):
    lab, res = l2
    assert res.bgp_converged is None  # no BGP on L2 rails
    assert ping(lab, "hb0-gpu0", addr(lab, "hb3-gpu0"))
    dst = addr(lab, "hb3-gpu2")  # rail 2 via the HB domain
    route = json.loads(sh(lab.netns("hb0-gpu0"), "ip", "-j", "route", "get", dst).stdout)[0]
    assert (route["gateway"], route["dev"]) == (addr(lab, "hb0-gpu2", "hb0"), "hb0")
    assert ping(lab, "hb0-gpu0", dst)
    sw = lab.netns(f"{lab.name}-rail0-leaf0")
    bridges = json.loads(sh(sw, "ip", "-j", "link", "show", "master", "Vlan1000").stdout)
    assert {b["ifname"] for b in bridges} == {p.port for p in lab.ports(f"{lab.name}-rail0-leaf0")}
    assert setns.call_in(sw, lambda: setns.read_sysctl("net.ipv4.ip_forward")) == "0"
    glob = [a for i in json.loads(sh(sw, "ip", "-j", "addr").stdout) for a in i["addr_info"] if a.get("scope") == "global"]
    assert not glob  # "no ip routing", no SVI address


def test_apply_switch_config_reprograms_one_switch(routed, tmp_path):
    lab, _ = routed
    sw = f"{lab.name}-rail0-leaf0"
    orig = lab.configs_dir / sw
    pushed = tmp_path / sw
    shutil.copytree(orig, pushed)
    db = json.loads((pushed / "config_db.json").read_text())
    db["PORT"]["Ethernet0"]["admin_status"] = "down"  # a pushed change: shut the port to hb0-gpu0
    (pushed / "config_db.json").write_text(json.dumps(db))
    rep = apply_switch_config(lab, sw, str(pushed))
    assert rep.frr_restarted
    links = {d["ifname"]: d for d in json.loads(sh(lab.netns(sw), "ip", "-j", "link").stdout)}
    assert "UP" not in links["Ethernet0"]["flags"]
    assert not ping(lab, "hb0-gpu0", addr(lab, "hb1-gpu0"))
    back = apply_switch_config(lab, sw, str(orig))
    assert back.frr_restarted
    inst = lab_plan.build(lab).frr[sw]
    seen = frr.wait_established([inst], expected={sw: 2}, min_prefixes=1, timeout=60)
    assert frr.converged(seen, {sw: 2}), seen
    assert ping(lab, "hb0-gpu0", addr(lab, "hb1-gpu0"))
    assert eventually(lambda: ping(lab, "hb0-gpu0", addr(lab, "hb5-gpu0")), 20)  # the spines relearn the leaf


def test_destroy_leaves_nothing(routed, l2, eos_routed, deployer):
    for lab, _ in (routed, l2, eos_routed):
        procs = own_processes(lab)
        assert procs or not lab_plan.build(lab).frr
        deployer.rt.destroy(lab)
        assert not leftovers(lab)
        assert deployer.rt.status(lab).state == "absent"
        alive = [p for p in procs if pids.info(p) is not None]  # zombies do not count
        assert not alive, alive
