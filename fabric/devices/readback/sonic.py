"""SONiC config_db.json (+ its FRR files) -> SwitchConfig (facts for validate, intent for the lab). Pure.

Read the way SONiC itself reads them: PORT admin_status defaults to down,
VLAN_MEMBER joins ports to VLAN bridges, VLAN_INTERFACE / INTERFACE /
LOOPBACK_INTERFACE keys of the form ``<name>|<cidr>`` carry addresses. FRR
comes from ``frr.conf`` (unified and split-unified modes) or, in split mode,
from ``zebra.conf`` + ``staticd.conf`` + ``bgpd.conf`` joined into one file.
"""

from __future__ import annotations

import os
import re

from ...input import jsonsource
from ...outdir_layout import CONFIG_DB, FRR_CONF, SONIC_SPLIT_FRR
from .config import SwitchConfig
from .facts import DeviceFacts, PortFacts, to_int
from .intent import ConfigReadError, PortIntent, SwitchIntent, VlanIntent, checked_cidr

# Tables the emulation cannot express (LAGs, VRFs): reported, not silently dropped.
UNSUPPORTED = ("PORTCHANNEL", "PORTCHANNEL_MEMBER", "VRF", "VXLAN_TUNNEL")


def parse_config_db(doc, frr_conf: str | None = None, path: str = CONFIG_DB,
                    frr_path: str | None = None, name: str = "") -> SwitchConfig:
    """The one SONiC parser: a ConfigDB document (+ its FRR text) walked once into a SwitchConfig.

    Read the way SONiC reads it (PORT admin_status defaults to down; ``<name>|<cidr>``
    keys carry addresses). ``facts`` is what validate cross-checks; ``intent()`` what the
    lab programs. ``name`` is the fabric.json node the file is for, ``frr_path`` where
    ``frr_conf`` came from (for messages)."""
    f = DeviceFacts(name, "sonic", path)
    cfg = SwitchConfig(f)
    if not isinstance(doc, dict):
        f.problems.append("is not a JSON object of tables")
        cfg.error(path, "is not a JSON object of tables")
        return cfg

    def _obj(value, where: str) -> dict:
        """A table or an entry as a dict (absent or empty: {}); anything else is a problem of both views."""
        if isinstance(value, dict):
            return value
        if value:
            f.problems.append(f"{where}: is not an object")
            cfg.error(f"{path} {where}", "is not an object")
        return {}

    meta = _obj(_obj(doc.get("DEVICE_METADATA"), "DEVICE_METADATA").get("localhost"), "DEVICE_METADATA|localhost")
    hostname = f.hostname = meta.get("hostname")
    f.hwsku = meta.get("hwsku") if isinstance(meta.get("hwsku"), str) else None
    if not hostname:
        cfg.error(path, "DEVICE_METADATA|localhost has no hostname")
    warnings = [f"{path}: table {t} is not emulated" for t in UNSUPPORTED if doc.get(t)]

    in_port = _obj(doc.get("PORT"), "PORT")
    for pname, p in in_port.items():
        if type(p) is not dict:  # (the common case skips formatting the name)
            p = _obj(p, f"PORT|{pname}")
        mtu = to_int(p["mtu"]) if "mtu" in p else None
        speed = to_int(p.get("speed", 0))
        if speed is None or ("mtu" in p and mtu is None):
            f.problems.append(f"PORT|{pname}: speed/mtu are not numbers")
        if mtu is None and p.get("mtu") not in (None, ""):
            cfg.error(f"{path} PORT|{pname}", f"mtu {p.get('mtu')!r} is not a number")
        f.ports[pname] = PortFacts(None if speed is None else speed / 1000, mtu,
                                   p.get("admin_status", "down") == "up",  # SONiC's default is down
                                   key=f"PORT|{pname}")
    for key in _obj(doc.get("INTERFACE"), "INTERFACE"):
        port, sep, ip = key.partition("|")
        if port not in in_port:
            cfg.error(path, f"INTERFACE names {port}, which is not in PORT")
        if sep:
            pf = f.ports.get(port)
            if pf is None:
                pf = f.ports[port] = PortFacts(key=f"INTERFACE|{port}")
            pf.ips.append(ip)
    for group, ports in _obj(doc.get("CABLE_LENGTH"), "CABLE_LENGTH").items():
        for port, length in _obj(ports, f"CABLE_LENGTH|{group}").items():
            pf = f.ports.get(port)
            if pf is None:
                continue  # a port that does not exist: the YANG leafref names it
            pf.cable_length, pf.length_key = str(length), f"CABLE_LENGTH|{group}|{port}"
    loopbacks: dict[str, list[str]] = {}  # Loopback0 -> addresses, for the lab
    for key in _obj(doc.get("LOOPBACK_INTERFACE"), "LOOPBACK_INTERFACE"):
        lo, sep, ip = key.partition("|")
        loopbacks.setdefault(lo, [])
        if sep:
            f.loopbacks.append(ip)
            loopbacks[lo].append(ip)
    vlan_table = _obj(doc.get("VLAN"), "VLAN")
    members: dict[str, list[str]] = {}  # Vlan1000 -> ports (any tagging: the lab bridges them untagged)
    for key, v in _obj(doc.get("VLAN_MEMBER"), "VLAN_MEMBER").items():
        vlan, _, port = key.partition("|")
        mode = _obj(v, f"VLAN_MEMBER|{key}").get("tagging_mode")
        if mode == "untagged" and "|" not in port and vlan.startswith("Vlan"):
            pf = f.ports.get(port)
            if pf is None:
                pf = f.ports[port] = PortFacts(key=f"VLAN_MEMBER|{key}")
            pf.vlan = to_int(vlan[4:])
        if mode not in (None, "untagged"):
            warnings.append(f"{path}: VLAN_MEMBER {key} is tagged; emulated as an untagged bridge port")
        if vlan not in vlan_table:
            cfg.error(path, f"VLAN_MEMBER/VLAN_INTERFACE name {vlan}, which is not in VLAN")
        elif port not in in_port:
            cfg.error(path, f"VLAN_MEMBER {vlan}|{port}: {port} is not in PORT")
        members.setdefault(vlan, []).append(port)
    svis: dict[str, list[str]] = {}  # Vlan1000 -> addresses, for the lab
    for key in _obj(doc.get("VLAN_INTERFACE"), "VLAN_INTERFACE"):
        vlan, sep, ip = key.partition("|")
        if vlan not in vlan_table:
            cfg.error(path, f"VLAN_MEMBER/VLAN_INTERFACE name {vlan}, which is not in VLAN")
        svis.setdefault(vlan, [])
        if sep:
            f.svis.setdefault(to_int(vlan[4:]), []).append(ip)
            svis[vlan].append(ip)
    vlans: list[tuple[str, int, int | None, bool]] = []
    for vname, attrs in vlan_table.items():
        attrs = _obj(attrs, f"VLAN|{vname}")
        vid = attrs.get("vlanid") or vname.removeprefix("Vlan")
        mtu = attrs.get("mtu")
        if to_int(vid) is None:
            cfg.error(path, f"VLAN {vname} has no numeric vlanid")
        elif mtu not in (None, "") and to_int(mtu) is None:
            cfg.error(f"{path} VLAN|{vname}", f"mtu {mtu!r} is not a number")
        else:
            vlans.append((vname, to_int(vid), to_int(mtu), attrs.get("admin_status", "up") == "up"))

    if frr_conf is not None:
        f.bgp_file = frr_path
        _frr_bgp(frr_conf, f)
    elif meta.get("bgp_asn") is not None:
        f.problems.append(f"DEVICE_METADATA|localhost.bgp_asn: {meta['bgp_asn']} is set but there is no frr.conf")
    if f.asn is not None and meta.get("bgp_asn") not in (None, str(f.asn)):
        f.problems.append(f"DEVICE_METADATA|localhost.bgp_asn: {meta.get('bgp_asn')} differs from frr.conf's router bgp {f.asn}")

    def assemble() -> SwitchIntent:
        ports = tuple(PortIntent(name=p, admin_up=pf.admin_up, mtu=pf.mtu, addresses=tuple(
                          checked_cidr(ip, f"{path} INTERFACE {p}|{ip}") for ip in sorted(pf.ips)))
                      for p, pf in sorted(f.ports.items()))
        lab_vlans = tuple(VlanIntent(
            name=vname, vid=vid, members=tuple(sorted(members.get(vname, ()))),
            addresses=tuple(checked_cidr(ip, f"{path} VLAN_INTERFACE {vname}|{ip}") for ip in sorted(svis.get(vname, ()))),
            mtu=mtu, admin_up=up) for vname, vid, mtu, up in sorted(vlans))
        loop = tuple(checked_cidr(ip, f"{path} LOOPBACK_INTERFACE {lo}|{ip}")
                     for lo in sorted(loopbacks) for ip in sorted(loopbacks[lo]))
        return SwitchIntent(
            hostname=hostname, platform="sonic", ports=ports, vlans=lab_vlans, loopbacks=loop,
            # SONiC routes between whatever L3 interfaces it has; with none it is a plain L2 switch
            routing=bool(loopbacks or any(p.addresses for p in ports) or any(v.addresses for v in lab_vlans)),
            frr_conf=_with_hostname(frr_conf, hostname) if frr_conf else None,
            warnings=tuple(warnings),
        )
    cfg.assemble = assemble
    return cfg


