"""Cross-file consistency of generated configs against fabric.json.

Input: the fabric graph read back from fabric.json (graph/fabric_json.py) and the facts read back from every switch
config. One result per (check, switch), plus fabric-wide uniqueness checks;
each failure names the file, the key and what is wrong.

Split in two so validate's workers judge their own switches and send back only a small
verdict (no facts): :func:`judge_switch` is everything one switch's facts and fabric.json
decide; :class:`Merge` takes the verdicts and adds, in fabric.json's switch order, what needs all
of them (the fabric's MTU, address and ASN uniqueness).
"""

from __future__ import annotations

import functools
import re
from collections import Counter, defaultdict
from typing import NamedTuple

from ..devices.qos import PG_PROFILE_CABLE_M, pg_profile_cable_length
from ..devices.sonic_buffers import published_cable_lengths, railonly_knows_lengths
from ..devices.readback.facts import DeviceFacts
from ..graph.model import Endpoint, Fabric, Link, Node
from .validate_report import Result

CHECKS = ("config", "hostname", "cabling", "mtu", "vlan", "addressing", "bgp")

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


@functools.lru_cache(maxsize=4096)
def _cable_lengths_accepted(metres: float, hwsku: str | None, speed_gbps: float | None) -> tuple[str, ...]:
    """The CABLE_LENGTH values a port cabled with `metres` may carry: the cable's own length, or
    the published profile length it fits in (the hwsku's own lengths for the speed, else
    SONiC's usual), never SONiC's usual fit on an hwsku with lengths of its own (300m on one
    listing 5m/40m/150m: buffermgrd finds no such row and creates no lossless PG). Cached: a
    fabric has few (length, hwsku, speed) triples and 64 ports a switch (160k lookups at 32k were 0.3 s)."""
    return (f"{metres}m",
            pg_profile_cable_length(metres, published_cable_lengths(hwsku, speed_gbps) or PG_PROFILE_CABLE_M))


def _cable_length_fits(value: str | None, metres: float, hwsku: str | None, speed_gbps: float | None) -> bool:
    """Whether CABLE_LENGTH `value` fits a cable of `metres`: one of the accepted values, or, on an
    hwsku whose profile lengths validate cannot know (a user's own platform file), any whole
    length that covers the cable (its headroom is then at least the cable's)."""
    if value in _cable_lengths_accepted(metres, hwsku, speed_gbps):
        return True
    if railonly_knows_lengths(hwsku):
        return False
    m = re.fullmatch(r"(\d{1,6})m", value or "")
    return m is not None and int(m.group(1)) >= metres


class Plan:
    """The fabric.json side of the cross-check, built once (before validate's workers fork):
    each switch's cable ends in fabric.json's link order and the BGP peers its cables explain."""

    def __init__(self, fabric: Fabric, checked: "set[str] | None" = None):
        self.fabric = fabric
        self.switches = [n for n in fabric.switches if checked is None or n.name in checked]
        judged = {n.name for n in self.switches}
        self.ends: dict[str, list[tuple[Link, Endpoint, Endpoint]]] = {name: [] for name in judged}
        self.expected_peers: dict[str, set[str]] = {name: set() for name in judged}
        for lk in fabric.links:
            if lk.kind == "hb":
                continue
            a, b = lk.a, lk.b
            for me, other in ((a, b), (b, a)):
                mine = self.ends.get(me.node)
                if mine is not None:  # a judged switch (fabric.json node names are unique)
                    mine.append((lk, me, other))
            if lk.kind == "fabric" and a.ip and b.ip:
                for me, other in ((a, b), (b, a)):
                    peers = self.expected_peers.get(me.node)
                    if peers is not None:
                        peers.add(other.ip.split("/")[0])


class Verdict(NamedTuple):
    """What one switch's config says, as the merge needs it (small: sent from a worker)."""
    name: str
    file: str | None  # None: no config for the switch
    problems: dict[str, list[str]]  # check -> problems, every check but the fabric-MTU comparison
    mtus: dict[int, int]  # MTU of the switch's admin-up ports -> how many
    cabled: list[tuple[int, int | None, str]]  # (end index in Plan.ends, MTU, key) of each cabled port found
    addresses: list[tuple[str, str]]  # (address without its length, where: port, Loopback0, VlanN)
    asn: int | None


