"""What a config change does to a running switch, and the order switches take it in (pure).

Every rule here is stated in docs/push.md; `railonly push` (which applies it)
and `railonly diff --runbook` (which writes it down) both read this module.

* :func:`classify`: one switch's change from its old files to its new ones,
  each item marked **hitless** or **disruptive**. Hitless: a description,
  an MTU, a cable length, a neighbour record, an FRR ``description`` line,
  nothing that can drop a packet or reset a session. Everything else
  (addresses, BGP, VLANs, port state or speed, QoS, tables we do not know)
  is disruptive, so the switch is drained before and undrained after.
  SONiC: changed ConfigDB tables become a JSON patch (RFC 6902, what
  ``config apply-patch`` takes) except the tables read only at start-up
  (:data:`RELOAD_FIELDS`) and the buffer pools and profiles (:data:`RELOAD_TABLES`),
  which need a full ``config reload``, and an FRR
  change of the BGP ASN, which restarts bgpd; FRR statements become vtysh
  commands. EOS: the lines change inside a configure session.
* :func:`waves`: a canary wave of one switch, then waves in which at most
  ``max_per_group`` switches of one rail and tier change at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from ..outdir_layout import CONFIG_DB, STARTUP_CONFIG
from ..input.jsonsource import UntrustedFile, parse_json
from ..safe_text import natural

from ..graph.model import Node

# --- FRR / EOS text as statements ---------------------------------------------------

# Lines FRR's running-config never shows (or shows from the kernel, not the
# config): with `frr defaults datacenter` these equal the defaults and are
# elided; the forwarding lines mirror sysctls; version/hostname noise comes
# from the daemons.
FRR_ELIDED = {
    "bgp log-neighbor-changes", "no bgp ebgp-requires-policy", "no ip forwarding", "no ipv6 forwarding",
    # EOS prints these defaults in every `show running-config` (vEOS-lab and cEOS 4.20-4.33 ones
    # published as-is), and the config session puts them back: without them here every switch
    # showed drift and every push was disruptive
    "transceiver qsfp default-mode 4x10G", "no aaa root", "no service interface inactive port-id allocation disabled",
}
# The lab's zebra installs routes with their nexthops inline, not as kernel nexthop objects: with
# those, FRR 8.4's zebra left the leaves' kernel nexthop groups one member short after a spine's
# links went down and up (`lab fault --restore`, the end of `--failover`), so every route of the
# rail went through one spine until a fresh deploy while `show ip route` listed both. Set by the
# netns runtime (emulation/runtime/netns/frr.py), it is the lab's, not the switch's config.
LAB_ZEBRA = "no zebra nexthop kernel enable"
FRR_ELIDED.add(LAB_ZEBRA)
# EOS only: statements (context paths) `show running-config` prints on switches that were never
# configured with them, which `rollback clean-config` puts back. `system l1` with its two
# defaults: vEOS-lab 4.32.1F and 4.33.1F, cEOS 4.33.0F and 4.34.1F, and an AWE-5310 on
# EOS-4.31.2F print it (tests/data/eos_forms.yaml: printed_defaults).
EOS_PRINTED_DEFAULTS = {
    "system l1", "system l1 > unsupported speed action error", "system l1 > unsupported error-correction action error",
}
# EOS prints every front-panel and management port, configured or not (`interface Ethernet5` and
# `!`, `interface Management1` and `!`; same sources): such a port with nothing under it is the
# port's default, not a statement railonly could add or remove.
_EOS_BARE_PORT = re.compile(r"^interface (Ethernet|Management)\d+(/\d+)*$")
_FRR_SKIP = re.compile(r"^(!.*|end|exit|exit-address-family|exit-vrf|frr version .*|frr defaults .*|"
                       r"Building configuration\.\.\.|Current configuration:?)$")
SEP = " > "  # between a statement's contexts

# The drain's route-map entry: first in every outbound route-map, marked by its description.
DRAIN_SEQ = 1
DRAIN_MARK = "railonly-drain"
GSHUT = "65535:0"  # RFC 8326 GRACEFUL_SHUTDOWN


def frr_statements(text: str, eos: bool = False) -> list[str]:
    """FRR (or EOS) config as sorted 'context > statement' paths: order and comment
    noise-free, so a running config and a file compare by meaning. The drain's own
    route-map entries are left out: they are state of the rollout, not config.
    `eos`: also without what EOS prints of its own defaults (EOS_PRINTED_DEFAULTS, ports
    with nothing configured)."""
    out, stack = [], []  # stack of (indent, line)
    hostname_seen = False
    for raw in text.splitlines():
        line = raw.rstrip()
        body = line.strip()
        if not body or _FRR_SKIP.match(body) or body in FRR_ELIDED:
            continue
        if body.startswith("hostname "):
            if hostname_seen:
                continue
            hostname_seen = True
        indent = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        out.append(SEP.join([s for _, s in stack] + [body]))
        stack.append((indent, body))
    drains = {s.split(SEP)[0] for s in out if s.endswith(f"{SEP}description {DRAIN_MARK}")}
    out = [s for s in out if s.split(SEP)[0] not in drains]
    if eos:
        parents = {s.rsplit(SEP, 1)[0] for s in out if SEP in s}
        out = [s for s in out if s not in EOS_PRINTED_DEFAULTS and not (_EOS_BARE_PORT.match(s) and s not in parents)]
    return sorted(set(out))


# --- the rules ------------------------------------------------------------------------

# ConfigDB fields and tables whose change touches no forwarding state.
HITLESS_FIELDS = {("PORT", "description"), ("PORT", "mtu"), ("PORT", "alias"),
                  ("VLAN", "mtu")}  # a VLAN interface's MTU follows switch.mtu as its ports' do
HITLESS_TABLES = {"CABLE_LENGTH", "DEVICE_NEIGHBOR", "DEVICE_NEIGHBOR_METADATA"}
# Read only at start-up: the switch's SKU, platform, BGP ASN, type and FRR daemons (DEVICE_METADATA|localhost):
# a full config reload. Every other table is patched (QoS and buffer tables too: their
# daemons apply changes at run time; disruptive all the same).
RELOAD_FIELDS = {("DEVICE_METADATA", "hwsku"), ("DEVICE_METADATA", "platform"), ("DEVICE_METADATA", "bgp_asn"),
                 ("DEVICE_METADATA", "type"), ("DEVICE_METADATA", "mac"),
                 ("DEVICE_METADATA", "frr_mgmt_framework_config")}  # the bgp container's daemons, chosen at its start
# Tables `config apply-patch` refuses to change: its generic_config_updater rejects every
# BUFFER_POOL change and BUFFER_PROFILE changes but for a few fields on listed ASICs
# (sonic-net/sonic-utilities generic_config_updater/gcu_field_operation_validators.conf.json).
# They follow the hwsku and the switch type (fabric/devices/sonic_buffers.py): a full config reload.
# The file lists no validator for BUFFER_PG, BUFFER_QUEUE, BUFFER_PORT_*_PROFILE_LIST,
# DEFAULT_LOSSLESS_BUFFER_PARAMETER or LOSSLESS_TRAFFIC_PATTERN: those go in the patch.
RELOAD_TABLES = {"BUFFER_POOL", "BUFFER_PROFILE"}
# What a SONiC image keeps in CONFIG_DB itself, in tables railonly writes too: `config reload`
# loads init_cfg.json under the file (sonic-utilities config/main.py: sonic-cfggen -j
# init_cfg.json -j FILE; its fields from sonic-buildimage files/build_templates/init_cfg.json.j2),
# and db_migrator adds PORT_QOS_MAP|global on Broadcom (scripts/db_migrator.py
# migrate_port_qos_map_global). They are the image's, not railonly's: a push neither reports them
# as drift nor removes them (every push to a real switch reported them, drained it and
# patched FEATURE|swss, FEATURE|syncd and the rest away).
IMAGE_FIELDS = {  # table -> fields of its keys the image sets where railonly's file does not
    "DEVICE_METADATA": frozenset({"buffer_model", "default_bgp_status", "default_pfcwd_status", "timezone",
                                  "synchronous_mode"}),
    "FEATURE": frozenset({"state", "delayed", "has_global_scope", "has_per_asic_scope", "auto_restart",
                          "support_syslog_rate_limit", "check_up_status", "set_owner", "high_mem_alert"}),
    "NTP": frozenset({"authentication", "dhcp", "server_role", "src_intf", "admin_state", "vrf"}),
}
ANY_KEY = None
IMAGE_KEYS = {"FEATURE": ANY_KEY, "PORT_QOS_MAP": frozenset({"global"}), "NTP": frozenset({"global"})}  # table -> keys


def image_aligned(running: dict, candidate: dict) -> tuple[dict, dict]:
    """(running, candidate) config DBs as a push compares them: the tables the candidate lists
    (the switch holds more than railonly writes), without the keys the image keeps there
    that the candidate does not name, and each candidate key with the image's fields the
    running key has and the candidate does not set (so a patch of that key keeps them)."""
    old: dict = {}
    new: dict = {}
    for table, want in candidate.items():
        have = running.get(table)
        if not isinstance(have, dict) or not isinstance(want, dict):
            if have is not None:
                old[table] = have
            new[table] = want
            continue
        keys = IMAGE_KEYS.get(table, frozenset())
        old[table] = {k: v for k, v in have.items() if k in want or not (keys is ANY_KEY or k in keys)}
        fields = IMAGE_FIELDS.get(table, frozenset())
        new[table] = {k: {**{f: x for f, x in have[k].items() if f in fields and f not in v}, **v}
                      if fields and isinstance(v, dict) and isinstance(have.get(k), dict) else v
                      for k, v in want.items()}
    return old, new


# FRR/EOS statements that change nothing but text
_HITLESS_LINE = re.compile(r"(^|\s)description(\s|$)|^mtu \d+$")


def hitless_line(statement: str) -> bool:
    return bool(_HITLESS_LINE.search(statement.split(SEP)[-1]))


@dataclass
class Item:
    what: str  # "PORT|Ethernet0|mtu 9100 -> 4200", "+ router bgp 1 > neighbor ..."
    hitless: bool


@dataclass
class Change:
    """One switch's change from its running (or old) files to the candidate."""

    device: str
    platform: str
    items: list[Item] = field(default_factory=list)
    patch: list[dict] = field(default_factory=list)  # SONiC: JSON patch of the changed tables
    reload_why: list[str] = field(default_factory=list)  # SONiC: why a full config reload is needed
    frr_add: list[str] = field(default_factory=list)  # statements (context paths) to add
    frr_remove: list[str] = field(default_factory=list)  # ... and to remove

    @property
    def changed(self) -> bool:
        return bool(self.items)

    @property
    def disruptive(self) -> bool:
        return any(not i.hitless for i in self.items) or bool(self.reload_why)

    @property
    def mark(self) -> str:
        return "disruptive" if self.disruptive else "hitless"

    def apply_method(self) -> str:
        if self.platform == "eos":
            return "configure session, commit timer, confirm after verify"
        parts = []
        if self.reload_why:
            parts.append("config reload (" + "; ".join(self.reload_why) + ")")
        else:
            if self.patch:
                parts.append(f"config apply-patch ({len(self.patch)} operation(s) on "
                             f"{', '.join(sorted({_table_of(op) for op in self.patch}))})")
            if self.frr_add or self.frr_remove:
                parts.append(f"vtysh ({len(self.frr_add)} added, {len(self.frr_remove)} removed statement(s))")
        return " + ".join(parts) or "nothing"

    def to_json(self) -> dict:
        return {"device": self.device, "platform": self.platform, "mark": self.mark, "apply": self.apply_method(),
                "reload_why": self.reload_why, "items": [{"what": i.what, "hitless": i.hitless} for i in self.items]}


