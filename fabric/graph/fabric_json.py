"""`fabric.json` (schema_version 1, docs/reference/outdir.md): the compiled graph as JSON,
written (:func:`render`) and read back (:func:`parse`) here and nowhere else.

One node or link per line: the file stays diffable and greppable at 100k
links, and json.dumps per item is still the C encoder.

Reading: fabric.json is hostile input (a pull request can edit it; the lab and push
run as root on it). :func:`parse` turns its text into the typed graph of
:mod:`.model` (a :class:`Fabric` whose ``design`` is a :class:`FabricHead`: the design
facts the file carries), checking every field's type and every link end; a bad file
is InputError (exit 2) listing each problem with the file and the field
(``nodes[3].rank``). Callers read the text bounded, without following links: through
``OutdirReader.read_fabric`` (outdir/reader.py) for an OUTDIR on disk. Which names are
safe as namespaces and paths is the reader's allow-list (``check_fabric``), not a type.
render(parse(render(fab))) == render(fab).
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass

from ..design.physical import TIERS, cable_length_m
from ..input.jsonsource import parse_json
from ..outdir_layout import FABRIC_JSON
from ..input.problems import InputError, Problem, short
from ..safe_text import IPV4, IPV4_CIDR
from .model import Endpoint, Fabric, Link, Node, Vlan

SCHEMA_VERSION = 1
FILE = FABRIC_JSON  # its name in an OUTDIR (a lab slice has its own under lab/)
ROLES = ("gpu", "hb", "switch")
LINK_KINDS = ("rail", "fabric", "hb")
MAX_PROBLEMS = 20  # a hostile file can be wrong everywhere: name the first ones
_HINT = "recompile the design (railonly compile writes fabric.json; never edit it)"
_ADDRESS, _INTERFACE = re.compile(IPV4).fullmatch, re.compile(IPV4_CIDR).fullmatch  # the forms railonly writes
_CIDR_FORM = "an IPv4 address with its prefix length (such as 10.0.0.2/29)"


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
    """A link; a cable also carries its id and its length in metres (its own when read back,
    else `lengths`: tier -> metres)."""
    out = {"kind": lk.kind, "rail": lk.rail, "gbps": lk.gbps, "tier": lk.tier, "a": _ep(lk.a), "b": _ep(lk.b)}
    if lk.cable_id:
        out["cable_id"] = lk.cable_id
        if lk.length_m is not None:
            out["length_m"] = lk.length_m
        elif lengths is not None:
            out["length_m"] = lengths[lk.tier]
    return out


_str = json.encoder.encode_basestring_ascii  # what the encoder writes for a str (ensure_ascii)


def _value(x, dumps) -> str:
    """One JSON value as `dumps` writes it: strings, None and finite numbers directly, the
    rest (bools, NaN, anything else) through `dumps` itself."""
    t = type(x)
    if t is str:
        return _str(x)
    if x is None:
        return "null"
    if t is int:
        return int.__repr__(x)
    if t is float and x - x == 0:  # finite
        return float.__repr__(x)
    return dumps(x)


def link_line(lk: Link, lengths: dict[int, int] | None, dumps) -> str:
    """dumps(link_dict(lk, lengths)), written directly: 131,072 links of the 32k design in a
    third of the time (no dicts built; tests/graph/test_fabric_json.py holds them equal)."""
    a, b = lk.a, lk.b
    text = (f'{{"kind": {_value(lk.kind, dumps)}, "rail": {_value(lk.rail, dumps)}, '
            f'"gbps": {_value(lk.gbps, dumps)}, "tier": {_value(lk.tier, dumps)}, '
            f'"a": {{"node": {_value(a.node, dumps)}, "port": {_value(a.port, dumps)}, "ip": {_value(a.ip, dumps)}}}, '
            f'"b": {{"node": {_value(b.node, dumps)}, "port": {_value(b.port, dumps)}, "ip": {_value(b.ip, dumps)}}}')
    if lk.cable_id:
        text += f', "cable_id": {_value(lk.cable_id, dumps)}'
        if lk.length_m is not None:
            text += f', "length_m": {_value(lk.length_m, dumps)}'
        elif lengths is not None:
            text += f', "length_m": {_value(lengths[lk.tier], dumps)}'
    return text + "}"


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
    lengths = {t: cable_length_m(d, t) for t in TIERS} if not isinstance(d, FabricHead) else None
    lines.extend("  " + link_line(lk, lengths, dumps) + ("," if i < len(links) - 1 else "") for i, lk in enumerate(links))
    lines.append(" ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


# --- reading back -----------------------------------------------------------------------


@dataclass(frozen=True)
class HeadManagement:
    """fabric.json's `management`: the lab builds its management network from it."""

    pool: str  # an IPv4 prefix (the lab checks it)
    gateway: str


