"""The physical plant: how long each cable is, and what devices and ports are called on the floor.

Lengths. Every cable tier has one length, in whole metres, from the design's
`cabling` section (defaults below). cabling.csv, netbox_cables.csv, bom.csv,
the OUTDIR README, SONiC `CABLE_LENGTH` and the EOS port descriptions all read
:func:`cable_length_m`, so they cannot disagree; `railonly validate` checks
they still agree after the files were written.

Optics. A tier's optic is fixed (SR multimode for NIC-leaf, DR single-mode for
leaf-spine, FR single-mode for spine-core); its reach bounds the tier's length,
which the design check enforces.

Names. The fabric graph (and the lab, which runs one namespace per GPU) has a
node `hb<d>-gpu<r>` whose NIC is `eth1`. On the floor that NIC is port
`rail<r>` of the host that holds GPU r: server `hb<d>` when one host is the
whole HB domain (a DGX), tray `hb<d>-tray<t>` when the domain is a rack of
trays of `hb_domain.gpus_per_host` GPUs (GB200 NVL72: 18 trays of 4, GPU r in
tray r // 4). The host configs, cabling and NetBox use the floor names and keep
the graph node in a column, and :class:`Naming` maps one to the other in both
directions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..platforms.ports import GPU_RAIL_PORT

# Cable tier -> (design key under `cabling`, what it joins, default length in metres).
TIERS = {
    1: ("nic_leaf_m", "NIC-leaf", 30),
    2: ("leaf_spine_m", "leaf-spine", 100),
    3: ("spine_core_m", "spine-core", 500),
}


@dataclass(frozen=True)
class Optic:
    code: str  # IEEE-style reach code: SR, DR, FR
    fibre: str  # MMF | SMF
    reach_m: int


# The optic of each cable tier: NIC-leaf stays in the row (multimode), leaf-spine
# crosses the hall (single-mode, 500 m), spine-core may cross buildings (2 km).
OPTICS = {1: Optic("SR", "MMF", 50), 2: Optic("DR", "SMF", 500), 3: Optic("FR", "SMF", 2000)}

# The NIC-leaf medium is the design's choice (`cabling.nic_optic`); its reach bounds
# cabling.nic_leaf_m. AOC and DAC are cable assemblies with their ends built in:
# AOC to 30 m (e.g. Arista's 800G AOC, 1-30 m), passive DAC to 3 m (NVIDIA's twin-port
# 800G-to-2x400G OSFP splitter DAC, 1-3 m); sources in docs/platforms.md.
NIC_OPTICS = {"SR": OPTICS[1], "DR": Optic("DR", "SMF", 500), "AOC": Optic("AOC", "MMF", 30), "DAC": Optic("DAC", "copper", 3)}
NIC_OPTIC_DEFAULT = "SR"
ASSEMBLIES = ("AOC", "DAC")  # media whose cable is the optic: no transceiver at either end


def links_per_assembly(code: str) -> int:
    """The NIC-leaf cables one assembly makes: a splitter ('800G-2x400G-DAC', one cage to
    two NICs) one per split end, a straight one ('400G-AOC') one."""
    split = re.search(r"-(\d+)x\d+G-", code)
    return int(split.group(1)) if split else 1


def key_of(tier: int) -> str:
    """The design key path of a tier's length, for messages: 'cabling.nic_leaf_m'."""
    return f"cabling.{TIERS[tier][0]}"


SWITCH_TIERS = {1: "leaf", 2: "spine", 3: "core"}  # switch tier -> its name (configs, NetBox role, docs, BOM)


def tier_name(tier: int) -> str:
    return TIERS[tier][1] if tier in TIERS else f"tier {tier}"


def default_lengths() -> dict[int, int]:
    return {t: v[2] for t, v in TIERS.items()}


def cable_length_m(design, tier: int) -> int:
    """The length of every cable of `tier` in `design`, in metres."""
    return design.cable_length_m[tier]


def tier_optic(tier: int, nic_optic: str = NIC_OPTIC_DEFAULT) -> Optic:
    """The medium of a cable tier: the design's NIC optic for NIC-leaf, fixed above."""
    return NIC_OPTICS[nic_optic] if tier == 1 else OPTICS.get(tier, OPTICS[3])


def optic_code(gbps: float, tier: int, nic_optic: str = NIC_OPTIC_DEFAULT) -> str:
    """Transceiver type of a cable tier: speed, reach code and lanes, e.g. '400G-DR4';
    an AOC or DAC is named by speed and kind ('400G-AOC')."""
    o = tier_optic(tier, nic_optic)
    if o.code in ASSEMBLIES:
        return f"{int(gbps)}G-{o.code}"
    lanes = {100: 4, 200: 4, 400: 4, 800: 8}.get(int(gbps), 4)
    if o.code == "SR" and int(gbps) == 400:
        lanes = 8  # 400G-SR8: eight multimode pairs
    return f"{int(gbps)}G-{o.code}{lanes}"


