"""The Lab an OUTDIR holds, and every name and path a lab uses (one source for each).

A :class:`Lab` is read from an OUTDIR (``<name>.clab.yml`` + the lab's
``fabric.json``) and is plain data: node names, roles, the namespace of each
node (``clab-<name>-<node>``, docs/reference/outdir.md), its exec commands as typed items (fabric/outputs/clab_exec.py),
and every link with both the topology interface (``eth3``) and the
``fabric.json`` port name (``Ethernet16``). Runtimes deploy a Lab; checks and
traffic talk to nodes only through ``Runtime.exec``.

Which fabric.json: a lab that is a slice of its design has its own,
``lab/fabric.json`` (see railonly.fabric.design.lab_slice); otherwise the top-level
one. Runtimes never recompile.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from railonly.fabric.design.design import LAB_NIC_MBPS_DEFAULT, NIC_GBPS_DEFAULT
from railonly.fabric.graph.model import Fabric, Link, Node
from railonly.fabric.input.problems import InputError, Problem
from railonly.fabric.outputs import clab_exec
from railonly.fabric.outdir_layout import CLAB_SUFFIX, CONFIGS
from railonly.fabric.outputs.clab import NODE_STARTUP_CONFIG

RUN_ROOT = "/run/railonly"  # per-lab run dirs; must be searchable by user frr (not under a 0700 tmp)
STATE_SUBDIR = "state"  # the lab's private records (root, 0700) inside its run dir; never in OUTDIR
DEFAULT_NIC_MBPS = float(LAB_NIC_MBPS_DEFAULT)  # for a fabric.json without lab_nic_mbps


class LabError(InputError):
    """The OUTDIR is not a usable lab (exit 2)."""

    def __init__(self, where: str, message: str, hint: str = ""):
        super().__init__([Problem("", message, hint, None, where)])


# --- names and paths ----------------------------------------------------------------


def netns_prefix(lab: str) -> str:
    """What every namespace (and container) of a lab starts with (docs/reference/outdir.md, lab names)."""
    return f"clab-{lab}-"


def netns_name(lab: str, node: str) -> str:
    """Namespace (and container) name of a lab node (docs/reference/outdir.md, lab names)."""
    return netns_prefix(lab) + node


def run_root() -> str:
    """Where every lab's run directory lives (read at call time: tests point it elsewhere)."""
    return RUN_ROOT


def run_dir(lab: str) -> str:
    """The lab's directory under /run: its FRR instances (frr/<switch>) and iperf3 servers."""
    return os.path.join(run_root(), lab)


def state_dir(lab: str) -> str:
    """The lab's runtime records (identity, netns state, faults, traffic, SSH material):
    root-owned, 0700, inside its run dir (runtime/rundir.py writes it). Never in the OUTDIR,
    which a pull request may have written."""
    return os.path.join(run_dir(lab), STATE_SUBDIR)


def lock_path(lab: str, what: str = "lock") -> str:
    """The lab's lock files (runtime/lock.py): beside its run dir, not in it (destroy removes
    that), and not in OUTDIR (untrusted, and shared by every checkout of the lab)."""
    return os.path.join(run_root(), f"{lab}.{what}")


# --- the lab ----------------------------------------------------------------------


@dataclass(frozen=True)
class LabPort:
    node: str
    port: str  # fabric.json port name (what configs and checks use)
    iface: str  # topology interface name in <name>.clab.yml (containerlab's view)
    ip: str | None = None


@dataclass(frozen=True)
class LabLink:
    kind: str  # rail | fabric | hb
    rail: int | None
    gbps: float
    a: LabPort
    b: LabPort


@dataclass(frozen=True)
class LabNode:
    name: str
    role: str  # gpu | hb | switch
    kind: str  # containerlab kind: linux, sonic-vs, arista_ceos
    netns: str  # clab-<lab>-<node>
    image: str | None
    exec: tuple = ()  # post-deploy commands, each a typed clab_exec item (str() is its line)
    binds: tuple[str, ...] = ()  # host:container, host paths relative to the clab file
    startup_config: str | None = None  # relative to the clab file
    fabric_node: Node | None = field(default=None, compare=False, hash=False)  # its node of fabric.json

    @property
    def platform(self) -> str | None:
        return self.fabric_node.platform if self.fabric_node is not None else None


