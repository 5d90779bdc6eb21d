"""The clab ``exec`` lines of Linux nodes (GPUs, HB domains): each form one typed item.

This module is the one definition of that grammar. The compiler renders items
with ``str(item)`` (fabric/outputs/clab.py); the OUTDIR reader allows a line
only when :func:`parse` turns it back into an item and its sysctl is on the
allow-list (fabric/outdir/reader.py); the netns runtime translates the parsed
items into its plan (emulation/runtime/netns/lab_plan.py) and never runs a
shell. A line of any other shape is refused everywhere alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Union

IF = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,14}"  # a Linux device name
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
V4 = rf"(?:{_OCTET}\.){{3}}{_OCTET}"  # a valid IPv4 address, by regex: this runs per exec line
CIDR = V4 + r"/(?:3[0-2]|[12]?\d)"


class ExecLineError(ValueError):
    """A line that is not one of the forms below (or a sysctl off the allow-list)."""


@dataclass(frozen=True)
class LinkMtu:
    dev: str
    mtu: int
    FORM: ClassVar[str] = "ip link set dev IF mtu N"
    PATTERN: ClassVar[re.Pattern] = re.compile(rf"ip link set dev (?P<dev>{IF}) mtu (?P<mtu>\d{{3,5}})")

    def __str__(self) -> str:
        return f"ip link set dev {self.dev} mtu {self.mtu}"


@dataclass(frozen=True)
class LinkUp:
    dev: str
    FORM: ClassVar[str] = "ip link set dev IF up"
    PATTERN: ClassVar[re.Pattern] = re.compile(rf"ip link set dev (?P<dev>{IF}) up")

    def __str__(self) -> str:
        return f"ip link set dev {self.dev} up"


@dataclass(frozen=True)
class LinkMaster:
    dev: str
    bridge: str
    FORM: ClassVar[str] = "ip link set dev IF master BRIDGE"
    PATTERN: ClassVar[re.Pattern] = re.compile(rf"ip link set dev (?P<dev>{IF}) master (?P<bridge>{IF})")

    def __str__(self) -> str:
        return f"ip link set dev {self.dev} master {self.bridge}"


@dataclass(frozen=True)
class BridgeAdd:
    name: str
    FORM: ClassVar[str] = "ip link add name BRIDGE type bridge"
    PATTERN: ClassVar[re.Pattern] = re.compile(rf"ip link add name (?P<name>{IF}) type bridge")

    def __str__(self) -> str:
        return f"ip link add name {self.name} type bridge"


@dataclass(frozen=True)
class AddrAdd:
    cidr: str
    dev: str
    FORM: ClassVar[str] = "ip addr add CIDR dev IF"
    PATTERN: ClassVar[re.Pattern] = re.compile(rf"ip addr add (?P<cidr>{CIDR}) dev (?P<dev>{IF})")

    def __str__(self) -> str:
        return f"ip addr add {self.cidr} dev {self.dev}"


@dataclass(frozen=True)
class RouteAdd:
    dst: str
    via: str
    dev: str
    src: str | None = None
    FORM: ClassVar[str] = "ip route add CIDR via IP dev IF [src IP]"
    PATTERN: ClassVar[re.Pattern] = re.compile(
        rf"ip route add (?P<dst>{CIDR}) via (?P<via>{V4}) dev (?P<dev>{IF})( src (?P<src>{V4}))?")

    def __str__(self) -> str:
        return f"ip route add {self.dst} via {self.via} dev {self.dev}" + (f" src {self.src}" if self.src else "")


@dataclass(frozen=True)
class Sysctl:
    key: str
    value: str
    FORM: ClassVar[str] = "sysctl -w KEY=VALUE"
    PATTERN: ClassVar[re.Pattern] = re.compile(r"sysctl -w (?P<key>[a-z0-9_.-]{1,80})=(?P<value>\d{1,3})")

    def __str__(self) -> str:
        return f"sysctl -w {self.key}={self.value}"


ExecItem = Union[LinkMtu, LinkUp, LinkMaster, BridgeAdd, AddrAdd, RouteAdd, Sysctl]
FORMS: tuple[type, ...] = (LinkMtu, LinkUp, LinkMaster, BridgeAdd, AddrAdd, RouteAdd, Sysctl)
_INT_FIELDS = {"mtu"}

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


def parse(line: str) -> ExecItem:
    """The item of one exec line, exactly as the compiler renders it; ExecLineError otherwise."""
    for form in FORMS:
        m = form.PATTERN.fullmatch(line)
        if m:
            kw = {k: (int(v) if k in _INT_FIELDS else v) for k, v in m.groupdict().items() if v is not None}
            item = form(**kw)
            if isinstance(item, Sysctl) and not sysctl_allowed(item.key, item.value):
                raise ExecLineError(f"sysctl {item.key}={item.value} is not on the allow-list ({SYSCTL_ALLOWED_TEXT})")
            return item
    raise ExecLineError("not a command the compiler emits (only ip link/addr/route, a bridge, and allowed "
                        "net.* sysctls, in its exact forms)")
