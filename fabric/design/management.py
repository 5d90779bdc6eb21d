"""The management plane of the switches (design section `management:`, docs/management.md).

Vendor-neutral and pure: the design keys, their checks, and what each switch
gets (its management address). The renderers print it in their own form:
SONiC ConfigDB tables (MGMT_PORT, MGMT_INTERFACE, MGMT_VRF_CONFIG, NTP,
NTP_SERVER, SYSLOG_SERVER, DNS_NAMESERVER), EOS lines (Management1 in a VRF,
`ntp server vrf`, `logging vrf`, `ip name-server vrf`, `username`).

Secrets never travel in clear: a user gives a SHA-512 crypt hash (`$6$...`,
as `openssl passwd -6` or `mkpasswd -m sha-512` print it) or an SSH public
key; a `password` key is refused. Every value that reaches a config line is
checked against a strict form here, so no design value can add a line.
"""

from __future__ import annotations

import base64
import ipaddress
import struct
from dataclasses import dataclass

from ..input.schema import Field

SONIC_MGMT_VRF = "mgmt"  # SONiC's management VRF has this fixed name
EOS_DEFAULT_VRF = "default"  # EOS's built-in VRF (the fabric's): never a management VRF
SONIC_MGMT_PORT = "eth0"
EOS_MGMT_PORT = "Management1"
ROLES = ("network-admin", "network-operator")  # EOS built-in roles; SONiC: admin (sudo) or read-only
USER_NAME = r"[a-z_][a-z0-9_-]{0,31}"
VRF_NAME = r"[A-Za-z][A-Za-z0-9_-]{0,31}"
# SHA-512 crypt: $6$, a salt of up to 16 characters of [./A-Za-z0-9], $, 86 characters
SHA512_CRYPT = r"\$6\$[./A-Za-z0-9]{1,16}\$[./A-Za-z0-9]{86}"
SSH_KEY_TYPES = ("ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521")
SSH_KEY = rf"({'|'.join(SSH_KEY_TYPES)}) [A-Za-z0-9+/]{{16,8192}}={{0,3}}( [A-Za-z0-9@._-]{{1,64}})?"
IPV4 = r"(\d{1,3}\.){3}\d{1,3}"
# How many servers of each kind a switch takes, per platform (more: the switch refuses the
# config). SONiC: max-elements in its YANG models (fabric/validate/data/sonic-yang); EOS: its
# user manual ("Specifying DNS Addresses", arista.com/en/um-eos/eos-managing-the-switch-name).
SERVER_LIMITS: dict[str, dict[str, tuple[int, str]]] = {
    "dns": {"sonic": (3, "sonic-dns.yang: DNS_NAMESERVER_LIST max-elements 3"),
            "eos": (3, "EOS manual: the configuration can list a maximum of three name servers")},
    "ntp": {"sonic": (10, "sonic-ntp.yang: NTP_SERVER_LIST max-elements 10")},
    "tacacs": {"sonic": (8, "sonic-system-tacacs.yang: TACPLUS_SERVER_LIST max-elements 8")},
}

_ADDR_LIST = Field("list", default=[], item=Field("str", pattern=IPV4, pattern_text="an IPv4 address like 192.0.2.10"))