@dataclass
class Lab:
    outdir: Path
    name: str
    topology_file: Path  # <name>.clab.yml
    fabric_file: Path  # the lab's fabric.json
    sliced: bool  # the lab is a slice of its design (artifacts under lab/)
    fabric: Fabric  # the lab's fabric.json read back (graph/fabric_json.py): fabric.design holds its head
    clab: dict
    nodes: dict[str, LabNode]
    links: list[LabLink]

    @property
    def configs_dir(self) -> Path:
        """configs/ of the lab: per-switch config files the switches run."""
        return self.fabric_file.parent / CONFIGS

    @property
    def state_dir(self) -> Path:
        return Path(state_dir(self.name))

    # Runtime state files, all under state_dir (/run/railonly/<lab>/state, never the OUTDIR):
    @property
    def netns_state_file(self) -> Path:
        """The netns engine's intent-first record of what it created."""
        return self.state_dir / "netns-state.json"

    @property
    def traffic_state_file(self) -> Path:
        return self.state_dir / "traffic.json"

    @property
    def faults_file(self) -> Path:
        return self.state_dir / "faults.json"

    @property
    def ssh_dir(self) -> Path:
        """The lab sshd's keys, known_hosts and per-switch state."""
        return self.state_dir / "ssh"

    def renamed(self, name: str) -> "Lab":
        """The same lab deployed under another name (``lab deploy --lab-name``): every
        namespace follows the name; the OUTDIR's files are unchanged."""
        from dataclasses import replace

        nodes = {k: replace(n, netns=netns_name(name, k)) for k, n in self.nodes.items()}
        return replace(self, name=name, nodes=nodes)

    def node(self, name: str) -> LabNode:
        try:
            return self.nodes[name]
        except KeyError:
            prefixed = sorted(n for n in self.nodes if n.endswith(f"-{name}"))[:3]  # a switch without its site
            near = prefixed or sorted(n for n in self.nodes if n.startswith(str(name).split("-")[0]))[:5]
            hint = ("switch names carry the site prefix: " if prefixed else "e.g. ") + ", ".join(near) + "; " if near else ""
            raise LabError(str(self.topology_file), f"no node {name!r} in lab {self.name}",
                           hint + f"every node is listed by: railonly lab status {self.outdir}") from None

    def netns(self, node: str) -> str:
        return self.node(node).netns

    def names(self, role: str | None = None) -> list[str]:
        return [n.name for n in self.nodes.values() if role is None or n.role == role]

    @property
    def gpus(self) -> list[LabNode]:
        return [n for n in self.nodes.values() if n.role == "gpu"]

    @property
    def hbs(self) -> list[LabNode]:
        return [n for n in self.nodes.values() if n.role == "hb"]

    @property
    def switches(self) -> list[LabNode]:
        return [n for n in self.nodes.values() if n.role == "switch"]

    def ports(self, node: str) -> list[LabPort]:
        """Every linked port of a node, in link order."""
        return [e for lk in self.links for e in (lk.a, lk.b) if e.node == node]

    def port_of(self, node: str, iface: str) -> str:
        for p in self.ports(node):
            if p.iface == iface:
                return p.port
        raise LabError(str(self.topology_file), f"{node} has no interface {iface!r}")

    def iface_of(self, node: str, port: str) -> str:
        for p in self.ports(node):
            if p.port == port:
                return p.iface
        raise LabError(str(self.topology_file), f"{node} has no port {port!r}")



# The lab's management network (docs/management.md): one namespace holding a bridge, the
# gateway address, and one veth to every switch's management port.
MGMT_NODE = "oob"
MGMT_PORT = {"sonic": "eth0", "eos": "Management1"}


@dataclass(frozen=True)
class MgmtNetwork:
    netns: str  # clab-<lab>-oob
    gateway: str  # with prefix length: the bridge's address
    switches: dict[str, str]  # switch -> management address with prefix length


def management_network(lab: Lab) -> MgmtNetwork | None:
    """The management network fabric.json asks for, or None. Every address is checked
    here (fabric.json is untrusted): inside the pool, one per switch, not the gateway."""
    import ipaddress

    head = lab.fabric.design.management
    if head is None:
        return None
    where = str(lab.fabric_file)
    try:
        pool = ipaddress.IPv4Network(head.pool, strict=True)
        gw = ipaddress.IPv4Address(head.gateway)
    except ValueError:
        raise LabError(where, "management: needs pool (an IPv4 prefix) and gateway (an address)", "recompile the design") from None
    if MGMT_NODE in lab.nodes:
        raise LabError(where, f"a node is named {MGMT_NODE!r}, the name of the lab's management network", "recompile the design")
    switches: dict[str, str] = {}
    seen = {gw}
    for sw in lab.switches:
        ip = sw.fabric_node.mgmt_ip
        if ip is None:
            continue
        try:
            iface = ipaddress.IPv4Interface(ip)
        except ValueError:
            raise LabError(where, f"node {sw.name}: mgmt_ip {str(ip)[:40]!r} is not an IPv4 address with prefix length",
                           "recompile the design") from None
        if iface.network != pool or iface.ip in seen or iface.ip in (pool.network_address, pool.broadcast_address):
            raise LabError(where, f"node {sw.name}: mgmt_ip {iface} is not a free address of the management pool {pool}",
                           "recompile the design")
        seen.add(iface.ip)
        switches[sw.name] = str(iface)
    return MgmtNetwork(netns_name(lab.name, MGMT_NODE), f"{gw}/{pool.prefixlen}", switches)


