"""Structural invariants of a fabric graph, as a list of problems (empty = sound).

These are the promises of the compiler (the wiring rules in docs/fabric.md), checked on
the graph itself so tests can run them over many sizes and over deliberately
broken graphs, and `validate` can run them on a fabric.json it reads back:

* every GPU has one NIC, on a tier-1 switch that serves the GPU's rail;
* rail-only: no link joins two rails (rails share no switch or link, except
  partitions of a shared switch, which stay per rail);
* packing (rail-only `share_rails`, the baseline's small rails): a tier-1
  switch that serves several rails holds each of them whole, one VLAN each;
  a rail spread over several leaves has them to itself (rail-pure);
* non-blocking: below the top tier, a switch has at least as many links up
  as down (exactly as many when its down ports are full; a partly filled
  last leaf keeps all radix/2 uplinks so it still reaches every spine);
* two tiers: every leaf reaches every spine of its rail;
* no port used twice, none beyond the radix; addresses and ASNs unique;
  the two ends of a /31 are in one subnet.
"""

from __future__ import annotations

import ipaddress
from collections import Counter, defaultdict

from .model import Fabric


def check(fab: Fabric) -> list[str]:
    problems: list[str] = []
    d = fab.design
    by = fab.by_name
    up: Counter = Counter()
    down: Counter = Counter()
    ports: Counter = Counter()
    nic_links: Counter = Counter()
    on_leaf: Counter = Counter()  # (tier-1 switch, rail) -> GPUs of that rail on it
    reach: dict[str, set] = defaultdict(set)

    for lk in fab.links:
        for ep in (lk.a, lk.b):
            ports[(ep.node, ep.port)] += 1
        if lk.kind == "hb":
            continue
        lo, hi = by.get(lk.a.node), by.get(lk.b.node)
        if lo is None or hi is None:
            problems.append(f"link {lk.a.node}:{lk.a.port} - {lk.b.node}:{lk.b.port} names an unknown node")
            continue
        if lk.kind == "rail":
            nic_links[lo.name] += 1
            if hi.role != "switch" or hi.tier != 1:
                problems.append(f"{lo.name} NIC lands on {hi.name}, not a tier-1 switch")
            elif lo.rail not in hi.rails:
                problems.append(f"cross-rail link: {lo.name} (rail {lo.rail}) on {hi.name} serving rails {hi.rails}")
            elif lk.rail != lo.rail:
                problems.append(f"link {lk.cable_id} says rail {lk.rail} but {lo.name} is on rail {lo.rail}")
            down[hi.name] += 1
            on_leaf[(hi.name, lo.rail)] += 1
        else:
            up[lo.name] += 1
            down[hi.name] += 1
            reach[lo.name].add(hi.name)
            if hi.tier != lo.tier + 1:
                problems.append(f"fabric link {lo.name} (tier {lo.tier}) - {hi.name} (tier {hi.tier}) skips a tier")
            if d.topology == "rail-only" and set(lo.rails) != set(hi.rails):
                problems.append(f"cross-rail link: {lo.name} rails {lo.rails} - {hi.name} rails {hi.rails}")
            if lk.a.ip and lk.b.ip:
                na = ipaddress.IPv4Interface(lk.a.ip).network
                nb = ipaddress.IPv4Interface(lk.b.ip).network
                if na != nb:
                    problems.append(f"{lo.name}:{lk.a.port} {lk.a.ip} and {hi.name}:{lk.b.port} {lk.b.ip} are not in one subnet")

    for (node, port), n in ports.items():
        if n > 1:
            problems.append(f"port {node}:{port} used by {n} links")
    for gpu in fab.gpus:
        if nic_links[gpu.name] != 1:
            problems.append(f"{gpu.name} has {nic_links[gpu.name]} NIC links, expected 1")

    n_domains = len(fab.hbs)
    for sw in fab.switches:
        if sw.tier != 1 or len(sw.rails) < 2:
            continue
        for r in sw.rails:
            if on_leaf[(sw.name, r)] != n_domains:
                problems.append(f"{sw.name} packs rails {sw.rails} but holds {on_leaf[(sw.name, r)]} of the "
                                f"{n_domains} GPUs of rail {r} (a packed rail must be whole)")
        if sorted(v.rail for v in sw.vlans) != sorted(sw.rails):
            problems.append(f"{sw.name} packs rails {sw.rails} but has VLANs for rails {sorted(v.rail for v in sw.vlans)}")

    top = fab.tiers
    per_switch = Counter(node for (node, _port) in ports if by.get(node) is not None and by[node].role == "switch")
    for sw in fab.switches:
        if per_switch[sw.name] > d.radix:
            problems.append(f"{sw.name} uses {per_switch[sw.name]} ports, more than its radix {d.radix}")
        if sw.tier < top and (up[sw.name] < down[sw.name] or up[sw.name] > d.radix // 2):
            problems.append(f"blocking switch: {sw.name} has {down[sw.name]} links down and {up[sw.name]} up")
        if sw.tier == top and up[sw.name]:
            problems.append(f"{sw.name} is in the top tier but has {up[sw.name]} uplinks")

    if top == 2:
        spines_of: dict[tuple, set] = defaultdict(set)
        for sw in fab.switches:
            if sw.tier == 2:
                spines_of[tuple(sw.rails)].add(sw.name)
        for sw in fab.switches:
            if sw.tier == 1:
                group = tuple(sw.rails) if d.topology == "rail-only" else ()
                missing = spines_of[group] - reach[sw.name]
                if missing:
                    problems.append(f"{sw.name} does not reach spine(s) {', '.join(sorted(missing))}")

    addrs: Counter = Counter()
    for lk in fab.links:
        for ep in (lk.a, lk.b):
            if ep.ip:
                addrs[ep.ip.split("/")[0]] += 1
    for sw in fab.switches:
        if sw.loopback:
            addrs[sw.loopback.split("/")[0]] += 1
        for v in sw.vlans:
            if v.gateway:
                addrs[v.gateway.split("/")[0]] += 1
    for a, n in addrs.items():
        if n > 1:
            problems.append(f"address {a} used {n} times")
    # RFC 7938 shares an ASN only inside a group of one tier and rail that never
    # peers within itself; a leaf's ASN is its own (routing.py).
    groups: dict[int, set] = {}
    for sw in fab.switches:
        if sw.asn is not None:
            groups.setdefault(sw.asn, set()).add((sw.tier, tuple(sw.rails)))
    asns = Counter(sw.asn for sw in fab.switches if sw.asn is not None)
    for asn, n in asns.items():
        if n > 1 and (fab.design.asn_scheme == "per-switch" or len(groups[asn]) > 1 or min(groups[asn])[0] == 1):
            problems.append(f"ASN {asn} used by {n} switches")
    return problems
