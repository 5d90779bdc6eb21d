"""What a healthy lab must show, planned from fabric.json alone (pure).

:func:`plan` turns a lab's fabric graph (its ``fabric.json`` read back, ``Lab.fabric``) (and ``cabling.csv``, and the FRR
configs of its switches) into a :class:`CheckPlan`: the probes to send and
the results expected, for the five checks of docs/reference/outdir.md:

- reachability: every ordered pair of GPUs on the same rail;
- isolation: for routed rails, per GPU a packet out its rail NIC towards each
  other rail's address, and per rail switch the prefixes it must not hold;
  for L2 rails, per GPU a broadcast and an unknown-unicast frame;
- path: per GPU one same-rail and one cross-rail destination, with the nodes
  that may answer at each TTL (all shortest paths, so ECMP choices pass);
  a cross-rail pair of a rail-only fabric first crosses the source's HB
  domain to the GPU of the destination's rank (the forwarding hop);
- bgp: every ``neighbor ... remote-as`` of each switch's frr.conf, and the
  GPU subnets each routed switch must have installed;
- cabling: every row of cabling.csv, seen from both ends;
- bfd: every BGP session whose config asks for BFD (``neighbor X bfd``, on
  the neighbor or its peer group) has an up BFD session (docs/bgp.md).

Nothing here touches the system; :mod:`.judge` compares evidence with
this plan, :mod:`.probe` and :mod:`.run` collect the evidence.
"""

from __future__ import annotations

import csv
import io
import ipaddress
import re
from collections import deque
from dataclasses import dataclass, field

from railonly.fabric.graph.model import Endpoint, Fabric, Node
from railonly.fabric.outputs.cabling import graph_ends
from railonly.fabric.outdir_layout import CABLING_CSV, FRR_CONF

CHECKS = ("reachability", "isolation", "path", "bgp", "cabling", "bfd")
ROCE_PORT = 4791  # RoCEv2 UDP destination port: probes look like RoCE traffic


@dataclass(frozen=True)
class Gpu:
    name: str
    rail: int
    hb: int
    rank: int
    ip: str  # rail NIC address
    prefixlen: int
    port: str  # rail NIC port (fabric.json name)
    leaf: str  # first-tier switch of the rail NIC
    leaf_port: str
    hb_ip: str | None = None
    hb_port: str | None = None


@dataclass(frozen=True)
class PathSpec:
    """Probe src -> dst; ``layers[i]`` holds the nodes that may answer at TTL i+1
    (L3-visible hops only; an empty layer is a hop that cannot answer the
    source and must not); the probe must arrive at TTL len(layers)+1."""

    src: str
    dst: str
    via: str | None  # the GPU that forwards a cross-rail pair (rail-only)
    layers: tuple[tuple[str, ...], ...]
    l2_switches: tuple[str, ...] = ()  # L2 rails: switches the pair crosses (fdb evidence)

    cross: bool = False

    @property
    def id(self) -> str:
        return f"path/{'cross-rail' if self.cross else 'same-rail'}/{self.src}->{self.dst}"


@dataclass(frozen=True)
class BgpSession:
    switch: str
    peer: str  # address or interface, as in the config
    description: str = ""
    bfd: bool = False  # the config asks for BFD on this session


@dataclass(frozen=True)
class Cable:
    cable_id: str
    a_node: str
    a_port: str
    b_node: str
    b_port: str