def _pointer(*parts: str) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def _table_of(op: dict) -> str:
    return op["path"].split("/")[1].replace("~1", "/").replace("~0", "~")


def db_patch(old: dict, new: dict) -> list[dict]:
    """RFC 6902 operations turning config DB `old` into `new`, whole keys at a time."""
    ops = []
    for table in sorted(old.keys() | new.keys()):
        a, b = old.get(table), new.get(table)
        if a == b:
            continue
        if a is None or not isinstance(a, dict) or not isinstance(b, dict):
            ops.append({"op": "remove", "path": _pointer(table)} if b is None else
                       {"op": "add" if a is None else "replace", "path": _pointer(table), "value": b})
            continue
        for key in sorted(a.keys() | b.keys()):
            if a.get(key) == b.get(key):
                continue
            if key not in b:
                ops.append({"op": "remove", "path": _pointer(table, key)})
            else:
                ops.append({"op": "add" if key not in a else "replace", "path": _pointer(table, key), "value": b[key]})
    return ops


def _db_items(old: dict, new: dict) -> tuple[list[Item], list[str]]:
    items, reload_why = [], []
    for table in sorted(old.keys() | new.keys()):
        a, b = old.get(table) or {}, new.get(table) or {}
        if a == b:
            continue
        for key in sorted(a.keys() | b.keys()) if isinstance(a, dict) and isinstance(b, dict) else [""]:
            fa, fb = (a.get(key), b.get(key)) if key else (a, b)
            if fa == fb:
                continue
            if table in RELOAD_TABLES:
                reload_why.append(f"{table}|{key} changes (config apply-patch refuses buffer pool and profile changes)")
            if not isinstance(fa, dict) or not isinstance(fb, dict):
                items.append(Item(f"{table}|{key} {'added' if fa is None else 'removed' if fb is None else 'changed'}",
                                  table in HITLESS_TABLES))
                continue
            for f in sorted(fa.keys() | fb.keys()):
                if fa.get(f) != fb.get(f) and (table, f) in RELOAD_FIELDS:
                    reload_why.append(f"{table}|{key}|{f} changes (read at start-up)")
                if fa.get(f) != fb.get(f):
                    items.append(Item(f"{table}|{key}|{f} {fa.get(f, '-')} -> {fb.get(f, '-')}",
                                      table in HITLESS_TABLES or (table, f) in HITLESS_FIELDS))
    return items, reload_why