@dataclass(frozen=True)
class FabricHead:
    """The design facts fabric.json carries: the ``design`` of a Fabric read back, under
    the names :class:`~railonly.fabric.design.design.Design` gives them."""

    name: str
    topology: str
    rail_mode: str
    hb_size: int  # K: GPUs per HB domain (`hb_domain_size`)
    hb_count: int  # HB domains (`hb_domain_count`)
    radix: int
    nic_gbps: float
    hb_gbps: float
    lab_nic_mbps: float | None  # None: a file from before the key (the lab's default applies)
    hb_gpus_per_host: int | None = None  # absent: one host per HB domain
    management: HeadManagement | None = None
    schema_version: object = SCHEMA_VERSION  # as written (validate names a wrong one)
    asn_scheme: str | None = None  # not in fabric.json: invariants apply the group rule of RFC 7938

    @property
    def gpus_per_host(self) -> int:
        return self.hb_gpus_per_host or self.hb_size


class _Check:
    """Typed field reads of one decoded document, every problem collected."""

    def __init__(self, file: str):
        self.file = file
        self.problems: list[Problem] = []

    def bad(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message, _HINT, None, self.file))
        if len(self.problems) >= MAX_PROBLEMS:
            raise InputError(self.problems)

    def get(self, obj: dict, key: str, path: str, kind: str, required: bool = True):
        v = obj.get(key)
        if v is None:
            if required:
                self.bad(f"{path}{key}", f"is missing (needs {_KINDS[kind][1]})")
            return None
        if not _KINDS[kind][0](v):
            self.bad(f"{path}{key}", f"{short(repr(v))} is not {_KINDS[kind][1]}")
            return None
        return v


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_KINDS = {
    "str": (lambda v: isinstance(v, str), "a string"),
    "int": (_is_int, "an integer"),
    "number": (lambda v: _is_int(v) or isinstance(v, float), "a number"),
    "ints": (lambda v: isinstance(v, list) and all(_is_int(x) for x in v), "a list of integers"),
    "list": (lambda v: isinstance(v, list), "a list"),
    "object": (lambda v: isinstance(v, dict), "an object"),
}


def parse(text: str, file: str = FILE) -> Fabric:
    """The typed graph of a fabric.json's text (`file` names it in every problem)."""
    return from_doc(parse_json(text, file), file)


def line_object(line: str) -> dict | None:
    """One line of a fabric.json as `render` writes it, decoded: the head (the first line,
    its object closed here) or a node or link of a list (its comma dropped); None for
    anything else. For comparing two files line by line (validate/since.py)."""
    text = line.rstrip(",")
    try:
        item = json.loads(text + "}" if text.startswith("{") and not text.endswith("}") else text)
    except ValueError:
        return None
    return item if isinstance(item, dict) else None


def decodes(text: "str | bytes") -> None:
    """Raise ValueError when a rendered fabric.json is not JSON: the compile's parse-back of
    what it is about to write (the typed graph is not needed there, so it is not built)."""
    json.loads(text)


def from_doc(doc: object, file: str = FILE) -> Fabric:
    """The typed graph of a decoded fabric.json document (see :func:`parse`)."""
    c = _Check(file)
    if not isinstance(doc, dict):
        raise InputError([Problem("", f"is a JSON {type(doc).__name__}, not a fabric (an object with nodes and links)",
                                  _HINT, None, file)])
    try:
        fab = _fabric(c, doc)
    except InputError:
        raise InputError(c.problems) from None
    if c.problems:
        raise InputError(c.problems)
    return fab


