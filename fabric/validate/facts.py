"""What a generated config says, vendor-neutral: the facts the cross-check compares.

Readers parse the artifacts back (config_db.json, frr.conf, EOS startup-config)
into :class:`DeviceFacts`; nothing here trusts the generator's own data, so a
hand-edited file is judged exactly like a generated one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..platforms.eos_speeds import accepted_forms, parse_speed


@dataclass
class PortFacts:
    speed_gbps: float | None = None
    mtu: int | None = None
    admin_up: bool = True
    ips: list[str] = field(default_factory=list)  # with prefix length
    vlan: int | None = None  # untagged/access VLAN
    key: str = ""  # where the port is defined, for messages
    edge: bool | None = None  # EOS `spanning-tree portfast` (None: the platform has no such setting)
    cable_length: str | None = None  # the cable length the config gives the port ("30m"), as written
    length_key: str = ""  # where it is given, for messages


@dataclass
class DeviceFacts:
    name: str  # the fabric.json node this config is for
    platform: str
    file: str  # main config file (relative to OUTDIR)
    hostname: str | None = None
    asn: int | None = None  # the BGP ASN the device runs (None: no BGP)
    bgp_file: str | None = None
    router_id: str | None = None
    ports: dict[str, PortFacts] = field(default_factory=dict)
    loopbacks: list[str] = field(default_factory=list)
    svis: dict[int, list[str]] = field(default_factory=dict)  # vlan -> addresses
    neighbors: dict[str, int | None] = field(default_factory=dict)  # peer ip -> remote-as
    networks: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # parse problems ("key: what")


def sonic_facts(name: str, file: str, doc: dict, frr_file: str | None, frr_text: str | None) -> DeviceFacts:
    f = DeviceFacts(name, "sonic", file)
    meta = doc.get("DEVICE_METADATA", {}).get("localhost", {})
    f.hostname = meta.get("hostname")
    for pname, p in doc.get("PORT", {}).items():
        try:
            speed = int(p.get("speed", 0)) / 1000
            mtu = int(p["mtu"]) if "mtu" in p else None
        except (TypeError, ValueError):
            f.problems.append(f"PORT|{pname}: speed/mtu are not numbers")
            speed, mtu = None, None
        f.ports[pname] = PortFacts(speed, mtu, p.get("admin_status", "down") == "up", key=f"PORT|{pname}")
    for key in doc.get("INTERFACE", {}):
        if "|" in key:
            port, ip = key.split("|", 1)
            f.ports.setdefault(port, PortFacts(key=f"INTERFACE|{port}")).ips.append(ip)
    for group, ports in doc.get("CABLE_LENGTH", {}).items():
        if isinstance(ports, dict):
            for port, length in ports.items():
                pf = f.ports.get(port)
                if pf is None:
                    continue  # a port that does not exist: the YANG leafref names it
                pf.cable_length, pf.length_key = str(length), f"CABLE_LENGTH|{group}|{port}"
    for key in doc.get("LOOPBACK_INTERFACE", {}):
        if "|" in key:
            f.loopbacks.append(key.split("|", 1)[1])
    for key, v in doc.get("VLAN_MEMBER", {}).items():
        parts = key.split("|")
        if len(parts) == 2 and parts[0].startswith("Vlan") and v.get("tagging_mode") == "untagged":
            pf = f.ports.setdefault(parts[1], PortFacts(key=f"VLAN_MEMBER|{key}"))
            pf.vlan = _int(parts[0][4:])
    for key in doc.get("VLAN_INTERFACE", {}):
        if "|" in key:
            vlan, ip = key.split("|", 1)
            f.svis.setdefault(_int(vlan[4:]), []).append(ip)
    if frr_text is not None:
        f.bgp_file = frr_file
        _frr_bgp(frr_text, f)
    elif meta.get("bgp_asn") is not None:
        f.problems.append(f"DEVICE_METADATA|localhost.bgp_asn: {meta['bgp_asn']} is set but there is no frr.conf")
    if f.asn is not None and meta.get("bgp_asn") not in (None, str(f.asn)):
        f.problems.append(f"DEVICE_METADATA|localhost.bgp_asn: {meta.get('bgp_asn')} differs from frr.conf's router bgp {f.asn}")
    return f


def _int(s) -> int | None:
    try:
        return int(s)
    except (TypeError, ValueError):
        return None


_DESC_LENGTH = re.compile(r" (\d+m)$")
_BGP = re.compile(r"^router bgp (\d+)\s*$")
_NEIGH_AS = re.compile(r"^\s*neighbor (\d+\.\d+\.\d+\.\d+) remote-as (\S+)\s*$")
_NEIGH_PG = re.compile(r"^\s*neighbor (\d+\.\d+\.\d+\.\d+) peer[- ]group( \S+)?\s*$")
_NETWORK = re.compile(r"^\s*network (\S+)\s*$")
_RID = re.compile(r"^\s*(?:bgp )?router-id (\S+)\s*$")


def _frr_bgp(text: str, f: DeviceFacts) -> None:
    """BGP facts from FRR or EOS `router bgp` sections (same shapes for what we read)."""
    inside = False
    for line in text.splitlines():
        if not line.startswith(" ") and line.strip():
            m = _BGP.match(line)
            inside = bool(m)
            if m:
                f.asn = int(m.group(1))
            continue
        if not inside:
            continue
        if m := _NEIGH_AS.match(line):
            f.neighbors[m.group(1)] = _int(m.group(2))
        elif m := _NEIGH_PG.match(line):
            f.neighbors.setdefault(m.group(1), None)
        elif m := _NETWORK.match(line):
            f.networks.append(m.group(1))
        elif m := _RID.match(line):
            f.router_id = m.group(1)


_FRONT_PANEL = re.compile(r"^Ethernet\d{1,4}(/\d{1,3}){0,2}$")


def iname_is_port(name: str) -> bool:
    """A front-panel port as fabric.json names EOS ports (`Ethernet1`, a breakout subport
    `Ethernet1/5`), not a subinterface (`Ethernet1.10`)."""
    return bool(_FRONT_PANEL.match(name))


def eos_facts(name: str, file: str, text: str) -> DeviceFacts:
    """Parse an EOS config back and check its shape: railonly's startup-config, or
    what `show running-config` prints for the same intent (sections and lines in
    another order, `no shutdown`, lines railonly does not write are ignored)."""
    f = DeviceFacts(name, "eos", file, bgp_file=file)
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines or lines[-1] != "end":
        f.problems.append("last line: the config must end with 'end'")
    section = None  # (kind, name)
    for no, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("!"):
            if line.startswith("!"):
                section = None if line == "!" else section
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent % 3:
            f.problems.append(f"line {no}: indentation of {indent} spaces is not a multiple of 3: {line.strip()}")
        if indent == 0:
            words = line.split()
            section = None
            if words[0] == "hostname" and len(words) == 2:
                f.hostname = words[1]
            elif words[0] == "interface" and len(words) == 2:
                section = ("interface", words[1])
                if iname_is_port(words[1]):
                    f.ports.setdefault(words[1], PortFacts(key=f"interface {words[1]}", edge=False))
            elif words[0] == "router" and words[1:2] == ["bgp"]:
                section = ("bgp", "")
                f.asn = _int(words[2]) if len(words) == 3 else None
            continue
        if section is None:
            continue
        stmt = line.strip()
        if section[0] == "interface":
            iname = section[1]
            if iname_is_port(iname):
                p = f.ports[iname]
                w = stmt.split()
                if w[0] == "mtu" and len(w) == 2:
                    p.mtu = _int(w[1])
                elif w[0] == "speed":
                    p.speed_gbps = parse_speed(w[1:])
                    if p.speed_gbps is None:
                        forms = ", ".join(sorted(accepted_forms(), key=lambda x: (len(x), x)))
                        f.problems.append(f"interface {iname}: unknown speed '{' '.join(w[1:])}' "
                                          f"(EOS prints <Gbit/s>g-<lanes>: one of {forms})")
                elif stmt == "shutdown":
                    p.admin_up = False
                elif stmt == "no shutdown":
                    p.admin_up = True
                elif stmt == "spanning-tree portfast":
                    p.edge = True
                elif w[:2] == ["ip", "address"] and len(w) >= 3:
                    p.ips.append(w[2])
                elif w[:3] == ["switchport", "access", "vlan"] and len(w) == 4:
                    p.vlan = _int(w[3])
                elif w[0] == "description":
                    # EOS has no per-port cable length: railonly ends the description with it
                    m = _DESC_LENGTH.search(stmt)
                    p.cable_length = m.group(1) if m else None
                    p.length_key = f"interface {iname} description"
            elif iname.startswith("Loopback") and stmt.startswith("ip address "):
                f.loopbacks.append(stmt.split()[2])
            elif iname.startswith("Vlan") and stmt.startswith("ip address "):
                f.svis.setdefault(_int(iname[4:]), []).append(stmt.split()[2])
        elif section[0] == "bgp" and indent == 3:
            w = stmt.split()
            if w[0] == "router-id" and len(w) == 2:
                f.router_id = w[1]
            elif w[0] == "network" and len(w) >= 2:
                f.networks.append(w[1])
            elif w[0] == "neighbor" and len(w) >= 4 and w[2] == "remote-as" and w[1][0].isdigit():
                f.neighbors[w[1]] = _int(w[3])
            elif w[0] == "neighbor" and len(w) >= 4 and w[1][0].isdigit() and (
                    len(w) == 5 and w[2:4] == ["peer", "group"] or len(w) == 4 and w[2] == "peer-group"):
                f.neighbors.setdefault(w[1], None)  # `peer-group`: the form older EOS prints
    return f
