"""Real deploys in network namespaces: two hosts, two FRR routers peering eBGP
over a /31, a bridge in a switch namespace, a port left out of the bridge."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from railonly import proc
from railonly.emulation.lab import netns_prefix
from railonly.emulation.runtime.netns import engine, frr, pids, setns
from railonly.emulation.runtime.netns import ns_plan as nsplan

pytestmark = pytest.mark.netns

LAB = f"rotest{os.getpid() % 10000}main"


def ns(node: str) -> str:
    return netns_prefix(LAB) + node


def frr_conf(name: str, asn: int, peer: str, peer_as: int, nets: list[str]) -> str:
    lines = [f"hostname {name}", f"router bgp {asn}", f" bgp router-id {peer[:-1]}9",
             " no bgp ebgp-requires-policy", f" neighbor {peer} remote-as {peer_as}",
             " neighbor " + peer + " timers connect 1", " address-family ipv4 unicast"]
    lines += [f"  network {n}" for n in nets]
    return "\n".join(lines + [" exit-address-family", ""])


def main_plan(workdir: str) -> tuple[nsplan.Plan, list[frr.FrrInstance]]:
    """h1,h3 -- sw(br0: p1,p2; p3 unbridged) -- r1 ==/31 eBGP== r2 -- h2"""
    b = nsplan.PlanBuilder(LAB)
    h1, h2, h3 = (b.ns(n, nsplan.host_sysctls()) for n in ("h1", "h2", "h3"))
    sw = b.ns("sw")
    r1, r2 = (b.ns(n, nsplan.router_sysctls()) for n in ("r1", "r2"))
    b.add(nsplan.Veth(h1, "eth1", sw, "p1")).add(nsplan.Veth(r1, "eth1", sw, "p2")).add(nsplan.Veth(h3, "eth1", sw, "p3"))
    b.add(nsplan.Bridge(sw, "br0", ("p1", "p2")))
    b.add(nsplan.Veth(r1, "eth2", r2, "eth2", mtu=9000)).add(nsplan.Veth(r2, "eth1", h2, "eth1"))
    for nsn, dev, cidr in ((h1, "eth1", "10.1.0.2/24"), (h3, "eth1", "10.1.0.3/24"), (r1, "eth1", "10.1.0.1/24"),
                           (r1, "eth2", "10.0.0.0/31"), (r2, "eth2", "10.0.0.1/31"),
                           (r2, "eth1", "10.2.0.1/24"), (h2, "eth1", "10.2.0.2/24")):
        b.add(nsplan.Address(nsn, dev, cidr))
    b.add(nsplan.Route(h1, "default", via="10.1.0.1")).add(nsplan.Route(h2, "default", via="10.2.0.1"))
    b.add(nsplan.Route(h3, "default", via="10.1.0.1"))
    b.add(nsplan.Shaping(h1, "eth1", 100))  # tbf: h1 -> anything at 100 Mbit/s
    b.add(nsplan.Shaping(h2, "eth1", 50, kind="htb"))  # htb: h2 -> anything at 50 Mbit/s
    insts = []
    for name, nsn, asn, peer, peer_as, nets in (("r1", r1, 65101, "10.0.0.1", 65102, ["10.1.0.0/24"]),
                                                 ("r2", r2, 65102, "10.0.0.0", 65101, ["10.2.0.0/24"])):
        inst = frr.instance(f"/run/{LAB}", name, nsn)  # /run: searchable by user frr
        insts.append(inst)
        for p in frr.processes(inst, frr_conf(name, asn, peer, peer_as, nets)):
            b.add(p)
    b.add(nsplan.Process("h2/iperf3", h2, ("iperf3", "-s", "-B", "10.2.0.2"), os.path.join(workdir, "iperf3.pid"),
                    log=os.path.join(workdir, "iperf3.log")))
    return b.build(), insts


@pytest.fixture(scope="module")
def main_lab(module_labs):
    if not (shutil.which("vtysh") and shutil.which("iperf3")):
        pytest.skip("FRR (vtysh) or iperf3 is not installed")
    plan, insts = main_plan(str(module_labs.tmp))
    rep = module_labs.deploy(plan)  # module_labs destroys it, pass or fail
    yield module_labs, plan, insts, rep
    engine.destroy(module_labs.state(plan.lab))
    assert not [n for n in setns.list_netns() if n.startswith(plan.prefix)]


def ping(src: str, dst: str, count: int = 1) -> bool:
    return proc.run(["ping", "-n", "-q", "-c", str(count), "-W", "1", dst], netns=ns(src), timeout=10).ok


def iperf_mbit(src: str, server: str, reverse: bool = False) -> float:
    argv = ["iperf3", "-c", server, "-t", "2", "-J"] + (["-R"] if reverse else [])
    res = proc.run(argv, netns=ns(src), timeout=20)
    assert res.ok, res.stdout[-500:] + res.stderr
    end = json.loads(res.stdout)["end"]
    return end["sum_received"]["bits_per_second"] / 1e6


def test_all_namespaces_and_processes_up(main_lab):
    lb, plan, insts, rep = main_lab
    assert not rep.noop and rep.namespaces == 6 and rep.processes == 2 * len(frr.DAEMONS) + 1  # FRR per router, and one more
    st = engine.status(lb.state(plan.lab))
    assert st.complete, st
    assert set(st.namespaces) == {n.name for n in plan.namespaces}
    state = engine.load_state(lb.state(plan.lab))
    assert state["phase"] == "deployed" and state["fingerprint"] == plan.fingerprint()


def test_sysctls_applied_in_namespace_only(main_lab):
    def fwd():
        return setns.read_sysctl("net.ipv4.ip_forward")
    assert setns.call_in(ns("r1"), fwd) == "1"
    assert setns.call_in(ns("h1"), fwd) == "0"
    assert proc.run(["sysctl", "-n", "net.ipv4.icmp_ratelimit"], netns=ns("r2")).stdout.strip() == "0"


def test_ping_over_bridge(main_lab):
    assert ping("h1", "10.1.0.1", count=2)


def test_ping_fails_to_port_outside_bridge(main_lab):
    # h3 sits on p3, which is not a member of br0: same subnet, no path
    assert not ping("h1", "10.1.0.3")
    assert not ping("h3", "10.1.0.1")


def test_bgp_established(main_lab):
    _, _, insts, _ = main_lab
    seen = frr.wait_established(insts, min_prefixes=1, timeout=45)
    assert frr.converged(seen), seen
    summ = frr.bgp_summary(insts[0])
    assert summ["ipv4Unicast"]["peers"]["10.0.0.1"]["state"] == "Established"
    assert summ["ipv4Unicast"]["as"] == 65101
    assert frr.running(insts[1])["bgpd"] is not None


def test_ping_across_bgp_routes(main_lab):
    _, _, insts, _ = main_lab
    assert frr.converged(frr.wait_established(insts, min_prefixes=1, timeout=45))
    deadline = time.monotonic() + 15  # zebra installs the route just after the update
    while not ping("h1", "10.2.0.2") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ping("h1", "10.2.0.2", count=2)
    route = proc.run(["ip", "route", "show", "10.2.0.0/24"], netns=ns("r1")).stdout
    assert "proto bgp" in route and "via 10.0.0.1" in route


def test_tbf_and_htb_rates_hold(main_lab):
    _, _, insts, _ = main_lab
    assert frr.converged(frr.wait_established(insts, min_prefixes=1, timeout=45))
    up = iperf_mbit("h1", "10.2.0.2")  # h1 sends through its tbf
    assert 80 <= up <= 105, up
    down = iperf_mbit("h1", "10.2.0.2", reverse=True)  # h2 sends through its htb
    assert 40 <= down <= 53, down


def test_redeploy_same_plan_is_noop(main_lab):
    lb, plan, _, _ = main_lab
    rep = lb.deploy(plan)
    assert rep.noop


# --- lifecycle: destroy, failure halfway, interruption --------------------------------


def tiny_plan(lab: str, workdir: str, extra_procs=()) -> nsplan.Plan:
    b = nsplan.PlanBuilder(lab)
    a, c = b.ns("a", nsplan.router_sysctls()), b.ns("c")
    b.add(nsplan.Veth(a, "eth1", c, "eth1"))
    b.add(nsplan.Address(a, "eth1", "10.77.0.0/31")).add(nsplan.Address(c, "eth1", "10.77.0.1/31"))
    b.add(nsplan.Process("a/sleep", a, ("sleep", "300"), os.path.join(workdir, "sleep.pid")))
    for p in extra_procs:
        b.add(p)
    return b.build()


def lab_leftovers(plan: nsplan.Plan, pidlist: list[int]) -> list[str]:
    left = [n for n in setns.list_netns() if n.startswith(plan.prefix)]
    left += [f"pid {p}" for p in pidlist if pids.info(p) is not None]
    return left


def test_destroy_removes_namespaces_and_processes(labs, lab_name, tmp_path):
    plan = tiny_plan(lab_name, str(tmp_path))
    labs.deploy(plan)
    st = engine.status(labs.state(lab_name))
    assert st.complete
    pid = st.processes["a/sleep"]
    assert pids.info(pid).netns_inode == setns.inode(netns_prefix(lab_name) + "a")
    rep = engine.destroy(labs.state(lab_name))
    assert rep.ok, rep.leftovers
    assert rep.killed == ["a/sleep"] and len(rep.deleted) == 2
    assert lab_leftovers(plan, [pid]) == []
    assert not os.path.exists(labs.state(lab_name))


def test_failed_deploy_halfway_is_cleaned_up(labs, lab_name, tmp_path):
    broken = nsplan.Process("a/broken", netns_prefix(lab_name) + "a", ("/nonexistent/daemon", "-d"),
                       str(tmp_path / "broken.pid"), daemonizes=True, ready_timeout=3)
    plan = tiny_plan(lab_name, str(tmp_path), [broken])
    with pytest.raises(engine.DeployError):
        labs.deploy(plan)
    state = engine.load_state(labs.state(lab_name))
    assert state["phase"] == "deploying"
    st = engine.status(labs.state(lab_name))
    sleeper = st.processes["a/sleep"]
    assert sleeper is not None and all(st.namespaces.values())
    rep = engine.destroy(labs.state(lab_name))
    assert rep.ok, rep.leftovers
    assert lab_leftovers(plan, [sleeper]) == []


def test_a_config_line_no_frr_daemon_takes_fails_the_deploy_and_destroy_stops_the_daemons(labs, lab_name, tmp_path):
    # the config goes in by vtysh -b after the last daemon: its refusal is the deploy's
    inst = frr.instance(f"/run/{lab_name}", "a", netns_prefix(lab_name) + "a")
    procs = frr.processes(inst, "hostname a\nrouter bgp 65001\n no such command\nexit\n")
    plan = tiny_plan(lab_name, str(tmp_path), procs)
    with pytest.raises(engine.DeployError, match=r"process a/bgpd: vtysh .*-b failed \(\d+\)") as failed:
        labs.deploy(plan)
    assert "Can't open configuration file" not in str(failed.value)  # the empty vtysh.conf: FRR's own words first
    st = engine.status(labs.state(lab_name))
    live = [st.processes[f"a/{d}"] for d in frr.DAEMONS]
    assert all(live), st.processes  # each recorded before the config load failed
    rep = engine.destroy(labs.state(lab_name))
    assert rep.ok, rep.leftovers
    assert lab_leftovers(plan, live) == [] and not os.path.exists(inst.rundir)


def test_keyboard_interrupt_in_hook_then_destroy(labs, lab_name, tmp_path):
    plan = tiny_plan(lab_name, str(tmp_path))

    def hook(phase, steps):
        if phase == "config":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        labs.deploy(plan, hook=hook)
    st = engine.status(labs.state(lab_name))
    assert all(st.namespaces.values()) and st.processes == {}
    rep = engine.destroy(labs.state(lab_name))
    assert rep.ok and sorted(rep.deleted) == sorted(n.name for n in plan.namespaces)
    assert lab_leftovers(plan, []) == []


CHILD = r"""
import sys, time, pathlib, pickle
from railonly.emulation.runtime.netns import engine
plan = pickle.loads(pathlib.Path(sys.argv[1]).read_bytes())
def hook(phase, steps):
    if phase == "settle":  # after the namespaces, links and the process exist
        pathlib.Path(sys.argv[3]).write_text("ready")
        time.sleep(60)
