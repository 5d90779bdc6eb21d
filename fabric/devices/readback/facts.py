"""What a generated config says, vendor-neutral: the facts the cross-check compares.

The one parser per vendor (sonic.parse_config_db, eos.parse_startup_config) fills
:class:`DeviceFacts` as it walks the files (config.SwitchConfig.facts); nothing here
trusts the generator's own data, so a hand-edited file is judged exactly like a generated one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter

from ...safe_text import whole


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

    def __reduce__(self):  # validate's workers send 300k of these: positional, 5x faster to unpickle
        return PortFacts, _port_fields(self)


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
    hwsku: str | None = None  # SONiC DEVICE_METADATA hwsku (its published pg_profile_lookup.ini lengths)

    def __reduce__(self):
        return DeviceFacts, _device_fields(self)


_port_fields = attrgetter(*(f.name for f in fields(PortFacts)))
_device_fields = attrgetter(*(f.name for f in fields(DeviceFacts)))


def to_int(s) -> int | None:
    """An int as it is, or the whole number a text writes in ASCII digits (see whole); else None."""
    if type(s) is int:
        return s
    return whole(s) if isinstance(s, str) else None
