"""Plan rendering and validation: pure, no root needed."""

from __future__ import annotations

import dataclasses

import pytest

from railonly.emulation.runtime.netns import engine, frr
from railonly.emulation.runtime.netns import ns_plan as nsplan


def small_plan(**over) -> nsplan.Plan:
    b = nsplan.PlanBuilder("demo")
    h = b.ns("h1", nsplan.host_sysctls())
    r = b.ns("r1", nsplan.router_sysctls() + (("net.ipv4.conf.eth1.rp_filter", "0"),))
    sw = b.ns("sw")
    b.add(nsplan.Veth(h, "eth1", sw, "p1", mtu=9000)).add(nsplan.Veth(r, "eth1", sw, "p2"))
    b.add(nsplan.Bridge(sw, "br0", ("p1", "p2")))
    b.add(nsplan.Address(h, "eth1", "10.1.0.2/24")).add(nsplan.Address(r, "eth1", "10.1.0.1/24"))
    b.add(nsplan.Address(r, "lo", "2001:db8::1/128"))
    b.add(nsplan.Route(h, "default", via="10.1.0.1"))
    b.add(nsplan.Route(r, "10.9.0.0/16", nexthops=(nsplan.Nexthop("10.1.0.2", "eth1", 2), nsplan.Nexthop(dev="eth1", onlink=True))))
    b.add(nsplan.Route(r, "10.8.0.0/16", via="10.1.0.7", dev="eth1", table=100, onlink=True, metric=5))
    b.add(nsplan.Rule(r, table=100, priority=1000, src="10.1.0.0/24", iif="eth1"))
    b.add(nsplan.Shaping(h, "eth1", 100))
    b.add(nsplan.Shaping(r, "eth1", 2.5, kind="htb"))
    b.add(nsplan.Process("srv", r, ("iperf3", "-s"), "/run/x/srv.pid"))
    plan = b.build()
    return dataclasses.replace(plan, **over)


def by_phase(steps):
    out = {}
    for s in steps:
        out.setdefault(s.phase, []).append(s)
    return out


def test_phases_in_order_and_names_prefixed():
    plan = small_plan()
    steps = nsplan.render(plan)
    order = list(dict.fromkeys(s.phase for s in steps))
    assert order == ["netns", "sysctl", "links", "shaping", "config", "sysctl-late", "processes"]
    assert plan.prefix == "clab-demo-"
    assert all(n.name.startswith("clab-demo-") for n in plan.namespaces)


def test_one_batch_for_namespaces_and_one_for_links_created_in_place():
    ph = by_phase(nsplan.render(small_plan()))
    assert len(ph["netns"]) == 1 and ph["netns"][0].argv == ("ip", "-batch", "-")
    assert ph["netns"][0].stdin.count("netns add clab-demo-") == 3
    links = ph["links"]
    assert len(links) == 1
    text = links[0].stdin
    assert (
        "link add eth1 netns clab-demo-h1 mtu 9000 type veth peer name p1 netns clab-demo-sw mtu 9000\n" in text
    )
    assert "link add br0 netns clab-demo-sw type bridge stp_state 0\n" in text
    # never create in the root namespace and move (33 ms each)
    assert not any(" netns " in line and "set" in line for s in nsplan.render(small_plan()) for line in (s.stdin or "").splitlines())


def test_config_batch_content():
    ph = by_phase(nsplan.render(small_plan()))
    cfg = {s.netns: s.stdin.splitlines() for s in ph["config"]}
    sw = cfg["clab-demo-sw"]
    assert sw[0] == "link set lo up"
    # ports join the bridge before they come up
    assert sw.index("link set dev p1 master br0") < sw.index("link set dev p1 up")
    r = cfg["clab-demo-r1"]
    assert "addr add 2001:db8::1/128 dev lo nodad" in r
    assert "route add 10.9.0.0/16 nexthop via 10.1.0.2 dev eth1 weight 2 nexthop dev eth1 weight 1 onlink" in r
    assert "route add 10.8.0.0/16 table 100 metric 5 via 10.1.0.7 dev eth1 onlink" in r
    assert "rule add priority 1000 from 10.1.0.0/24 iif eth1 table 100" in r
    # routes after addresses, rules last
    assert r.index("addr add 10.1.0.1/24 dev eth1") < r.index(next(x for x in r if x.startswith("route")))
    assert cfg["clab-demo-h1"][-1] == "route add default via 10.1.0.1"


