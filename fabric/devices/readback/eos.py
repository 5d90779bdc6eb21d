"""Arista EOS startup-config -> SwitchConfig (facts for validate, intent for the lab). Pure.

The one EOS parser: :func:`parse_startup_config` walks the text once. Validate's facts
are railonly's startup-config or what ``show running-config`` prints for the same intent
(sections and lines in another order, ``no shutdown``; lines railonly does not write are
ignored). EOS semantics kept where they decide reachability: an Ethernet port is a
switchport in access VLAN 1 unless it says otherwise, ``no switchport`` makes
it routed, ``shutdown`` downs it, addresses on ``interface LoopbackN`` go on
``lo``, ``interface VlanN`` is the VLAN's SVI, ``ip routing`` turns on IP
forwarding. BGP runs in FRR: :func:`frr_text` translates the ``router bgp``
section (plus the prefix-lists, route-maps and static routes it may use)
into FRR syntax; what has no FRR equivalent here is reported as a warning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...outdir_layout import STARTUP_CONFIG
from ...platforms.eos_speeds import accepted_forms, parse_speed
from ...safe_text import whole
from .config import SwitchConfig
from .facts import DeviceFacts, PortFacts, to_int
from .intent import ConfigReadError, PortIntent, SwitchIntent, VlanIntent, checked_cidr

PORT_RE = re.compile(r"^Ethernet\d+$", re.ASCII)  # EOS front-panel ports as the lab programs them
_FRONT_PANEL = re.compile(r"^Ethernet\d{1,4}(/\d{1,3}){0,2}$", re.ASCII)
_DESC_LENGTH = re.compile(r" (\d+m)$", re.ASCII)
_POLICY_HEADS = ("ip prefix-list ", "ip route ", "route-map ", "ip community-list ")
# Sub-modes a section's lines may enter: deeper lines after one are that sub-mode's. EOS reads a
# config by mode, not by indentation, so a deeper line after any other line is the section's own.
_SUB_MODES = ("address-family ", "tx-queue ", "uc-tx-queue ", "mc-tx-queue ", "vrf ", "transport ")


def iname_is_port(name: str) -> bool:
    """A front-panel port as fabric.json names EOS ports (`Ethernet1`, a breakout subport
    `Ethernet1/5`), not a subinterface (`Ethernet1.10`)."""
    return bool(_FRONT_PANEL.match(name))


@dataclass
class Block:
    head: str
    lines: list[str] = field(default_factory=list)  # sub-lines, indentation stripped
    nested: list["Block"] = field(default_factory=list)  # e.g. address-family inside router bgp
    lineno: int = 0


@dataclass
class _Interface:
    """One `interface` section as the lab programs it (EOS defaults: up, switchport, VLAN 1)."""

    name: str
    where: str
    port: PortFacts | None  # validate's record of a front-panel port (None: not a port)
    mtu: int | None = None
    up: bool = True
    routed: bool = False
    addrs: list[str] = field(default_factory=list)
    vid: int = 1


def parse_startup_config(text: str, path: str = STARTUP_CONFIG, name: str = "") -> SwitchConfig:
    """The one EOS parser: a startup-config walked once into a SwitchConfig.

    Top-level commands with their indented sub-commands (two levels, as EOS prints);
    each sub-line is read once for both views. ``name`` is the fabric.json node."""
    return _walk(text, path, name)[0]


def _walk(text: str, path: str, name: str = "") -> tuple[SwitchConfig, BgpIntent | None]:
    """(the SwitchConfig, the one ``router bgp`` section the lab runs, if any)."""
    f = DeviceFacts(name, "eos", path, bgp_file=path)
    cfg = SwitchConfig(f)
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines or lines[-1] != "end":
        f.problems.append("last line: the config must end with 'end'")
    hostname = first_hostname = None
    routing = False
    declared: set[int] = set()  # VLAN ids of `vlan` lines
    ports: list[_Interface] = []
    access: dict[str, int] = {}
    svis: dict[int, _Interface] = {}
    loopbacks: list[_Interface] = []
    warnings: list[str] = []
    bgp_blocks: list[Block] = []
    policy: list[Block] = []
    cur: Block | None = None
    iface: _Interface | None = None
    base = None  # indentation of the current block's direct sub-lines
    in_sub_mode = False  # the last direct sub-line entered a sub-mode

    def close(i: _Interface | None) -> None:
        if i is None:
            return
        if i.name.startswith("Loopback"):
            loopbacks.append(i)
        elif i.name.startswith("Vlan") and (vid := whole(i.name[4:])) is not None:
            svis[vid] = i
        elif PORT_RE.match(i.name):
            if i.addrs and not i.routed:
                warnings.append(f"{i.where}: {i.name} has an ip address but is a switchport (ignored)")
            ports.append(i)
            if not i.routed:
                access[i.name] = i.vid
        else:
            warnings.append(f"{i.where}: interface {i.name} is not emulated")

    for n, line in enumerate(lines, 1):
        stmt = line.strip()
        if not stmt or line.startswith("!"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent % 3:
            f.problems.append(f"line {n}: indentation of {indent} spaces is not a multiple of 3: {stmt}")
        if stmt.startswith("!") or stmt == "end":
            continue
        if indent == 0:
            close(iface)
            iface, base, in_sub_mode = None, None, False
            cur = Block(stmt, lineno=n)
            words = stmt.split()
            if words[0] == "hostname":
                if first_hostname is None and len(words) > 1:
                    first_hostname = words[1]  # the name FRR's config gets
                if len(words) == 2:
                    hostname = f.hostname = words[1]
            elif stmt == "ip routing":
                routing = True
            elif stmt == "no ip routing":
                routing = False
            elif words[0] == "vlan" and len(words) == 2:
                declared.update(_vlan_ids(words[1], f"{path}:{n}", cfg))
            elif words[0] == "interface" and len(words) == 2:
                # the management port is not read: the lab gives it its own address (netns/mgmt)
                if not words[1].startswith("Management"):
                    port = None
                    if iname_is_port(words[1]):
                        port = f.ports.setdefault(words[1], PortFacts(key=f"interface {words[1]}", edge=False))
                    iface = _Interface(words[1], f"{path}:{n}", port)
            elif words[:2] == ["router", "bgp"]:
                f.asn = to_int(words[2]) if len(words) == 3 else None
                bgp_blocks.append(cur)
            elif stmt.startswith(_POLICY_HEADS):
                policy.append(cur)
            continue
        if cur is None:
            cfg.error(f"line {n}", f"indented line before any command: {stmt!r}")
            continue
        if base is None:
            base = indent
        if indent > base and in_sub_mode:
            if cur.nested and cur.lines and cur.lines[-1] == cur.nested[-1].head:
                cur.nested[-1].lines.append(stmt)
            continue  # else config of a sub-mode we do not emulate (tx-queue, ...)
        in_sub_mode = stmt.startswith(_SUB_MODES)
        if iface is not None:
            _interface_line(iface, stmt, f, warnings)
        else:
            cur.lines.append(stmt)
            if stmt.startswith("address-family "):
                cur.nested.append(Block(stmt, lineno=n))
    close(iface)
    if hostname is None:
        cfg.error(path, "no hostname line")
    bgps = [_parse_bgp(b, first_hostname, policy, path, f) for b in bgp_blocks]
    lab_bgp = [b for b in bgps if b.asn]
    if len(lab_bgp) > 1:
        cfg.error(path, "more than one router bgp section")

    def assemble() -> SwitchIntent:
        port_intents = tuple(PortIntent(i.name, i.up, i.mtu, addrs if i.routed else ())
                             for i in ports for addrs in [tuple(checked_cidr(a, i.where) for a in i.addrs)])
        vlan_ids = {1, *declared}  # EOS always has VLAN 1
        up_ports = {q.name for q in port_intents if q.admin_up}
        vlans, warn = [], list(warnings)
        for vid in sorted(vlan_ids | set(svis)):
            members = tuple(p for p, v in access.items() if v == vid)
            svi = svis.get(vid)
            addrs, mtu, up = (tuple(checked_cidr(a, svi.where) for a in svi.addrs), svi.mtu, svi.up) if svi else ((), None, True)
            if vid not in vlan_ids:
                warn.append(f"{path}: interface Vlan{vid} without 'vlan {vid}': the SVI stays down on EOS")
                up = False
            if vid == 1 and not up_ports & set(members) and vid not in svis:
                continue  # the default VLAN only shut ports sit in
            vlans.append(VlanIntent(f"Vlan{vid}", vid, members, addrs, mtu, up))
        for p, vid in access.items():
            if vid not in vlan_ids:
                warn.append(f"{path}: {p} is in VLAN {vid}, which is not declared: inactive on EOS")
        return SwitchIntent(
            hostname=hostname, platform="eos", ports=port_intents, vlans=tuple(vlans),
            loopbacks=tuple(checked_cidr(a, i.where) for i in loopbacks for a in i.addrs), routing=routing,
            frr_conf=frr_text(lab_bgp[0]) if lab_bgp else None,
            warnings=tuple(warn + (lab_bgp[0].warnings if lab_bgp else [])),
        )
    cfg.assemble = assemble
    return cfg, lab_bgp[0] if lab_bgp else None


def _interface_line(i: _Interface, stmt: str, f: DeviceFacts, warnings: list[str]) -> None:
    """One direct sub-line of `interface NAME`, read for both views."""
    p, w = i.port, stmt.split()
    if w[0] == "mtu" and len(w) == 2:
        if p:
            p.mtu = to_int(w[1])
        if (mtu := whole(w[1])) is not None:
            i.mtu = mtu
    elif w[0] == "speed":
        # the lab's veth runs at the lab's rate whatever the speed form
        if p:
            p.speed_gbps = parse_speed(w[1:])
            if p.speed_gbps is None:
                forms = ", ".join(sorted(accepted_forms(), key=lambda x: (len(x), x)))
                f.problems.append(f"interface {i.name}: unknown speed '{' '.join(w[1:])}' "
                                  f"(EOS prints <Gbit/s>g-<lanes>: one of {forms})")
    elif stmt in ("shutdown", "no shutdown"):
        i.up = stmt == "no shutdown"
        if p:
            p.admin_up = i.up
    elif w[0] == "spanning-tree":
        # the lab's bridges run without STP, so every port forwards at link-up: the
        # behaviour `spanning-tree portfast` asks for (BPDU guard: no BPDUs)
        if p and stmt == "spanning-tree portfast":
            p.edge = True
    elif stmt in ("switchport", "no switchport"):
        i.routed = stmt == "no switchport"
    elif w[:3] == ["switchport", "access", "vlan"] and len(w) == 4:
        if p:
            p.vlan = to_int(w[3])
        if (vid := whole(w[3])) is not None:
            i.vid = vid
    elif w[:2] == ["switchport", "mode"] and w[2:] != ["access"]:
        warnings.append(f"{i.where}: {i.name} '{stmt}' is not emulated (access ports only)")
    elif w[:2] == ["ip", "address"] and len(w) >= 3:
        i.addrs.append(w[2])
        if p:
            p.ips.append(w[2])
        elif i.name.startswith("Loopback"):
            f.loopbacks.append(w[2])
        elif i.name.startswith("Vlan"):
            f.svis.setdefault(to_int(i.name[4:]), []).append(w[2])
    elif w[0] == "description":
        if p:
            # EOS has no per-port cable length: railonly ends the description with it
            m = _DESC_LENGTH.search(stmt)
            p.cable_length = m.group(1) if m else None
            p.length_key = f"interface {i.name} description"
    elif w[0] in ("channel-group", "vrf"):
        warnings.append(f"{i.where}: {i.name} '{stmt}' is not emulated")


def read_startup_config(text: str, path: str = STARTUP_CONFIG) -> SwitchIntent:
    """The lab's view of an EOS config; ConfigReadError if it cannot be programmed."""
    return parse_startup_config(text, path).intent()


