"""The containerlab topology `<name>.clab.yml` of a fabric (docs/reference/outdir.md).

Two stages, as everywhere in the compiler: :func:`topology` builds the plain
dict (every choice is made here), :func:`render` dumps it as YAML and parses
it back. The compiler's lab producer writes it, for the lab slice when the
design has one (see :mod:`railonly.fabric.design.lab_slice`).

What a node is, as containerlab users run these kinds:

* GPU: a ``linux`` node; rail NIC ``eth1`` (eth0 is containerlab's
  management port), HB port ``hb0``. ``exec`` sets the addresses and the
  rail-only routes: a destination on another rail is reached through the HB
  domain, via the sibling GPU of the destination's rank, which forwards onto
  its own rail (``ip_forward=1``). Routes carry ``src`` = the rail address so
  replies come back the same way, and rp_filter is off because forwarded
  traffic arrives on the "wrong" interface by design.
* HB domain (the NVSwitch): a ``linux`` node whose ``exec`` builds one Linux
  bridge over its GPU ports. Not the ``bridge`` kind: that is a bridge in the
  host namespace which the user must create beforehand, outside the lab, and
  it would not exist as the namespace ``clab-<name>-<node>`` (docs/reference/outdir.md, lab names).
* switch, SONiC: ``sonic-vs`` (no startup-config support in containerlab), so
  ``config_db.json`` is bind-mounted at /var/sonic/config_db.json, where the
  image's start script loads it, and ``frr.conf`` (routed rails) at
  /etc/frr/frr.conf.
* switch, EOS: ``arista_ceos`` with ``startup-config``.

Switch ports are ``eth<N>`` in the topology: both sonic-vs (eth1 = first
front-panel port, Ethernet0) and cEOS (eth1 = Ethernet1) map their Linux
interfaces positionally, and ``ethN`` works with every containerlab version
(interface aliases need 0.56+). The lab loader maps them back to the
fabric.json port names. Containerlab runs ``exec`` after the node's links
exist (since 0.52), so the commands can address eth1/hb0.
"""

from __future__ import annotations

import ipaddress
import re

import yaml

from ..outdir_layout import (CONFIG_DB, CONFIGS, FRR_CONF, SONIC_CONTAINER_CONFIG_DB, SONIC_FRR_CONF_PATH,
                             STARTUP_CONFIG, clab_yml)
from ..graph.addressing import BlockPool
from ..graph.model import Fabric, Node
from ..platforms.ports import GPU_HB_PORT, GPU_RAIL_PORT
from . import clab_exec

# Default images; change them in one place in the generated file (topology.kinds).
IMAGES = {
    "linux": "ghcr.io/srl-labs/network-multitool:latest",
    "sonic-vs": "docker-sonic-vs:latest",
    "arista_ceos": "ceos:4.32.0F",
}
KIND_OF_PLATFORM = {"sonic": "sonic-vs", "eos": "arista_ceos"}
HB_BRIDGE = "br0"  # the NVSwitch bridge inside an HB node
NODE_STARTUP_CONFIG = "startup-config"  # containerlab's node key (spelt like EOS's file, another fact)
# Management network: lab-specific, so a big lab gets the room it needs and
# never collides with the default `clab` network or the design's own pools.
MGMT_CANDIDATES = ("198.18.0.0/15", "100.64.0.0/10", "192.168.0.0/16")
IFNAME_MAX = 15  # Linux IFNAMSIZ - 1
_ENDPOINT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._|-]*):([A-Za-z0-9._/-]+)$")


def switch_iface(index: int) -> str:
    """Topology interface of switch port `index` (0-based): eth1 is the first data port."""
    return f"eth{index + 1}"


def iface(node: Node, port: str) -> str:
    if node.role == "switch":
        return switch_iface(node.ports[port].index)
    return port  # GPU and HB ports are Linux names already (eth1, hb0, gpu<r>)


# --- structured topology ------------------------------------------------------