def _frr_items(old_text: str, new_text: str, eos: bool = False) -> tuple[list[Item], list[str], list[str], list[str]]:
    old, new = set(frr_statements(old_text, eos)), set(frr_statements(new_text, eos))
    add, remove = sorted(new - old), sorted(old - new)
    items = [Item(f"- {s}", hitless_line(s)) for s in remove] + [Item(f"+ {s}", hitless_line(s)) for s in add]
    why = []
    asn = lambda ss: {s.split(SEP)[0] for s in ss if s.startswith("router bgp ")}  # noqa: E731
    if asn(old) and asn(new) and asn(old) != asn(new):
        why.append("the BGP ASN changes (bgpd restarts)")
    return items, add, remove, why


def _config_db(text: str | None, where: str) -> dict:
    """A config_db.json's tables: an object of objects (UntrustedFile, exit 2, names the file)."""
    doc = parse_json(text or "{}", where)
    if not isinstance(doc, dict) or not all(isinstance(t, dict) for t in doc.values()):
        raise UntrustedFile(where, "is not a SONiC config DB (an object of tables, each an object)", "recompile the design")
    return doc


def classify(device: str, platform: str, old: dict[str, str], new: dict[str, str],
             where: tuple[str, str] = ("the old config_db.json", "the new config_db.json")) -> Change:
    """The change of one switch from files `old` to files `new` ({file name: text}; for
    SONiC config_db.json and the FRR files, for EOS startup-config); `where`: the two
    config_db.json as messages name them."""
    ch = Change(device, platform)
    if platform == "eos":
        items, add, remove, why = _frr_items(old.get(STARTUP_CONFIG, ""), new.get(STARTUP_CONFIG, ""), eos=True)
        ch.items, ch.frr_add, ch.frr_remove = items, add, remove
        return ch
    odb, ndb = (_config_db(f.get(CONFIG_DB), w) for f, w in zip((old, new), where))
    ch.items, ch.reload_why = _db_items(odb, ndb)
    ch.patch = db_patch(odb, ndb)
    frr_old = "\n".join(v for k, v in sorted(old.items()) if k != CONFIG_DB)
    frr_new = "\n".join(v for k, v in sorted(new.items()) if k != CONFIG_DB)
    items, ch.frr_add, ch.frr_remove, why = _frr_items(frr_old, frr_new)
    ch.items += items
    ch.reload_why += why
    return ch