def test_sysctls_split_early_and_device_late():
    ph = by_phase(nsplan.render(small_plan()))
    early = {s.netns: dict(s.items) for s in ph["sysctl"]}
    assert early["clab-demo-r1"]["net.ipv4.ip_forward"] == "1"
    assert early["clab-demo-r1"]["net.ipv4.icmp_ratelimit"] == "0"
    assert early["clab-demo-r1"]["net.ipv4.fib_multipath_hash_policy"] == "1"
    assert "net.ipv4.conf.eth1.rp_filter" not in early["clab-demo-r1"]
    late = ph["sysctl-late"]
    assert [(s.netns, s.items) for s in late] == [("clab-demo-r1", (("net.ipv4.conf.eth1.rp_filter", "0"),))]


def test_shaping_tbf_and_htb():
    ph = by_phase(nsplan.render(small_plan()))
    tc = {s.netns: s.stdin for s in ph["shaping"]}
    assert tc["clab-demo-h1"] == "qdisc replace dev eth1 root tbf rate 100000kbit burst 131072 latency 50ms\n"
    assert "root handle 1: htb default 1" in tc["clab-demo-r1"]
    assert "classid 1:1 htb rate 2500kbit ceil 2500kbit" in tc["clab-demo-r1"]
    assert ph["shaping"][0].argv[:3] == ("tc", "-n", "clab-demo-h1")


def test_processes_run_in_namespace():
    (step,) = by_phase(nsplan.render(small_plan()))["processes"]
    assert step.argv == ("ip", "netns", "exec", "clab-demo-r1", "iperf3", "-s")
    assert step.process.pidfile == "/run/x/srv.pid"


def test_dump_is_deterministic_and_readable():
    a, b = nsplan.dump(small_plan()), nsplan.dump(small_plan())
    assert a == b
    assert "ip -batch - <<'EOF'\nnetns add clab-demo-h1\n" in a
    assert "ip -n clab-demo-sw -batch - <<'EOF'" in a
    assert "ip netns exec clab-demo-r1 sysctl -q -w net.ipv4.ip_forward=1" in a
    assert "tc -n clab-demo-h1 -batch -" in a
    assert "ip netns exec clab-demo-r1 iperf3 -s" in a


def test_fingerprint_tracks_content():
    assert small_plan().fingerprint() == small_plan().fingerprint()
    assert small_plan().fingerprint() != small_plan(shaping=()).fingerprint()


@pytest.mark.parametrize(
    "change, needle",
    [
        (lambda p: dataclasses.replace(p, lab="Bad Lab"), "lab name"),
        (lambda p: dataclasses.replace(p, namespaces=p.namespaces + (nsplan.Namespace("other-x"),)), "lab prefix"),
        (lambda p: dataclasses.replace(p, veths=p.veths + (nsplan.Veth("clab-demo-h1", "a-very-long-name0", "clab-demo-sw", "p9"),)), "longer than 15"),
        (lambda p: dataclasses.replace(p, veths=p.veths + (nsplan.Veth("clab-demo-h1", "eth9\nnetns del x", "clab-demo-sw", "p9"),)), "safe single word"),
        # a trailing newline, which `$` lets by: it would end a batch line early
        (lambda p: dataclasses.replace(p, veths=p.veths + (nsplan.Veth("clab-demo-h1", "eth9\n", "clab-demo-sw", "p9"),)), "safe single word"),
        (lambda p: dataclasses.replace(p, lab="demo\n"), "lab name"),
        (lambda p: dataclasses.replace(p, root_sysctls=(("net.ipv4.neigh.default.gc_thresh1\n", "1"),)), "gc_thresh"),
        (lambda p: dataclasses.replace(p, namespaces=(dataclasses.replace(p.namespaces[0], sysctls=(("net.ipv4.ip_forward\n", "1"),)),)
                                       + p.namespaces[1:]), "bad sysctl key"),
        (lambda p: dataclasses.replace(p, veths=p.veths + (nsplan.Veth("clab-demo-h1", "eth1", "clab-demo-sw", "p9"),)), "defined twice"),
        (lambda p: dataclasses.replace(p, veths=p.veths + (nsplan.Veth("clab-demo-h1", "eth2", "clab-elsewhere-x", "p9"),)), "not in the plan"),
        (lambda p: dataclasses.replace(p, bridges=(nsplan.Bridge("clab-demo-sw", "br0", ("p1", "p7")),)), "no device 'p7'"),
        (lambda p: dataclasses.replace(p, addresses=(nsplan.Address("clab-demo-h1", "eth1", "10.1.0.300/24"),)), "not an IP"),
        (lambda p: dataclasses.replace(p, routes=(nsplan.Route("clab-demo-h1", "10.0.0.0/8"),)), "needs via"),
        (lambda p: dataclasses.replace(p, shaping=(nsplan.Shaping("clab-demo-h1", "eth1", 10, kind="netem"),)), "tbf or htb"),
        (lambda p: dataclasses.replace(p, shaping=(nsplan.Shaping("clab-demo-h1", "eth1", 0),)), "positive"),
        (lambda p: dataclasses.replace(p, root_sysctls=(("net.ipv4.ip_forward", "1"),)), "gc_thresh"),
        (lambda p: dataclasses.replace(p, processes=p.processes * 2), "duplicate process"),
    ],
)
def test_validation_catches(change, needle):
    bad = change(small_plan())
    problems = nsplan.validate(bad)
    assert any(needle in x for x in problems), problems
    with pytest.raises(nsplan.PlanError):
        nsplan.render(bad)


