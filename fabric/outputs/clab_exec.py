"""The clab ``exec`` lines of Linux nodes (GPUs, HB domains): one table, one row per form.

This module is the one definition of that grammar. Each form is a single row at
the foot of this module (gathered in :data:`FORMS`): its line with typed fields
(``{dev:IF}``; a ``[...]`` part is optional). Everything else derives from that
row: the frozen dataclass the compiler builds and renders with ``str(item)``
(fabric/outputs/clab.py), the regex :func:`parse` matches, and the allow-list:
the OUTDIR reader allows a line only when :func:`parse` turns it back into an
item and the form's own check passes (the sysctl allow-list;
fabric/outdir/reader.py). The netns runtime translates the parsed items into
its plan (emulation/runtime/netns/lab_plan.py) and never runs a shell. A line
of any other shape is refused everywhere alike.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Callable, ClassVar

from ..safe_text import IPV4, IPV4_CIDR

IF = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,14}"  # a Linux device name
# ASCII digits only: Python's \d also takes other scripts' digits, which `ip` refuses.
V4, CIDR = IPV4, IPV4_CIDR  # a valid IPv4 address (with its prefix length), by regex: this runs per exec line

# The kinds a field may have: the text it must match in full, and the Python type it parses to.
KINDS: dict[str, tuple[str, type]] = {
    "IF": (IF, str),
    "MTU": (r"[0-9]{3,5}", int),
    "IP": (V4, str),
    "CIDR": (CIDR, str),
    "KEY": (r"[a-z0-9_.-]{1,80}", str),  # a sysctl key
    "SMALL": (r"[0-9]{1,3}", str),  # a sysctl value
}
_FIELD = re.compile(r"\{([a-z]+):([A-Z]+)\}")
_OPTIONAL = re.compile(r"\[([^\[\]]*)\]")
FORMS: list[type[ExecItem]] = []  # every form, in the order parse tries them (filled by _form below)


class ExecLineError(ValueError):
    """A line that is not one of the forms below (or a sysctl off the allow-list)."""


class ExecItem:
    """One exec line of a known form; ``str()`` is the line exactly as the compiler writes it.
    The subclasses (one per row of FORMS) are frozen dataclasses made by :func:`_form`."""

    FORM: ClassVar[str]  # the line with each field as its kind: "ip link set dev IF mtu MTU"
    PATTERN: ClassVar[re.Pattern]
    # The line in parts: (optional, a str.format template with {name} fields, field names), in order.
    _PARTS: ClassVar[tuple[tuple[bool, str, tuple[str, ...]], ...]]
    _TYPES: ClassVar[dict[str, type]]  # each field's Python type, which its matched text parses to
    _CHECK: ClassVar[Callable[[ExecItem], str | None] | None]  # an allow-list beyond the shape

    def __str__(self) -> str:
        values = self.__dict__
        return "".join(template.format_map(values) for optional, template, names in self._PARTS
                       if not optional or all(values[n] is not None for n in names))


def _form(name: str, line: str, check: Callable[[ExecItem], str | None] | None = None) -> type[ExecItem]:
    """The item class of one form: fields in the order they appear, optional ones default to None."""
    texts = _OPTIONAL.split(line)  # required, optional, required, ... alternating
    fields, types, regex, parts = [], {}, "", []
    for optional, text in ((i % 2 == 1, t) for i, t in enumerate(texts) if t):
        parts.append((optional, _FIELD.sub(r"{\1}", text), tuple(m[1] for m in _FIELD.finditer(text))))
        piece, at = "", 0
        for m in _FIELD.finditer(text):
            field_name, kind = m[1], m[2]
            pattern, typ = KINDS[kind]
            types[field_name] = typ
            piece += re.escape(text[at:m.start()]) + f"(?P<{field_name}>{pattern})"
            at = m.end()
            fields.append((field_name, typ | None, dataclasses.field(default=None)) if optional else (field_name, typ))
        piece += re.escape(text[at:])
        regex += f"(?:{piece})?" if optional else piece
    cls = dataclasses.make_dataclass(name, fields, bases=(ExecItem,), frozen=True, namespace={
        "FORM": _FIELD.sub(r"\2", line), "PATTERN": re.compile(regex), "_PARTS": tuple(parts), "_TYPES": types,
        "_CHECK": staticmethod(check) if check else None, "__module__": __name__})
    FORMS.append(cls)
    return cls


# Per-namespace sysctls an exec line may set: key pattern -> allowed values. Only
# net.* keys, which the kernel scopes to the network namespace; nothing host-global
# (kernel.*, vm.*, fs.*) can ever be written from an OUTDIR.
SYSCTL_ALLOWED: tuple[tuple[re.Pattern, frozenset[str]], ...] = (
    (re.compile(r"net\.ipv4\.ip_forward"), frozenset({"0", "1"})),
    (re.compile(r"net\.ipv4\.conf\.(all|default|[A-Za-z0-9][A-Za-z0-9_-]{0,14})\.rp_filter"), frozenset({"0", "1", "2"})),
    (re.compile(r"net\.ipv4\.conf\.(all|default|[A-Za-z0-9][A-Za-z0-9_-]{0,14})\.forwarding"), frozenset({"0", "1"})),
    (re.compile(r"net\.ipv6\.conf\.(all|default|[A-Za-z0-9][A-Za-z0-9_-]{0,14})\.disable_ipv6"), frozenset({"0", "1"})),
    (re.compile(r"net\.ipv4\.fib_multipath_hash_policy"), frozenset({"0", "1", "2"})),
)
SYSCTL_ALLOWED_TEXT = ("net.ipv4.ip_forward, net.ipv4.conf.<if>.rp_filter, net.ipv4.conf.<if>.forwarding, "
                       "net.ipv6.conf.<if>.disable_ipv6, net.ipv4.fib_multipath_hash_policy, small numbers only")


def sysctl_allowed(key: str, value: str) -> bool:
    return any(p.fullmatch(key) and value in values for p, values in SYSCTL_ALLOWED)


def _sysctl_refusal(item) -> str | None:
    if sysctl_allowed(item.key, item.value):
        return None
    return f"sysctl {item.key}={item.value} is not on the allow-list ({SYSCTL_ALLOWED_TEXT})"


# The grammar: every exec line the compiler emits is one of these, and nothing else is accepted.
LinkMtu = _form("LinkMtu", "ip link set dev {dev:IF} mtu {mtu:MTU}")
LinkUp = _form("LinkUp", "ip link set dev {dev:IF} up")
LinkMaster = _form("LinkMaster", "ip link set dev {dev:IF} master {bridge:IF}")
BridgeAdd = _form("BridgeAdd", "ip link add name {name:IF} type bridge")
AddrAdd = _form("AddrAdd", "ip addr add {cidr:CIDR} dev {dev:IF}")
RouteAdd = _form("RouteAdd", "ip route add {dst:CIDR} via {via:IP} dev {dev:IF}[ src {src:IP}]")
Sysctl = _form("Sysctl", "sysctl -w {key:KEY}={value:SMALL}", check=_sysctl_refusal)


def parse(line: str) -> ExecItem:
    """The item of one exec line, exactly as the compiler renders it; ExecLineError otherwise."""
    for form in FORMS:
        m = form.PATTERN.fullmatch(line)
        if m:
            item = form(**{k: form._TYPES[k](v) for k, v in m.groupdict().items() if v is not None})
            refusal = form._CHECK(item) if form._CHECK else None
            if refusal:
                raise ExecLineError(refusal)
            return item
    raise ExecLineError("not a command the compiler emits (only ip link/addr/route, a bridge, and allowed "
                        "net.* sysctls, in its exact forms)")