def vtysh_commands(add: list[str], remove: list[str]) -> list[list[str]]:
    """vtysh command lists (each run as one `vtysh -c ... -c ...`) that turn the running
    FRR config into the candidate: removals first (so `timers 1 3` is not undone by
    `no timers 3 9`), children of a removed context left to their parent, then additions.
    A neighbour's `remote-as` that is re-added is not removed: `no neighbor X remote-as`
    would delete the neighbour with all its settings, a new `remote-as` replaces it."""
    def re_added(s: str) -> bool:
        m = re.match(r"(.*neighbor \S+ remote-as) ", s)
        return bool(m) and any(a.startswith(m.group(1) + " ") for a in add)

    cmds: list[list[str]] = []
    removed_contexts: list[str] = []
    for s in sorted(remove, key=lambda s: (s.count(SEP), s)):
        if re_added(s) or any(s.startswith(c + SEP) for c in removed_contexts):
            continue
        parts = s.split(SEP)
        cmds.append(["configure terminal", *parts[:-1], "no " + parts[-1]])
        removed_contexts.append(s)
    # a new neighbour (or peer group) is defined before anything is said of it: FRR refuses
    # `neighbor X description ...` (sorted first) with "Specify remote-as or peer-group commands first"
    # (a peer group first, then its members and remote-as lines, then the rest)
    def rank(s: str) -> int:
        last = s.split(SEP)[-1]
        return 0 if re.fullmatch(r"neighbor \S+ peer-group", last) else \
            1 if re.fullmatch(r"neighbor \S+ (remote-as|peer-group) \S+", last) else 2

    cmds += [["configure terminal", *s.split(SEP)] for s in sorted(add, key=rank)]
    return cmds


