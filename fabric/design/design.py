"""The design file (docs/reference/design.md): keys, defaults, validation, the Design object.

Every key a design may use is declared in :data:`FIELDS` with its default and
a hint; the docs' key reference (docs/reference/design.md) is generated from the same table. Checks
that need several keys at once (does an L2 rail fit one switch? is the design
within three tiers?) run after the per-key checks, each one whenever the keys
it reads are valid, and all problems are reported together.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
from dataclasses import dataclass, field

from ..input.problems import InputError, Problem
from ..input.schema import Field, check
from ..input.yamlsource import Source, load_yaml_file, parse_yaml
from ..platforms import catalog
from . import clos, management, physical, routing

NAME_PATTERN = r"[a-z]([a-z0-9-]{0,18}[a-z0-9])?"
PLATFORMS = ("sonic", "eos")
SPEEDS_GBPS = (100, 200, 400, 800)
NIC_GBPS_DEFAULT = 400  # the per-GPU NIC speed when a design gives no nic.gbps
LAB_NIC_MBPS_DEFAULT = 100  # the emulated NIC rate when a design gives no lab.nic_mbps
# EOS's `mtu` (Ethernet and Vlan interfaces) is the IP MTU, at most 9214 (a 9234-byte frame):
# Arista EOS Central, "Jumbo frame MTU sizes" (eos.arista.com/forum/jumbo-frame-mtu-sizes/:
# "Max MTU in Arista -> 9214", `show interfaces` "IP MTU 9214 bytes", L2 MTU 9234). SONiC
# takes up to 9216 (sonic-port.yang, PORT mtu range 68..9216).
EOS_MAX_MTU = 9214

def _cabling_fields(nic_optic: str) -> dict[str, Field]:
    """The cabling keys, the NIC-leaf length bounded by the reach of the chosen NIC optic."""
    out: dict[str, Field] = {}
    for tier, (key, what, default) in physical.TIERS.items():
        o = physical.NIC_OPTICS[nic_optic] if tier == 1 else physical.OPTICS[tier]
        longer = [f"{c} ({x.reach_m:,} m)" for c, x in physical.NIC_OPTICS.items() if x.reach_m > o.reach_m]
        more = f"; or cabling.nic_optic: {' or '.join(longer)}" if tier == 1 and nic_optic != physical.NIC_OPTIC_DEFAULT and longer else ""
        out[key] = Field("int", default=default, min=1, max=o.reach_m,
                         hint=f"length of every {what} cable in metres (sets CABLE_LENGTH, NetBox and the BOM); "
                              f"at most the {o.reach_m:,} m reach of its {o.code} {o.fibre} optic{more}")
    out["nic_optic"] = Field("choice", default=physical.NIC_OPTIC_DEFAULT, choices=tuple(physical.NIC_OPTICS),
                             hint="the NIC-leaf medium: " + ", ".join(f"{c} ({o.fibre}, {o.reach_m:,} m)" for c, o in physical.NIC_OPTICS.items()))
    return out


FIELDS: dict[str, Field] = {
    "name": Field(
        "str", required=True, pattern=NAME_PATTERN,
        pattern_text="lowercase letters, digits and '-', starting with a letter, at most 20 characters",
        hint="e.g. name: demo (it prefixes every lab namespace and hostname)",
    ),
    "site": Field(
        "str", default=None, pattern=f"({NAME_PATTERN})?",
        pattern_text="lowercase letters, digits and '-', starting with a letter, at most 20 characters; or \"\" for no prefix",
        hint="e.g. site: ams1 (default: the design's name); it prefixes every switch name and hostname (and the MACs derived "
             "from them), so two clusters never share one; site: \"\" leaves the names bare (one cluster only)",
    ),
    "topology": Field(
        "choice", default="rail-only", choices=("rail-only", "rail-optimized"),
        hint="rail-only removes the spine; rail-optimized is the baseline with a spine across rails",
    ),
    "hb_domain": Field("section", required=True, hint="give size, count and gbps of the HB domains", fields={
        "size": Field("int", required=True, min=1, max=512, hint="GPUs per HB domain (= number of rails), e.g. 8 for DGX H100, 72 for NVL72, 256 for GH200"),
        "count": Field("int", required=True, min=1, max=1_000_000, hint="number of HB domains (servers or racks)"),
        "planned": Field("int", default=None, min=1, max=1_000_000,
                         hint="HB domains at build-out (default: count); the spine and core tiers are sized for it, "
                              "so growing count up to it only adds cables"),
        "gbps": Field("number", default=3600, min=1, max=1_000_000, hint="per-GPU HB (NVLink) bandwidth in Gbit/s, one direction"),
        "gpus_per_host": Field("int", default=None, min=1, max=512,
                               hint="GPUs per host (server or compute tray), a divisor of size (default: size, one host per domain); "
                                    "4 for GB200 NVL72 (18 trays of 4): hosts/, NetBox and cabling.csv are then per tray"),
    }),
    "nic": Field("section", fields={
        "gbps": Field("int", default=NIC_GBPS_DEFAULT, min=1, max=1600, hint=f"per-GPU NIC speed in Gbit/s, one of {', '.join(map(str, SPEEDS_GBPS))}"),
        "mtu": Field("int", default=9000, min=1280, max=9216, hint="host NIC MTU in bytes"),
    }),
    "switch": Field("section", fields={
        "radix": Field("int", default=64, min=4, max=1024, hint="ports per switch at NIC speed, an even number (e.g. 32, 64, 128, 256)"),
        "platform": Field("choice", default="sonic", choices=PLATFORMS, hint="network OS of the switches"),
        "platform_by_tier": Field("map", key_kind="int", item=Field("choice", choices=PLATFORMS), default={},
                                  hint="per-tier override, e.g. {2: eos}"),
        "model": Field("str", default=catalog.GENERIC, pattern=catalog.MODEL_PATTERN, pattern_text="a platform model name such as nvidia-sn5600",
                       hint="switch platform from the catalog (docs/platforms.md): generic (radix only), nvidia-sn5600, dell-z9864f, "
                            "dell-z9664f, arista-7060x6-64pe, arista-7060dx5-64s, or your own from switch.platform_files"),
        "breakout": Field("str", default=None, pattern=r"[1-8]x\d{2,3}G", pattern_text="ports per cage, x, Gbit/s and G, e.g. 2x400G",
                          hint="how each cage is split, e.g. 1x800G, 2x400G, 4x200G, 8x100G (default: the one at nic.gbps)"),
        "model_by_tier": Field("map", key_kind="int", item=Field("str", pattern=catalog.MODEL_PATTERN, pattern_text="a platform model name"),
                               default={}, hint="per-tier platform model, e.g. {2: arista-7060x6-64pe}"),
        "platform_files": Field("list", default=[], item=Field("str", pattern=r"[^\x00-\x1f]{1,255}", pattern_text="a file path"),
                                hint="your own platform YAML files (docs/platforms.md), paths relative to the design file, inside its folder"),
        "share_rails": Field("bool", default=False, hint="true lets small one-tier rails share a physical switch as separate partitions"),
        "mtu": Field("int", default=9100, min=1500, max=9216, hint="switch port MTU in bytes (at least nic.mtu; at most 9214 on EOS)"),
    }),
    "rail": Field("section", fields={
        "mode": Field("choice", default="routed", choices=("l2", "routed"),
                      hint="l2: one VLAN per rail, no IP or BGP on switches; routed: L3 with eBGP"),
    }),
    "addressing": Field("section", fields={
        "gpu_pool": Field("cidr", default=ipaddress.IPv4Network("10.0.0.0/9"), hint="pool split into one block per rail for GPU subnets"),
        "fabric_pool": Field("cidr", default=ipaddress.IPv4Network("10.128.0.0/10"), hint="pool for /31 switch-to-switch links"),
        "loopback_pool": Field("cidr", default=ipaddress.IPv4Network("10.255.0.0/16"), hint="pool for switch loopbacks (/32)"),
        "hb_pool": Field("cidr", default=ipaddress.IPv4Network("172.16.0.0/12"), hint="pool for HB-domain (NVLink) interfaces, one subnet per domain"),
    }),
    "bgp": Field("section", fields={
        "asn_base": Field("int", default=4_200_000_000, min=4_200_000_000, max=4_294_967_294,
                          hint="first private 32-bit ASN (RFC 6996: 4200000000-4294967294)"),
        "asn_scheme": Field("choice", default="rfc7938", choices=routing.ASN_SCHEMES,
                            hint="rfc7938: unique leaf ASNs, one ASN per spine group and for the cores; per-switch: one ASN each"),
    }),
    "qos": Field("section", fields={
        "roce_dscp": Field("int", default=26, min=0, max=63, hint="DSCP of RoCEv2 data traffic"),
        "roce_priority": Field("int", default=3, min=0, max=7, hint="lossless priority (PFC) and traffic class for RoCEv2"),
        "cnp_dscp": Field("int", default=48, min=0, max=63, hint="DSCP of congestion notification packets"),
        "cnp_priority": Field("int", default=6, min=0, max=7, hint="traffic class of CNPs (strict, not lossless)"),
        "ecn_min_kbytes": Field("int", default=150, min=1, max=100_000, hint="queue depth where ECN marking starts"),
        "ecn_max_kbytes": Field("int", default=1500, min=1, max=100_000, hint="queue depth where marking reaches ecn_probability"),
        "ecn_probability": Field("int", default=100, min=0, max=100, hint="marking probability in percent at ecn_max_kbytes"),
    }),
    "cabling": Field("section", hint="one length per cable tier, in whole metres", fields=_cabling_fields(physical.NIC_OPTIC_DEFAULT)),
    "management": Field("section", optional=True, fields=management.FIELDS,
                        hint="the switches' management plane: pool, gateway, vrf, ntp, syslog, dns, users (docs/management.md)"),
    "lab": Field("section", fields={
        "domains": Field("int", default=None, min=1, max=4096,
                         hint="HB domains in the emulated lab (full rails, fewer domains); default all when the design has at most 64 GPUs, otherwise the fewest (from 4 up) at which a smaller radix keeps the design's shape"),
        "nic_mbps": Field("number", default=LAB_NIC_MBPS_DEFAULT, min=1, max=100_000,
                          hint="emulated NIC rate in Mbit/s; HB links get nic_mbps * hb_domain.gbps / nic.gbps"),
    }),
}


@dataclass(frozen=True)
class Pools:
    gpu: ipaddress.IPv4Network
    fabric: ipaddress.IPv4Network
    loopback: ipaddress.IPv4Network
    hb: ipaddress.IPv4Network


@dataclass(frozen=True)
class Design:
    name: str
    topology: str  # rail-only | rail-optimized
    hb_size: int  # K: GPUs per HB domain = the number of rails (one name for K everywhere)
    hb_count: int  # HB domains
    hb_gbps: float
    nic_gbps: int
    nic_mtu: int
    radix: int
    platform: str
    platform_by_tier: dict[int, str]
    share_rails: bool
    switch_mtu: int
    rail_mode: str  # l2 | routed
    pools: Pools
    asn_base: int
    qos: dict
    lab_domains: int | None
    lab_nic_mbps: float
    hb_planned: int | None = None  # HB domains at build-out (None: hb_count)
    hb_gpus_per_host: int | None = None  # GPUs per host (server or tray); None: the whole domain
    cable_length_m: dict[int, int] = field(default_factory=physical.default_lengths)  # cable tier -> metres
    nic_optic: str = physical.NIC_OPTIC_DEFAULT  # the NIC-leaf medium (physical.NIC_OPTICS)
    switch_model: str = catalog.GENERIC
    breakout: str | None = None  # with a catalog model: how each cage is split
    models: dict = field(default_factory=dict, repr=False)  # tier -> catalog.Platform (empty: generic)
    site: str = ""  # prefixes every switch name (hostname): unique across clusters; "" only when opted out
    asn_scheme: str = "rfc7938"  # routing.ASN_SCHEMES
    bfd_interval_ms: int = routing.BFD_INTERVAL_MS  # production; a lab's own (lab_slice.sliced) may be longer
    management: management.Management | None = None  # the `management:` section, if given
    sha256: str = ""  # of the design file text, for MANIFEST.json
    values: dict = field(default_factory=dict, repr=False)  # every normalised key
    file: str | None = None
    lines: dict = field(default_factory=dict, repr=False, compare=False)  # key path -> line

    @property
    def input_files(self) -> tuple[str, ...]:
        """Every file compiling the design reads: itself and its switch.platform_files (an
        OUTDIR that holds one is refused: the swap would delete it)."""
        base = os.path.dirname(self.file) if self.file else ""
        own = [catalog.inside_folder(base, rel) for rel in self.values.get("switch", {}).get("platform_files") or ()]
        return tuple(p for p in [self.file, *own] if p)

    def problem(self, path: str, message: str, hint: str = "") -> Problem:
        """A problem found after loading (e.g. while building), located in the file."""
        return Problem(path, message, hint, Source(None, self.lines, self.file).line(path), self.file)

    @property
    def gpus(self) -> int:
        return self.hb_size * self.hb_count

    @property
    def gpus_per_host(self) -> int:
        """GPUs (and NICs) per host: a server is the whole HB domain, a rack's compute tray a part."""
        return self.hb_gpus_per_host or self.hb_size

    @property
    def planned(self) -> int:
        """HB domains the upper tiers are sized for: the build-out, never fewer than built."""
        return max(self.hb_count, self.hb_planned or 0)

    def platform_of_tier(self, tier: int) -> str:
        return self.platform_by_tier.get(tier, self.platform)

    def model_of_tier(self, tier: int):
        """The catalog platform of a tier's switches (catalog.Platform), None for generic."""
        return self.models.get(tier)


