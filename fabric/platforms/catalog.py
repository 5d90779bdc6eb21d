"""The platform catalog: switch models as data, one YAML file per platform.

The shipped files (fabric/platforms/data/switches/*.yaml) and a user's own (design key
``switch.platform_files``) are read by the same bounded loader and checked by
the same schema and consistency rules, so a shipped file is held to what a
hostile one is. A platform gives its cages (count, form, lanes, lane rate),
the breakouts it supports and, per breakout, the SONiC hwsku with its PORT
table exactly as the platform's published port map has it, the EOS speed
form, and the optic one cage takes for each reach (docs/platforms.md).

Fabric port ``i`` of a switch (0-based, the graph's port index) is subport
``i % N`` of cage ``i // N`` for a breakout of N ports per cage: the
graph's port names, and so every file that names a port, come from here.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from ..input.limits import MAX_POWER_W, MAX_PRICE_USD
from ..input.problems import InputError, Problem
from ..input.schema import Field, check
from ..input.shipped import shipped_name
from ..input.yamlsource import Source, load_yaml_file, parse_yaml
from .eos_speeds import accepted_forms

SHIPPED_DIR = "switches"  # fabric/platforms/data/switches/*.yaml: the catalog that ships
GENERIC = "generic"  # no catalog platform: today's radix-only switch
MODEL_PATTERN = r"[a-z0-9][a-z0-9._-]{0,39}"
# The forms below take ASCII digits only: Python's \d also takes other scripts' digits.
BREAKOUT_RE = re.compile(r"^([1-8])x(\d{2,3})G$", re.ASCII)
MEDIA = ("SR", "DR", "FR", "AOC", "DAC")  # reach codes a cage optic is listed for
_ROW_FIELDS = {
    "name": re.compile(r"^Ethernet\d{1,4}$", re.ASCII),
    "lanes": re.compile(r"^\d{1,4}(,\d{1,4}){0,15}$", re.ASCII),
    "alias": re.compile(r"^[A-Za-z0-9][A-Za-z0-9/._-]{0,31}$"),
    "index": re.compile(r"^\d{1,3}$", re.ASCII),
    "speed": re.compile(r"^\d{4,7}$", re.ASCII),
    "fec": re.compile(r"^(rs|fc|none)$"),
}
_MAX_ROW_PROBLEMS = 20  # a hostile table must not print a line per row
_TEXT = Field("str", pattern=r"[^\x00-\x1f]{1,200}", pattern_text="one line of at most 200 characters", hint="plain text")
_LINE = Field("str", pattern=r"[^\x00-\x1f]{1,400}", pattern_text="one line of at most 400 characters")
_SOURCE = Field("section", hint="where a fact comes from: {repo, commit, path[, derived, how]} or {what, url} or {what, where}",
                fields={"repo": _LINE, "commit": Field("str", pattern=r"[0-9a-f]{7,40}", pattern_text="a git commit"),
                        "path": _LINE, "derived": Field("bool", default=False, hint="true: computed from the source, see how"),
                        "how": _LINE, "what": _LINE, "url": _LINE, "where": _LINE})

BUFFER_TOPOLOGIES = ("t0", "t1")  # the buffers_defaults_<topology>.j2 files railonly reads (docs/qos.md)
_BUFFER_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$", re.ASCII)
_BUFFER_VALUE = Field("str", pattern=r"[A-Za-z0-9_.,|\[\]-]{1,80}", pattern_text="a ConfigDB buffer field value")
_BUFFER_ENTRIES = Field("map", item=Field("map", item=_BUFFER_VALUE))  # name -> {field: value}
BUFFER_MODELS = ("traditional", "dynamic")  # DEVICE_METADATA buffer_model the hwsku runs under `config reload`
# A per-port buffer key as the hwsku's templates write it, the port as "*": "*" or "*|3-4"
_PORT_KEY = re.compile(r"^\*(\|[0-7](-[0-7])?)?$", re.ASCII)
# The per-port tables a hwsku's buffers_defaults_objects.j2 may write (docs/qos.md)
PORT_BUFFER_TABLES = ("BUFFER_PG", "BUFFER_QUEUE", "BUFFER_PORT_INGRESS_PROFILE_LIST", "BUFFER_PORT_EGRESS_PROFILE_LIST")
# DEVICE_METADATA|localhost fields an hwsku's files make the image set, with their one value
# (swss's start script, sonic-buildimage files/build_templates/docker_image_ctl.j2)
METADATA_BUFFER_FIELDS = {"create_only_config_db_buffers": "true"}
# The once-per-switch tables buffers_config.j2 writes in the dynamic model
GLOBAL_BUFFER_TABLES = ("DEFAULT_LOSSLESS_BUFFER_PARAMETER", "LOSSLESS_TRAFFIC_PATTERN")

FIELDS: dict[str, Field] = {
    "model": Field("str", required=True, pattern=MODEL_PATTERN,
                   pattern_text="lowercase letters, digits, '.', '_' and '-', at most 40 characters",
                   hint="the name a design's switch.model gives, e.g. acme-51t"),
    "vendor": Field("str", required=True, pattern=r"[^\x00-\x1f]{1,40}", pattern_text="at most 40 characters", hint="e.g. NVIDIA"),
    "name": _TEXT,
    "description": _TEXT,
    "os": Field("list", required=True, item=Field("choice", choices=("sonic", "eos")),
                hint="network OSes the platform runs, the default first, e.g. [sonic] or [eos, sonic]"),
    "cages": Field("section", required=True, hint="{count, form, lanes, lane_gbps}", fields={
        "count": Field("int", required=True, min=1, max=256, hint="front-panel cages for fabric ports, e.g. 64"),
        "form": Field("str", required=True, pattern=r"[A-Za-z0-9-]{1,16}", pattern_text="a form factor such as OSFP or QSFP-DD", hint="e.g. OSFP"),
        "lanes": Field("int", required=True, min=1, max=16, hint="electrical lanes per cage, e.g. 8"),
        "lane_gbps": Field("int", required=True, min=10, max=200, hint="Gbit/s per lane, e.g. 100"),
    }),
    "management_port": Field("map", required=True, hint="management port per OS, e.g. {sonic: eth0, eos: Management1}",
                             item=Field("str", pattern=r"[A-Za-z][A-Za-z0-9/]{0,15}", pattern_text="an interface name", hint="e.g. eth0")),
    "price_usd": Field("number", required=True, min=0, max=MAX_PRICE_USD,
                       hint="default unit price without optics, US dollars (0 to 10,000,000)"),
    "power_w": Field("number", required=True, min=0, max=MAX_POWER_W, hint="unit power without optics, watts (0 to 100,000)"),
    "sonic": Field("section", fields={
        "platform": Field("str", pattern=r"[A-Za-z0-9_.-]{1,64}", pattern_text="a SONiC platform string such as x86_64-nvidia_sn5600-r0",
                          hint="DEVICE_METADATA platform"),
        "buffers": Field("map", hint="hwsku -> {model, pg_profile_lookup, t0, t1[, ports, globals, metadata]}: what its published buffer templates render", item=Field("section", fields={
            "model": Field("choice", choices=BUFFER_MODELS, default="traditional",
                           hint="the buffer model the hwsku runs after `config reload` (traditional: buffermgrd and pg_profile_lookup.ini; dynamic: buffermgrdyn)"),
            "model_source": _SOURCE,
            "pg_profile_lookup": Field("section", optional=True, hint="{source, rows}: the hwsku's pg_profile_lookup.ini (the traditional model reads it)", fields={
                "source": _SOURCE,
                "rows": Field("list", required=True, item=Field("str", pattern=r"\d{4,7} \d{1,6}m( \d{1,10}){4,5}", pattern_text="speed cable size xon xoff threshold[ xon_offset]"),
                              hint="pg_profile_lookup.ini rows, one space between columns"),
            }),
            **{topo: Field("section", required=True, hint="{source, pools, profiles, port_buffers[, zero_pools, zero_profiles]}: buffers_defaults_" + topo + ".j2", fields={
                "source": _SOURCE,
                "pools": Field("map", required=True, hint="BUFFER_POOL entries as rendered", item=Field("map", item=_BUFFER_VALUE)),
                "profiles": Field("map", required=True, hint="BUFFER_PROFILE entries as rendered", item=Field("map", item=_BUFFER_VALUE)),
                "zero_pools": Field("map", hint="BUFFER_POOL entries rendered only when some port is inactive (not in DEVICE_NEIGHBOR)", item=Field("map", item=_BUFFER_VALUE)),
                "zero_profiles": Field("map", hint="BUFFER_PROFILE entries rendered only when some port is inactive", item=Field("map", item=_BUFFER_VALUE)),
                "port_buffers": Field("bool", required=True, hint="true: per-port BUFFER_PG/BUFFER_QUEUE rows are rendered (`ports`, else buffers_config.j2's defaults); false: the template renders them empty"),
            }) for topo in BUFFER_TOPOLOGIES},
            "ports": Field("section", optional=True, hint="{source, active, inactive}: the per-port rows buffers_defaults_objects.j2 writes, table -> key ('*' the port) -> fields", fields={
                "source": _SOURCE,
                "active": Field("map", required=True, hint="rows of each port in DEVICE_NEIGHBOR", item=_BUFFER_ENTRIES),
                "inactive": Field("map", required=True, hint="rows of each other port of PORT", item=_BUFFER_ENTRIES),
            }),
            "globals": Field("section", optional=True, hint="{source, tables}: once-per-switch tables the template writes", fields={
                "source": _SOURCE,
                "tables": Field("map", required=True, hint="table -> key -> fields", item=_BUFFER_ENTRIES),
            }),
            "metadata": Field("section", optional=True, hint="{source, fields}: DEVICE_METADATA|localhost fields the image sets for the hwsku", fields={
                "source": _SOURCE,
                "fields": Field("map", required=True, item=_BUFFER_VALUE),
            }),
        })),
    }),
    "sources": Field("list", required=True, item=_SOURCE, hint="where the file's facts come from"),
    "breakouts": Field("map", required=True, hint="breakout name (e.g. 2x400G) -> {eos_speed, cage_optics, sonic}",
                       item=Field("section", fields={
                           "eos_speed": Field("str", required=True, pattern=r"\d{2,3}g-\d{1,2}", pattern_text="an EOS speed form such as 400g-4",
                                              hint="EOS `speed` of one broken-out port: <Gbit/s>g-<lanes>"),
                           "cage_optics": Field("map", required=True, hint=f"reach code ({', '.join(MEDIA)}) -> the transceiver or cable one cage takes",
                                                item=Field("str", pattern=r"[A-Za-z0-9.+-]{1,40}", pattern_text="a price book transceiver name")),
                           "port_optics": Field("map", required=True, hint="reach code (SR, DR, FR) -> the optic one broken-out port meets at the far end (a NIC's)",
                                                item=Field("str", pattern=r"[A-Za-z0-9.+-]{1,40}", pattern_text="a price book transceiver name")),
                           "sonic": Field("section", fields={
                               "hwsku": Field("str", required=True, pattern=r"[A-Za-z0-9_.+-]{1,64}", pattern_text="a SONiC hwsku name",
                                              hint="DEVICE_METADATA hwsku"),
                               "breakout_mode": Field("str", pattern=r"[0-9A-Za-z\[\](),+]{1,80}", pattern_text="a SONiC breakout mode such as 2x400G",
                                                      hint="BREAKOUT_CFG brkout_mode of every cage (as platform.json names it)"),
                               "source": _SOURCE,
                               "columns": Field("list", required=True, item=Field("choice", choices=tuple(_ROW_FIELDS)),
                                                hint="the port_config.ini columns of the rows: name, lanes, alias, index[, speed][, fec]"),
                               "speed": Field("int", min=1000, max=1_600_000, hint="speed in Mbit/s for rows without a speed column"),
                               "ports": Field("list", required=True, item=Field("str", pattern=r"[ -~]{1,200}", pattern_text="one port_config.ini row"),
                                              hint="PORT rows as the published port_config.ini lists them"),
                           }),
                       })),
}


@dataclass(frozen=True)
class PortRow:
    name: str
    lanes: str
    alias: str
    index: int  # the cage (front-panel port) number, from 1
    speed: str
    fec: str | None  # None: the published map gives none


@dataclass(frozen=True)
class Breakout:
    name: str  # "2x400G"
    ports_per_cage: int
    gbps: int
    lanes_per_port: int
    eos_speed: str
    cage_optics: dict[str, str]  # reach code -> what one cage takes (price book item)
    port_optics: dict[str, str]  # reach code -> the optic one port meets at the far end (a NIC's)
    hwsku: str | None = None
    breakout_mode: str | None = None
    source: dict = field(default_factory=dict)
    rows: tuple[PortRow, ...] = ()  # the whole PORT table, published order
    sonic_names: tuple[str, ...] = ()  # fabric port index -> PORT name


@dataclass(frozen=True)
class PgProfile:
    """One pg_profile_lookup.ini row: the lossless PG profile buffermgrd creates for a
    port of `speed` (Mbit/s) with CABLE_LENGTH `cable` (traditional buffer model)."""
    speed: str
    cable: str
    size: str
    xon: str
    xoff: str
    threshold: str
    xon_offset: str = ""  # a six-column file (NVIDIA's) has none


@dataclass(frozen=True)
class TopologyBuffers:
    """What one buffers_defaults_<topology>.j2 of an hwsku renders (as published)."""
    source: dict
    pools: dict[str, dict[str, str]]
    profiles: dict[str, dict[str, str]]
    port_buffers: bool
    zero_pools: dict[str, dict[str, str]] = field(default_factory=dict)  # only when some port is inactive
    zero_profiles: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class HwskuBuffers:
    pg_profile_source: dict
    pg_profiles: tuple[PgProfile, ...]
    topologies: dict[str, TopologyBuffers]  # "t0"/"t1" -> what that file renders
    model: str = "traditional"  # BUFFER_MODELS
    # table -> "*"-keyed rows (buffers_defaults_objects.j2); None: buffers_config.j2's defaults
    active_rows: dict[str, dict[str, dict[str, str]]] | None = None
    inactive_rows: dict[str, dict[str, dict[str, str]]] | None = None
    globals: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)  # DEVICE_METADATA|localhost additions


@dataclass(frozen=True)
class Platform:
    model: str
    vendor: str
    name: str
    description: str
    os: tuple[str, ...]
    cages: int
    form: str
    lanes: int
    lane_gbps: int
    management_port: dict[str, str]
    price_usd: float
    power_w: float
    sonic_platform: str | None
    sources: tuple[dict, ...]
    breakouts: dict[str, Breakout]
    file: str
    buffers: dict[str, HwskuBuffers] = field(default_factory=dict)  # hwsku -> its published buffer facts

    @property
    def cage_gbps(self) -> int:
        return self.lanes * self.lane_gbps

    def radix(self, breakout: str) -> int:
        return self.cages * self.breakouts[breakout].ports_per_cage

    def port_name(self, breakout: str, os_name: str, index: int) -> str:
        """Fabric port `index` as `os_name` prints it: SONiC's PORT name, EOS's
        Ethernet<cage>/<first lane> (what the breakout CLI names a subport)."""
        b = self.breakouts[breakout]
        if os_name == "sonic":
            return b.sonic_names[index]
        cage, sub = divmod(index, b.ports_per_cage)
        return f"Ethernet{cage + 1}/{sub * b.lanes_per_port + 1}"


def parse_breakout(name: str) -> tuple[int, int] | None:
    """'2x400G' -> (2, 400); None when it is not of that form."""
    m = BREAKOUT_RE.match(name) if isinstance(name, str) else None
    return (int(m.group(1)), int(m.group(2))) if m else None


def _rows(b: dict, path: str, plat: dict, bname: str, n: int, gbps: int, bad, problems: list) -> tuple[tuple[PortRow, ...], tuple[str, ...]]:
    s = b["sonic"]
    cols = s["columns"]
    rpath = f"{path}.sonic.ports"
    for need in ("name", "lanes", "alias", "index"):
        if need not in cols:
            bad(f"{path}.sonic.columns", f"must include {need}", "columns: [name, lanes, alias, index, speed]")
            return (), ()
    if len(set(cols)) != len(cols):
        bad(f"{path}.sonic.columns", "names a column twice", "list each column once")
        return (), ()
    if "speed" not in cols and s.get("speed") is None:
        bad(f"{path}.sonic.speed", "is required when the rows have no speed column", f"speed: {gbps * 1000}")
        return (), ()
    rows, names, alias_seen = [], set(), set()
    cages = plat["cages"]["count"]
    cage_lanes: dict[str, int] = {}
    by_cage: dict[int, list[str]] = {}
    for i, text in enumerate(s["ports"]):
        if len(problems) >= _MAX_ROW_PROBLEMS:
            bad(rpath, f"has more bad rows (stopped after {_MAX_ROW_PROBLEMS})", "fix the rows above first")
            return (), ()
        where = f"{rpath}[{i}]"
        words = text.split()
        if len(words) != len(cols):
            bad(where, f"has {len(words)} columns, the header {len(cols)} ({', '.join(cols)})", "one value per column, separated by spaces")
            continue
        v = dict(zip(cols, words))
        wrong = [c for c, w in v.items() if not _ROW_FIELDS[c].match(w)]
        if wrong:
            bad(where, f"{wrong[0]} {v[wrong[0]]!r} is not a valid value", "see a published port_config.ini for the form")
            continue
        if v["name"] in names or v["alias"] in alias_seen:
            bad(where, f"port {v['name']} (alias {v['alias']}) is listed twice", "list every port once")
            continue
        names.add(v["name"])
        alias_seen.add(v["alias"])
        row = PortRow(v["name"], v["lanes"], v["alias"], int(v["index"]), v.get("speed") or str(s["speed"]), v.get("fec"))
        if 1 <= row.index <= cages:
            # lanes as the platform numbers them (Dell's Z9664F map gives a 400G port 4), one count per breakout
            nl = len(row.lanes.split(","))
            first = cage_lanes.setdefault("n", nl)
            if row.speed != str(gbps * 1000) or nl != first:
                bad(where, f"cage {row.index} port {row.name} runs {nl} lanes at {row.speed} Mbit/s, not {bname}'s "
                           f"{first} lanes at {gbps * 1000}", "give the rows of this breakout's port map")
                continue
            by_cage.setdefault(row.index, []).append(row.name)
        rows.append(row)
    names_out = []
    for cage in range(1, cages + 1):
        got = by_cage.get(cage, [])
        if len(got) != n:
            bad(rpath, f"cage {cage} has {len(got)} ports, {bname} needs {n}", f"list the {n} ports of every cage 1-{cages}")
            return (), ()
        names_out += got
    return tuple(rows), tuple(names_out)


def platform_from_source(src: Source) -> Platform:
    values, problems = check(FIELDS, src, example="a catalog file in fabric/platforms/data/switches/")

    def bad(path: str, msg: str, hint: str) -> None:
        problems.append(Problem(path, msg, hint, src.line(path), src.file))

    if problems:
        raise InputError(problems)
    oses = tuple(values["os"])
    if not oses or len(set(oses)) != len(oses):
        bad("os", "must list each network OS once, at least one", "e.g. os: [sonic]")
    for o in oses:
        if o not in values["management_port"]:
            bad("management_port", f"has no {o} management port", f"add {o}: eth0 (SONiC) or Management1 (EOS)")
    c = values["cages"]
    cage_gbps = c["lanes"] * c["lane_gbps"]
    breakouts = {}
    for bname, b in values["breakouts"].items():
        path = f"breakouts.{bname}"
        nb = parse_breakout(bname)
        if nb is None:
            bad(path, f"{bname!r} is not a breakout name", "name it <ports>x<Gbit/s>G, e.g. 2x400G")
            continue
        n, gbps = nb
        if n * gbps != cage_gbps or c["lanes"] % n:
            bad(path, f"{n} x {gbps}G does not split a {cage_gbps}G cage of {c['lanes']} lanes", "use N x (cage speed / N)G")
            continue
        lpp = c["lanes"] // n
        if b["eos_speed"] not in accepted_forms() or accepted_forms()[b["eos_speed"]] != gbps:
            bad(f"{path}.eos_speed", f"{b['eos_speed']!r} is not an EOS form of {gbps}G", f"e.g. {gbps}g-{lpp}")
        for key in ("cage_optics", "port_optics"):
            for code in b[key]:
                if code not in MEDIA:
                    bad(f"{path}.{key}.{code}", f"unknown reach code {code!r}", f"use {', '.join(MEDIA)}")
        rows, names = (), ()
        s = b.get("sonic") or {}
        if "sonic" in oses:
            if not s:
                bad(f"{path}.sonic", "is required: the platform runs SONiC", "give hwsku, columns and ports")
                continue
            rows, names = _rows(b, path, values, bname, n, gbps, bad, problems)
        breakouts[bname] = Breakout(bname, n, gbps, lpp, b["eos_speed"], dict(b["cage_optics"]), dict(b["port_optics"]), s.get("hwsku"),
                                    s.get("breakout_mode"), dict(s.get("source") or {}), rows, names)
    if not values["breakouts"]:
        bad("breakouts", "lists no breakout", "add one, e.g. 1x800G")
    hwskus = {b.hwsku for b in breakouts.values() if b.hwsku}
    buffers = _buffers((values.get("sonic") or {}).get("buffers") or {}, hwskus, bad)
    if problems:
        raise InputError(problems)
    return Platform(values["model"], values["vendor"], values.get("name") or values["model"], values.get("description") or "",
                    oses, c["count"], c["form"], c["lanes"], c["lane_gbps"], dict(values["management_port"]),
                    values["price_usd"], values["power_w"], (values.get("sonic") or {}).get("platform"),
                    tuple(values["sources"]), breakouts, src.file or "", buffers)


# files/build_templates/buffers_config.j2 (sonic-net/sonic-buildimage, as the catalog's sources): the
# default BUFFER_PG and BUFFER_QUEUE rows of an active port (fabric/devices/sonic_buffers.py renders
# them), and so the profiles a topology must have when they are rendered
PG_DEFAULT = {"0": "ingress_lossy_profile"}
QUEUE_DEFAULT = {"3-4": "egress_lossless_profile", "0-2": "egress_lossy_profile", "5-6": "egress_lossy_profile"}
PORT_BUFFER_PROFILES = tuple(dict.fromkeys([*PG_DEFAULT.values(), *QUEUE_DEFAULT.values()]))


def buffer_ref(value: str) -> str:
    """A buffer reference without the pre-202012 ABNF form: "[BUFFER_POOL|x]" -> "x" (what
    sonic-utilities scripts/db_migrator.py migrate_qos_db_fieldval_reference_remove does)."""
    if value.startswith("[") and value.endswith("]") and "|" in value:
        return value[1:-1].split("|", 1)[1]
    return value


def _buffers(given: dict, hwskus: set[str], bad) -> dict[str, HwskuBuffers]:
    """sonic.buffers checked: each hwsku is one a breakout runs, names are ConfigDB names, every
    profile's pool is a pool of the same file and the PG/QUEUE defaults name profiles it has."""
    out = {}
    for hw, b in given.items():
        path = f"sonic.buffers.{hw}"
        if hw not in hwskus:
            bad(path, f"{hw!r} is not the hwsku of any breakout", f"use one of {', '.join(sorted(hwskus)) or 'the breakouts hwskus'}")
            continue
        model = b.get("model") or "traditional"
        lookup = b.get("pg_profile_lookup")
        if lookup is None and model == "traditional":
            bad(f"{path}.pg_profile_lookup", "is missing: buffermgrd (traditional model) reads it", "add {source, rows}")
        rows = []
        for r in (lookup or {}).get("rows") or []:
            rows.append(PgProfile(*r.split(" ")))
        if len({(r.speed, r.cable) for r in rows}) != len(rows):
            bad(f"{path}.pg_profile_lookup.rows", "lists a speed and cable length twice", "one row per speed and cable length")
        topos = {}
        for topo in BUFFER_TOPOLOGIES:
            t = b[topo]
            tpath = f"{path}.{topo}"
            for what in ("pools", "profiles", "zero_pools", "zero_profiles"):
                for name in t.get(what) or {}:
                    if not _BUFFER_NAME.match(str(name)):
                        bad(f"{tpath}.{what}.{name}", "is not a ConfigDB buffer name", "letters, digits, '_', '.', '-'")
            pools = {**(t.get("zero_pools") or {}), **t["pools"]}
            for what in ("profiles", "zero_profiles"):
                for name, prof in (t.get(what) or {}).items():
                    if buffer_ref(prof.get("pool", "")) not in pools:
                        bad(f"{tpath}.{what}.{name}.pool", f"names no pool of {topo}", f"one of {', '.join(pools) or 'its pools'}")
            if t["port_buffers"] and b.get("ports") is None:
                for name in PORT_BUFFER_PROFILES:
                    if name not in t["profiles"]:
                        bad(f"{tpath}.profiles", f"has no {name}, which buffers_config.j2's BUFFER_PG/BUFFER_QUEUE name",
                            f"add {name} or set port_buffers: false")
            topos[topo] = TopologyBuffers(dict(t.get("source") or {}), {k: dict(v) for k, v in t["pools"].items()},
                                          {k: dict(v) for k, v in t["profiles"].items()}, t["port_buffers"],
                                          {k: dict(v) for k, v in (t.get("zero_pools") or {}).items()},
                                          {k: dict(v) for k, v in (t.get("zero_profiles") or {}).items()})
        active = inactive = None
        if (ports := b.get("ports")) is not None:
            active, inactive = _port_rows(ports, topos, path, bad)
        glob = {}
        for table, entries in ((b.get("globals") or {}).get("tables") or {}).items():
            if table not in GLOBAL_BUFFER_TABLES:
                bad(f"{path}.globals.tables.{table}", "is not a table railonly writes once per switch", f"one of {', '.join(GLOBAL_BUFFER_TABLES)}")
            glob[table] = {k: dict(v) for k, v in entries.items()}
        meta = dict((b.get("metadata") or {}).get("fields") or {})
        for name, value in list(meta.items()):
            if METADATA_BUFFER_FIELDS.get(name) != value:  # never a field railonly decides (hostname, hwsku, ...)
                bad(f"{path}.metadata.fields.{name}", "is not a buffer field the image sets",
                    ", ".join(f"{k}: {v!r}" for k, v in METADATA_BUFFER_FIELDS.items()))
                del meta[name]
        out[hw] = HwskuBuffers(dict((lookup or {}).get("source") or {}), tuple(rows), topos, model, active, inactive, glob, meta)
    return out