def _fabric(c: _Check, doc: dict) -> Fabric:
    lab = doc.get("lab")  # a file from before lab_nic_mbps said lab: {nic_mbps}
    legacy_mbps = lab.get("nic_mbps") if isinstance(lab, dict) and "lab_nic_mbps" not in doc else None
    mgmt = c.get(doc, "management", "", "object", required=False)
    head = FabricHead(
        name=c.get(doc, "name", "", "str"), topology=c.get(doc, "topology", "", "str"),
        rail_mode=c.get(doc, "rail_mode", "", "str"), hb_size=c.get(doc, "hb_domain_size", "", "int"),
        hb_count=c.get(doc, "hb_domain_count", "", "int"), radix=c.get(doc, "radix", "", "int"),
        nic_gbps=c.get(doc, "nic_gbps", "", "number"), hb_gbps=c.get(doc, "hb_gbps", "", "number"),
        lab_nic_mbps=c.get(doc, "lab_nic_mbps", "", "number", required=False)
        if legacy_mbps is None else c.get(lab, "nic_mbps", "lab.", "number"),
        hb_gpus_per_host=c.get(doc, "gpus_per_host", "", "int", required=False),
        management=None if mgmt is None else HeadManagement(c.get(mgmt, "pool", "management.", "str"),
                                                            c.get(mgmt, "gateway", "management.", "str")),
        schema_version=doc.get("schema_version"),
    )
    fab = Fabric(head, c.get(doc, "tiers", "", "int"))
    for i, n in enumerate(c.get(doc, "nodes", "", "list") or ()):
        node = _gpu_fast(n) or _node(c, n, f"nodes[{i}]")
        if node is None:
            continue
        if node.name in fab.by_name:
            c.bad(f"nodes[{i}].name", f"node {short(node.name)!r} is named twice")
            continue
        fab.by_name[node.name] = node
        {"gpu": fab.gpus, "hb": fab.hbs, "switch": fab.switches}[node.role].append(node)
    for i, lk in enumerate(c.get(doc, "links", "", "list") or ()):
        link = _link_fast(lk, fab.by_name) or _link(c, lk, f"links[{i}]", fab.by_name)
        if link is not None:
            fab.links.append(link)
    _judge_values(c, fab)
    return fab


def _judge_values(c: _Check, fab: Fabric) -> None:
    """The values a design could never have compiled to, by the design's own bounds: the types
    alone let `hb_domain_size: -3`, `topology: bogus` or a switch on rail 99 through to the lab
    and push. Every node and link is judged (plain int tests: ~0.03 s at 32k GPUs)."""
    from ..design.design import FIELDS, PLATFORMS

    d = fab.design
    if d.schema_version != SCHEMA_VERSION:
        c.bad("schema_version", f"{short(repr(d.schema_version))} is not {SCHEMA_VERSION}, the version this railonly reads")
    hb, sw, lab = FIELDS["hb_domain"].fields, FIELDS["switch"].fields, FIELDS["lab"].fields
    for key, value, field in (("topology", d.topology, FIELDS["topology"]), ("rail_mode", d.rail_mode, FIELDS["rail"].fields["mode"])):
        if value is not None and value not in field.choices:
            c.bad(key, f"{short(repr(value))} is not one of {', '.join(field.choices)}")
    for key, value, field in (("hb_domain_size", d.hb_size, hb["size"]), ("hb_domain_count", d.hb_count, hb["count"]),
                              ("gpus_per_host", d.hb_gpus_per_host, hb["gpus_per_host"]), ("radix", d.radix, sw["radix"]),
                              ("nic_gbps", d.nic_gbps, FIELDS["nic"].fields["gbps"]), ("hb_gbps", d.hb_gbps, hb["gbps"]),
                              ("lab_nic_mbps", d.lab_nic_mbps, lab["nic_mbps"])):
        if value is not None and not field.min <= value <= field.max:  # NaN too: it compares false with both
            c.bad(key, f"{short(repr(value))} is not from {field.min:,} to {field.max:,}")
    if fab.tiers is not None and not 1 <= fab.tiers <= max(TIERS):
        c.bad("tiers", f"{fab.tiers!r} is not from 1 to {max(TIERS)}")
    pool = _management_pool(c, d.management)
    if c.problems:
        return  # the nodes and links are judged against a sound head
    rails, tiers = range(d.hb_size), range(1, fab.tiers + 1)
    for i, n in enumerate(fab.switches):
        if n.platform not in PLATFORMS or n.tier not in tiers or not all(r in rails for r in n.rails):
            c.bad(f"switches[{i}]", f"switch {short(n.name)!r}: platform {short(repr(n.platform))}, tier {n.tier!r}, "
                  f"rails {short(repr(n.rails))}: needs a platform of {', '.join(PLATFORMS)}, a tier from 1 to "
                  f"{fab.tiers} and rails from 0 to {d.hb_size - 1}")
        _switch_addresses(c, n, pool)
    for n in fab.gpus:
        if n.rail not in rails:
            c.bad(f"nodes[{n.name}].rail", f"GPU {short(n.name)!r} is on rail {n.rail!r}: rails are 0 to {d.hb_size - 1}")
    for i, lk in enumerate(fab.links):
        if (lk.rail is not None and lk.rail not in rails) or not 0 <= lk.tier <= fab.tiers:
            c.bad(f"links[{i}]", f"rail {lk.rail!r}, tier {lk.tier!r}: rails are 0 to {d.hb_size - 1}, tiers 0 to {fab.tiers}")
        # the lab and push put these on interfaces: IPv4 with a prefix length only (~0.06 s at 32k GPUs)
        a, b = lk.a.ip, lk.b.ip
        if (a is not None and not _INTERFACE(a)) or (b is not None and not _INTERFACE(b)):
            for side, ip in (("a", a), ("b", b)):
                if ip is not None and not _INTERFACE(ip):
                    c.bad(f"links[{i}].{side}.ip", f"{short(repr(ip))} is not {_CIDR_FORM}")


