"""SONiC config_db.json (+ its FRR files) -> SwitchIntent. Pure: text in, data out.

Read the way SONiC itself reads them: PORT admin_status defaults to down,
VLAN_MEMBER joins ports to VLAN bridges, VLAN_INTERFACE / INTERFACE /
LOOPBACK_INTERFACE keys of the form ``<name>|<cidr>`` carry addresses. FRR
comes from ``frr.conf`` (unified and split-unified modes) or, in split mode,
from ``zebra.conf`` + ``staticd.conf`` + ``bgpd.conf`` joined into one file.
"""

from __future__ import annotations

import json
import os
import re

from .intent import ConfigReadError, PortIntent, SwitchIntent, VlanIntent, checked_cidr

SPLIT_FILES = ("zebra.conf", "staticd.conf", "bgpd.conf")
# Every file a SONiC switch reads from its configs/<switch>/ folder (what push sends).
SWITCH_FILES = ("config_db.json", "frr.conf", *SPLIT_FILES)
# Tables the emulation cannot express (LAGs, VRFs): reported, not silently dropped.
UNSUPPORTED = ("PORTCHANNEL", "PORTCHANNEL_MEMBER", "VRF", "VXLAN_TUNNEL")


def _mtu(value, where: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ConfigReadError(where, f"mtu {value!r} is not a number") from None



def _keyed_addresses(table: dict, where: str) -> dict[str, list[str]]:
    """{"Ethernet16|10.0.0.1/31": {}, "Ethernet16": {}} -> {"Ethernet16": ["10.0.0.1/31"]}"""
    out: dict[str, list[str]] = {}
    for key in sorted(table or {}):
        name, sep, cidr = key.partition("|")
        out.setdefault(name, [])
        if sep:
            out[name].append(checked_cidr(cidr, f"{where} {key}"))
    return out


def read_config_db(text: str, frr_conf: str | None = None, path: str = "config_db.json") -> SwitchIntent:
    try:
        db = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigReadError(f"{path}:{exc.lineno}", f"not valid JSON: {exc.msg}") from None
    if not isinstance(db, dict):
        raise ConfigReadError(path, "is not a JSON object of tables")
    meta = (db.get("DEVICE_METADATA") or {}).get("localhost") or {}
    hostname = meta.get("hostname")
    if not hostname:
        raise ConfigReadError(path, "DEVICE_METADATA|localhost has no hostname")
    warnings = [f"{path}: table {t} is not emulated" for t in UNSUPPORTED if db.get(t)]

    routed = _keyed_addresses(db.get("INTERFACE"), f"{path} INTERFACE")
    ports = []
    for name, attrs in sorted((db.get("PORT") or {}).items()):
        attrs = attrs or {}
        ports.append(PortIntent(
            name=name,
            admin_up=attrs.get("admin_status", "down") == "up",  # SONiC's default is down
            mtu=_mtu(attrs.get("mtu"), f"{path} PORT|{name}"),
            addresses=tuple(routed.pop(name, ())),
        ))
    for name in routed:
        raise ConfigReadError(path, f"INTERFACE names {name}, which is not in PORT")

    members: dict[str, list[str]] = {}
    for key, attrs in sorted((db.get("VLAN_MEMBER") or {}).items()):
        vlan, _, port = key.partition("|")
        if (attrs or {}).get("tagging_mode", "untagged") != "untagged":
            warnings.append(f"{path}: VLAN_MEMBER {key} is tagged; emulated as an untagged bridge port")
        members.setdefault(vlan, []).append(port)
    svis = _keyed_addresses(db.get("VLAN_INTERFACE"), f"{path} VLAN_INTERFACE")
    vlans = []
    for name, attrs in sorted((db.get("VLAN") or {}).items()):
        attrs = attrs or {}
        vid = attrs.get("vlanid") or name.removeprefix("Vlan")
        if not str(vid).isdigit():
            raise ConfigReadError(path, f"VLAN {name} has no numeric vlanid")
        vlans.append(VlanIntent(
            name=name, vid=int(vid), members=tuple(members.pop(name, ())),
            addresses=tuple(svis.pop(name, ())), mtu=_mtu(attrs.get("mtu"), f"{path} VLAN|{name}"),
            admin_up=attrs.get("admin_status", "up") == "up",
        ))
    for name in list(members) + list(svis):
        raise ConfigReadError(path, f"VLAN_MEMBER/VLAN_INTERFACE name {name}, which is not in VLAN")
    known = {p.name for p in ports}
    for v in vlans:
        for m in v.members:
            if m not in known:
                raise ConfigReadError(path, f"VLAN_MEMBER {v.name}|{m}: {m} is not in PORT")

    loop = _keyed_addresses(db.get("LOOPBACK_INTERFACE"), f"{path} LOOPBACK_INTERFACE")
    return SwitchIntent(
        hostname=hostname, platform="sonic", ports=tuple(ports), vlans=tuple(vlans),
        loopbacks=tuple(a for name in sorted(loop) for a in loop[name]),
        # SONiC routes between whatever L3 interfaces it has; with none it is a plain L2 switch
        routing=bool(loop or any(p.addresses for p in ports) or any(v.addresses for v in vlans)),
        frr_conf=_with_hostname(frr_conf, hostname) if frr_conf else None,
        warnings=tuple(warnings),
    )


def _with_hostname(conf: str, hostname: str) -> str:
    # FRR instances share the UTS namespace: without hostname each reports the machine's
    if re.search(r"^hostname \S+", conf, re.M):
        return conf
    return f"hostname {hostname}\n" + conf


def frr_text(config_dir: str) -> str | None:
    """The FRR config of a SONiC switch directory, whichever mode wrote it; None if it has none."""
    unified = os.path.join(config_dir, "frr.conf")
    if os.path.isfile(unified):
        with open(unified, encoding="utf-8") as f:
            return f.read()
    parts = []
    for name in SPLIT_FILES:
        p = os.path.join(config_dir, name)
        if os.path.isfile(p):
            with open(p, encoding="utf-8") as f:
                parts.append(f"! --- {name}\n" + f.read())
    return "\n".join(parts) if parts else None


def read_dir(config_dir: str) -> SwitchIntent:
    path = os.path.join(config_dir, "config_db.json")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise ConfigReadError(path, f"cannot read: {exc.strerror}") from None
    return read_config_db(text, frr_text(config_dir), path)