def _port_rows(ports: dict, topos: dict[str, TopologyBuffers], path: str, bad) -> tuple[dict, dict]:
    """`ports.active`/`ports.inactive` checked: per-port tables, "*"-keyed, naming profiles
    (a list's comma-separated ones, a PG's may be NULL: the dynamic model sizes it) of every topology."""
    out = []
    for side in ("active", "inactive"):
        rows = {}
        for table, entries in ports[side].items():
            where = f"{path}.ports.{side}.{table}"
            if table not in PORT_BUFFER_TABLES:
                bad(where, "is not a per-port buffer table", f"one of {', '.join(PORT_BUFFER_TABLES)}")
                continue
            for key, fields in entries.items():
                if not _PORT_KEY.match(str(key)) or (("|" in key) == table.endswith("PROFILE_LIST")):
                    bad(f"{where}.{key}", "is not a per-port key of that table", "'*|<pg or queue range>' for BUFFER_PG/QUEUE, '*' for a profile list")
                names = [n for v in fields.values() for n in v.split(",")]
                for topo, t in topos.items():
                    known = {**t.zero_profiles, **t.profiles}
                    for n in names:
                        if n not in known and not (n == "NULL" and table == "BUFFER_PG"):
                            bad(f"{where}.{key}", f"names {n!r}, no profile of {topo}", f"one of {', '.join(known) or 'its profiles'}")
            rows[table] = {k: dict(v) for k, v in entries.items()}
        out.append(rows)
    return out[0], out[1]