def _rail_blocks(fab: Fabric) -> list[str]:
    """GPU address block of each rail (the unit cross-rail routes point at)."""
    d = fab.design
    pool = BlockPool("gpu_pool", d.pools.gpu, d.hb_size, "GPU subnets")
    plen = 32 - (pool.block_size.bit_length() - 1)
    return [f"{ipaddress.IPv4Address(pool.rail_base + r * pool.block_size)}/{plen}" for r in range(d.hb_size)]


def _gateways(fab: Fabric) -> dict[tuple[str, str], str]:
    """(switch, port) -> gateway address of the GPU subnet on that port (routed rails)."""
    out = {}
    for sw in fab.switches:
        for v in sw.vlans:
            if v.gateway:
                gw = v.gateway.split("/", 1)[0]
                for p in v.ports:
                    out[(sw.name, p)] = gw
    return out


def _gpu_exec(fab: Fabric, gpu: Node, blocks: list[str], gateways: dict, hb_ip: dict) -> list[str]:
    d = fab.design
    nic = gpu.ports[GPU_RAIL_PORT].ip
    hb = gpu.ports[GPU_HB_PORT].ip
    src = nic.split("/", 1)[0]
    cmds: list[clab_exec.ExecItem] = [
        clab_exec.LinkMtu(GPU_RAIL_PORT, d.nic_mtu),
        clab_exec.AddrAdd(nic, GPU_RAIL_PORT),
        clab_exec.AddrAdd(hb, GPU_HB_PORT),
        clab_exec.Sysctl("net.ipv4.ip_forward", "1"),
        clab_exec.Sysctl("net.ipv4.conf.all.rp_filter", "0"),
        clab_exec.Sysctl(f"net.ipv4.conf.{GPU_RAIL_PORT}.rp_filter", "0"),
        clab_exec.Sysctl(f"net.ipv4.conf.{GPU_HB_PORT}.rp_filter", "0"),
    ]
    peer = fab.peer(gpu.name, GPU_RAIL_PORT)
    gw = gateways.get((peer.node, peer.port)) if peer else None
    if d.topology == "rail-optimized":
        # The baseline carries cross-rail traffic through its spine.
        if gw:
            cmds.append(clab_exec.RouteAdd(d.pools.gpu, gw, GPU_RAIL_PORT))
        return [str(c) for c in cmds]
    if gw:  # other leaves of the own rail
        cmds.append(clab_exec.RouteAdd(blocks[gpu.rail], gw, GPU_RAIL_PORT))
    for r, block in enumerate(blocks):
        if r != gpu.rail:
            cmds.append(clab_exec.RouteAdd(block, hb_ip[(gpu.hb_domain, r)], GPU_HB_PORT, src))
    return [str(c) for c in cmds]


def _hb_exec(hb: Node) -> list[str]:
    cmds: list[clab_exec.ExecItem] = [clab_exec.BridgeAdd(HB_BRIDGE), clab_exec.LinkUp(HB_BRIDGE)]
    cmds += [clab_exec.LinkMaster(p, HB_BRIDGE) for p in sorted(hb.ports, key=lambda p: hb.ports[p].index)]
    return [str(c) for c in cmds]


def _switch_node(sw: Node, configs: str) -> dict:
    kind = KIND_OF_PLATFORM[sw.platform]
    base = f"{configs}/{sw.name}"
    if kind == "sonic-vs":
        binds = [f"{base}/{CONFIG_DB}:{SONIC_CONTAINER_CONFIG_DB}"]
        if sw.asn is not None:
            binds.append(f"{base}/{FRR_CONF}:{SONIC_FRR_CONF_PATH}")
        return {"kind": kind, "binds": binds}
    return {"kind": kind, NODE_STARTUP_CONFIG: f"{base}/{STARTUP_CONFIG}"}


def _mgmt(fab: Fabric) -> dict:
    d = fab.design
    pools = [d.pools.gpu, d.pools.fabric, d.pools.loopback, d.pools.hb]
    need = len(fab.nodes) + 8  # network, gateway, broadcast and some slack
    plen = min(24, 32 - max(1, need - 1).bit_length())
    for cand in MGMT_CANDIDATES:
        net = next(ipaddress.IPv4Network(cand).subnets(new_prefix=plen))
        if not any(net.overlaps(p) for p in pools):
            return {"network": f"railonly-{d.name}", "ipv4-subnet": str(net)}
    return {"network": f"railonly-{d.name}"}  # every candidate taken: containerlab picks