FIELDS: dict[str, Field] = {
    "pool": Field("cidr", required=True, hint="management subnet, one address per switch, e.g. 192.168.100.0/24"),
    "gateway": Field("str", required=True, pattern=IPV4, pattern_text="an IPv4 address inside management.pool",
                     hint="the management network's router, e.g. 192.168.100.1"),
    "vrf": Field("str", default=SONIC_MGMT_VRF, pattern=VRF_NAME, pattern_text="a VRF name (letters, digits, '_', '-')",
                 hint="VRF of the management port, never 'default' (the fabric's own VRF); SONiC's is always 'mgmt'"),
    "ntp": Field("list", default=[], item=_ADDR_LIST.item, hint="NTP servers, reached in the management VRF (at most 10 on SONiC)"),
    "syslog": Field("list", default=[], item=_ADDR_LIST.item, hint="syslog servers (UDP 514), in the management VRF"),
    "dns": Field("list", default=[], item=_ADDR_LIST.item, hint="DNS name servers, in the management VRF (at most 3)"),
    "users": Field("list", default=[], hint="local users: {name, role, sha512} or {name, role, ssh_key}", item=Field(
        "section", fields={
            "name": Field("str", required=True, pattern=USER_NAME, pattern_text="a user name (lowercase, digits, '_', '-')",
                          hint="e.g. name: netops"),
            "role": Field("choice", default="network-operator", choices=ROLES, hint="network-admin or network-operator"),
            "sha512": Field("str", default=None, pattern=SHA512_CRYPT,
                            pattern_text="a SHA-512 crypt hash ($6$salt$ and 86 characters)",
                            hint="make one with: openssl passwd -6"),
            "ssh_key": Field("str", default=None, pattern=SSH_KEY,
                             pattern_text="one SSH public key line (type, base64, optional comment)",
                             hint="e.g. the line of ~/.ssh/id_ed25519.pub"),
            "password": Field("str", default=None, hint="never: give sha512 or ssh_key"),  # declared to refuse it by name
        })),
    "tacacs": Field("list", default=[], item=_ADDR_LIST.item,
                    hint="TACACS+ servers (their shared key is installed on the switch, never written here); local users stay the fallback "
                         "(at most 8 on SONiC)"),
    "gnmi": Field("bool", default=False, hint="true: enable the gNMI server in the management VRF"),
}


@dataclass(frozen=True)
class User:
    name: str
    role: str
    sha512: str | None
    ssh_key: str | None


@dataclass(frozen=True)
class Management:
    pool: ipaddress.IPv4Network
    gateway: str
    vrf: str
    ntp: tuple[str, ...]
    syslog: tuple[str, ...]
    dns: tuple[str, ...]
    users: tuple[User, ...]
    tacacs: tuple[str, ...]
    gnmi: bool

    @property
    def prefixlen(self) -> int:
        return self.pool.prefixlen


def from_values(v: dict | None) -> Management | None:
    if not v:
        return None
    return Management(
        pool=v["pool"], gateway=v["gateway"], vrf=v["vrf"], ntp=tuple(v["ntp"]), syslog=tuple(v["syslog"]),
        dns=tuple(v["dns"]), tacacs=tuple(v["tacacs"]), gnmi=v["gnmi"],
        users=tuple(User(u["name"], u["role"], u["sha512"], u["ssh_key"]) for u in v["users"]),
    )