def _vlan_ids(spec: str, where: str, cfg: SwitchConfig) -> list[int]:
    out = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        first, last = whole(lo), whole(hi or lo)
        if first is None or last is None:
            cfg.error(where, f"vlan {spec!r} is not a VLAN list")
            return []
        out += range(first, last + 1)
    return out


# --- router bgp -> FRR ---------------------------------------------------------------

_SESSION = ("remote-as", "description", "timers", "ebgp-multihop", "shutdown", "password", "update-source")
_POLICY = ("route-map", "next-hop-self", "allowas-in", "send-community")


def _ifname(eos: str) -> str:
    return "lo" if eos.startswith("Loopback") else eos


@dataclass
class BgpIntent:
    """What an EOS ``router bgp`` section asks, already in FRR's words, in FRR's order."""

    asn: str
    hostname: str | None
    glob: list[str]  # router-level lines (router-id, bestpath, timers)
    sess: list[str]  # peer groups first, then each neighbor with remote-as first
    af: list[str]  # ipv4 unicast lines
    activated: list[str]  # neighbors and groups activated for ipv4 unicast
    max_paths: str | None
    policy: list[Block]  # the prefix-lists, static routes and route-maps the section may use
    warnings: list[str] = field(default_factory=list)  # what has no FRR equivalent here