def topology(fab: Fabric, configs: str = CONFIGS, images: dict[str, str] | None = None) -> dict:
    """The clab topology as a plain dict; `configs` is the config folder relative to the file."""
    imgs = {**IMAGES, **(images or {})}
    blocks = _rail_blocks(fab)
    gateways = _gateways(fab)
    hb_ip = {(g.hb_domain, g.rank): g.ports[GPU_HB_PORT].ip.split("/", 1)[0] for g in fab.gpus}
    nodes: dict[str, dict] = {}
    for g in fab.gpus:
        nodes[g.name] = {"kind": "linux", "exec": _gpu_exec(fab, g, blocks, gateways, hb_ip)}
    for hb in fab.hbs:
        nodes[hb.name] = {"kind": "linux", "exec": _hb_exec(hb)}
    for sw in fab.switches:
        nodes[sw.name] = _switch_node(sw, configs)
    used = sorted({n["kind"] for n in nodes.values()})
    links = []
    for lk in fab.links:
        a, b = fab.node(lk.a.node), fab.node(lk.b.node)
        links.append({"endpoints": [f"{a.name}:{iface(a, lk.a.port)}", f"{b.name}:{iface(b, lk.b.port)}"]})
    return {
        "name": fab.design.name,
        "prefix": "clab",  # explicit: nodes are clab-<name>-<node> (docs/reference/outdir.md, lab names)
        "mgmt": _mgmt(fab),
        "topology": {
            "kinds": {k: {"image": imgs[k]} for k in used},
            "nodes": nodes,
            "links": links,
        },
    }


# --- checks the containerlab schema misses --------------------------------------


def endpoint_problems(topo: dict) -> list[str]:
    """Link endpoint errors: form `node:iface`, known node, used once, name <= 15 chars.

    The schema's endpoint pattern uses a draft 2020-12 keyword that draft-07
    validators skip, so these are checked here.
    """
    nodes = (topo.get("topology") or {}).get("nodes") or {}
    seen: dict[tuple[str, str], int] = {}
    out = []
    for i, link in enumerate((topo.get("topology") or {}).get("links") or []):
        eps = link.get("endpoints") if isinstance(link, dict) else None
        where = f"topology.links[{i}]"
        if not isinstance(eps, list) or len(eps) != 2:
            out.append(f"{where}: needs exactly two endpoints, got {eps!r}")
            continue
        for ep in eps:
            m = _ENDPOINT.fullmatch(ep) if isinstance(ep, str) else None
            if not m:
                out.append(f"{where}: endpoint {ep!r} is not of the form node:interface")
                continue
            node, name = m.groups()
            if node not in nodes:
                out.append(f"{where}: endpoint {ep!r} names unknown node {node!r}")
            if len(name) > IFNAME_MAX:
                out.append(f"{where}: interface {name!r} of {ep!r} is longer than {IFNAME_MAX} characters")
            if name == "eth0":
                out.append(f"{where}: {ep!r} uses eth0, containerlab's management interface")
            if (node, name) in seen:
                out.append(f"{where}: endpoint {ep!r} is already used by topology.links[{seen[(node, name)]}]")
            else:
                seen[(node, name)] = i
    return out


# --- rendering --------------------------------------------------------------------


def render(fab: Fabric, configs: str = CONFIGS, images: dict[str, str] | None = None) -> str:
    topo = topology(fab, configs, images)
    problems = endpoint_problems(topo)
    if problems:  # a compiler bug, not a user error: never write it
        raise AssertionError("clab topology has bad endpoints:\n" + "\n".join(problems[:20]))
    Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    text = yaml.dump(topo, Dumper=Dumper, sort_keys=False, default_flow_style=False, width=1000)
    if yaml.load(text, Loader=Loader) != topo:  # parse back before writing
        raise AssertionError("clab topology does not survive a YAML round trip")
    return text


def filename(fab: Fabric) -> str:
    return clab_yml(fab.design.name)


