"""Cross-file consistency of generated configs against fabric.json.

Input: the fabric graph read back from fabric.json (graph/fabric_json.py) and the facts read back from every switch
config. One result per (check, switch), plus fabric-wide uniqueness checks;
each failure names the file, the key and what is wrong.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from ..devices.readback.facts import DeviceFacts
from ..graph.model import Fabric, Node
from .validate_report import Result


_NETS: dict[str, tuple[int, int] | None] = {}


def _net31(ip: str) -> tuple[int, int] | None:
    """(network number, prefix length) of an address/prefix; cached: each is seen twice."""
    got = _NETS.get(ip, False)
    if got is not False:
        return got
    try:
        addr, plen = ip.split("/")
        a, b, c, d = map(int, addr.split("."))
        got = (((a << 24) | (b << 16) | (c << 8) | d) >> (32 - int(plen)), int(plen))
    except ValueError:
        got = None
    if len(_NETS) > 1_000_000:
        _NETS.clear()
    _NETS[ip] = got
    return got


def crosscheck(fabric: Fabric, facts: dict[str, DeviceFacts], checked: "set[str] | None" = None) -> list[Result]:
    """Every switch's config against fabric.json and its peers' (`checked`: only these
    switches are judged, against the whole fabric; uniqueness among them)."""
    nodes = fabric.by_name
    switches = [n for n in fabric.switches if checked is None or n.name in checked]
    by_sw: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))  # sw -> check -> problems

    def bad(sw: str, check: str, msg: str) -> None:
        by_sw[sw][check].append(msg)

    for sw in switches:
        name = sw.name
        f = facts.get(name)
        if f is None:
            bad(name, "config", f"no config for switch {name} (expected configs/{name}/)")
            continue
        for p in f.problems:
            bad(name, "config", f"{f.file}: {p}")
        if f.hostname != name:
            bad(name, "hostname", f"{f.file}: hostname is {f.hostname!r}, fabric.json names this switch {name!r}")
        if sw.asn is not None and f.asn != sw.asn:
            bad(name, "bgp", f"{f.bgp_file or f.file}: router bgp {f.asn}, fabric.json ASN is {sw.asn}")
        if sw.loopback and sw.loopback not in f.loopbacks:
            bad(name, "addressing", f"{f.file}: Loopback0 {f.loopbacks or 'missing'}, fabric.json has {sw.loopback}")
        for v in sw.vlans:
            if v.gateway and v.gateway not in f.svis.get(v.vlan, []):
                bad(name, "addressing", f"{f.file}: Vlan{v.vlan} gateway {f.svis.get(v.vlan) or 'missing'}, fabric.json has {v.gateway}")

    mtus = Counter(p.mtu for f in facts.values() for p in f.ports.values() if p.admin_up and p.mtu is not None)
    fabric_mtu = mtus.most_common(1)[0][0] if mtus else None
    vlan_of = {}
    for sw in switches:
        for v in sw.vlans:
            vlan_of[(sw.name, v.rail)] = v.vlan

    for lk in fabric.links:
        if lk.kind == "hb":
            continue
        ends = [lk.a, lk.b]
        for me, other in (ends, ends[::-1]):
            node = nodes.get(me.node)
            if node is None or node.role != "switch":
                continue
            sw = me.node
            f = facts.get(sw)
            if f is None:
                continue
            p = f.ports.get(me.port)
            cable = lk.cable_id or f"{lk.a.node}:{lk.a.port}-{lk.b.node}:{lk.b.port}"
            if p is None:
                bad(sw, "cabling", f"{f.file}: port {me.port} of cable {cable} (to {other.node}:{other.port}) is not in the config")
                continue
            if p.speed_gbps != lk.gbps:
                bad(sw, "cabling", f"{f.file}: {p.key}.speed is {p.speed_gbps} Gbit/s, cable {cable} is {lk.gbps:g} Gbit/s")
            if not p.admin_up:
                bad(sw, "cabling", f"{f.file}: {p.key} is admin down but cabled to {other.node}:{other.port}")
            want_len = lk.length_m
            if want_len is not None and p.cable_length != f"{want_len}m":
                where = p.length_key or f"{p.key} (no cable length)"
                bad(sw, "cabling", f"{f.file}: {where} says {p.cable_length or 'nothing'}, cable {cable} is {want_len} m long (fabric.json)")
            if p.mtu is None or not 1500 <= p.mtu <= 9216 or (fabric_mtu and p.mtu != fabric_mtu):
                bad(sw, "mtu", f"{f.file}: {p.key}.mtu is {p.mtu}, the fabric uses {fabric_mtu} (peer {other.node}:{other.port})")
            if lk.kind == "rail":
                want = vlan_of.get((sw, lk.rail))
                if want is not None and p.vlan != want:
                    bad(sw, "vlan", f"{f.file}: {me.port} (GPU {other.node}) is in VLAN {p.vlan}, expected Vlan{want}")
                if p.edge is False:  # EOS: a GPU is an end host, an edge port
                    bad(sw, "vlan", f"{f.file}: {me.port} (GPU {other.node}) has no 'spanning-tree portfast': "
                                    f"the GPU waits out the spanning-tree forwarding delay after every flap")
                continue
            # fabric link: addresses and BGP
            want_ip = me.ip
            if want_ip:
                if want_ip not in p.ips:
                    bad(sw, "addressing", f"{f.file}: {me.port} has {p.ips or 'no address'}, fabric.json has {want_ip}")
                peer_ip = other.ip
                if peer_ip and _net31(want_ip) != _net31(peer_ip):
                    bad(sw, "addressing", f"fabric.json: {sw}:{me.port} {want_ip} and {other.node}:{other.port} {peer_ip} are not in one subnet")
                for ip in p.ips:
                    if peer_ip and (_net31(ip) != _net31(peer_ip) or ip == peer_ip):
                        bad(sw, "addressing", f"{f.file}: {me.port} {ip} is not the other half of {other.node}:{other.port}'s {peer_ip}")
                peer_asn = nodes[other.node].asn  # parse: every link end is a node
                if peer_ip and f.asn is not None:
                    nip = peer_ip.split("/")[0]
                    if nip not in f.neighbors:
                        bad(sw, "bgp", f"{f.bgp_file}: no BGP neighbor {nip} ({other.node}:{other.port})")
                    elif f.neighbors[nip] != peer_asn:
                        bad(sw, "bgp", f"{f.bgp_file}: neighbor {nip} remote-as {f.neighbors[nip]}, {other.node} has ASN {peer_asn}")

    # Neighbours the cabling does not explain
    expected_peers: dict[str, set[str]] = defaultdict(set)
    for lk in fabric.links:
        if lk.kind == "fabric" and lk.a.ip and lk.b.ip:
            expected_peers[lk.a.node].add(lk.b.ip.split("/")[0])
            expected_peers[lk.b.node].add(lk.a.ip.split("/")[0])
    for name, f in facts.items():
        for nip in sorted(set(f.neighbors) - expected_peers.get(name, set())):
            bad(name, "bgp", f"{f.bgp_file}: neighbor {nip} is not the far end of any cable of {name}")

    results = []
    for sw in switches:
        name = sw.name
        for check in ("config", "hostname", "cabling", "mtu", "vlan", "addressing", "bgp"):
            probs = by_sw.get(name, {}).get(check, [])
            results.append(Result(f"{check}/{name}", check, not probs, "\n".join(probs) or "ok"))
    results += _unique(facts, {sw.name: sw for sw in switches})
    return results


def _unique(facts: dict[str, DeviceFacts], switches: dict[str, Node]) -> list[Result]:
    owners: dict[str, list[str]] = defaultdict(list)
    for name, f in facts.items():
        for port, p in f.ports.items():
            for ip in p.ips:
                owners[ip.split("/")[0]].append(f"{f.file}:{port}")
        for ip in f.loopbacks:
            owners[ip.split("/")[0]].append(f"{f.file}:Loopback0")
        for vlan, ips in f.svis.items():
            for ip in ips:
                owners[ip.split("/")[0]].append(f"{f.file}:Vlan{vlan}")
    dup = [f"address {ip} is used by {', '.join(where)}"
           for ip, where in sorted((ip, w) for ip, w in owners.items() if len(w) > 1)]
    asns: dict[int, list[str]] = defaultdict(list)
    for name, f in facts.items():
        if f.asn is not None:
            asns[f.asn].append(name)
    # RFC 7938 (docs/bgp.md): switches may share an ASN only as one group of spines or
    # cores, one tier of one rail (fabric.json says which); a leaf's ASN is its own.
    def group(name: str) -> tuple:
        sw = switches.get(name)
        return (sw.tier, tuple(sw.rails)) if sw is not None else (None, ())

    def shared_ok(names: list[str]) -> bool:
        kinds = {group(n) for n in names}
        return len(kinds) == 1 and isinstance(next(iter(kinds))[0], int) and next(iter(kinds))[0] >= 2

    dup_as = [f"ASN {a} is used by {', '.join(sorted(n))}" for a, n in sorted(asns.items())
              if len(n) > 1 and not shared_ok(n)]
    return [
        Result("unique/addresses", "unique", not dup, "\n".join(dup) or f"{len(owners)} addresses, all distinct"),
        Result("unique/asn", "unique", not dup_as, "\n".join(dup_as) or f"{len(asns)} ASNs, each one switch's or one spine/core group's"),
    ]
