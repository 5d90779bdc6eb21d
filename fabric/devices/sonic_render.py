"""SONiC: config_db.json (ConfigDB tables) and frr.conf per switch.

Structured config first (plain dicts of strings, as ConfigDB stores them),
then text: config_db.json by :func:`dump_config_db` (byte-identical to
``json.dumps(doc, indent=4, sort_keys=True)``, which on Python 3.11 falls back
to the pure-Python encoder when indenting: 10x slower at 2,560 switches), and
frr.conf by a thin template.

Routing: `docker_routing_config_mode` is `split-unified`: SONiC then renders
no FRR config from ConfigDB and FRR reads our one `frr.conf` (in `split` mode
the bgp container expects per-daemon bgpd.conf/zebra.conf and removes
frr.conf). L2 rails run no BGP: FEATURE bgp is disabled and no frr.conf is
written. Tables and field formats follow fabric/devices/sonic_reference.md.
"""

from __future__ import annotations

import hashlib
from json import encoder as _enc

from ..outdir_layout import CONFIG_DB, FRR_CONF, switch_file
from ..graph.model import Fabric, Node
from ..platforms.ports import lanes
from . import qos as qosmod
from ..design import management, routing
from . import sonic_buffers, sonic_platform
from .device import SwitchView, advertised_pools, switch_view
from .render import template

ROUTING_CONFIG_MODE = "split-unified"
QOS_MAP = "AZURE"  # SONiC's conventional name for the one map of each kind
LOSSLESS_PROFILE = "AZURE_LOSSLESS"
SWITCH_TYPE = {1: "BackEndToRRouter", 2: "BackEndLeafRouter", 3: "SpineRouter"}


def hwsku(radix: int, gbps: int) -> str:
    """A generic switch's hwsku: a name no image ships, to replace with yours. A real SKU's name
    here would claim its port map, lanes and buffer facts for a PORT table that has none of them
    (a catalog `switch.model` gives the real hwsku, sonic_platform.py)."""
    return f"railonly-{radix}x{gbps}G"


def system_mac(name: str) -> str:
    """A stable locally administered MAC from the hostname (deterministic output)."""
    h = hashlib.blake2s(name.encode(), digest_size=5).digest()
    return "02:" + ":".join(f"{b:02x}" for b in h)


