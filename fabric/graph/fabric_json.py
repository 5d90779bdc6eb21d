"""`fabric.json` (schema_version 1, docs/reference/outdir.md): the compiled graph as JSON.

One node or link per line: the file stays diffable and greppable at 100k
links, and json.dumps per item is still the C encoder.
"""

from __future__ import annotations

import json

from ..design.physical import TIERS, cable_length_m
from .model import Endpoint, Fabric, Link, Node

SCHEMA_VERSION = 1


def node_dict(n: Node) -> dict:
    if n.role == "gpu":
        return {"name": n.name, "role": "gpu", "hb_domain": n.hb_domain, "rank": n.rank, "rail": n.rail}
    if n.role == "hb":
        return {"name": n.name, "role": "hb", "hb_domain": n.hb_domain}
    out = {
        "name": n.name, "role": "switch", "tier": n.tier, "rails": n.rails, "platform": n.platform,
        "asn": n.asn, "loopback": n.loopback,
        "vlans": [{"vlan": v.vlan, "rail": v.rail, "subnet": v.subnet, "gateway": v.gateway} for v in n.vlans],
    }
    if n.mgmt_ip:  # only with a `management:` section: designs without one keep their fabric.json
        out["mgmt_ip"] = n.mgmt_ip
    return out


def _ep(e: Endpoint) -> dict:
    return {"node": e.node, "port": e.port, "ip": e.ip}


def link_dict(lk: Link, lengths: dict[int, int] | None = None) -> dict:
    """A link; a cable also carries its id and its length in metres (`lengths`: tier -> metres)."""
    out = {"kind": lk.kind, "rail": lk.rail, "gbps": lk.gbps, "tier": lk.tier, "a": _ep(lk.a), "b": _ep(lk.b)}
    if lk.cable_id:
        out["cable_id"] = lk.cable_id
        if lengths is not None:
            out["length_m"] = lengths[lk.tier]
    return out


def render(fab: Fabric) -> str:
    d = fab.design
    head = {
        "schema_version": SCHEMA_VERSION, "name": d.name, "topology": d.topology, "rail_mode": d.rail_mode,
        "hb_domain_size": d.hb_size, "hb_domain_count": len(fab.hbs), "radix": d.radix,
        "nic_gbps": d.nic_gbps, "hb_gbps": d.hb_gbps, "tiers": fab.tiers,
        "lab_nic_mbps": d.lab_nic_mbps,  # the emulation's NIC rate (design lab.nic_mbps); it never recompiles
    }
    if d.gpus_per_host < d.hb_size:  # a rack of trays; absent: one host per domain (the files before trays)
        head["gpus_per_host"] = d.gpus_per_host
    if d.management is not None:  # the lab builds its management network from these (docs/management.md)
        head["management"] = {"pool": str(d.management.pool), "gateway": d.management.gateway}
    dumps = json.JSONEncoder(sort_keys=False, separators=(", ", ": ")).encode
    lines = ["{" + dumps(head)[1:-1] + ","]
    lines.append(' "nodes": [')
    nodes = fab.nodes
    lines.extend("  " + dumps(node_dict(n)) + ("," if i < len(nodes) - 1 else "") for i, n in enumerate(nodes))
    lines.append(" ],")
    lines.append(' "links": [')
    links = fab.links
    lengths = {t: cable_length_m(d, t) for t in TIERS}
    lines.extend("  " + dumps(link_dict(lk, lengths)) + ("," if i < len(links) - 1 else "") for i, lk in enumerate(links))
    lines.append(" ]")
    lines.append("}")
    return "\n".join(lines) + "\n"