def target(node: "str | LabNode") -> str:
    """The namespace/container name exec addresses."""
    return node.netns if isinstance(node, LabNode) else str(node)


def link_mbps(lab: Lab, gbps: float | None = None) -> float:
    """The one formula of an emulated link rate in Mbit/s: the lab's NIC rate (``lab.nic_mbps``)
    scaled by gbps / nic_gbps, so every link keeps its ratio to the NIC (None: the NIC itself)."""
    head = lab.fabric.design
    nic_mbps = float(head.lab_nic_mbps or DEFAULT_NIC_MBPS)
    if gbps is None:
        return nic_mbps
    return nic_mbps * float(gbps) / float(head.nic_gbps or NIC_GBPS_DEFAULT)


def link_rates(lab: Lab) -> tuple[float, float]:
    """The emulated (NIC, HB) link rates in Mbit/s (:func:`link_mbps` of the NIC and of hb_gbps)."""
    head = lab.fabric.design
    return link_mbps(lab), link_mbps(lab, head.hb_gbps or head.nic_gbps or NIC_GBPS_DEFAULT)


def _unsafe_below(out: Path) -> None:
    """InputError naming every symlink or special file below OUTDIR (runtime state never
    lives there, so nothing is exempt)."""
    from railonly.fabric.outdir.reader import unsafe_entries

    bad = unsafe_entries(str(out))
    if bad:
        raise InputError(bad)


def _shape_problems(clab: dict) -> list[str]:
    """What of the topology the loader would trip over (wrong types); fabric.json's types
    are checked by its parser (graph/fabric_json.py)."""
    out = []
    topo = clab.get("topology")
    if not isinstance(topo, dict):
        return ["is not a containerlab topology (no 'topology' section)"]
    nodes = topo.get("nodes") or {}
    if not isinstance(nodes, dict):
        out.append("topology.nodes is not a mapping")
        nodes = {}
    for k in ("kinds", "defaults"):
        if not isinstance(topo.get(k) or {}, dict):
            out.append(f"topology.{k} is not a mapping")
    for name, spec in nodes.items():
        if not isinstance(name, str) or not isinstance(spec or {}, dict):
            out.append(f"topology.nodes.{name!s:.40}: not a node mapping")
            continue
        for k in ("exec", "binds"):
            v = (spec or {}).get(k) or []
            if not isinstance(v, list) or not all(isinstance(c, str) and "\n" not in c for c in v):
                out.append(f"topology.nodes.{name}.{k} is not a list of one-line strings")
        for k in ("kind", "image", NODE_STARTUP_CONFIG):
            v = (spec or {}).get(k)
            if v is not None and not isinstance(v, str):
                out.append(f"topology.nodes.{name}.{k} is not a string")
    links = topo.get("links") or []
    if not isinstance(links, list) or not all(
            isinstance(lk, dict) and isinstance(lk.get("endpoints"), list)
            and all(isinstance(e, str) for e in lk["endpoints"]) for lk in links):
        out.append("topology.links is not a list of {endpoints: [NODE:IFACE, NODE:IFACE]}")
    return out


def _topology_file(out: Path) -> Path:
    if not out.is_dir():
        raise LabError(str(out), "is not a directory", "give the OUTDIR of railonly compile")
    found = sorted(p for p in out.glob("*" + CLAB_SUFFIX) if p.parent == out)
    if len(found) != 1:
        what = "no <name>.clab.yml" if not found else f"{len(found)} .clab.yml files ({', '.join(p.name for p in found)})"
        raise LabError(str(out), f"holds {what}", "give the OUTDIR of railonly compile (it writes exactly one)")
    return found[0]