def _parse_bgp(b: Block, hostname: str | None, policy: list[Block], path: str, f: DeviceFacts) -> BgpIntent:
    """A ``router bgp`` section as a :class:`BgpIntent` (asn "" without an AS number), and
    its facts (router-id, networks, neighbors and their remote-as) into ``f``.

    EOS activates every neighbor for IPv4 unicast unless the config says
    ``no bgp default ipv4-unicast``; the intent lists them explicitly."""
    warn: list[str] = []
    words = b.head.split()
    asn = words[2] if len(words) > 2 else ""
    glob, sess, af = [], [], []
    groups: dict[str, None] = {}  # ordered sets
    neighbors: dict[str, None] = {}  # in order, peer groups excluded
    grouped: set[str] = set()
    activated: list[str] = []
    default_activate = True
    max_paths = None

    def af_line(words: list[str], where: str) -> None:
        nonlocal max_paths
        if words[0] == "network" and len(words) >= 2:
            f.networks.append(words[1])
        if words[0] == "network" and len(words) in (2, 4):
            af.append(" ".join(words))
        elif words[0] == "redistribute" and words[1:2] in (["connected"], ["static"]):
            af.append(" ".join(words))
        elif words[0] == "maximum-paths" and words[1:2] and whole(words[1]) is not None:
            max_paths = words[1]
        elif words[0] == "neighbor" and len(words) >= 3:
            peer, cmd = words[1], words[2]
            if cmd == "activate":
                activated.append(peer)
            elif cmd in _POLICY:
                af.append("neighbor " + peer + " " + " ".join(words[2:3] + words[3:]))
            elif cmd == "maximum-routes" and len(words) >= 4:
                af.append(f"neighbor {peer} maximum-prefix {words[3]}")
            else:
                warn.append(f"{where}: '{' '.join(words)}' is not translated to FRR")
        else:
            warn.append(f"{where}: '{' '.join(words)}' is not translated to FRR")

    for line in b.lines:
        w = line.split()
        where = f"{path}: router bgp"
        if w[0] == "router-id" and len(w) == 2:
            f.router_id = w[1]
            glob.append(f"bgp router-id {w[1]}")
        elif line == "no bgp default ipv4-unicast":
            default_activate = False
        elif line in ("bgp bestpath as-path multipath-relax", "bgp log-neighbor-changes"):
            glob.append(line)
        elif w[:2] == ["timers", "bgp"] and len(w) == 4:
            glob.append(line)
        elif w[0] == "neighbor" and len(w) >= 3:
            peer, rest = w[1], w[2:]
            if rest in (["peer", "group"], ["peer-group"]):
                groups[peer] = None
                sess.append(f"neighbor {peer} peer-group")
            elif rest[:2] == ["peer", "group"] and len(rest) == 3 or rest[0] == "peer-group" and len(rest) == 2:
                grouped.add(peer)
                neighbors[peer] = None
                if peer[0] in "0123456789":  # an address, not a peer group's name
                    f.neighbors.setdefault(peer, None)  # `peer-group`: the form older EOS prints
                sess.append(f"neighbor {peer} peer-group {rest[-1]}")
            elif rest == ["bfd"]:
                sess.append(f"neighbor {peer} bfd")  # the lab runs bfdd beside bgpd
            elif rest[0] == "update-source" and len(rest) == 2:
                sess.append(f"neighbor {peer} update-source {_ifname(rest[1])}")
            elif rest[0] in _SESSION:
                if rest[0] == "remote-as":
                    if peer not in groups:
                        neighbors[peer] = None
                    if len(rest) > 1 and peer[0] in "0123456789":
                        f.neighbors[peer] = to_int(rest[1])
                sess.append(f"neighbor {peer} " + " ".join(rest))
            else:
                af_line(w, where)
        elif w[0] in ("network", "redistribute", "maximum-paths"):
            af_line(w, where)
        elif w[0] == "address-family":
            if w[1:] != ["ipv4"] and w[1:] != ["ipv4", "unicast"]:
                warn.append(f"{where}: '{line}' is not translated to FRR")
        else:
            warn.append(f"{where}: '{line}' is not translated to FRR")
    for nb in b.nested:
        if nb.head.split()[1:2] == ["ipv4"]:
            for line in nb.lines:
                af_line(line.split(), f"{path}: router bgp {nb.head}")

    # remote-as ordering: FRR wants "neighbor X remote-as" before "peer-group G"
    # for a member of a group without remote-as (as SONiC's templates write it)
    sess.sort(key=lambda s: (0 if s.endswith(" peer-group") else 1))
    by_peer: dict[str, list[str]] = {}
    for s in sess:
        by_peer.setdefault(s.split()[1], []).append(s)
    members_first = []
    for peer in neighbors:
        members_first += sorted(by_peer.get(peer, ()), key=lambda s: 0 if " remote-as " in s else 1)
    sess = [s for s in sess if s.split()[1] in groups] + members_first

    if default_activate:
        activated = list(groups) + [n for n in neighbors if n not in grouped]
    return BgpIntent(asn, hostname, glob, sess, af, activated, max_paths, policy, warn)