engine.deploy(plan, sys.argv[2], hook=hook)
"""


def test_sigint_to_deploying_process_then_destroy(labs, lab_name, tmp_path):
    import pickle

    plan = tiny_plan(lab_name, str(tmp_path))
    (tmp_path / "plan.pkl").write_bytes(pickle.dumps(plan))
    marker = tmp_path / "ready"
    state = labs.state(lab_name)
    # a real second process, interrupted like a user's Ctrl-C
    # SIG_DFL before exec: a background job's children start with SIGINT
    # ignored (CI may run us so), and Python would then never raise KeyboardInterrupt.
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "plan.pkl"), state, str(marker)],
                             stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 30
        while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), child.stderr.read() if child.poll() is not None else "child never got ready"
        child.send_signal(signal.SIGINT)
        err = child.communicate(timeout=20)[1]
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode != 0 and "KeyboardInterrupt" in err
    st = engine.status(state)
    assert st.phase == "deploying" and all(st.namespaces.values())
    sleeper = st.processes["a/sleep"]
    assert sleeper is not None  # survived the parent's interrupt: its own session
    rep = engine.destroy(state)
    assert rep.ok, rep.leftovers
    assert "a/sleep" in rep.killed
    assert lab_leftovers(plan, [sleeper]) == []


def test_refuses_namespaces_it_does_not_own(labs, lab_name, tmp_path):
    plan = tiny_plan(lab_name, str(tmp_path))
    labs.deploy(plan)
    other_state = str(tmp_path / "other.json")
    with pytest.raises(engine.DeployError, match="not ours"):
        engine.deploy(plan, other_state)
    assert engine.status(labs.state(lab_name)).complete  # untouched
    assert not os.path.exists(other_state)


def test_destroy_never_kills_a_reused_pid(labs, lab_name, tmp_path):
    # a live process whose command differs from the record must survive destroy
    plan = tiny_plan(lab_name, str(tmp_path))
    labs.deploy(plan)
    path = labs.state(lab_name)
    bystander = proc.spawn(["sleep", "301"])
    try:
        state = engine.load_state(path)
        entry = state["processes"][0]
        entry["pid"], entry["starttime"] = bystander, pids.info(bystander).starttime
        with open(entry["pidfile"], "w") as f:
            f.write(f"{bystander}\n")
        engine._save(path, state)
        rep = engine.destroy(path)
        assert pids.info(bystander) is not None, "destroy killed a process that was not the recorded one"
        # the real sleeper is still found by its command inside the lab namespace
        assert rep.ok, rep.leftovers
        assert lab_leftovers(plan, []) == []
    finally:
        os.kill(bystander, signal.SIGKILL)


def test_root_neigh_gc_raised_and_restored(labs, lab_name, tmp_path):
    key = "net.ipv4.neigh.default.gc_thresh3"
    before = setns.read_sysctl(key)
    plan = tiny_plan(lab_name, str(tmp_path))
    plan = nsplan.Plan(**{**plan.__dict__, "root_sysctls": ((key, str(int(before) + 1)),)})
    labs.deploy(plan)
    assert setns.read_sysctl(key) == str(int(before) + 1)
    rep = engine.destroy(labs.state(lab_name))
    assert rep.ok and rep.restored == [f"{key}={before}"]
    assert setns.read_sysctl(key) == before


def test_destroy_keeps_shared_parent_dirs_of_other_labs(labs, lab_name, tmp_path):
    top = f"/run/{lab_name}-shared"
    plan = nsplan.Plan(**{**tiny_plan(lab_name, str(tmp_path)).__dict__, "processes": (
        nsplan.Process("a/sleep", netns_prefix(lab_name) + "a", ("sleep", "300"), f"{top}/mine/sleep.pid",
                  dirs=(f"{top}/mine",)),)})
    labs.deploy(plan)
    os.makedirs(f"{top}/other-lab")  # appears after our deploy created {top}
    try:
        assert engine.destroy(labs.state(lab_name)).ok
        assert not os.path.exists(f"{top}/mine") and os.path.isdir(f"{top}/other-lab")
    finally:
        os.rmdir(f"{top}/other-lab")
        os.rmdir(top)
