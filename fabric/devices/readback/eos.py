"""Arista EOS startup-config -> SwitchIntent, and its ``router bgp`` -> frr.conf. Pure.

EOS semantics kept where they decide reachability: an Ethernet port is a
switchport in access VLAN 1 unless it says otherwise, ``no switchport`` makes
it routed, ``shutdown`` downs it, addresses on ``interface LoopbackN`` go on
``lo``, ``interface VlanN`` is the VLAN's SVI, ``ip routing`` turns on IP
forwarding. BGP runs in FRR: :func:`bgp_to_frr` translates the ``router bgp``
section (plus the prefix-lists, route-maps and static routes it may use)
into FRR syntax; what has no FRR equivalent here is reported as a warning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .intent import ConfigReadError, PortIntent, SwitchIntent, VlanIntent, checked_cidr

PORT_RE = re.compile(r"^Ethernet\d+$")  # EOS front-panel ports as fabric.json names them


@dataclass
class Block:
    head: str
    lines: list[str] = field(default_factory=list)  # sub-lines, indentation stripped
    nested: list["Block"] = field(default_factory=list)  # e.g. address-family inside router bgp
    lineno: int = 0


def blocks(text: str) -> list[Block]:
    """Top-level commands with their indented sub-commands (two levels, as EOS prints)."""
    out: list[Block] = []
    base = None  # indentation of the current block's direct sub-lines
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith("!") or stripped == "end":
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            out.append(Block(stripped, lineno=n))
            base = None
            continue
        if not out:
            raise ConfigReadError(f"line {n}", f"indented line before any command: {stripped!r}")
        cur = out[-1]
        if base is None:
            base = indent
        if indent > base and cur.nested and cur.lines and cur.lines[-1] == cur.nested[-1].head:
            cur.nested[-1].lines.append(stripped)
        elif indent > base:
            continue  # deeper config of a sub-mode we do not emulate (tx-queue, ...)
        else:
            cur.lines.append(stripped)
            if stripped.startswith("address-family "):
                cur.nested.append(Block(stripped, lineno=n))
    return out



def read_startup_config(text: str, path: str = "startup-config") -> SwitchIntent:
    hostname = None
    routing = False
    declared: dict[int, str] = {}  # vid -> name
    ports: list[PortIntent] = []
    access: dict[str, int] = {}
    svis: dict[int, tuple[list[str], int | None, bool]] = {}
    loopbacks: list[str] = []
    warnings: list[str] = []
    for b in blocks(text):
        where = f"{path}:{b.lineno}"
        words = b.head.split()
        if words[0] == "hostname" and len(words) == 2:
            hostname = words[1]
        elif b.head == "ip routing":
            routing = True
        elif b.head == "no ip routing":
            routing = False
        elif words[0] == "vlan" and len(words) == 2:
            for vid in _vlan_ids(words[1], where):
                declared[vid] = f"Vlan{vid}"
        elif words[0] == "interface" and len(words) == 2 and words[1].startswith("Management"):
            continue  # the management port: the lab gives it its own address (netns/mgmt), not from here
        elif words[0] == "interface" and len(words) == 2:
            name = words[1]
            mtu, up, routed, addrs, vid = None, True, False, [], 1
            for sub in b.lines:
                sw = sub.split()
                if sw[0] == "mtu" and len(sw) == 2 and sw[1].isdigit():
                    mtu = int(sw[1])
                elif sub == "shutdown":
                    up = False
                elif sub == "no shutdown":
                    up = True
                elif sub == "no switchport":
                    routed = True
                elif sub == "switchport":
                    routed = False
                elif sw[:3] == ["switchport", "access", "vlan"] and len(sw) == 4 and sw[3].isdigit():
                    vid = int(sw[3])
                elif sw[:2] == ["switchport", "mode"] and sw[2:] != ["access"]:
                    warnings.append(f"{where}: {name} '{sub}' is not emulated (access ports only)")
                elif sw[:2] == ["ip", "address"] and len(sw) == 3:
                    addrs.append(checked_cidr(sw[2], where))
                elif sw[0] in ("speed", "spanning-tree"):
                    # the veth runs at the lab's rate whatever the speed form; the lab's
                    # bridges run without STP, so every port forwards at link-up: the
                    # behaviour `spanning-tree portfast` asks for (BPDU guard: no BPDUs)
                    pass
                elif sw[0] in ("channel-group", "vrf"):
                    warnings.append(f"{where}: {name} '{sub}' is not emulated")
            if name.startswith("Loopback"):
                loopbacks += addrs
            elif name.startswith("Vlan") and name[4:].isdigit():
                svis[int(name[4:])] = (addrs, mtu, up)
            elif PORT_RE.match(name):
                if addrs and not routed:
                    warnings.append(f"{where}: {name} has an ip address but is a switchport (ignored)")
                ports.append(PortIntent(name, up, mtu, tuple(addrs) if routed else ()))
                if not routed:
                    access[name] = vid
            elif not name.startswith("Management"):
                warnings.append(f"{where}: interface {name} is not emulated")
    if hostname is None:
        raise ConfigReadError(path, "no hostname line")
    declared.setdefault(1, "Vlan1")  # EOS always has VLAN 1
    vlans = []
    for vid in sorted(set(declared) | set(svis)):
        members = tuple(p for p, v in access.items() if v == vid)
        addrs, mtu, up = svis.get(vid, ([], None, True))
        if vid not in declared:
            warnings.append(f"{path}: interface Vlan{vid} without 'vlan {vid}': the SVI stays down on EOS")
            up = False
        up_ports = {q.name for q in ports if q.admin_up}
        if vid == 1 and not up_ports & set(members) and vid not in svis:
            continue  # the default VLAN only shut ports sit in
        vlans.append(VlanIntent(f"Vlan{vid}", vid, members, tuple(addrs), mtu, up))
    for p, vid in access.items():
        if vid not in declared:
            warnings.append(f"{path}: {p} is in VLAN {vid}, which is not declared: inactive on EOS")
    conf, bgp_warn = bgp_to_frr(text, path)
    return SwitchIntent(
        hostname=hostname, platform="eos", ports=tuple(ports), vlans=tuple(vlans),
        loopbacks=tuple(loopbacks), routing=routing, frr_conf=conf,
        warnings=tuple(warnings + bgp_warn),
    )


def _vlan_ids(spec: str, where: str) -> list[int]:
    out = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise ConfigReadError(where, f"vlan {spec!r} is not a VLAN list")
        out += range(int(lo), int(hi or lo) + 1)
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


def parse_bgp(text: str, path: str = "startup-config") -> BgpIntent | None:
    """The ``router bgp`` section of an EOS config as a :class:`BgpIntent`; None without one.

    EOS activates every neighbor for IPv4 unicast unless the config says
    ``no bgp default ipv4-unicast``; the intent lists them explicitly."""
    bs = blocks(text)
    bgp = [b for b in bs if b.head.startswith("router bgp ")]
    if not bgp:
        return None
    if len(bgp) > 1:
        raise ConfigReadError(path, "more than one router bgp section")
    b = bgp[0]
    warn: list[str] = []
    hostname = next((x.head.split()[1] for x in bs if x.head.startswith("hostname ")), None)
    asn = b.head.split()[2]
    glob, sess, af, groups = [], [], [], []
    neighbors: list[str] = []  # in order, peer groups excluded
    grouped: set[str] = set()
    activated: list[str] = []
    default_activate = True
    max_paths = None

    def af_line(words: list[str], where: str) -> None:
        nonlocal max_paths
        if words[0] == "network" and len(words) in (2, 4):
            af.append(" ".join(words))
        elif words[0] == "redistribute" and words[1] in ("connected", "static"):
            af.append(" ".join(words))
        elif words[0] == "maximum-paths" and words[1].isdigit():
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
                groups.append(peer)
                sess.append(f"neighbor {peer} peer-group")
            elif rest[:2] == ["peer", "group"] and len(rest) == 3 or rest[0] == "peer-group" and len(rest) == 2:
                grouped.add(peer)
                if peer not in neighbors:
                    neighbors.append(peer)
                sess.append(f"neighbor {peer} peer-group {rest[-1]}")
            elif rest == ["bfd"]:
                sess.append(f"neighbor {peer} bfd")  # the lab runs bfdd beside bgpd
            elif rest[0] == "update-source" and len(rest) == 2:
                sess.append(f"neighbor {peer} update-source {_ifname(rest[1])}")
            elif rest[0] in _SESSION:
                if rest[0] == "remote-as" and peer not in groups and peer not in neighbors:
                    neighbors.append(peer)
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
    members_first = []
    for peer in neighbors:
        mine = [s for s in sess if s.split()[1] == peer]
        mine.sort(key=lambda s: 0 if " remote-as " in s else 1)
        members_first += mine
    sess = [s for s in sess if s.split()[1] in groups] + members_first

    if default_activate:
        activated = groups + [n for n in neighbors if n not in grouped]
    policy = [x for x in bs if x.head.startswith(("ip prefix-list ", "ip route ", "route-map ", "ip community-list "))]
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


def bgp_to_frr(text: str, path: str = "startup-config") -> tuple[str | None, list[str]]:
    """(frr.conf text, warnings) for an EOS config; (None, []) without ``router bgp``."""
    bgp = parse_bgp(text, path)
    if bgp is None:
        return None, []
    return frr_text(bgp), bgp.warnings


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