@dataclass
class CheckPlan:
    lab: str
    topology: str  # rail-only | rail-optimized
    mode: str  # routed | l2
    gpus: dict[str, Gpu]
    rails: dict[int, list[str]]  # rail -> GPU names (hb order)
    switches: dict[str, Node]  # the fabric's switch nodes
    ip_owner: dict[str, str]  # address -> node (who answers from it)
    paths: list[PathSpec] = field(default_factory=list)
    bgp: list[BgpSession] = field(default_factory=list)
    prefixes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # switch -> subnets it must route
    foreign: dict[str, tuple[str, ...]] = field(default_factory=dict)  # switch -> subnets it must not route
    cables: list[Cable] = field(default_factory=list)
    rail_subnets: dict[int, tuple[str, ...]] = field(default_factory=dict)

    # --- derived probe lists -------------------------------------------------
    def reach_pairs(self) -> list[tuple[str, str]]:
        return [(a, b) for r in sorted(self.rails) for a in self.rails[r] for b in self.rails[r] if a != b]

    @property
    def isolation_applies(self) -> bool:
        return self.topology == "rail-only" and len(self.rails) > 1

    def isolation_targets(self, src: str) -> list[str]:
        """Routed rails: one GPU of each other rail (the HB-domain mate of that rank,
        else the rail's first GPU)."""
        g = self.gpus[src]
        first = self._first_by_hb()
        return [first[r].get(g.hb, self.rails[r][0]) for r in sorted(self.rails) if r != g.rail and self.rails[r]]

    def _first_by_hb(self) -> dict[int, dict[int, str]]:
        # rail -> {hb: its first GPU on that rail}, built once: scanning every rail per
        # GPU is quadratic (1,024 GPUs x 8 rails x 128 members, twice per check)
        key = (id(self.rails), len(self.gpus))
        if getattr(self, "_first_cache", (None,))[0] != key:
            idx: dict[int, dict[int, str]] = {}
            for r, members in self.rails.items():
                d = idx.setdefault(r, {})
                for n in members:
                    d.setdefault(self.gpus[n].hb, n)
            self._first_cache = (key, idx)
        return self._first_cache[1]

    def counts(self) -> dict[str, int]:
        n = {c: 0 for c in CHECKS}
        n["reachability"] = len(self.reach_pairs())
        if self.isolation_applies:
            n["isolation"] = len(self.gpus) + (len(self.foreign) if self.mode == "routed" else 0)
        n["path"] = len(self.paths)
        if self.mode == "routed":
            n["bgp"] = len(self.bgp) + len(self.prefixes)
            n["bfd"] = sum(s.bfd for s in self.bgp)
        n["cabling"] = len(self.cables)
        return n


def _addr(cidr: str | None) -> str | None:
    return str(ipaddress.ip_interface(cidr).ip) if cidr else None


def _switch_graph(fabric: Fabric, rail: int | None) -> dict[str, set[str]]:
    """Adjacency of switches over fabric links (of one rail, or all when rail is None)."""
    adj: dict[str, set[str]] = {}
    for lk in fabric.links:
        if lk.kind != "fabric":
            continue
        if rail is not None and lk.rail != rail:
            continue
        a, b = lk.a.node, lk.b.node
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set()).add(a)
    return adj


def _bfs(adj: dict[str, set[str]], start: str) -> dict[str, int]:
    dist = {start: 0}
    q = deque([start])
    while q:
        u = q.popleft()
        for v in sorted(adj.get(u, ())):
            if v not in dist:
                dist[v] = dist[u] + 1
                q.append(v)
    return dist


def shortest_layers(adj: dict[str, set[str]], src: str, dst: str) -> tuple[tuple[str, ...], ...] | None:
    """Nodes on any shortest src->dst path, grouped by distance from src (src and dst included)."""
    if src == dst:
        return ((src,),)
    ds, dd = _bfs(adj, src), _bfs(adj, dst)
    if dst not in ds:
        return None
    n = ds[dst]
    layers = [[] for _ in range(n + 1)]
    for v, d in ds.items():
        if v in dd and d + dd[v] == n:
            layers[d].append(v)
    return tuple(tuple(sorted(x)) for x in layers)


NEIGHBOR_RE = re.compile(r"^\s*neighbor\s+(\S+)\s+remote-as\s+\S+", re.M)
DESC_RE = re.compile(r"^\s*neighbor\s+(\S+)\s+description\s+(.+)$", re.M)


def bgp_sessions(switch: str, frr_conf: str) -> list[BgpSession]:
    """Every ``neighbor X remote-as`` of a config (peer-group templates are not sessions)."""
    groups = set(re.findall(r"^\s*neighbor\s+(\S+)\s+peer-group\s*$", frr_conf, re.M))
    desc = dict(DESC_RE.findall(frr_conf))
    member_of = dict(re.findall(r"^\s*neighbor\s+(\S+)\s+peer-group\s+(\S+)\s*$", frr_conf, re.M))
    bfd = set(re.findall(r"^\s*neighbor\s+(\S+)\s+bfd\s*$", frr_conf, re.M))
    return [BgpSession(switch, p, desc.get(p, "").strip(), p in bfd or member_of.get(p) in bfd)
            for p in NEIGHBOR_RE.findall(frr_conf) if p not in groups]