def read_config_db(text: str, frr_conf: str | None = None, path: str = CONFIG_DB) -> SwitchIntent:
    """The lab's view of a config_db.json text (+ frr.conf); ConfigReadError if it cannot be programmed."""
    try:
        db = jsonsource.loads(text)  # a name given twice too: json would keep one of the values silently
    except RecursionError:
        raise ConfigReadError(path, "not valid JSON: nested too deep") from None
    except ValueError as exc:  # a JSONDecodeError, or an integer of more digits than int() converts
        line = getattr(exc, "lineno", None)
        raise ConfigReadError(f"{path}:{line}" if line else path, f"not valid JSON: {getattr(exc, 'msg', exc)}") from None
    return parse_config_db(db, frr_conf, path).intent()


_BGP = re.compile(r"^router bgp (\d+)\s*$", re.ASCII)
# One pattern for the lines of `router bgp` that carry facts (their forms are disjoint):
# a neighbor's remote-as, a neighbor joining a peer group, a network, the router-id.
_BGP_FACT = re.compile(r"\s*(?:neighbor (\d+\.\d+\.\d+\.\d+) (?:remote-as (\S+)|peer[- ]group(?: \S+)?)"
                       r"|network (\S+)|(?:bgp )?router-id (\S+))\s*$", re.ASCII)


