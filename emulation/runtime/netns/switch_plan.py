"""SwitchIntent -> netns plan items for one switch namespace. Pure.

A switch's namespace holds one veth end per cabled port, named like the
config's port. This module adds what the config asks for: port MTU and
admin state, one Linux bridge per VLAN (named like the VLAN, members as
ports: there are no VLAN devices on this kernel), addresses on routed ports,
SVIs and ``lo``, forwarding sysctls, and the switch's FRR instance.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass, field

from railonly.fabric.devices.readback.intent import SwitchIntent
from . import frr
from . import ns_plan as nsplan


@dataclass
class SwitchItems:
    sysctls: tuple[tuple[str, str], ...]
    items: list = field(default_factory=list)  # Bridge, Link, Address, Process
    frr: frr.FrrInstance | None = None
    warnings: list[str] = field(default_factory=list)


# ECMP hashing of a routed switch. The kernel's L4 policy (1) reuses skb->hash when a
# packet carries one, and a locally sent TCP packet does (the socket's txhash) and keeps
# it across veth pairs: every switch on the path then hashes the flow to the same value,
# two ECMP stages in series pick correlated next hops (hash polarization) and, in the
# three-tier baseline, half the spine-to-core links carried no byte. Real switches hash
# the headers at each hop with their own seed; so does the custom policy (3) over the
# 5-tuple with a per-switch seed (kernels that have the sysctls; else policy 1 stays).
HASH_FIELDS_L4 = "0x0037"  # src IP, dst IP, IP proto, src port, dst port
_HAVE_CUSTOM_HASH = all(os.path.exists(f"/proc/sys/net/ipv4/fib_multipath_{k}") for k in ("hash_fields", "hash_seed"))


def ecmp_sysctls(node: str, custom: bool | None = None) -> tuple[tuple[str, str], ...]:
    """Per-switch ECMP hash settings (see above); ``custom`` overrides the kernel probe."""
    if not (_HAVE_CUSTOM_HASH if custom is None else custom):
        return ()
    return (
        ("net.ipv4.fib_multipath_hash_policy", "3"),
        ("net.ipv4.fib_multipath_hash_fields", HASH_FIELDS_L4),
        ("net.ipv4.fib_multipath_hash_seed", str(zlib.crc32(node.encode()) | 1)),
    )


def l2_sysctls() -> tuple[tuple[str, str], ...]:
    # an L2 switch does not route (EOS "no ip routing"); rp_filter off like the rest
    return (("net.ipv4.ip_forward", "0"), *nsplan.host_sysctls())


def switch_items(intent: SwitchIntent, netns: str, cabled: list[str], frr_rundir: str, node: str) -> SwitchItems:
    """Items that program ``netns`` (a switch node called ``node``) from ``intent``.

    ``cabled``: the port devices that exist in the namespace (its veth ends).
    Ports the config lists but nobody cabled have no device and are skipped;
    a cabled port the config does not list stays down (SONiC and a missing
    EOS interface both mean an unconfigured port) and is reported.
    """
    if intent.routing:
        sysctls = dict(nsplan.router_sysctls())
        sysctls.update(ecmp_sysctls(node))
        out = SwitchItems(tuple(sysctls.items()))
    else:
        out = SwitchItems(l2_sysctls())
    out.warnings += list(intent.warnings)
    have = set(cabled)
    if intent.hostname != node:
        out.warnings.append(f"{node}: config hostname is {intent.hostname!r}")
    for dev in cabled:
        p = intent.port(dev)
        if p is None:
            out.warnings.append(f"{node}: cabled port {dev} is not in its config: left down")
            out.items.append(nsplan.Link(netns, dev, up=False))
            continue
        out.items.append(nsplan.Link(netns, dev, mtu=p.mtu, up=p.admin_up))
        out.items += [nsplan.Address(netns, dev, a) for a in p.addresses]
    for v in intent.vlans:
        ports = tuple(m for m in v.members if m in have)
        out.items.append(nsplan.Bridge(netns, v.name, ports, mtu=v.mtu))
        out.items.append(nsplan.Link(netns, v.name, mtu=v.mtu, up=v.admin_up))
        out.items += [nsplan.Address(netns, v.name, a) for a in v.addresses]
    out.items += [nsplan.Address(netns, "lo", a) for a in intent.loopbacks]
    if intent.frr_conf:
        inst = frr.instance(frr_rundir, node, netns)
        out.frr = inst
        out.items += list(frr.processes(inst, intent.frr_conf))
    return out
