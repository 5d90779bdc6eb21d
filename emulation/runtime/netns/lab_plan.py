"""A Lab (``<name>.clab.yml`` + fabric.json) -> one netns deploy Plan. Pure.

- every link: a veth pair created in both namespaces, each end named by its
  fabric.json port (GPU eth1/hb0, HB node gpu<r>, switch Ethernet0 ...);
- Linux nodes (GPUs, HB domains): their clab ``exec`` commands translated
  into plan items (addresses, routes, bridges, sysctls), never run by a shell;
- switches: programmed from their own generated config files (switch_plan);
- every link shaped at both ends: ``gbps * nic_mbps / nic_gbps`` Mbit/s
  (NIC links tbf, HB links htb), which keeps the NIC:HB ratio.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from railonly.fabric.outdir_layout import STARTUP_CONFIG
from ...lab import (DEFAULT_NIC_MBPS, MGMT_NODE, MGMT_PORT, Lab, LabError, LabNode, link_mbps, link_rates,
                    management_network, netns_name, run_dir)
from railonly.fabric.devices.readback import eos, sonic
from railonly.fabric.outputs import clab_exec
from railonly.fabric.devices.readback.intent import ConfigReadError, SwitchIntent
from . import frr
from . import ns_plan as nsplan
from .switch_plan import switch_items


@dataclass
class LabPlan:
    plan: nsplan.Plan
    frr: dict[str, frr.FrrInstance] = field(default_factory=dict)  # switch -> instance
    bgp_peers: dict[str, int] = field(default_factory=dict)  # switch -> neighbors in its config
    warnings: list[str] = field(default_factory=list)
    nic_mbps: float = DEFAULT_NIC_MBPS
    hb_mbps: float = 0.0


# --- clab exec -> plan items ------------------------------------------------------------


class ExecError(ValueError):
    pass


def exec_items(netns: str, commands, dev_of=lambda d: d) -> tuple[list, list[tuple[str, str]]]:
    """Translate a node's clab exec items (fabric/outputs/clab_exec.py, parsed by load_lab)
    into (plan items, sysctls). ``dev_of`` maps topology interface names to the port names
    the namespace uses. Anything else raises ExecError (nothing runs a shell)."""
    mtu: dict[str, int] = {}
    bridges: dict[str, list[str]] = {}
    items: list = []
    sysctls: list[tuple[str, str]] = []
    for c in commands:
        if isinstance(c, clab_exec.LinkMtu):
            mtu[dev_of(c.dev)] = c.mtu
        elif isinstance(c, clab_exec.LinkUp):
            pass  # a device the plan creates comes up (a bridge, a veth end)
        elif isinstance(c, clab_exec.LinkMaster):
            bridges.setdefault(c.bridge, []).append(dev_of(c.dev))
        elif isinstance(c, clab_exec.BridgeAdd):
            bridges.setdefault(c.name, [])
        elif isinstance(c, clab_exec.AddrAdd):
            items.append(nsplan.Address(netns, dev_of(c.dev), c.cidr))
        elif isinstance(c, clab_exec.RouteAdd):
            items.append(nsplan.Route(netns, c.dst, via=c.via, dev=dev_of(c.dev), src=c.src))
        elif isinstance(c, clab_exec.Sysctl):
            sysctls.append((c.key, c.value))
        else:
            raise ExecError(f"{c!r}: not a command the netns runtime translates")
    out = [nsplan.Bridge(netns, b, tuple(ports)) for b, ports in bridges.items()]
    out += [nsplan.Link(netns, dev, mtu=m, up=True) for dev, m in sorted(mtu.items())]
    return out + items, sysctls


# --- switches -----------------------------------------------------------------------------


def platform_of(node: LabNode) -> str:
    return node.platform or ("eos" if "eos" in node.kind else "sonic")


def read_switch(node: LabNode, config_dir: str) -> SwitchIntent:
    """The intent of a switch's config files in ``config_dir`` (its platform decides the reader)."""
    if platform_of(node) == "eos":
        return eos.read_file(os.path.join(config_dir, STARTUP_CONFIG))
    return sonic.read_dir(config_dir)


def switch_config_dir(lab: Lab, node: str) -> str:
    return str(lab.configs_dir / node)


# --- the whole lab --------------------------------------------------------------------------