def read_cabling(text: str, file: str) -> list[Cable]:
    """cabling.csv's cables, each end as the lab names it (a server NIC `hb0:rail0` is the
    namespace of its GPU, `a_gpu`, port eth1). The file is the OUTDIR's: a row without the
    columns railonly writes is UntrustedFile (exit 2) naming its line, not a KeyError."""
    from railonly.fabric.input.jsonsource import UntrustedFile

    out = []
    try:
        rows = csv.DictReader(io.StringIO(text, newline=""))
        for r in rows:
            ends = graph_ends(r) if r.get("cable_id") else None
            if ends is None or not all(isinstance(x, str) and x for end in ends for x in end):
                raise UntrustedFile(file, "has a row without the cable_id, a_gpu or a_device/a_port, b_device and"
                                          " b_port railonly writes", "recompile the design", rows.line_num)
            out.append(Cable(r["cable_id"], *ends[0], *ends[1]))
    except (csv.Error, KeyError) as exc:
        raise UntrustedFile(file, f"is not the cabling.csv railonly writes: {exc}", "recompile the design") from None
    return out


def plan(fabric: Fabric, *, configs: dict[str, str] | None = None, cables: list[Cable] | None = None) -> CheckPlan:
    """The check plan of a fabric. ``configs``: {switch: frr.conf text} (routed
    rails); ``cables``: cabling.csv rows (default: the fabric's cabled links)."""
    nodes = fabric.by_name
    switches = {n.name: n for n in fabric.switches}
    rail_link: dict[str, tuple[Endpoint, Endpoint]] = {}  # GPU -> (its NIC end, the switch end)
    hb_link: dict[str, Endpoint] = {}
    for lk in fabric.links:
        if lk.kind == "rail":
            g = lk.a if nodes[lk.a.node].role == "gpu" else lk.b
            s = lk.b if g is lk.a else lk.a
            rail_link[g.node] = (g, s)
        elif lk.kind == "hb":
            g = lk.a if nodes[lk.a.node].role == "gpu" else lk.b
            hb_link[g.node] = g
    gpus: dict[str, Gpu] = {}
    for n in fabric.gpus:
        name = n.name
        if name not in rail_link:
            continue
        nic, sw = rail_link[name]
        iface = ipaddress.ip_interface(nic.ip)
        hb = hb_link.get(name)
        gpus[name] = Gpu(name, n.rail, n.hb_domain, n.rank, str(iface.ip), iface.network.prefixlen,
                         nic.port, sw.node, sw.port, _addr(hb.ip) if hb else None, hb.port if hb else None)
    rails: dict[int, list[str]] = {}
    for g in sorted(gpus.values(), key=lambda g: (g.rail, g.hb, g.name)):
        rails.setdefault(g.rail, []).append(g.name)

    owner: dict[str, str] = {}
    for lk in fabric.links:
        for e in (lk.a, lk.b):
            if e.ip:
                owner[_addr(e.ip)] = e.node
    rail_subnets: dict[int, set[str]] = {}
    for s, v in switches.items():
        if v.loopback:
            owner[_addr(v.loopback)] = s
        for vl in v.vlans:
            if vl.gateway:
                owner[_addr(vl.gateway)] = s
            rail_subnets.setdefault(vl.rail, set()).add(str(ipaddress.ip_network(vl.subnet, strict=False)))

    head = fabric.design
    cp = CheckPlan(head.name, head.topology, head.rail_mode,
                   gpus, rails, switches, owner, rail_subnets={r: tuple(sorted(s)) for r, s in rail_subnets.items()})
    cp.paths = _paths(cp, fabric)
    if cp.mode == "routed":
        for s in sorted(switches):
            text = (configs or {}).get(s)
            if text is not None:
                cp.bgp += bgp_sessions(s, text)
            srails = switches[s].rails
            want = sorted({p for r in (srails or rail_subnets) for p in rail_subnets.get(r, ())})
            if text is not None:
                cp.prefixes[s] = tuple(want)
            if cp.isolation_applies and len(srails) == 1:
                # shared switches keep partitions in separate tables: judged by probes only
                cp.foreign[s] = tuple(sorted(p for r, ps in rail_subnets.items() if r not in srails for p in ps))
    if cables is None:
        cables = [Cable(lk.cable_id, lk.a.node, lk.a.port, lk.b.node, lk.b.port) for lk in fabric.links if lk.cable_id]
    known = {(e.node, e.port) for lk in fabric.links for e in (lk.a, lk.b)}
    cp.cables = [c for c in cables if (c.a_node, c.a_port) in known and (c.b_node, c.b_port) in known]
    return cp