def _ranges(values: list[int]) -> list[str]:
    """[0,1,2,4,5,7] -> ['0-2','4-5','7']: ConfigDB key ranges."""
    out, start = [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            out.append(str(start) if start == v else f"{start}-{v}")
            start = None
    return out


def _qos_globals(q: qosmod.QosPlan, doc: dict) -> None:
    doc["DSCP_TO_TC_MAP"] = {QOS_MAP: {str(k): str(v) for k, v in q.dscp_to_tc().items()}}
    doc["TC_TO_PRIORITY_GROUP_MAP"] = {QOS_MAP: {str(k): str(v) for k, v in q.tc_to_pg().items()}}
    doc["TC_TO_QUEUE_MAP"] = {QOS_MAP: {str(k): str(v) for k, v in q.tc_to_queue().items()}}
    doc["MAP_PFC_PRIORITY_TO_QUEUE"] = {QOS_MAP: {str(p): str(p) for p in range(8)}}
    doc["SCHEDULER"] = {
        "scheduler.lossy": {"type": "DWRR", "weight": str(qosmod.SCHEDULER_WEIGHTS["lossy"])},
        "scheduler.lossless": {"type": "DWRR", "weight": str(qosmod.SCHEDULER_WEIGHTS["lossless"])},
        "scheduler.cnp": {"type": "STRICT"},
    }
    mn, mx, pr = str(q.ecn_min_bytes), str(q.ecn_max_bytes), str(q.ecn_probability)
    doc["WRED_PROFILE"] = {LOSSLESS_PROFILE: {
        "ecn": "ecn_all", "wred_green_enable": "true", "wred_yellow_enable": "true", "wred_red_enable": "true",
        "green_min_threshold": mn, "green_max_threshold": mx, "green_drop_probability": pr,
        "yellow_min_threshold": mn, "yellow_max_threshold": mx, "yellow_drop_probability": pr,
        "red_min_threshold": mn, "red_max_threshold": mx, "red_drop_probability": pr,
    }}
    doc["PFC_WD"] = {"GLOBAL": {"POLL_INTERVAL": str(qosmod.PFC_WATCHDOG_POLL_MS)}}


def config_db(fab: Fabric, view: SwitchView, q: qosmod.QosPlan) -> dict:
    """The ConfigDB document of one switch (every value a string)."""
    d = fab.design
    sw = view.node
    meta = {
        "hostname": sw.name, "hwsku": hwsku(d.radix, d.nic_gbps), "mac": system_mac(sw.name),
        "type": SWITCH_TYPE[sw.tier], "docker_routing_config_mode": ROUTING_CONFIG_MODE,
    }
    meta.update(sonic_platform.metadata(d, sw.tier) or {})
    if view.routed:
        meta["bgp_asn"] = str(sw.asn)
        # frr.conf asks for BFD on every session, and the bgp container starts bfdd only with
        # this flag (sonic-buildimage dockers/docker-fpm-frr/frr/supervisord/
        # supervisord.conf.common.j2); it also swaps bgpcfgd for frrcfgd, which renders
        # nothing here: railonly writes no BGP tables and split-unified renders no frr.conf
        meta["frr_mgmt_framework_config"] = "true"
    doc: dict = {"DEVICE_METADATA": {"localhost": meta}}
    published = sonic_platform.port_rows(d, sw.tier)  # None: generic, lanes from the radix
    nl = lanes(d.nic_gbps)
    speed, mtu = str(d.nic_gbps * 1000), str(d.switch_mtu)
    port_t, neigh_t, intf_t, qmap_t, queue_t, wd_t, cable = {}, {}, {}, {}, {}, {}, {}
    lossless = ",".join(map(str, q.lossless))
    rp, cp = q.roce_priority, q.cnp_priority
    lossy_queues = _ranges([x for x in range(8) if x not in (rp, cp)])
    # the hwsku's published buffer facts (None: no buffer tables)
    buffers = sonic_buffers.hwsku_buffers(d.model_of_tier(sw.tier), d.breakout)
    fits: dict[str, tuple[int, ...] | None] = {}  # port speed -> lengths with a lossless profile
    wd = {"action": "drop", "detection_time": str(qosmod.PFC_WATCHDOG_MS), "restoration_time": str(qosmod.PFC_WATCHDOG_MS)}
    qmap = {"dscp_to_tc_map": QOS_MAP, "tc_to_queue_map": QOS_MAP, "tc_to_pg_map": QOS_MAP,
            "pfc_to_queue_map": QOS_MAP, "pfc_enable": lossless, "pfcwd_sw_enable": lossless}
    for p in view.ports:
        if published is None:
            first = p.index * nl
            entry = {
                "lanes": ",".join(str(x) for x in range(first, first + nl)), "speed": speed, "mtu": mtu, "fec": "rs",
                "alias": f"etp{p.index + 1}", "index": str(p.index + 1),
                "admin_status": "up" if p.cabled else "down",
            }
        else:
            entry = {**published[p.name], "mtu": mtu, "admin_status": "up" if p.cabled else "down"}
        port_t[p.name] = entry
        if not p.cabled:
            continue
        entry["description"] = p.description
        neigh_t[p.name] = {"name": p.peer_node, "port": p.peer_port}
        if p.ip:
            intf_t[p.name] = {}
            intf_t[f"{p.name}|{p.ip}"] = {}
        qmap_t[p.name] = qmap
        queue_t[f"{p.name}|{rp}"] = {"scheduler": "scheduler.lossless", "wred_profile": LOSSLESS_PROFILE}
        queue_t[f"{p.name}|{cp}"] = {"scheduler": "scheduler.cnp"}
        for r in lossy_queues:
            queue_t[f"{p.name}|{r}"] = {"scheduler": "scheduler.lossy"}
        wd_t[p.name] = wd
        # buffermgrd sizes this port's PFC headroom from it: the dynamic model from any
        # length, the traditional one only from a length pg_profile_lookup.ini lists
        sp = entry["speed"]
        if sp not in fits:
            fits[sp] = sonic_platform.profile_lengths(d, sw.tier, sp)
        cable[p.name] = f"{p.length_m}m" if fits[sp] is None else qosmod.pg_profile_cable_length(p.length_m, fits[sp])
    for name, fields in (published or {}).items():  # the platform's other ports, as it defines them
        port_t.setdefault(name, {**fields, "mtu": mtu, "admin_status": "down"})
    doc["PORT"] = port_t
    if (brk := sonic_platform.breakout_cfg(d, sw.tier)) is not None:
        doc["BREAKOUT_CFG"] = brk
    doc["DEVICE_NEIGHBOR"] = neigh_t
    doc["FEATURE"] = {
        "lldp": {"state": "enabled", "auto_restart": "enabled"},
        "bgp": {"state": "enabled" if view.routed else "disabled", "auto_restart": "enabled"},
    }
    doc["LLDP"] = {"GLOBAL": {"enabled": "true", "hello_time": "30", "multiplier": "4"}}
    if view.vlans:
        vlan_t, member_t, svi_t = {}, {}, {}
        for v in view.vlans:
            name = f"Vlan{v.vlan}"
            vlan_t[name] = {"vlanid": str(v.vlan), "mtu": mtu, "admin_status": "up"}
            for port in v.ports:
                member_t[f"{name}|{port}"] = {"tagging_mode": "untagged"}
            if v.gateway:
                svi_t[name] = {}
                svi_t[f"{name}|{v.gateway}"] = {}
        doc["VLAN"] = vlan_t
        doc["VLAN_MEMBER"] = member_t
        if svi_t:
            doc["VLAN_INTERFACE"] = svi_t
    if intf_t:
        doc["INTERFACE"] = intf_t
    if view.routed:
        doc["LOOPBACK_INTERFACE"] = {"Loopback0": {}, f"Loopback0|{sw.loopback}": {}}
    _qos_globals(q, doc)
    doc["PORT_QOS_MAP"] = qmap_t
    doc["QUEUE"] = queue_t
    doc["PFC_WD"].update(wd_t)
    doc["CABLE_LENGTH"] = {QOS_MAP: cable}
    # buffermgrd creates no lossless PG before ingress_lossless_pool exists, and `config reload`
    # renders no buffers: the tables the hwsku's buffer templates give (fabric/devices/sonic_buffers.py)
    doc.update(sonic_buffers.tables(buffers, meta["type"], list(neigh_t) or list(port_t), list(port_t)))
    meta.update(sonic_buffers.metadata(buffers))
    if d.management is not None:
        doc.update(management_tables(d.management, sw))
    return doc


MGMT_SERVICE_PORTS = {"syslog": "514", "gnmi": "50052"}


def management_tables(m, sw: Node) -> dict:
    """The management plane in ConfigDB (docs/management.md): eth0 in SONiC's one
    management VRF ('mgmt'), NTP/syslog/DNS reached through it. Users are Linux
    accounts on SONiC, not ConfigDB: see docs/management.md."""
    port = management.SONIC_MGMT_PORT
    out = {
        "MGMT_PORT": {port: {"alias": port, "admin_status": "up", "description": "Management port"}},
        "MGMT_INTERFACE": {f"{port}|{sw.mgmt_ip}": {"gwaddr": m.gateway}},
        "MGMT_VRF_CONFIG": {"vrf_global": {"mgmtVrfEnabled": "true"}},
    }
    if m.ntp:
        out["NTP"] = {"global": {"vrf": management.SONIC_MGMT_VRF}}
        out["NTP_SERVER"] = {a: {"association_type": "server", "iburst": "on"} for a in m.ntp}
    if m.syslog:
        out["SYSLOG_SERVER"] = {a: {"vrf": management.SONIC_MGMT_VRF, "port": MGMT_SERVICE_PORTS["syslog"]} for a in m.syslog}
    if m.dns:
        out["DNS_NAMESERVER"] = {a: {} for a in m.dns}
    if m.tacacs:  # AAA stays local until the shared key is installed on the switch (never in these files)
        out["TACPLUS_SERVER"] = {a: {"vrf": management.SONIC_MGMT_VRF} for a in m.tacacs}
    if m.gnmi:
        out["GNMI"] = {"gnmi": {"port": MGMT_SERVICE_PORTS["gnmi"], "client_auth": "true", "vrf": management.SONIC_MGMT_VRF}}
    return out


def frr_config(fab: Fabric, view: SwitchView) -> dict:
    """Structured FRR config of a routed switch: what frr.conf.j2 prints."""
    sw = view.node
    return {
        "hostname": sw.name,
        "asn": sw.asn,
        "router_id": view.router_id,
        "prefix_list": routing.PREFIX_LIST,
        "from_above": routing.FROM_ABOVE,
        "from_above_list": routing.FROM_ABOVE_LIST,
        "groups": routing.peer_groups([n.up for n in view.neighbors]),
        "pools": advertised_pools(fab.design),
        "neighbors": [{"ip": n.ip, "asn": n.asn, "group": routing.UP_GROUP if n.up else routing.DOWN_GROUP,
                       "description": f"{n.name}:{n.port}"} for n in view.neighbors],
        "networks": view.networks,
        "maximum_paths": view.maximum_paths,
        "max_prefix": view.max_prefix,
        "bfd": _bfd_profile(fab.design),
    }


def _bfd_profile(design) -> dict | None:
    """A BFD profile when the timers are not FRR's defaults (a lab's own, lab_slice), in
    the lines FRR's running-config prints for it (the multiplier stays the default 3)."""
    if design.bfd_interval_ms == routing.BFD_INTERVAL_MS:
        return None
    return {"name": routing.BFD_PROFILE, "interval_ms": design.bfd_interval_ms}


# -- config_db.json text ------------------------------------------------------

_s = _enc.encode_basestring_ascii  # the C string encoder json.dumps uses


def _obj(d: dict, pad: str) -> str:
    if not d:
        return "{}"
    inner = pad + "    "
    return "{\n" + ",\n".join(f"{inner}{_s(k)}: {_s(v)}" for k, v in sorted(d.items())) + "\n" + pad + "}"


def dump_config_db(doc: dict) -> str:
    """Exactly json.dumps(doc, indent=4, sort_keys=True) for {table: {key: {field: str}}}."""
    tables = []
    for t, rows in sorted(doc.items()):
        if not rows:
            tables.append(f"    {_s(t)}: {{}}")
            continue
        seen: dict[int, str] = {}  # rows share value dicts (QoS per port): encode each once
        parts = []
        for k, v in sorted(rows.items()):
            text = seen.get(id(v))
            if text is None:
                text = seen[id(v)] = _obj(v, "        ")
            parts.append(f"        {_s(k)}: {text}")
        body = ",\n".join(parts)
        tables.append(f"    {_s(t)}: {{\n{body}\n    }}")
    return "{\n" + ",\n".join(tables) + "\n}\n"


def render_switch(fab: Fabric, sw: Node, q: qosmod.QosPlan, view: SwitchView | None = None
                  ) -> tuple[dict, dict[str, str]]:
    """(config_db dict, {relative path: text}) of one SONiC switch (`view`: its switch_view, if made)."""
    view = view or switch_view(fab, sw)
    doc = config_db(fab, view, q)
    files = {switch_file(sw.name, CONFIG_DB): dump_config_db(doc)}
    if view.routed:
        files[switch_file(sw.name, FRR_CONF)] = template("sonic/frr.conf.j2").render(frr=frr_config(fab, view))
    return doc, files