def _management_pool(c: _Check, m: HeadManagement | None) -> ipaddress.IPv4Network | None:
    """fabric.json's management pool (None when absent or bad: bad is named), its gateway an
    address in it: the lab builds its management network from both."""
    if m is None or m.pool is None:
        return None
    try:
        pool = ipaddress.IPv4Network(m.pool) if "/" in m.pool and _ADDRESS(m.pool.split("/")[0]) else None
    except ValueError:
        pool = None
    if pool is None:
        c.bad("management.pool", f"{short(repr(m.pool))} is not an IPv4 prefix (such as 192.168.0.0/24)")
    elif m.gateway is not None and not (_ADDRESS(m.gateway) and ipaddress.IPv4Address(m.gateway) in pool):
        c.bad("management.gateway", f"{short(repr(m.gateway))} is not an IPv4 address in the pool {pool}")
    return pool


def _switch_addresses(c: _Check, n: Node, pool: ipaddress.IPv4Network | None) -> None:
    """A switch's loopback, VLAN subnets and gateways in the form railonly writes; its management
    address one of fabric.json's management pool."""
    at = f"nodes[{n.name}]."
    if n.loopback is not None and not _INTERFACE(n.loopback):
        c.bad(at + "loopback", f"{short(repr(n.loopback))} is not {_CIDR_FORM}")
    for j, v in enumerate(n.vlans):
        for key, value in (("subnet", v.subnet), ("gateway", v.gateway)):
            if value is not None and not _INTERFACE(value):
                c.bad(f"{at}vlans[{j}].{key}", f"{short(repr(value))} is not {_CIDR_FORM}")
    if n.mgmt_ip is not None:
        if pool is None:
            c.bad(at + "mgmt_ip", f"{short(repr(n.mgmt_ip))}: a management address needs fabric.json's management pool")
        elif not (_INTERFACE(n.mgmt_ip) and ipaddress.IPv4Address(n.mgmt_ip.split("/")[0]) in pool):
            c.bad(at + "mgmt_ip", f"{short(repr(n.mgmt_ip))} is not {_CIDR_FORM} in the management pool {pool}")


# The fast paths: a node or link of the form the compiler writes, checked with plain type
# tests (a 32k-GPU fabric.json has 170k items); None sends anything else to the careful
# path, which names every problem. type(v) is int excludes bool.


def _gpu_fast(n: object) -> Node | None:
    try:
        if n["role"] != "gpu":
            return None
        name, dom, rank, rail = n["name"], n["hb_domain"], n["rank"], n["rail"]
    except (KeyError, TypeError):
        return None
    if type(name) is not str or type(dom) is not int or type(rank) is not int or type(rail) is not int:
        return None
    return Node(name, "gpu", hb_domain=dom, rank=rank, rail=rail)