_ABSENT = object()


def _get(v: dict, path: str):
    """values[a][b] for "a.b", or _ABSENT when that key (or its section) was invalid."""
    for part in path.split("."):
        if not isinstance(v, dict) or part not in v:
            return _ABSENT
        v = v[part]
    return v


def _semantic(v: dict, src: Source) -> list[Problem]:
    """Checks across keys. Each runs when the keys it reads are valid on their
    own, even if other keys are not, so one round shows every problem."""
    out: list[Problem] = []

    def bad(path: str, msg: str, hint: str) -> None:
        out.append(Problem(path, msg, hint, src.line(path), src.file))

    def have(*paths: str) -> bool:
        return all(_get(v, p) is not _ABSENT for p in paths)

    k = _get(v, "switch.radix")
    K = _get(v, "hb_domain.size")
    count = _get(v, "hb_domain.count")
    planned = _get(v, "hb_domain.planned")
    if planned is _ABSENT:
        planned = None  # invalid on its own (reported): the cross-key checks use count
    if have("hb_domain.count") and planned is not None and planned < count:
        bad("hb_domain.planned", f"must be at least hb_domain.count ({count:,}): the build-out cannot be smaller than what is built, got {planned:,}",
            f"use hb_domain.planned: {count} or more, or leave it out (default: count)")
    per_host = _get(v, "hb_domain.gpus_per_host")
    if have("hb_domain.size", "hb_domain.gpus_per_host") and per_host is not None and K % per_host:
        fits = [g for g in range(1, K + 1) if K % g == 0]
        bad("hb_domain.gpus_per_host", f"must divide hb_domain.size ({K}) so every host holds as many GPUs, got {per_host}",
            f"use one of {', '.join(map(str, fits))} (e.g. 4 for GB200 NVL72), or leave it out (default: size)")
    if have("switch.radix") and k % 2:
        bad("switch.radix", f"must be even (half the ports go up in a multi-tier Clos), got {k}", f"use radix {k + 1} or {k - 1}")
    if have("nic.gbps") and v["nic"]["gbps"] not in SPEEDS_GBPS:
        bad("nic.gbps", f"must be one of {', '.join(map(str, SPEEDS_GBPS))} Gbit/s, got {v['nic']['gbps']}", "use a standard Ethernet speed, e.g. 400")
    if have("switch.mtu", "nic.mtu") and v["switch"]["mtu"] < v["nic"]["mtu"]:
        bad("switch.mtu", f"must be at least nic.mtu ({v['nic']['mtu']}), got {v['switch']['mtu']}", "raise switch.mtu (9100 is usual) or lower nic.mtu")
    eos_tiers = ([] if not have("switch.platform") or v["switch"]["platform"] != "eos" else ["switch.platform"]) + \
        [f"switch.platform_by_tier.{t}" for t, p in (_get(v, "switch.platform_by_tier").items() if have("switch.platform_by_tier") else ()) if p == "eos"]
    if have("switch.mtu") and v["switch"]["mtu"] > EOS_MAX_MTU and eos_tiers:
        bad("switch.mtu", f"EOS takes an interface mtu of at most {EOS_MAX_MTU} (its IP MTU; the frame is 9234), got {v['switch']['mtu']}, "
            f"and {eos_tiers[0]} is eos", f"use switch.mtu: {EOS_MAX_MTU} or less (9100 is usual), or SONiC switches")
    for tier in _get(v, "switch.platform_by_tier") if have("switch.platform_by_tier") else ():
        if tier not in (1, 2, 3):
            bad(f"switch.platform_by_tier.{tier}", f"tier must be 1, 2 or 3, got {tier}", "tiers: 1 = leaf, 2 = spine, 3 = core")
    q = v.get("qos") if isinstance(v.get("qos"), dict) else {}
    if "ecn_min_kbytes" in q and "ecn_max_kbytes" in q and q["ecn_min_kbytes"] > q["ecn_max_kbytes"]:
        bad("qos.ecn_min_kbytes", f"must not exceed qos.ecn_max_kbytes ({q['ecn_max_kbytes']}), got {q['ecn_min_kbytes']}", "swap the two thresholds")
    if "roce_priority" in q and "cnp_priority" in q and q["roce_priority"] == q["cnp_priority"]:
        bad("qos.cnp_priority", f"must differ from qos.roce_priority ({q['roce_priority']})", "CNPs travel in their own class, e.g. 6")
    if "roce_dscp" in q and "cnp_dscp" in q and q["roce_dscp"] == q["cnp_dscp"]:
        bad("qos.cnp_dscp", f"must differ from qos.roce_dscp ({q['roce_dscp']})", "the usual values are 26 for RoCE and 48 for CNP")
    pools = v.get("addressing") if isinstance(v.get("addressing"), dict) else {}
    names = sorted(pools)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if pools[a].overlaps(pools[b]):
                bad(f"addressing.{b}", f"{pools[b]} overlaps addressing.{a} ({pools[a]})",
                    "give every pool its own address range")
    if isinstance(v.get("management"), dict):
        used = set()
        if have("switch.platform"):
            used.add(v["switch"]["platform"])
        if have("switch.platform_by_tier"):
            used |= set(v["switch"]["platform_by_tier"].values())
        raw = src.data.get("management") if isinstance(src.data, dict) else None
        management.problems(v["management"], used, None, bad, raw if isinstance(raw, dict) else None)
        if isinstance(v["management"].get("pool"), ipaddress.IPv4Network):
            for name, pool in sorted(pools.items()):
                if pool.overlaps(v["management"]["pool"]):
                    bad("management.pool", f"{v['management']['pool']} overlaps addressing.{name} ({pool})",
                        "the management network must be apart from the fabric's pools")
    lab_domains = _get(v, "lab.domains")
    if have("lab.domains", "hb_domain.count") and lab_domains is not None and lab_domains > count:
        bad("lab.domains", f"must be at most hb_domain.count ({count}), got {lab_domains}", f"use lab.domains: {min(count, 4)}")
    if not have("switch.radix", "hb_domain.size", "hb_domain.count", "topology", "rail.mode") or k % 2:
        return out
    size_key = "hb_domain.count"
    if planned is not None:
        count, size_key = planned, "hb_domain.planned"  # the tiers are those of the build-out

    topo = v["topology"]
    mode = v["rail"]["mode"]
    if topo == "rail-optimized":
        n, scope = K * count, "the whole cluster"
        tiers = clos.baseline_depth(K, count, k)
    else:
        n, scope = count, "one rail"
        tiers = clos.tiers(n, k)
    if tiers is None:
        bad(size_key, f"{scope} has {n:,} GPUs{' at build-out' if planned is not None else ''}, more than a three-tier Clos of radix {k} holds ({clos.max_endpoints(3, k):,} at most)",
            "use a larger switch.radix or fewer HB domains" + (" (a smaller hb_domain.planned)" if planned is not None else ""))
    elif mode == "l2" and tiers > 1:
        if topo == "rail-optimized":
            bad("rail.mode", "a rail-optimized baseline joins rails through a routed spine; it cannot be pure L2",
                "use rail.mode: routed for topology: rail-optimized")
        else:
            bad("rail.mode", f"an L2 rail must fit one switch (a loop-free L2 Clos needs IP), but a rail of {n:,} GPUs needs {tiers} tiers at radix {k} (one switch holds {k})",
                f"use rail.mode: routed, or at most {k} HB domains, or switch.radix of at least {n if n % 2 == 0 else n + 1}")
    elif topo == "rail-optimized" and mode == "l2":
        bad("rail.mode", "a rail-optimized baseline joins rails through a routed spine; it cannot be pure L2",
            "use rail.mode: routed for topology: rail-optimized")
    return out