def load_platform_file(path: str, within: str | None = None) -> Platform:
    """A user's platform file, read like every input (regular file, bounded YAML), and
    with `within` only when the file opened lies inside that folder."""
    return platform_from_source(load_yaml_file(path, what="a platform YAML file", within=within))


@lru_cache(maxsize=1)
def shipped() -> dict[str, Platform]:
    """The catalog that ships with railonly: model -> Platform."""
    out = {}
    folder = resources.files(f"railonly.fabric.platforms.data.{SHIPPED_DIR}")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            name = shipped_name(f"railonly.fabric.platforms.data.{SHIPPED_DIR}", entry.name)
            p = platform_from_source(parse_yaml(entry.read_text(encoding="utf-8"), name))
            out[p.model] = p
    return out


# -- a design's switch keys -----------------------------------------------------

def _given(src: Source, path: str) -> bool:
    v = src.data
    for part in path.split("."):
        if not isinstance(v, dict) or part not in v:
            return False
        v = v[part]
    return True


@dataclass(frozen=True)
class Resolved:
    """What a design's switch keys come to: the model of each tier and the breakout."""

    breakout: str | None
    by_tier: dict[int, Platform]  # tier -> platform (empty: generic)


def inside_folder(base: str, rel: str) -> "str | None":
    """`rel` joined to the design's folder `base`, or None when it is absolute, climbs out
    by '..', or resolves (through a symbolic link on the way) outside that folder."""
    if os.path.isabs(rel) or ".." in rel.split("/"):
        return None
    path = os.path.join(base, rel)
    folder = os.path.realpath(base or ".")
    return path if os.path.realpath(path).startswith(folder.rstrip("/") + "/") else None