def media(gbps: float, tier: int, nic_optic: str = NIC_OPTIC_DEFAULT) -> str:
    """Optic and fibre of a cable, e.g. '400G-DR4 SMF' (its length is a column of its own)."""
    return f"{optic_code(gbps, tier, nic_optic)} {tier_optic(tier, nic_optic).fibre}"


def port_optic(design, gbps: float, tier: int) -> str:
    """The optic one port of a cable of `tier` takes (a NIC's, at tier 1): the catalog
    platform's port optic for the medium when the design names a model."""
    o = tier_optic(tier, design.nic_optic)
    model = design.model_of_tier(tier)  # the cable's upper end: a NIC-leaf cable's leaf
    if model is None or o.code in ASSEMBLIES:
        return optic_code(gbps, tier, design.nic_optic)
    return model.breakouts[design.breakout].port_optics[o.code]


def cable_media(design, gbps: float, tier: int) -> str:
    """cabling.csv's media of a cable: its port optic and fibre, e.g. '400G-SR4 MMF'."""
    return f"{port_optic(design, gbps, tier)} {tier_optic(tier, design.nic_optic).fibre}"


# -- names on the floor --------------------------------------------------------

def nic_name(rank: int) -> str:
    """A server's NIC of GPU `rank`, as the host configs name it."""
    return f"rail{rank}"


def host_name(domain: str, rank: int, gpus_per_host: int | None, hb_size: int) -> str:
    """The host (server or tray) that holds GPU `rank` of HB domain `domain` ('hb3'):
    the domain itself when one host holds all its GPUs, else its tray 'hb3-tray<t>'."""
    if not gpus_per_host or gpus_per_host >= hb_size:
        return domain
    return f"{domain}-tray{rank // gpus_per_host}"


def hosts_of(domain: str, hb_size: int, gpus_per_host: int | None) -> list[tuple[str, range]]:
    """(host name, GPU ranks) of every host of an HB domain, in rank order."""
    per = gpus_per_host if gpus_per_host and gpus_per_host < hb_size else hb_size
    return [(host_name(domain, t * per, per, hb_size), range(t * per, min(hb_size, (t + 1) * per)))
            for t in range(-(-hb_size // per))]


class Naming:
    """Graph ends <-> floor ends, built from the fabric's nodes (graph Nodes, built or read back
    from fabric.json) and the GPUs per host (None: one host per HB domain)."""

    def __init__(self, nodes, gpus_per_host: int | None = None):
        if not isinstance(gpus_per_host, int) or isinstance(gpus_per_host, bool) or gpus_per_host < 1:
            gpus_per_host = None  # a hostile fabric.json value (0): name by domain (the plant check then disagrees)
        server_of: dict[int, str] = {}
        gpus: list[tuple[str, int, int]] = []
        for n in nodes:
            role, name, dom = n.role, n.name, n.hb_domain
            if role == "hb":
                server_of[dom] = name
            elif role == "gpu":
                gpus.append((name, dom, n.rank))
        self._floor: dict[str, tuple[str, str]] = {}  # gpu node -> (server, nic)
        self._graph: dict[tuple[str, str], str] = {}  # (server, nic) -> gpu node
        size: dict[int, int] = {}
        for _, dom, rank in gpus:
            size[dom] = max(size.get(dom, 0), (rank if isinstance(rank, int) else 0) + 1)
        for name, dom, rank in gpus:
            server = server_of.get(dom)
            end = (host_name(server, rank, gpus_per_host, size[dom]) if server and isinstance(rank, int) else name, nic_name(rank))
            self._floor[name] = end
            self._graph[end] = name

    def floor_end(self, node: str, port: str) -> tuple[str, str, str]:
        """(device, port, gpu) on the floor of graph end (node, port); gpu is the GPU
        node whose NIC this is, '' for switch ports."""
        if port == GPU_RAIL_PORT and node in self._floor:
            device, nic = self._floor[node]
            return device, nic, node
        return node, port, ""

    def graph_end(self, device: str, port: str) -> tuple[str, str]:
        """(node, port) in fabric.json of a floor end; unchanged when it is a switch port."""
        gpu = self._graph.get((device, port))
        return (gpu, GPU_RAIL_PORT) if gpu else (device, port)

    def server_of(self, gpu: str) -> str | None:
        end = self._floor.get(gpu)
        return end[0] if end else None


def naming(fab) -> Naming:
    """The floor names of a fabric graph, built once per graph (every switch view and plant
    file reads them; built before the compiler forks its workers, so they inherit it)."""
    names = fab.__dict__.get("_naming")
    if names is None:
        names = fab.__dict__["_naming"] = Naming(fab.nodes, fab.design.gpus_per_host)
    return names
