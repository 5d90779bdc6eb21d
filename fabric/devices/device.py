"""Vendor-neutral view of one switch: every port of its radix, VLANs, BGP peers.

Both renderers (SONiC, EOS) start from this, so the two vendors cannot
disagree about what a switch is; only the way they print it differs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..design import clos, routing
from ..design.physical import cable_length_m, naming
from ..graph.model import Fabric, Node
from ..platforms.ports import port_names

MAX_ECMP = 64  # FRR's default multipath limit; EOS takes the same number


@dataclass(slots=True)
class Port:
    index: int  # 0-based position on the device
    name: str
    peer_node: str | None = None  # None: not cabled (admin down); the far end as on the floor
    peer_port: str | None = None  # (server `hb0` NIC `rail0`, or switch and port)
    ip: str | None = None  # own address with prefix length (routed fabric ports)
    vlan: int | None = None  # access VLAN (GPU-facing ports)
    cable_id: str | None = None
    length_m: int | None = None  # the cable's length (physical.cable_length_m)

    @property
    def cabled(self) -> bool:
        return self.peer_node is not None

    @property
    def description(self) -> str:
        """Far end, cable id and length: what an engineer reads at the port (and EOS's only
        place for the cable length, which has no per-port cable-length command)."""
        return f"{self.peer_node}:{self.peer_port} {self.cable_id} {self.length_m}m" if self.peer_node else ""


@dataclass(slots=True)
class Neighbor:
    ip: str  # the peer's address, no prefix length
    asn: int
    name: str  # peer node
    port: str  # peer port
    local_port: str
    up: bool = False  # the peer is in the tier above (routing.UP_GROUP)


@dataclass(slots=True)
class SwitchView:
    node: Node
    ports: list[Port]
    vlans: list  # model.Vlan
    neighbors: list[Neighbor] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)  # prefixes this switch originates
    maximum_paths: int = 1  # the ECMP width
    max_prefix: int = 0  # per-neighbour limit (routing.max_prefix)

    @property
    def routed(self) -> bool:
        return self.node.asn is not None

    @property
    def router_id(self) -> str | None:
        return self.node.loopback.split("/")[0] if self.node.loopback else None


def switch_view(fab: Fabric, sw: Node) -> SwitchView:
    d = fab.design
    names = naming(fab)
    vlan_of = {p: v.vlan for v in sw.vlans for p in v.ports}
    own = sw.ports
    ports = []
    neighbors = []
    for i, name in enumerate(port_names(fab, sw.tier, sw.platform)):
        ep = own.get(name)
        if ep is None:
            ports.append(Port(i, name))
            continue
        link = fab.link_at(sw.name, name)
        peer = link.b if link.a is ep else link.a
        device, port, _ = names.floor_end(peer.node, peer.port)
        ports.append(Port(i, name, device, port, ep.ip, vlan_of.get(name), link.cable_id, cable_length_m(d, link.tier)))
        if ep.ip and peer.ip:
            far = fab.by_name[peer.node]
            neighbors.append(Neighbor(peer.ip.split("/")[0], far.asn, peer.node, peer.port, name, far.tier > sw.tier))
    view = SwitchView(sw, ports, sw.vlans, neighbors)
    if view.routed:
        view.networks = [v.subnet for v in sw.vlans if v.gateway] + [sw.loopback]
        view.maximum_paths = ecmp_width(neighbors)
        view.max_prefix = routing.max_prefix(_domain_prefixes(fab, sw))
    return view


def ecmp_width(neighbors: list[Neighbor]) -> int:
    """Equal-cost next hops a prefix can have here: every uplink (a non-blocking Clos
    reaches anything above through all of them), or at the top tier the parallel
    links to one switch below."""
    up = sum(n.up for n in neighbors)
    if not up:
        per_peer = Counter(n.name for n in neighbors)
        up = max(per_peer.values(), default=1)
    return max(1, min(MAX_ECMP, up))


def _domain_prefixes(fab: Fabric, sw: Node) -> int:
    """Prefixes originated in the routing domain of `sw` (its rail, or the whole
    baseline fabric) at build-out; counted once per fabric. Below `hb_domain.planned`
    the switches of the build-out not there yet count as the tier's switches originate
    (a leaf its loopback and GPU subnet, a spine or core its loopback): growing within
    the plan must not change every switch's BGP limit (docs/fabric.md, Growth)."""
    cache = fab.__dict__.setdefault("_domain_prefixes", {})
    if not cache:
        d = fab.design
        tiers: dict[tuple, Counter] = {}  # domain -> switches now by tier
        originated: dict[int, int] = {}  # tier -> the most prefixes one switch of it originates
        for other in fab.switches:
            if other.asn is not None:
                key = tuple(other.rails) if d.topology == "rail-only" else ()
                n = 1 + sum(1 for v in other.vlans if v.gateway)
                cache[key] = cache.get(key, 0) + n
                tiers.setdefault(key, Counter())[other.tier] += 1
                originated[other.tier] = max(originated.get(other.tier, 0), n)
        if d.planned > d.hb_count:
            built = clos.shape(d.topology, d.hb_size, d.planned, d.radix)
            for key, now in tiers.items():
                for tier, count in ((1, built["leaves"]), (2, built["spines"]), (3, built["cores"])):
                    cache[key] += max(0, count - now[tier]) * originated.get(tier, 1)
    return cache.get(tuple(sw.rails) if fab.design.topology == "rail-only" else (), 0)


def advertised_pools(design) -> list[str]:
    """What eBGP may carry: GPU subnets and loopbacks (never the /31 links)."""
    p = design.pools
    return [str(p.gpu), str(p.loopback)]