def undo_statements(add: list[str], remove: list[str], applied: list[list[str]]) -> tuple[list[str], list[str]]:
    """(statements to add, statements to remove) that undo `applied`: the commands of
    ``vtysh_commands(add, remove)`` FRR took before one failed. Only those: FRR refuses a
    `no` for a setting of a neighbour it never added ("% Specify remote-as or peer-group
    commands first"), which failed the whole roll back and left the switch drained.
    A removed context comes back with the children it took along; a removed neighbour
    (`no neighbor X remote-as`, or `no neighbor X peer-group G`, sent first: FRR drops the
    neighbour with all its settings on either) with the rest of its statements; a
    `remote-as` that replaced another brings the old one back."""
    back_add: list[str] = []
    back_remove: list[str] = []
    for cmd in applied:
        context, last = cmd[1:-1], cmd[-1]
        if last.startswith("no "):
            s = SEP.join([*context, last[3:]])
            m = re.match(r"(.*neighbor \S+) (remote-as|peer-group) ", s)
            gone = (m.group(1) + " ",) if m else (s + SEP,)
            back_add += [r for r in remove if r == s or r.startswith(gone)]
        else:
            s = SEP.join([*context, last])
            back_remove.append(s)
            m = re.match(r"(.*neighbor \S+ remote-as) ", s)
            if m:  # replaced in place, not removed first (vtysh_commands)
                back_add += [r for r in remove if r.startswith(m.group(1) + " ")]
    return list(dict.fromkeys(back_add)), back_remove


