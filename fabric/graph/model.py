"""The fabric graph: nodes, ports and links, with addresses and ASNs.

Plain slotted dataclasses, built once by :mod:`railonly.fabric.graph.build` and read
by every renderer. Field names follow `fabric.json` (docs/reference/outdir.md) so the JSON
is a direct dump.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Vlan:
    """One L2 partition of a tier-1 switch: the GPUs of one rail on that switch."""

    vlan: int
    rail: int
    subnet: str  # GPU subnet of the partition
    gateway: str | None  # SVI address (routed rails) or None (L2 rails)
    ports: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Node:
    name: str
    role: str  # gpu | hb | switch
    hb_domain: int | None = None
    rank: int | None = None
    rail: int | None = None  # gpu: its rail (= rank)
    tier: int | None = None  # switch: 1 leaf, 2 spine, 3 core
    rails: list[int] = field(default_factory=list)  # switch: rails served ([] joins rails)
    platform: str | None = None
    asn: int | None = None
    loopback: str | None = None
    mgmt_ip: str | None = None  # switch: management port address with prefix length (design `management.pool`)
    vlans: list[Vlan] = field(default_factory=list)
    ports: dict[str, "Endpoint"] = field(default_factory=dict)  # port name -> own endpoint


@dataclass(slots=True)
class Endpoint:
    node: str
    port: str
    ip: str | None = None
    index: int = 0  # port index on the device (0-based), for lanes and ordering


@dataclass(slots=True)
class Link:
    kind: str  # rail | fabric | hb
    rail: int | None
    gbps: float
    a: Endpoint  # lower tier (GPU, or the lower switch)
    b: Endpoint  # upper tier (switch, or HB node)
    tier: int  # cable tier: 1 NIC-leaf, 2 leaf-spine, 3 spine-core; 0 for HB
    cable_id: str | None = None
    length_m: float | None = None  # read back from fabric.json; a built graph's cables take the design's (cable_length_m)


@dataclass
class Fabric:
    design: object  # railonly.fabric.design.design.Design
    tiers: int  # tiers of each rail (rail-only) or of the whole cluster (baseline)
    gpus: list[Node] = field(default_factory=list)
    hbs: list[Node] = field(default_factory=list)
    switches: list[Node] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    by_name: dict[str, Node] = field(default_factory=dict)

    @property
    def nodes(self) -> list[Node]:
        return self.gpus + self.hbs + self.switches

    def node(self, name: str) -> Node:
        return self.by_name[name]

    def cables(self) -> list[Link]:
        """Physical cables: every rail and fabric link (HB links are NVLink, not cabled)."""
        return [link for link in self.links if link.kind != "hb"]

    def switches_by_tier(self) -> dict[int, list[Node]]:
        out: dict[int, list[Node]] = {}
        for sw in self.switches:
            out.setdefault(sw.tier, []).append(sw)
        return dict(sorted(out.items()))

    def _index(self) -> dict[tuple[str, str], Link]:
        index = self.__dict__.get("_link_at")
        if index is None:  # built on first use: the builder appends links until done
            index = {}
            for lk in self.links:
                index[(lk.a.node, lk.a.port)] = lk
                index[(lk.b.node, lk.b.port)] = lk
            self.__dict__["_link_at"] = index
        return index

    def link_at(self, node: str, port: str) -> Link | None:
        return self._index().get((node, port))

    def peer(self, node: str, port: str) -> Endpoint | None:
        """The far end of the link on (node, port)."""
        link = self._index().get((node, port))
        if link is None:
            return None
        return link.b if (link.a.node, link.a.port) == (node, port) else link.a