def load_lab(outdir: str | Path) -> Lab:
    """Read the lab of an OUTDIR. Raises LabError (exit 2) with a hint when it is not one.

    OUTDIR is untrusted: it is resolved once to an absolute path (daemons get
    absolute paths), no symlink or special file below it is accepted, every file is read through
    railonly.fabric.outdir.reader.OutdirReader (bounded, no symlink
    followed, no YAML alias), and a file of the wrong shape is exit 2 naming
    it, never a traceback."""
    from railonly.fabric.graph.fabric_json import FILE
    from railonly.fabric.outdir.reader import OutdirReader, lab_fabric_rel

    reader = OutdirReader(str(outdir))
    out = Path(reader.root)
    topo_file = _topology_file(out)
    _unsafe_below(out)
    fabric_rel = lab_fabric_rel(reader)
    sliced = fabric_rel != FILE
    fabric_file = out / fabric_rel
    fabric = reader.read_fabric(fabric_rel)
    if fabric is None:
        raise LabError(str(fabric_file), "is missing", "compile the design first: railonly compile DESIGN.yml -o OUTDIR")
    clab, lines = reader.read_yaml(topo_file.name)
    if not isinstance(clab, dict):
        raise LabError(str(topo_file), "is not a containerlab topology (not a mapping)", "recompile the design")
    from railonly.fabric.input import limits

    n = len((clab.get("topology") or {}).get("nodes") or {}) if isinstance(clab.get("topology"), dict) else 0
    if n > limits.LAB_NODES.value:  # before any per-node work: planning 12,480 namespaces is not a lab
        raise InputError([Problem(
            "topology.nodes", f"has {n:,} nodes, more than the cap of {limits.LAB_NODES.value:,} lab nodes"
            f" ({limits.LAB_NODES.env})", "compile a smaller lab slice (railonly compile --lab-domains N), or raise"
            f" the cap for this run: {limits.LAB_NODES.env}={n}", None, str(topo_file))])
    shape = _shape_problems(clab)
    if shape:
        raise InputError([Problem("", what, "recompile the design", None, str(topo_file)) for what in shape[:20]])
    # the same allow-lists as `validate` (exec lines, names, node keys): one place decides
    from railonly.fabric.outdir.reader import check_clab, check_fabric

    refused = check_clab(clab, str(topo_file), lines) + check_fabric(fabric, str(fabric_file))
    if refused:
        raise InputError(refused)
    name = clab.get("name")  # check_clab: a lab name; node names plain (they name files and namespaces)
    if name != fabric.design.name:
        raise LabError(str(topo_file), f"lab name {name!r} differs from {fabric_file.name}'s {fabric.design.name!r}",
                       "the files come from different compiles: recompile into a fresh OUTDIR")
    topo = clab["topology"]
    kinds = topo.get("kinds") or {}
    nodes: dict[str, LabNode] = {}
    for nname, spec in (topo.get("nodes") or {}).items():
        spec = spec or {}
        kind = spec.get("kind") or (topo.get("defaults") or {}).get("kind", "linux")
        info = fabric.by_name.get(nname)
        if info is None:
            raise LabError(str(topo_file), f"node {nname!r} is not in {fabric_file}", "recompile the design")
        try:  # check_clab allowed each line: it parses (the one exec grammar, outputs/clab_exec.py)
            exec_ = tuple(clab_exec.parse(c) for c in spec.get("exec") or ())
        except clab_exec.ExecLineError as exc:
            raise LabError(str(topo_file), f"node {nname}: an exec line {exc}", "recompile the design") from None
        nodes[nname] = LabNode(
            name=nname, role=info.role, kind=kind, netns=netns_name(name, nname),
            image=spec.get("image") or (kinds.get(kind) or {}).get("image"),
            exec=exec_,
            binds=tuple(spec.get("binds") or ()), startup_config=spec.get(NODE_STARTUP_CONFIG), fabric_node=info,
        )
    links = _join_links(topo.get("links") or [], fabric.links, str(topo_file))
    return Lab(out, name, topo_file, fabric_file, sliced, fabric, clab, nodes, links)


def _join_links(clinks: list, flinks: list[Link], where: str) -> list[LabLink]:
    # The compiler writes both lists from the same link list, in the same order.
    if len(clinks) != len(flinks):
        raise LabError(where, f"has {len(clinks)} links but fabric.json {len(flinks)}", "recompile the design")
    out = []
    for i, (c, f) in enumerate(zip(clinks, flinks)):
        ends = []
        for ep, fe in zip(c.get("endpoints") or [], (f.a, f.b)):
            node, _, iface = str(ep).partition(":")
            if node != fe.node:
                raise LabError(where, f"links[{i}] joins {node!r} where fabric.json has {fe.node!r}", "recompile the design")
            ends.append(LabPort(node, fe.port, iface, fe.ip))
        if len(ends) != 2:
            raise LabError(where, f"links[{i}] needs two endpoints", "recompile the design")
        out.append(LabLink(f.kind, f.rail, f.gbps, ends[0], ends[1]))
    return out
