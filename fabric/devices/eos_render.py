"""Arista EOS: one startup-config per switch.

Structured config (plain dict, section by section in the order EOS prints
`show running-config`) and a root template that only includes one partial
per section: hostname, spanning-tree, vlans, Ethernet, Loopback and Vlan
interfaces, `ip routing`, prefix-lists, qos maps, route-maps, `router bgp`.
Inside an interface the order is EOS's too: description, shutdown, mtu,
speed, switchport / `no switchport`, `qos trust`, ip address, PFC,
spanning-tree edge settings, then the `tx-queue` sub-mode; 3-space
indentation. Every line form is checked against public EOS configs
(tests/data/eos_forms.yaml).
"""

from __future__ import annotations

from ..outdir_layout import STARTUP_CONFIG, switch_file
from ..graph.model import Fabric, Node
from ..platforms.eos_speeds import speed_form
from . import qos as qosmod
from ..design import management, routing
from .device import SwitchView, advertised_pools, switch_view
from .render import template

PREFIX_LIST = routing.PREFIX_LIST
# EOS gives every routed port (`no switchport`) an internal VLAN from a range that starts at
# 1006 by default (ascending 1006-4094: AVD's eos_cli_config_gen molecule vrf-instances.md,
# "Default Allocation Policy"); a user VLAN there collides with one already taken and EOS
# refuses it (ipspace/netlab#1871: `vlan 1012` failed on a switch whose routed ports held
# 1006 up; #1873). Rail r's VLAN is 1000 + r, so rails 6 and up land in that range: such a
# switch moves the internal range above every rail VLAN, with the line AVD writes
# (eos_cli_config_gen vlan-internal-order.j2: `vlan internal order ascending range B E`).
EOS_INTERNAL_VLAN_DEFAULT_FIRST = 1006
EOS_INTERNAL_VLANS = (2000, 4094)  # 2,095 internal VLANs: more than the routed ports of a radix-1024 switch


def _qos(q: qosmod.QosPlan) -> dict:
    return {
        "dscp_maps": [(q.roce_dscp, q.roce_priority), (q.cnp_dscp, q.cnp_priority)],
        "tc_to_queue": [(q.roce_priority, q.roce_priority), (q.cnp_priority, q.cnp_priority)],
    }


def _interface_qos(q: qosmod.QosPlan) -> dict:
    return {
        "lossless": q.lossless,
        "tx_queues": _tx_queues(q),
        "ecn": f"minimum-threshold {q.ecn_min_kbytes} kbytes maximum-threshold {q.ecn_max_kbytes} kbytes "
               f"max-mark-probability {q.ecn_probability}",
    }


def _tx_queues(q: qosmod.QosPlan) -> list[dict]:
    """The scheduling SONiC's SCHEDULER table gives (fabric/qos.py): the RoCE queue and
    best effort share by weight (`no priority` puts a queue in EOS's round-robin group),
    CNPs go strict. Only queues that carry traffic are listed (the DSCP map fills no other)."""
    out = [{"id": 0, "priority": "no priority", "bandwidth": qosmod.SCHEDULER_WEIGHTS["lossy"], "ecn": False},
           {"id": q.roce_priority, "priority": "no priority", "bandwidth": qosmod.SCHEDULER_WEIGHTS["lossless"], "ecn": True},
           {"id": q.cnp_priority, "priority": "priority strict", "bandwidth": None, "ecn": False}]
    return sorted(out, key=lambda t: t["id"])


def _pfc_watchdog() -> dict:
    ms = qosmod.PFC_WATCHDOG_MS
    return {"timeout": ms / 1000, "recovery": ms / 1000, "polling": qosmod.PFC_WATCHDOG_POLL_MS / 1000}


def structured_config(fab: Fabric, view: SwitchView, q: qosmod.QosPlan) -> dict:
    d = fab.design
    sw = view.node
    model = d.model_of_tier(sw.tier)
    speed = model.breakouts[d.breakout].eos_speed if model else speed_form(d.nic_gbps)  # the platform's lanes per port
    iqos = _interface_qos(q)
    ethernets = []
    for p in view.ports:
        e = {"name": p.name, "description": p.description, "shutdown": not p.cabled,
             "mtu": d.switch_mtu, "speed": speed, "access_vlan": p.vlan,
             "routed": p.ip is not None, "ip": p.ip, "qos": iqos if p.cabled else None,
             # a GPU NIC is an end host: forward at link-up (no STP listening/learning
             # delay after a flap), and err-disable the port if a switch shows up there
             "edge": p.cabled and p.vlan is not None}
        ethernets.append(e)
    if any(v.vlan >= EOS_INTERNAL_VLANS[0] for v in view.vlans):
        raise AssertionError(f"{sw.name}: a rail VLAN inside the internal VLAN range {EOS_INTERNAL_VLANS}")
    cfg = {
        "hostname": sw.name,
        "internal_vlans": EOS_INTERNAL_VLANS if any(v.vlan >= EOS_INTERNAL_VLAN_DEFAULT_FIRST for v in view.vlans) else None,
        "vlans": [{"id": v.vlan, "name": f"rail{v.rail}"} for v in view.vlans],
        "ethernets": ethernets,
        "loopback": sw.loopback,
        "svis": [{"name": f"Vlan{v.vlan}", "mtu": d.switch_mtu, "ip": v.gateway} for v in view.vlans if v.gateway],
        "qos": _qos(q),
        "pfc_watchdog": _pfc_watchdog(),
        "ip_routing": view.routed,
        "bgp": None,
        "mgmt": management_config(d.management, sw) if d.management is not None else None,
    }
    if view.routed:
        cfg["prefix_list"] = {"name": PREFIX_LIST, "pools": advertised_pools(d)}
        cfg["bgp"] = {
            "asn": sw.asn, "router_id": view.router_id, "maximum_paths": view.maximum_paths,
            "groups": routing.peer_groups([n.up for n in view.neighbors]), "max_prefix": view.max_prefix,
            "from_above": routing.FROM_ABOVE, "from_above_list": routing.FROM_ABOVE_LIST,
            "neighbors": [{"ip": n.ip, "asn": n.asn, "group": routing.UP_GROUP if n.up else routing.DOWN_GROUP,
                           "description": f"{n.name}:{n.port}"} for n in view.neighbors],
            "networks": view.networks,
        }
    return cfg


def management_config(m, sw: Node) -> dict:
    """The management plane in EOS's words (docs/management.md): Management1 in its VRF,
    services reached through it, users with a SHA-512 secret or an SSH key only."""
    return {
        "port": management.EOS_MGMT_PORT, "description": "management", "vrf": m.vrf, "ip": sw.mgmt_ip,
        "gateway": m.gateway, "ntp": m.ntp, "syslog": m.syslog, "dns": m.dns, "tacacs": m.tacacs, "gnmi": m.gnmi,
        "users": [{"name": u.name, "role": u.role, "privilege": 15 if u.role == "network-admin" else 1,
                   "sha512": u.sha512, "ssh_key": u.ssh_key} for u in m.users],
    }


def render_switch(fab: Fabric, sw: Node, q: qosmod.QosPlan, view=None) -> tuple[dict, dict[str, str]]:
    view = view or switch_view(fab, sw)
    cfg = structured_config(fab, view, q)
    return cfg, {switch_file(sw.name, STARTUP_CONFIG): template("eos/startup-config.j2").render(cfg=cfg)}