def problems(v: dict, platforms: set[str], switches: int | None, bad, raw: dict | None = None) -> None:
    """Checks across the section's keys (`bad(path, message, hint)` reports one);
    `switches`: how many need an address (None: unknown yet); `raw`: the section as written
    (a key whose value the schema refused is absent from `v`, not from the file)."""
    pool = v.get("pool")
    for key in ("gateway", "ntp", "syslog", "dns", "tacacs"):
        values = v.get(key)
        for i, a in enumerate([values] if isinstance(values, str) else values or []):
            path = f"management.{key}" + ("" if key == "gateway" else f"[{i}]")
            try:
                ip = ipaddress.IPv4Address(a)
            except ValueError:
                bad(path, f"{a!r} is not an IPv4 address", "write four numbers 0-255, e.g. 192.0.2.10")
                continue
            if ip.is_unspecified or ip.is_loopback or ip.is_multicast or ip.is_reserved:  # 240/4 holds 255.255.255.255
                what = ("unspecified" if ip.is_unspecified else "a loopback address" if ip.is_loopback
                        else "a multicast address" if ip.is_multicast else "reserved (240.0.0.0/4, broadcast included)")
                bad(path, f"{a} is {what}: no host the switch can reach there",
                    "give the unicast address of the host, e.g. 192.0.2.10")
            elif key == "gateway" and isinstance(pool, ipaddress.IPv4Network):
                if ip not in pool:
                    bad(path, f"{a} is outside management.pool ({pool})", "use an address inside the pool, e.g. its first")
                elif pool.prefixlen < 31 and ip in (pool.network_address, pool.broadcast_address):
                    bad(path, f"{a} is the {'network' if ip == pool.network_address else 'broadcast'} address of "
                        f"management.pool ({pool}), not a host", f"use a host address of the pool, e.g. {pool.network_address + 1}")
    for key, limits in SERVER_LIMITS.items():
        given = v.get(key)
        if not isinstance(given, list):
            continue
        for platform in sorted(platforms & set(limits)):
            most, source = limits[platform]
            if len(given) > most:
                bad(f"management.{key}", f"lists {len(given)} servers; {'SONiC' if platform == 'sonic' else 'EOS'} takes "
                    f"at most {most} ({source})", f"keep the {most} nearest servers")
                break
    seen: set[str] = set()
    for i, u in enumerate(v.get("users") or []):
        if not isinstance(u, dict):
            continue
        where = f"management.users[{i}]"
        if u.get("password") is not None:
            bad(f"{where}.password", "a plaintext password is refused: it would sit in every config and every copy of the design",
                "replace it with sha512: <the output of 'openssl passwd -6'>, or ssh_key: <a public key line>")
        written = (raw or {}).get("users")
        given = written[i] if isinstance(written, list) and i < len(written) and isinstance(written[i], dict) else u
        if all(given.get(k) is None for k in ("sha512", "ssh_key", "password")):  # one refused by its form is named already
            bad(where, "gives neither sha512 nor ssh_key", "add sha512: (openssl passwd -6) or ssh_key: (a .pub line)")
        key = u.get("ssh_key")
        if isinstance(key, str) and not _ssh_key_ok(key):
            bad(f"{where}.ssh_key", "is not a valid SSH public key (its base64 does not decode to a key of the named type)",
                "paste the whole line of your .pub file")
        name = u.get("name")
        if isinstance(name, str):
            if name in seen:
                bad(f"{where}.name", f"user {name!r} is given twice", "give each user once")
            seen.add(name)
    if v.get("vrf") == EOS_DEFAULT_VRF:
        # EOS's default VRF always exists and cannot be instantiated or named on an interface:
        # `vrf instance default` and `vrf default` under Management1 are not EOS config (Arista's
        # AVD skips both for 'default': eos_cli_config_gen templates vrfs.j2 and
        # management-interfaces.j2), and the `no ip routing vrf <vrf>` a management VRF gets
        # would turn routing off for the whole fabric.
        bad("management.vrf", f"{EOS_DEFAULT_VRF!r} is the fabric's own VRF: EOS has no 'vrf instance default' and no "
            "'vrf default' on Management1, and railonly's 'no ip routing vrf <vrf>' would stop the fabric routing",
            f"use vrf: {SONIC_MGMT_VRF} (or leave it out), or another name such as MGMT")
    elif "sonic" in platforms and v.get("vrf") not in (None, SONIC_MGMT_VRF):
        bad("management.vrf", f"SONiC's management VRF is always named {SONIC_MGMT_VRF!r}, got {v.get('vrf')!r}",
            f"use vrf: {SONIC_MGMT_VRF} (or leave it out) while any switch runs SONiC")
    if isinstance(pool, ipaddress.IPv4Network) and switches is not None:
        usable = pool.num_addresses - 2 - 1  # network, broadcast, gateway
        if switches > usable:
            bad("management.pool", f"{pool} has {max(0, usable):,} addresses for switches, the design has {switches:,}",
                f"use a pool of at least /{32 - (switches + 3 - 1).bit_length()}")


def _ssh_key_ok(line: str) -> bool:
    """The blob decodes and names the same key type (a wire-format string first)."""
    kind, blob = line.split()[:2]
    try:
        raw = base64.b64decode(blob, validate=True)
        (n,) = struct.unpack(">I", raw[:4])
        return raw[4:4 + n].decode("ascii") == kind
    except (ValueError, struct.error, UnicodeDecodeError):
        return False


def assign(fab) -> None:
    """One address per switch, in fabric order, skipping the gateway (hosts .1 up)."""
    m = fab.design.management
    if m is None:
        return
    gw = ipaddress.IPv4Address(m.gateway)
    hosts = (h for h in m.pool.hosts() if h != gw)
    for sw in fab.switches:
        sw.mgmt_ip = f"{next(hosts)}/{m.prefixlen}"
