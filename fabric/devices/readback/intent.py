"""What a switch's config files ask of the emulation: a neutral, vendor-free record.

The SONiC and EOS readers (readback.sonic, readback.eos) produce a
:class:`SwitchIntent` from the generated files alone; switch_plan turns it
into netns plan items. Keeping the readers pure lets a config push re-apply
pushed files to a live switch namespace through the same code.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PortIntent:
    name: str  # config port name (Ethernet0, Ethernet1): also the Linux device name
    admin_up: bool
    mtu: int | None = None
    addresses: tuple[str, ...] = ()  # routed port (SONiC INTERFACE, EOS "no switchport" + ip address)


@dataclass(frozen=True)
class VlanIntent:
    """One VLAN: a plain Linux bridge named like the VLAN (no VLAN devices on this kernel)."""

    name: str  # Vlan1000 (at most 15 characters: it becomes a device name)
    vid: int
    members: tuple[str, ...] = ()
    addresses: tuple[str, ...] = ()  # SVI (SONiC VLAN_INTERFACE, EOS interface VlanN)
    mtu: int | None = None
    admin_up: bool = True


@dataclass(frozen=True)
class SwitchIntent:
    hostname: str
    platform: str  # sonic | eos
    ports: tuple[PortIntent, ...] = ()
    vlans: tuple[VlanIntent, ...] = ()
    loopbacks: tuple[str, ...] = ()  # addresses for lo
    routing: bool = False  # forward IP between ports (EOS "ip routing"; SONiC always routes)
    frr_conf: str | None = None  # full FRR config to run, None: no routing daemons
    warnings: tuple[str, ...] = field(default=(), compare=False)  # config the emulation cannot express

    def port(self, name: str) -> PortIntent | None:
        return next((p for p in self.ports if p.name == name), None)


class ConfigReadError(ValueError):
    """A config file the reader cannot understand (a template bug, or a hand edit)."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path


def checked_cidr(text: str, where: str) -> str:
    """`text` if it is an address/prefix, else a ConfigReadError naming `where`."""
    try:
        ipaddress.ip_interface(text)
    except ValueError:
        raise ConfigReadError(where, f"{text!r} is not an address/prefix") from None
    return text