def _frr_bgp(text: str, f: DeviceFacts) -> None:
    """The BGP facts of an FRR config: the ASN, router-id, neighbors and networks of `router bgp`."""
    inside = False
    for line in text.splitlines():
        if not line.startswith(" ") and line.strip():
            m = _BGP.match(line)
            inside = bool(m)
            if m:
                f.asn = int(m.group(1))
            continue
        if not inside or (m := _BGP_FACT.match(line)) is None:
            continue
        peer, remote_as, network, router_id = m.groups()
        if peer is not None and remote_as is not None:
            f.neighbors[peer] = to_int(remote_as)
        elif peer is not None:
            f.neighbors.setdefault(peer, None)
        elif network is not None:
            f.networks.append(network)
        else:
            f.router_id = router_id


def _with_hostname(conf: str, hostname: str) -> str:
    # FRR instances share the UTS namespace: without hostname each reports the machine's
    if re.search(r"^hostname \S+", conf, re.M):
        return conf
    return f"hostname {hostname}\n" + conf


def frr_text(config_dir: str) -> str | None:
    """The FRR config of a SONiC switch directory, whichever mode wrote it; None if it has none."""
    unified = os.path.join(config_dir, FRR_CONF)
    if os.path.isfile(unified):
        with open(unified, encoding="utf-8") as f:
            return f.read()
    parts = []
    for name in SONIC_SPLIT_FRR:
        p = os.path.join(config_dir, name)
        if os.path.isfile(p):
            with open(p, encoding="utf-8") as f:
                parts.append(f"! --- {name}\n" + f.read())
    return "\n".join(parts) if parts else None


def read_dir(config_dir: str) -> SwitchIntent:
    path = os.path.join(config_dir, CONFIG_DB)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise ConfigReadError(path, f"cannot read: {exc.strerror}") from None
    return read_config_db(text, frr_text(config_dir), path)