def _paths(cp: CheckPlan, fabric: Fabric) -> list[PathSpec]:
    out: list[PathSpec] = []
    routed = cp.mode == "routed"
    graphs: dict[int | None, dict[str, set[str]]] = {}

    def switch_layers(rail: int | None, a: str, b: str, bridged: bool = True) -> tuple[tuple[str, ...], ...]:
        if a == b:
            # same leaf: bridged within one VLAN; between two rails' VLANs of a packed leaf, routed by it
            return () if bridged else ((a,),)
        if rail not in graphs:
            graphs[rail] = _switch_graph(fabric, rail)
        lay = shortest_layers(graphs[rail], a, b)
        return lay if lay is not None else ((a,), ("<no path>",), (b,))

    by_rank_hb = {(g.rail, g.hb): g.name for g in cp.gpus.values()}
    for r in sorted(cp.rails):
        members = cp.rails[r]
        for i, src in enumerate(members):
            g = cp.gpus[src]
            # same rail: the member half a rail away (another leaf where there is one)
            if len(members) > 1:
                dst = members[(i + max(1, len(members) // 2)) % len(members)]
                d = cp.gpus[dst]
                if routed:
                    lay = switch_layers(r if cp.topology == "rail-only" else None, g.leaf, d.leaf)
                    out.append(PathSpec(src, dst, None, lay))
                else:
                    out.append(PathSpec(src, dst, None, (), l2_switches=tuple(sorted({g.leaf, d.leaf}))))
            # cross rail: the next HB domain's GPU of the next rank
            if len(cp.rails) > 1:
                rails = sorted(cp.rails)
                r2 = rails[(rails.index(r) + 1) % len(rails)]
                hbs = sorted({cp.gpus[n].hb for n in cp.rails[r2]})
                hb2 = hbs[(hbs.index(g.hb) + 1) % len(hbs)] if g.hb in hbs else hbs[0]
                dst = by_rank_hb.get((r2, hb2))
                if dst is None:
                    continue
                d = cp.gpus[dst]
                if cp.topology == "rail-only":
                    via = by_rank_hb.get((r2, g.hb))
                    if via is None or via == dst:
                        continue
                    v = cp.gpus[via]
                    # past the forwarding GPU, the rail's switches cannot answer the source (an
                    # address of another rail: isolation): those hops are counted, not named
                    rest = tuple(() for _ in switch_layers(r2, v.leaf, d.leaf)) if routed else ()
                    out.append(PathSpec(src, dst, via, ((via,), *rest), cross=True,
                                        l2_switches=() if routed else (v.leaf,)))
                else:
                    lay = switch_layers(None, g.leaf, d.leaf, bridged=False)
                    out.append(PathSpec(src, dst, None, lay, cross=True))
    return out


def load(lab) -> CheckPlan:
    """The plan of a loaded :class:`~railonly.emulation.lab.Lab` (reads its files)."""
    from railonly.fabric.outdir.reader import OutdirReader

    # read as load_lab reads the OUTDIR (no symlink followed, bounded, UTF-8 or exit 2): from the
    # directory the lab was loaded from, its OUTDIR or the record of a running lab (rundir.deployed_lab)
    root = lab.topology_file.parent
    reader = OutdirReader(str(root))
    configs = {}
    for s in lab.switches:
        text = reader.read_text(str((lab.configs_dir / s.name / FRR_CONF).relative_to(root)))
        if text is not None:
            configs[s.name] = text
    cab = str((lab.fabric_file.parent / CABLING_CSV).relative_to(root))
    text = reader.read_text(cab)
    cables = read_cabling(text, reader.where(cab)) if text is not None else None
    return plan(lab.fabric, configs=configs, cables=cables)