def frr_text(bgp: BgpIntent) -> str:
    """frr.conf for a :class:`BgpIntent`. eBGP without policy is accepted on EOS, so
    ``no bgp ebgp-requires-policy``. Timers: FRR's datacenter defaults (3/9 s) unless
    the config sets its own, so a lab converges in seconds (EOS defaults to 60/180)."""
    bs, hostname, asn = bgp.policy, bgp.hostname, bgp.asn
    out = ["frr version 8.4", "frr defaults datacenter"]
    if hostname:
        out.append(f"hostname {hostname}")
    out += ["service integrated-vtysh-config", "!"]
    for x in bs:
        if x.head.startswith("ip prefix-list "):
            out += _prefix_list_lines(x)
    for x in bs:
        w = x.head.split()
        # EOS `ip community-list NAME permit|deny COMMUNITY...` is FRR's standard list
        if w[:2] == ["ip", "community-list"] and len(w) >= 5 and w[3] in ("permit", "deny"):
            out.append("bgp community-list standard " + " ".join(w[2:]))
    for x in bs:
        w = x.head.split()
        if w[:2] == ["ip", "route"] and len(w) >= 4:
            out.append(" ".join(w[:4]))
    for x in bs:
        if x.head.startswith("route-map "):
            out.append("!")
            out.append(x.head)
            out += [" " + s for s in x.lines]
            out.append("exit")
    out += ["!", f"router bgp {asn}"]
    out += [" " + s for s in bgp.glob]
    out += [" no bgp ebgp-requires-policy", " no bgp default ipv4-unicast"]
    out += [" " + s for s in bgp.sess]
    out += [" !", " address-family ipv4 unicast"]
    out += ["  " + s for s in bgp.af]
    out += [f"  neighbor {p} activate" for p in dict.fromkeys(bgp.activated)]
    if bgp.max_paths:
        out.append(f"  maximum-paths {bgp.max_paths}")
    out += [" exit-address-family", "exit", "!"]
    return "\n".join(out) + "\n"


def bgp_to_frr(text: str, path: str = STARTUP_CONFIG) -> tuple[str | None, list[str]]:
    """(frr.conf text, warnings) for an EOS config; (None, []) without ``router bgp``."""
    cfg, bgp = _walk(text, path)
    for e in cfg.errors:
        if e.args[0].endswith("more than one router bgp section"):
            raise e
    return (None, []) if bgp is None else (frr_text(bgp), bgp.warnings)


def _prefix_list_lines(b: Block) -> list[str]:
    """FRR one-liners for an EOS prefix-list: the one-line form, or the block form
    EOS prints (``ip prefix-list NAME`` with ``seq N permit P ...`` sub-lines)."""
    if len(b.head.split()) > 3:
        return [b.head]
    return [f"{b.head} {line}" for line in b.lines if line.startswith("seq ")]


def read_file(path: str) -> SwitchIntent:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise ConfigReadError(path, f"cannot read: {exc.strerror}") from None
    return read_startup_config(text, path)
