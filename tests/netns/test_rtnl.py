"""The netlink strategy leaves the kernel in the state the ip/tc batches leave it in.

The same plan (veths, a bridge with an MTU, a port down, v4/v6 and loopback
addresses, plain/metric/src/multipath/onlink/table routes, rules, tbf and
htb with default and explicit bursts) is deployed with strategy "setns" (ip
and tc processes) and "netlink" (the engine via emulation/runtime/netns/rtnetlink.py), and the
kernel's own view (``ip -d -j``, ``tc -d -j``) compared. Also: a refused
request fails the deploy with the request named.
"""

from __future__ import annotations

import json
import re

import pytest

from railonly import proc
from railonly.emulation.runtime.netns import engine
from railonly.emulation.runtime.netns import ns_plan as nsplan

from ..conftest import unique
from .conftest import skip_reason

pytestmark = pytest.mark.netns

VOLATILE = re.compile(
    r'"(ifindex|link_index|handle|preferred_life_time|valid_life_time|id|no|bridge_id|root_id|designated_root'
    r'|designated_bridge|hello_timer|gc_timer|topology_change_timer|tcn_timer|forward_delay_timer'
    r'|message_age_timer|hold_timer)": [^,}]+')
MAC = re.compile(r'"(address|broadcast|perm_address)": "([0-9a-f]{2}:){5}[0-9a-f]{2}"')


def plan(lab: str, bad_route: bool = False) -> nsplan.Plan:
    b = nsplan.PlanBuilder(lab)
    a, c, br = b.ns("a", nsplan.router_sysctls()), b.ns("c", nsplan.host_sysctls()), b.ns("br")
    b.add(nsplan.Veth(a, "e0", c, "e0")).add(nsplan.Veth(a, "e1", br, "p1")).add(nsplan.Veth(c, "e1", br, "p2"))
    b.add(nsplan.Veth(a, "e2", c, "e2", mtu=9000))
    b.add(nsplan.Bridge(br, "vl10", ("p1", "p2"), mtu=1500))
    b.add(nsplan.Link(br, "p2", mtu=1400)).add(nsplan.Link(c, "e2", up=False))
    for ns, dev, cidr in ((a, "e0", "10.0.0.0/31"), (c, "e0", "10.0.0.1/31"), (a, "e1", "10.1.0.1/24"),
                          (c, "e1", "10.1.0.2/24"), (a, "e0", "2001:db8::1/64"), (a, "lo", "10.255.0.1/32"),
                          (br, "vl10", "10.1.0.254/24")):
        b.add(nsplan.Address(ns, dev, cidr))
    b.add(nsplan.Route(c, "default", via="10.0.0.0"))
    b.add(nsplan.Route(c, "10.9.0.0/16", dev="e1"))
    b.add(nsplan.Route(c, "10.8.0.0/16", via="10.1.0.1", dev="e1", metric=20, src="10.1.0.2"))
    b.add(nsplan.Route(c, "10.7.0.0/16", nexthops=(nsplan.Nexthop("10.0.0.0", "e0"), nsplan.Nexthop("10.1.0.1", "e1", weight=3))))
    b.add(nsplan.Route(c, "10.6.0.0/16", via="10.0.0.0", table=300)).add(nsplan.Route(c, "10.5.0.0/16", via="10.0.0.0", table=100))
    b.add(nsplan.Route(a, "2001:db8:9::/48", via="2001:db8::2", dev="e0", onlink=True))
    if bad_route:
        b.add(nsplan.Route(c, "10.4.0.0/16", via="192.0.2.1"))  # no route to the gateway: refused
    b.add(nsplan.Rule(c, 300, priority=100, src="10.1.0.0/24")).add(nsplan.Rule(c, 100, iif="e1", fwmark=7))
    b.add(nsplan.Shaping(a, "e0", 100.0)).add(nsplan.Shaping(c, "e0", 100.0)).add(nsplan.Shaping(a, "e1", 225.0, kind="htb"))
    b.add(nsplan.Shaping(br, "p1", 100.0, burst_bytes=20000)).add(nsplan.Shaping(c, "e1", 5000.0, kind="htb"))
    return b.build()


def snapshot(pl: nsplan.Plan) -> dict:
    out = {}
    for n in pl.namespaces:
        for key, argv in (("link", ["ip", "-d", "-j", "link"]), ("addr", ["ip", "-j", "addr"]),
                          ("route4", ["ip", "-4", "-j", "-d", "route", "show", "table", "all"]),
                          ("route6", ["ip", "-6", "-j", "-d", "route", "show", "table", "all"]),
                          ("rule", ["ip", "-j", "rule"]), ("qdisc", ["tc", "-j", "-d", "qdisc", "show"]),
                          ("class", ["tc", "-j", "-d", "class", "show"])):
            r = proc.run(argv, netns=n.name)
            assert r.ok, r.stderr
            rows = json.loads(r.stdout or "[]")
            if key == "route6":  # link-local routes appear in the order the links came up
                rows = [x for x in rows if not str(x.get("dst", "")).startswith(("fe80::", "ff00::"))]
            text = MAC.sub('"mac"', VOLATILE.sub(r'"\1"', json.dumps(rows, sort_keys=True)))
            out[(n.name[len(pl.prefix):], key)] = re.sub(r"fe80::[0-9a-f:]+", "LL", text)
    return out


@pytest.fixture
def lab(tmp_path):
    why = skip_reason()
    if why:
        pytest.skip(why)
    name = unique("rtnl")
    state = str(tmp_path / "state.json")
    yield name, state
    rep = engine.destroy(state)
    assert rep.ok, rep.leftovers


def test_netlink_state_equals_ip_tc_batches(lab):
    name, state = lab
    seen = {}
    for strategy in ("setns", "netlink"):
        pl = plan(name)
        engine.deploy(pl, state, strategy=strategy)
        seen[strategy] = snapshot(pl)
        assert engine.destroy(state).ok
    diff = [k for k in seen["setns"] if seen["setns"][k] != seen["netlink"][k]]
    assert diff == [], {k: (seen["setns"][k], seen["netlink"][k]) for k in diff[:2]}


def test_refused_request_fails_deploy_and_names_it(lab):
    name, state = lab
    with pytest.raises(engine.DeployError, match=r"config in clab-.*-c: .*route add 10\.4\.0\.0/16 via 192\.0\.2\.1"):
        engine.deploy(plan(name, bad_route=True), state)


def test_route_dump_reads_what_ip_route_shows(lab):
    # lab check reads switch routes with one netlink dump instead of `ip -j route`: same rows
    from railonly.emulation.runtime.netns import setns

    name, state = lab
    pl = plan(name)
    engine.deploy(pl, state)
    keep = ("dst", "type", "gateway", "dev", "table")
    for n in pl.namespaces:
        r = proc.run(["ip", "-4", "-j", "route", "show", "table", "all"], netns=n.name)
        assert r.ok, r.stderr
        want = [{k: x[k] for k in keep if k in x} | ({"nexthops": [{k: h[k] for k in ("gateway", "dev") if k in h}
                                                                    for h in x["nexthops"]]} if "nexthops" in x else {})
                for x in json.loads(r.stdout)]
        got = setns.call_in(n.name, setns.ipv4_routes)
        key = lambda x: json.dumps(x, sort_keys=True)  # noqa: E731
        assert sorted(map(key, got)) == sorted(map(key, want)), n.name
    assert any("nexthops" in x for x in setns.call_in(pl.namespaces[1].name, setns.ipv4_routes))