def _fields(src: Source) -> dict[str, Field]:
    """FIELDS, with the NIC-leaf length bounded by the NIC optic the file chooses."""
    cab = src.data.get("cabling") if isinstance(src.data, dict) else None
    optic = cab.get("nic_optic") if isinstance(cab, dict) else None
    if not isinstance(optic, str) or optic not in physical.NIC_OPTICS or optic == physical.NIC_OPTIC_DEFAULT:
        return FIELDS  # the schema check names a value of any other shape
    return {**FIELDS, "cabling": Field("section", hint=FIELDS["cabling"].hint, fields=_cabling_fields(optic))}


def design_from_source(src: Source, text: str = "") -> Design:
    values, problems = check(_fields(src), src)
    resolved, more = catalog.resolve(values, src)  # fills radix, nic.gbps, platform from the model
    problems += more
    problems += _semantic(values, src)  # all at once: cross-key checks whose keys are valid run too
    if problems:
        raise InputError(problems)
    a = values["addressing"]
    return Design(
        name=values["name"],
        topology=values["topology"],
        hb_size=values["hb_domain"]["size"],
        hb_count=values["hb_domain"]["count"],
        hb_gbps=values["hb_domain"]["gbps"],
        nic_gbps=values["nic"]["gbps"],
        nic_mtu=values["nic"]["mtu"],
        radix=values["switch"]["radix"],
        platform=values["switch"]["platform"],
        platform_by_tier=dict(sorted(values["switch"]["platform_by_tier"].items())),
        share_rails=values["switch"]["share_rails"],
        switch_mtu=values["switch"]["mtu"],
        rail_mode=values["rail"]["mode"],
        pools=Pools(a["gpu_pool"], a["fabric_pool"], a["loopback_pool"], a["hb_pool"]),
        asn_base=values["bgp"]["asn_base"],
        qos=dict(values["qos"]),
        lab_domains=values["lab"]["domains"],
        lab_nic_mbps=values["lab"]["nic_mbps"],
        hb_planned=values["hb_domain"]["planned"],
        hb_gpus_per_host=values["hb_domain"]["gpus_per_host"],
        cable_length_m={tier: values["cabling"][key] for tier, (key, _, _) in physical.TIERS.items()},
        nic_optic=values["cabling"]["nic_optic"],
        switch_model=values["switch"]["model"],
        breakout=resolved.breakout,
        models=resolved.by_tier,
        site=values["name"] if values["site"] is None else values["site"],  # "" is an explicit opt-out
        asn_scheme=values["bgp"]["asn_scheme"],
        management=management.from_values(values.get("management")),
        sha256=hashlib.sha256(text.encode()).hexdigest(),
        values=values,
        file=src.file,
        lines=src.lines,
    )


def load_design(path: str) -> Design:
    """Read, parse and validate a design file; raises InputError with every problem."""
    src = load_yaml_file(path)  # read once: the hash is of the text that was checked
    return design_from_source(src, src.text)


def parse_design(text: str, file: str | None = None) -> Design:
    return design_from_source(parse_yaml(text, file), text)