def test_valid_plan_has_no_problems():
    assert nsplan.validate(small_plan()) == []


def test_neigh_gc_only_for_big_labs():
    assert nsplan.neigh_gc_sysctls(50) == ()
    big = dict(nsplan.neigh_gc_sysctls(200))
    assert int(big["net.ipv4.neigh.default.gc_thresh3"]) >= 12800
    assert set(k.split(".")[1] for k in big) == {"ipv4", "ipv6"}
    assert nsplan.validate(small_plan(root_sysctls=tuple(big.items()))) == []


def test_frr_processes_argv():
    inst = frr.instance("/run/lab", "leaf1", "clab-demo-leaf1")
    procs = frr.processes(inst, "hostname leaf1\n")
    assert procs[0].files == (("/run/lab/frr/leaf1/frr.conf", "hostname leaf1\n"),
                              ("/run/lab/frr/leaf1/hostname.conf", "hostname leaf1\n"),
                              ("/run/lab/frr/leaf1/zebra-own.conf", "hostname leaf1\nno zebra nexthop kernel enable\n"),
                              ("/run/lab/frr/leaf1/vtysh.conf", ""))
    with pytest.raises(ValueError, match="hostname"):
        frr.processes(inst, "router bgp 1\n")
    assert [p.name for p in procs] == ["leaf1/zebra", "leaf1/staticd", "leaf1/bfdd", "leaf1/bgpd"]
    for p in procs:
        a = list(p.argv)
        assert a[a.index("-P") + 1] == "0"  # no TCP vty ports
        own = "zebra-own.conf" if p.name.endswith("/zebra") else "hostname.conf"  # not the integrated file (vtysh -b's)
        assert a[a.index("-f") + 1] == f"/run/lab/frr/leaf1/{own}"
        assert a[a.index("-z") + 1] == "/run/lab/frr/leaf1/zserv.api"
        assert a[a.index("--vty_socket") + 1] == "/run/lab/frr/leaf1"
        assert p.pidfile == a[a.index("-i") + 1]
        assert p.daemonizes and p.owner == "frr:frr" and p.netns == "clab-demo-leaf1"
    # the config goes in once, after the last daemon, by vtysh -b on this instance's sockets and file
    assert [p.then for p in procs[:-1]] == [()] * 3
    assert procs[-1].then == ("vtysh", "--vty_socket", "/run/lab/frr/leaf1", "--config_dir", "/run/lab/frr/leaf1", "-b")
    assert "vtysh --vty_socket /run/lab/frr/leaf1 --config_dir /run/lab/frr/leaf1 -b   # after leaf1/bgpd" in \
        nsplan.dump(nsplan.Plan("demo", namespaces=(nsplan.Namespace("clab-demo-leaf1"),), processes=procs))
    assert frr.check_config("hostname leaf1\nrouter bgp 1\n") == []
    assert frr.check_config("router bgp 1\n")


def test_destroy_without_state_is_empty_and_ok(tmp_path):
    rep = engine.destroy(str(tmp_path / "none.json"))
    assert rep.ok and rep.deleted == [] and rep.lab is None
    assert engine.status(str(tmp_path / "none.json")).anything is False


def test_neigh_gc_sized_by_all_pairs_of_each_subnet():
    b = nsplan.PlanBuilder("nb")
    names = [b.ns(f"g{i}") for i in range(200)]
    for n in names:
        b.add(nsplan.Address(n, "lo", "10.9.0.1/32"))  # loopbacks have no neighbours
    for i, n in enumerate(names):
        b.add(nsplan.Address(n, "lo", f"10.1.{i // 100}.{i % 100 + 1}/24"))  # two subnets of 100
    v4, v6 = nsplan.neighbour_need(b.build())
    assert (v4, v6) == (2 * 100 * 99, 0)
    got = dict(nsplan.neigh_gc_sysctls(0, 130048, 4096))
    assert int(got["net.ipv4.neigh.default.gc_thresh3"]) >= 2 * 130048
    assert int(got["net.ipv4.neigh.default.gc_thresh2"]) > 130048  # forced GC past thresh2 would evict
    assert int(got["net.ipv6.neigh.default.gc_thresh3"]) >= 8192
    assert nsplan.neigh_gc_sysctls(0, 200, 100) == ()