def resolve(values: dict, src: Source) -> tuple[Resolved, list[Problem]]:
    """Check switch.model / model_by_tier / breakout / platform_files against the catalog and
    fill in what follows from them (radix, nic.gbps, platform); `values` is updated in place."""
    problems: list[Problem] = []

    def bad(path: str, msg: str, hint: str) -> None:
        problems.append(Problem(path, msg, hint, src.line(path), src.file))

    sw = values.get("switch")
    none = Resolved(None, {})
    if not isinstance(sw, dict) or "model" not in sw:
        return none, problems
    by_tier_names = dict(sw.get("model_by_tier") or {})
    name = sw["model"]
    if name == GENERIC and not by_tier_names and sw.get("breakout") is None and not sw.get("platform_files"):
        return none, problems  # today's radix-only switch; the catalog is not even read
    catalog = dict(shipped())
    shipped_buffers = {hw: hb for q in catalog.values() for hw, hb in q.buffers.items()}
    base = os.path.dirname(src.file) if src.file else ""
    for i, rel in enumerate(sw.get("platform_files") or ()):
        path = inside_folder(base, rel)
        if path is None:
            # a design comes from a pull request as often as not: it must not make railonly
            # read (and quote back in its errors) a file of the machine that compiles it
            bad(f"switch.platform_files[{i}]", f"{rel!r} is not a file inside the design's folder",
                "give a path relative to the design file that stays inside its folder, without '..' "
                "or a symbolic link out of it (e.g. platforms/my-switch.yaml)")
            continue
        try:
            p = load_platform_file(path, within=os.path.realpath(base or "."))
        except InputError as exc:
            problems += exc.problems
            continue
        if p.model in catalog or p.model == GENERIC:
            bad(f"switch.platform_files[{i}]", f"{path}: model {p.model!r} is already in the catalog",
                "give your platform a model name of its own")
            continue
        # validate reads an OUTDIR, not the design: it knows a shipped hwsku's buffer facts by its
        # name, and would judge yours by them (compile's self-check then failed as a railonly bug)
        clash = sorted(hw for hw, hb in p.buffers.items() if hw in shipped_buffers and hb != shipped_buffers[hw])
        if clash:
            bad(f"switch.platform_files[{i}]", f"{path}: sonic.buffers.{clash[0]} differs from the shipped catalog's "
                f"facts for the hwsku of that name", "give your hwsku a name of its own (its breakouts' hwsku and "
                "its sonic.buffers key), as your switches' image names it")
            continue
        catalog[p.model] = p
    if name == GENERIC and not by_tier_names:
        if sw.get("breakout") is not None:
            bad("switch.breakout", "needs a switch.model from the catalog", f"give switch.model: one of {', '.join(catalog)}")
        return none, problems
    for path, m in [("switch.model", name)] + [(f"switch.model_by_tier.{t}", m) for t, m in sorted(by_tier_names.items())]:
        if m not in catalog:
            bad(path, f"unknown switch model {m!r}", f"use one of {', '.join([GENERIC, *catalog])}, or add yours with switch.platform_files")
    for t in by_tier_names:
        if t not in (1, 2, 3):
            bad(f"switch.model_by_tier.{t}", f"tier must be 1, 2 or 3, got {t}", "tiers: 1 = leaf, 2 = spine, 3 = core")
    if problems:
        return none, problems
    if name == GENERIC:
        bad("switch.model", "must name a catalog platform when switch.model_by_tier does",
            "give switch.model the platform of the tiers not listed in model_by_tier")
        return none, problems
    tiers = {t: catalog[by_tier_names.get(t, name)] for t in (1, 2, 3)}
    main = catalog[name]
    nic = values.get("nic") if isinstance(values.get("nic"), dict) else {}
    breakout = sw.get("breakout")
    if breakout is None:  # the breakout whose port speed is the NIC speed
        want = nic.get("gbps") if _given(src, "nic.gbps") else None
        fits = [b for b, x in catalog[name].breakouts.items() if want is None or x.gbps == want]
        if want is None:
            fits = [b for b, x in catalog[name].breakouts.items() if x.gbps == 400] or list(catalog[name].breakouts)
        if not fits:
            bad("nic.gbps", f"{catalog[name].model} has no breakout to {want}G ports (it has {', '.join(catalog[name].breakouts)})",
                "give switch.breakout, or a nic.gbps one of its breakouts runs")
            return none, problems
        breakout = fits[0]
    for t in sorted({1, 2, 3}):
        p = tiers[t]
        if breakout not in p.breakouts:
            path = f"switch.model_by_tier.{t}" if t in by_tier_names else "switch.breakout" if _given(src, "switch.breakout") else "switch.model"
            bad(path, f"{p.model} does not support breakout {breakout} (it has {', '.join(p.breakouts)})",
                f"use switch.breakout: one of {', '.join(p.breakouts)}")
            return none, problems
    b = main.breakouts[breakout]
    radix = main.radix(breakout)
    for t, p in tiers.items():
        if p.radix(breakout) != radix:
            bad(f"switch.model_by_tier.{t}", f"{p.model} has {p.radix(breakout)} ports at {breakout}, {main.model} {radix}: "
                                            "every tier runs one radix", "pick models with as many cages")
    if _given(src, "nic.gbps") and isinstance(nic.get("gbps"), int) and nic["gbps"] != b.gbps:
        bad("nic.gbps", f"{nic['gbps']} contradicts switch.breakout {breakout} ({b.gbps}G switch ports)",
            f"use nic.gbps: {b.gbps}, or a breakout of {main.model} to {nic['gbps']}G ports "
            f"({', '.join(x for x, y in main.breakouts.items() if y.gbps == nic['gbps']) or 'it has none'})")
    if _given(src, "switch.radix") and isinstance(sw.get("radix"), int) and sw["radix"] != radix:
        bad("switch.radix", f"{sw['radix']} contradicts {main.model} at {breakout} ({main.cages} cages x "
                            f"{b.ports_per_cage} = {radix} ports)", f"leave switch.radix out (it follows from the model), or set it to {radix}")
    platform = sw.get("platform")
    if _given(src, "switch.platform") and platform not in main.os:
        bad("switch.platform", f"{platform} contradicts switch.model {main.model}, which runs {', '.join(main.os)}",
            f"use switch.platform: {main.os[0]}, or leave it out (it follows from the model)")
    elif not _given(src, "switch.platform"):
        platform = sw["platform"] = main.os[0]
    per_tier = dict(sw.get("platform_by_tier") or {})
    for t, p in tiers.items():
        explicit = per_tier.get(t)
        if explicit is not None and explicit not in p.os:
            bad(f"switch.platform_by_tier.{t}", f"{explicit} contradicts tier {t}'s model {p.model}, which runs {', '.join(p.os)}",
                f"use {p.os[0]}, or leave it out")
        elif explicit is None:  # the tier model's own OS, unless switch.platform names one it runs
            own = platform if _given(src, "switch.platform") and platform in p.os else p.os[0]
            if own != platform:
                per_tier[t] = own
    if problems:
        return none, problems
    sw["platform_by_tier"] = dict(sorted(per_tier.items()))
    sw["radix"] = radix
    sw["breakout"] = breakout
    if isinstance(nic, dict):
        nic["gbps"] = b.gbps
    return Resolved(breakout, tiers), problems