def judge_switch(plan: Plan, sw: Node, f: DeviceFacts | None) -> Verdict:
    """Everything one switch's facts and fabric.json decide, in the order the results list it."""
    nodes = plan.fabric.by_name
    name = sw.name
    by_check: dict[str, list[str]] = defaultdict(list)

    def bad(check: str, msg: str) -> None:
        by_check[check].append(msg)

    if f is None:
        bad("config", f"no config for switch {name} (expected configs/{name}/)")
        return Verdict(name, None, dict(by_check), {}, [], [], None)
    for p in f.problems:
        bad("config", f"{f.file}: {p}")
    if f.hostname != name:
        bad("hostname", f"{f.file}: hostname is {f.hostname!r}, fabric.json names this switch {name!r}")
    if sw.asn is not None and f.asn != sw.asn:
        bad("bgp", f"{f.bgp_file or f.file}: router bgp {f.asn}, fabric.json ASN is {sw.asn}")
    if sw.loopback and sw.loopback not in f.loopbacks:
        bad("addressing", f"{f.file}: Loopback0 {f.loopbacks or 'missing'}, fabric.json has {sw.loopback}")
    for v in sw.vlans:
        if v.gateway and v.gateway not in f.svis.get(v.vlan, []):
            bad("addressing", f"{f.file}: Vlan{v.vlan} gateway {f.svis.get(v.vlan) or 'missing'}, fabric.json has {v.gateway}")
    vlan_of = {v.rail: v.vlan for v in sw.vlans}

    cabled: list[tuple[int, int | None, str]] = []
    ports = f.ports
    for i, (lk, me, other) in enumerate(plan.ends[name]):
        p = ports.get(me.port)
        cable = lk.cable_id or f"{lk.a.node}:{lk.a.port}-{lk.b.node}:{lk.b.port}"
        if p is None:
            bad("cabling", f"{f.file}: port {me.port} of cable {cable} (to {other.node}:{other.port}) is not in the config")
            continue
        if p.speed_gbps != lk.gbps:
            bad("cabling", f"{f.file}: {p.key}.speed is {p.speed_gbps} Gbit/s, cable {cable} is {lk.gbps:g} Gbit/s")
        if not p.admin_up:
            bad("cabling", f"{f.file}: {p.key} is admin down but cabled to {other.node}:{other.port}")
        want_len = lk.length_m
        # SONiC on the traditional buffer model: the published profile length the cable fits in
        # (a catalog hwsku's own pg_profile_lookup.ini lengths for the port's speed, else SONiC's usual)
        if want_len is not None and not _cable_length_fits(p.cable_length, want_len, f.hwsku, p.speed_gbps):
            where = p.length_key or f"{p.key} (no cable length)"
            bad("cabling", f"{f.file}: {where} says {p.cable_length or 'nothing'}, cable {cable} is {want_len} m long (fabric.json)")
        cabled.append((i, p.mtu, p.key))  # judged against the fabric's MTU in the merge
        if lk.kind == "rail":
            want = vlan_of.get(lk.rail)
            if want is not None and p.vlan != want:
                bad("vlan", f"{f.file}: {me.port} (GPU {other.node}) is in VLAN {p.vlan}, expected Vlan{want}")
            if p.edge is False:  # EOS: a GPU is an end host, an edge port
                bad("vlan", f"{f.file}: {me.port} (GPU {other.node}) has no 'spanning-tree portfast': "
                            f"the GPU waits out the spanning-tree forwarding delay after every flap")
            continue
        # fabric link: addresses and BGP
        want_ip = me.ip
        if want_ip:
            if want_ip not in p.ips:
                bad("addressing", f"{f.file}: {me.port} has {p.ips or 'no address'}, fabric.json has {want_ip}")
            peer_ip = other.ip
            # the peer's subnet taken once per port: the config's address is nearly always
            # fabric.json's own, whose subnet is then known (4 lookups a port were 0.3 s at 32k)
            peer_net = _net31(peer_ip) if peer_ip else None
            same = peer_ip and _net31(want_ip) == peer_net
            if peer_ip and not same:
                bad("addressing", f"fabric.json: {name}:{me.port} {want_ip} and {other.node}:{other.port} {peer_ip} are not in one subnet")
            for ip in p.ips:
                if peer_ip and ((not same if ip == want_ip else _net31(ip) != peer_net) or ip == peer_ip):
                    bad("addressing", f"{f.file}: {me.port} {ip} is not the other half of {other.node}:{other.port}'s {peer_ip}")
            peer_asn = nodes[other.node].asn  # parse: every link end is a node
            if peer_ip and f.asn is not None:
                nip = peer_ip.split("/")[0]
                if nip not in f.neighbors:
                    bad("bgp", f"{f.bgp_file}: no BGP neighbor {nip} ({other.node}:{other.port})")
                elif f.neighbors[nip] != peer_asn:
                    bad("bgp", f"{f.bgp_file}: neighbor {nip} remote-as {f.neighbors[nip]}, {other.node} has ASN {peer_asn}")

    # Neighbours the cabling does not explain
    for nip in sorted(set(f.neighbors) - plan.expected_peers[name]):
        bad("bgp", f"{f.bgp_file}: neighbor {nip} is not the far end of any cable of {name}")

    mtus = Counter(p.mtu for p in ports.values() if p.admin_up and p.mtu is not None)
    addresses = [(ip.split("/")[0], port) for port, p in ports.items() for ip in p.ips]
    addresses += [(ip.split("/")[0], "Loopback0") for ip in f.loopbacks]
    addresses += [(ip.split("/")[0], f"Vlan{vlan}") for vlan, ips in f.svis.items() for ip in ips]
    return Verdict(name, f.file, dict(by_check), dict(mtus), cabled, addresses, f.asn)