def _link_fast(lk: object, nodes: dict[str, Node]) -> Link | None:
    try:
        kind, rail, gbps, tier, a, b = lk["kind"], lk.get("rail"), lk["gbps"], lk["tier"], lk["a"], lk["b"]
        an, ap, aip, bn, bp, bip = a["node"], a["port"], a.get("ip"), b["node"], b["port"], b.get("ip")
        cable, length = lk.get("cable_id"), lk.get("length_m")
    except (KeyError, TypeError, AttributeError):
        return None
    if (kind not in LINK_KINDS or (rail is not None and type(rail) is not int) or type(tier) is not int
            or (type(gbps) is not int and type(gbps) is not float) or type(an) is not str or type(ap) is not str
            or type(bn) is not str or type(bp) is not str or (aip is not None and type(aip) is not str)
            or (bip is not None and type(bip) is not str) or (cable is not None and type(cable) is not str)
            or (length is not None and type(length) is not int and type(length) is not float)):
        return None
    na, nb = nodes.get(an), nodes.get(bn)
    if na is None or nb is None or ap in na.ports or bp in nb.ports or (an == bn and ap == bp):
        return None
    ea, eb = Endpoint(an, ap, aip), Endpoint(bn, bp, bip)
    na.ports[ap] = ea
    nb.ports[bp] = eb
    return Link(kind, rail, gbps, ea, eb, tier, cable, length)


def _node(c: _Check, n: object, at: str) -> Node | None:
    if not isinstance(n, dict):
        c.bad(at, f"{short(repr(n))} is not an object")
        return None
    p = at + "."
    name, role = c.get(n, "name", p, "str"), c.get(n, "role", p, "str")
    if role is not None and role not in ROLES:
        c.bad(p + "role", f"role {short(repr(role))} is not one of {', '.join(ROLES)}")
        return None
    if name is None or role is None:
        return None
    if role == "gpu":
        return Node(name, role, hb_domain=c.get(n, "hb_domain", p, "int"), rank=c.get(n, "rank", p, "int"),
                    rail=c.get(n, "rail", p, "int"))
    if role == "hb":
        return Node(name, role, hb_domain=c.get(n, "hb_domain", p, "int"))
    vlans = []
    for j, v in enumerate(c.get(n, "vlans", p, "list", required=False) or ()):
        q = f"{p}vlans[{j}]"
        if not isinstance(v, dict):
            c.bad(q, f"{short(repr(v))} is not an object")
            continue
        q += "."
        vlans.append(Vlan(c.get(v, "vlan", q, "int"), c.get(v, "rail", q, "int"), c.get(v, "subnet", q, "str"),
                          c.get(v, "gateway", q, "str", required=False)))
    return Node(name, role, tier=c.get(n, "tier", p, "int"), rails=list(c.get(n, "rails", p, "ints", required=False) or ()),
                platform=c.get(n, "platform", p, "str", required=False), asn=c.get(n, "asn", p, "int", required=False),
                loopback=c.get(n, "loopback", p, "str", required=False),
                mgmt_ip=c.get(n, "mgmt_ip", p, "str", required=False), vlans=vlans)


def _link(c: _Check, lk: object, at: str, nodes: dict[str, Node]) -> Link | None:
    if not isinstance(lk, dict):
        c.bad(at, f"{short(repr(lk))} is not an object")
        return None
    p = at + "."
    kind = c.get(lk, "kind", p, "str")
    if kind is not None and kind not in LINK_KINDS:
        c.bad(p + "kind", f"kind {short(repr(kind))} is not one of {', '.join(LINK_KINDS)}")
    ends = []
    for side in ("a", "b"):
        e = c.get(lk, side, p, "object")
        if e is None:
            ends.append(None)
            continue
        q = f"{p}{side}."
        ep = Endpoint(c.get(e, "node", q, "str"), c.get(e, "port", q, "str"), c.get(e, "ip", q, "str", required=False))
        node = nodes.get(ep.node) if ep.node is not None else None
        if ep.node is not None and node is None:
            c.bad(q + "node", f"{short(ep.node)!r} is not a node of this fabric")
        elif node is not None and ep.port is not None:
            if ep.port in node.ports:
                c.bad(q + "port", f"port {short(ep.port)!r} of {short(ep.node)!r} is the end of two links")
            else:
                node.ports[ep.port] = ep
        ends.append(ep)
    link = Link(kind, c.get(lk, "rail", p, "int", required=False), c.get(lk, "gbps", p, "number"), ends[0], ends[1],
                c.get(lk, "tier", p, "int"), c.get(lk, "cable_id", p, "str", required=False),
                c.get(lk, "length_m", p, "number", required=False))
    return link if None not in ends else None