def build(lab: Lab, *, shaping: bool = True, config_dirs: dict[str, str] | None = None) -> LabPlan:
    """The deploy plan of ``lab``. Raises LabError (exit 2) for a lab or config the runtime cannot read.

    ``config_dirs`` overrides where a switch's config files are read (default
    OUTDIR's configs/<switch>)."""
    b = nsplan.PlanBuilder(lab.name)
    nic_mbps, hb_mbps = link_rates(lab)
    out = LabPlan(nsplan.Plan(lab.name), nic_mbps=nic_mbps, hb_mbps=hb_mbps)
    cabled: dict[str, list[str]] = {n: [] for n in lab.nodes}
    for lk in lab.links:
        cabled[lk.a.node].append(lk.a.port)
        cabled[lk.b.node].append(lk.b.port)
    ns_sysctls: dict[str, tuple] = {}
    node_items: list = []
    for node in lab.nodes.values():
        ns = netns_name(lab.name, node.name)
        if ns != node.netns:
            raise LabError(str(lab.topology_file), f"node {node.name}: namespace {node.netns} lacks the lab prefix")
        if node.role == "switch":
            cdir = (config_dirs or {}).get(node.name) or switch_config_dir(lab, node.name)
            try:
                intent = read_switch(node, cdir)
            except ConfigReadError as exc:
                raise LabError(exc.path, str(exc).split(": ", 1)[-1], "recompile the design (a template bug?)") from None
            si = switch_items(intent, ns, cabled[node.name], run_dir(lab.name), node.name)
            ns_sysctls[ns] = si.sysctls
            node_items += si.items
            out.warnings += si.warnings
            if si.frr:
                out.frr[node.name] = si.frr
                out.bgp_peers[node.name] = _count_neighbors(intent.frr_conf or "")
            continue
        iface_to_port = {p.iface: p.port for p in lab.ports(node.name)}
        try:
            items, sysctls = exec_items(ns, node.exec, lambda d: iface_to_port.get(d, d))
        except ExecError as exc:
            raise LabError(str(lab.topology_file), f"node {node.name} exec {exc}",
                           "the netns runtime translates ip/sysctl commands only") from None
        ns_sysctls[ns] = _merge_sysctls(nsplan.host_sysctls(), sysctls)
        node_items += items
    for node in lab.nodes.values():
        b.ns(node.name, ns_sysctls.get(node.netns, ()))
    for lk in lab.links:
        b.add(nsplan.Veth(lab.netns(lk.a.node), lk.a.port, lab.netns(lk.b.node), lk.b.port))
    for it in node_items:
        b.add(it)
    _management_network(lab, b)
    if shaping:
        for lk in lab.links:
            kind = "htb" if lk.kind == "hb" else "tbf"
            mbit = link_mbps(lab, lk.gbps) if lk.gbps else nic_mbps
            for end in (lk.a, lk.b):
                b.add(nsplan.Shaping(lab.netns(end.node), end.port, round(mbit, 3), kind=kind))
    # the neighbour table is shared by every namespace: size it by the L3
    # endpoints and by all pairs of each subnet (an L2 rail), raised on deploy
    # and restored on destroy by the engine
    l3 = len(lab.gpus) + len(out.frr)
    bare = b.build()
    v4, v6 = nsplan.neighbour_need(bare)
    out.plan = replace(bare, root_sysctls=nsplan.neigh_gc_sysctls(l3, v4, v6))
    problems = nsplan.validate(out.plan)
    if problems:
        raise LabError(str(lab.topology_file), "the lab cannot be deployed in namespaces:\n  " + "\n  ".join(problems[:20]),
                       "recompile the design; port names must be Linux device names (at most 15 characters)")
    return out


def _management_network(lab: Lab, b: nsplan.PlanBuilder) -> None:
    """The lab's out-of-band network (docs/management.md): namespace `oob` with a bridge
    holding the gateway address, and a veth to each switch's management port (eth0 on
    SONiC, Management1 on EOS) with its management address. Only the connected subnet
    is routed in a switch: the fabric never learns a path through it."""
    net = management_network(lab)
    if net is None or not net.switches:
        return
    ns = b.ns(MGMT_NODE, nsplan.host_sysctls())
    ports = []
    for i, (name, cidr) in enumerate(sorted(net.switches.items())):
        dev = MGMT_PORT[platform_of(lab.node(name))]
        far = f"m{i}"
        b.add(nsplan.Veth(lab.netns(name), dev, ns, far))
        b.add(nsplan.Address(lab.netns(name), dev, cidr))
        ports.append(far)
    b.add(nsplan.Bridge(ns, "oob", tuple(ports)))
    b.add(nsplan.Address(ns, "oob", net.gateway))


def _merge_sysctls(base, extra) -> tuple[tuple[str, str], ...]:
    """base + extra, without per-device rp_filter values that equal conf.default's:
    devices copy conf.default when created (nsplan sets it first), and each
    per-device write costs a namespace entry after the links exist (~0.35 ms x
    1,000 namespaces)."""
    merged = dict([*base, *extra])
    default = merged.get("net.ipv4.conf.default.rp_filter")
    return tuple(
        (k, v) for k, v in merged.items()
        if not (k.startswith("net.ipv4.conf.") and k.endswith(".rp_filter")
                and k.split(".")[3] not in ("all", "default") and v == default)
    )


def _count_neighbors(conf: str) -> int:
    peers = set()
    groups = set()
    for line in conf.splitlines():
        w = line.split()
        if len(w) >= 3 and w[0] == "neighbor":
            if w[2] == "peer-group" and len(w) == 3:
                groups.add(w[1])
            elif w[2] == "remote-as":
                peers.add(w[1])
    return len(peers - groups)