class Merge:
    """The verdicts of every judged switch into the cross-check's results. The fabric-wide
    parts are added up in fabric.json's switch order, whatever order the workers' verdicts
    arrive in: that order names the owners of a shared address and breaks a tie between MTUs,
    so the results do not depend on the worker count."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.verdicts: dict[str, Verdict] = {}

    def add(self, v: Verdict) -> None:
        self.verdicts[v.name] = v

    def _fabric_wide(self) -> None:
        self.mtus: Counter = Counter()
        self.owners: dict[str, str] = {}  # address -> its first owner
        self.shared: dict[str, list[str]] = {}  # address -> every owner, for the addresses owned twice
        self.asns: dict[int, list[str]] = defaultdict(list)
        owners, shared = self.owners, self.shared
        for sw in self.plan.switches:
            v = self.verdicts.get(sw.name)
            if v is None or v.file is None:
                continue
            self.mtus.update(v.mtus)
            for ip, where in v.addresses:
                owner = f"{v.file}:{where}"
                if ip in owners:
                    shared.setdefault(ip, [owners[ip]]).append(owner)
                else:
                    owners[ip] = owner
            if v.asn is not None:
                self.asns[v.asn].append(v.name)

    def results(self) -> list[Result]:
        self._fabric_wide()
        fabric_mtu = self.mtus.most_common(1)[0][0] if self.mtus else None
        results = []
        for sw in self.plan.switches:
            name = sw.name
            v = self.verdicts.get(name)
            problems = v.problems if v is not None else {"config": [f"no config for switch {name} (expected configs/{name}/)"]}
            if v is not None and v.cabled:
                mtu_probs = self._mtu_problems(v, fabric_mtu)
                if mtu_probs:
                    problems = {**problems, "mtu": mtu_probs}
            for check in CHECKS:
                probs = problems.get(check, [])
                results.append(Result(f"{check}/{name}", check, not probs, "\n".join(probs) or "ok"))
        return results + self._unique()

    def _mtu_problems(self, v: Verdict, fabric_mtu: int | None) -> list[str]:
        ends = self.plan.ends[v.name]
        out = []
        for i, mtu, key in v.cabled:
            if mtu is None or not 1500 <= mtu <= 9216 or (fabric_mtu and mtu != fabric_mtu):
                other = ends[i][2]
                out.append(f"{v.file}: {key}.mtu is {mtu}, the fabric uses {fabric_mtu} (peer {other.node}:{other.port})")
        return out

    def _unique(self) -> list[Result]:
        dup = [f"address {ip} is used by {', '.join(where)}" for ip, where in sorted(self.shared.items())]
        switches = {sw.name: sw for sw in self.plan.switches}

        # RFC 7938 (docs/bgp.md): switches may share an ASN only as one group of spines or
        # cores, one tier of one rail (fabric.json says which); a leaf's ASN is its own.
        def group(name: str) -> tuple:
            sw = switches.get(name)
            return (sw.tier, tuple(sw.rails)) if sw is not None else (None, ())

        def shared_ok(names: list[str]) -> bool:
            kinds = {group(n) for n in names}
            return len(kinds) == 1 and isinstance(next(iter(kinds))[0], int) and next(iter(kinds))[0] >= 2

        dup_as = [f"ASN {a} is used by {', '.join(sorted(n))}" for a, n in sorted(self.asns.items())
                  if len(n) > 1 and not shared_ok(n)]
        return [
            Result("unique/addresses", "unique", not dup, "\n".join(dup) or f"{len(self.owners)} addresses, all distinct"),
            Result("unique/asn", "unique", not dup_as, "\n".join(dup_as) or f"{len(self.asns)} ASNs, each one switch's or one spine/core group's"),
        ]