def drain_commands(running_frr: str, asn: str | None, on: bool) -> list[list[str]]:
    """vtysh commands that drain (on) or undrain the switch: an entry first in every
    outbound route-map of its BGP neighbours that prepends its ASN three times and adds
    GRACEFUL_SHUTDOWN, as SONiC's TSA does with its own route-maps."""
    maps = sorted({m.group(1) for s in frr_statements(running_frr)
                   if (m := re.search(r"neighbor \S+ route-map (\S+) out$", s))})
    cmds = []
    for rm in maps:
        if on:
            cmds.append(["configure terminal", f"route-map {rm} permit {DRAIN_SEQ}", f"description {DRAIN_MARK}",
                         *([f"set as-path prepend {asn} {asn} {asn}"] if asn else []),
                         f"set community {GSHUT} additive", "on-match next"])
        else:
            cmds.append(["configure terminal", f"no route-map {rm} permit {DRAIN_SEQ}"])
    return cmds


def drain_config(frr_text: str, asn: str | None) -> str:
    """The drain as FRR config text, for a switch that must start drained (a full reload
    while drained: FRR restarts from its files, so the drain goes into them)."""
    out = []
    for cmds in drain_commands(frr_text, asn, True):
        out += [cmds[1]] + [" " + c for c in cmds[2:]] + ["exit", "!"]
    return "\n".join(out) + "\n" if out else ""


def bgp_asn(config_text: str) -> str | None:
    """The ASN of a config's `router bgp` line (FRR's and EOS's alike), as written."""
    m = re.search(r"^router bgp ([0-9]+)", config_text, re.M)
    return m.group(1) if m else None


# --- waves ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Target:
    device: str
    rail: str  # "0", "0-3" for a switch of several rails, "" unknown
    tier: int


def waves(targets: list[Target], max_per_group: int = 1, canary: bool = True) -> list[list[Target]]:
    """The order of a rollout: a canary wave of one switch (the first by tier, rail, name),
    then waves where at most `max_per_group` switches of one (rail, tier) change at once.
    Lower tiers first: a new leaf's uplinks are cabled before its spines learn of it."""
    order = sorted(targets, key=lambda t: (t.tier, natural(t.rail), natural(t.device)))
    out: list[list[Target]] = []
    if canary and order:
        out.append([order[0]])
        order = order[1:]
    groups: dict[tuple[str, int], list[Target]] = {}
    for t in order:
        groups.setdefault((t.rail, t.tier), []).append(t)
    for tier in sorted({t.tier for t in order}):
        todo = [g for k, g in sorted(groups.items(), key=lambda kv: (natural(kv[0][0]),)) if k[1] == tier]
        i = 0
        while any(i < len(g) for g in todo):
            out.append([t for g in todo for t in g[i:i + max_per_group]])
            i += max_per_group
    return out


def target_of(name: str, node: Node | None) -> Target:
    """A switch's rail and tier from its node of fabric.json (or its name when it has none)."""
    if node is not None:
        rails = node.rails
        rail = str(rails[0]) if len(rails) == 1 else (f"{rails[0]}-{rails[-1]}" if rails else "")
        return Target(name, rail, node.tier or 0)
    m = re.match(r"rail(\d+)-", name)
    tier = 3 if "core" in name else 2 if "spine" in name else 1
    return Target(name, m.group(1) if m else "", tier)


VERIFY_CHECKS = ("BGP sessions established, as many as before", "prefixes received per session at least as before",
                 "cabled interfaces up", "BFD peers up (where BFD runs)")
