"""What a fabric is made of, as counts: switches by (tier, radix, speed), cables by (tier, speed).

Everything the BOM prices follows from these two counters: every cable is
optical with a transceiver at each end, and the lower end of a tier-1 cable is
the GPU's NIC. :func:`from_fabric` reads them off the fabric graph (the source
of truth, used for bom.csv and `railonly bom`). :func:`from_design` computes
the same counters without building the graph, by following
:mod:`railonly.fabric.build` step by step (not the closed-form counting model,
which ignores partly filled leaves); tests prove it equal to
:func:`from_fabric` over many sizes, and the sweep uses it.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from . import clos, physical
from .design import Design
from .model import Fabric


@dataclass
class Inventory:
    topology: str
    tiers: int
    gpus: int
    switches: Counter = field(default_factory=Counter)  # (tier, radix, gbps) -> switches
    cables: Counter = field(default_factory=Counter)  # (cable tier, gbps) -> cables
    cable_length_m: dict[int, int] = field(default_factory=physical.default_lengths)  # cable tier -> metres

    @property
    def switch_count(self) -> int:
        return sum(self.switches.values())

    @property
    def link_count(self) -> int:
        return sum(self.cables.values())

    @property
    def transceiver_count(self) -> int:
        return 2 * self.link_count  # one at each end, the NIC's end included

    @property
    def nic_optics(self) -> int:
        return sum(n for (tier, _), n in self.cables.items() if tier == 1)

    def switches_by_tier(self) -> dict[int, int]:
        out: Counter = Counter()
        for (tier, _, _), n in self.switches.items():
            out[tier] += n
        return dict(sorted(out.items()))

    def ports_by_tier(self) -> dict[int, tuple[int, int]]:
        """Switch tier -> (ports used, ports installed)."""
        used: Counter = Counter()
        for (tier, _), n in self.cables.items():
            used[tier] += n  # upper end: a switch of that tier
            if tier > 1:
                used[tier - 1] += n  # lower end: a switch one tier down
        total: Counter = Counter()
        for (tier, radix, _), n in self.switches.items():
            total[tier] += radix * n
        return {t: (used[t], total[t]) for t in sorted(total)}

    def key(self) -> tuple:
        """Comparable form (for the fast-path equality tests)."""
        return (self.topology, self.tiers, self.gpus, sorted(self.switches.items()), sorted(self.cables.items()))


def from_fabric(fab: Fabric) -> Inventory:
    d = fab.design
    inv = Inventory(d.topology, fab.tiers, len(fab.gpus), cable_length_m=dict(d.cable_length_m))
    for sw in fab.switches:
        inv.switches[(sw.tier, d.radix, d.nic_gbps)] += 1
    for lk in fab.links:
        if lk.kind != "hb":
            inv.cables[(lk.tier, lk.gbps)] += 1
    return inv


def from_design(d: Design) -> Inventory:
    """The counters :func:`from_fabric` would give for `build_fabric(d)`, without building it.

    Raises ValueError where the builder could not build the design (over three tiers).
    """
    k, K, n, g = d.radix, d.rails, d.hb_count, d.nic_gbps
    half = k // 2
    sw: Counter = Counter()
    cab: Counter = Counter()

    def upper(leaves: int, tiers: int, times: int) -> None:
        """Spine/core tiers over `leaves` leaves (build._Builder.upper_tiers), `times` over."""
        cab[(2, g)] += times * leaves * half
        if tiers == 2:
            sw[(2, k, g)] += times * math.ceil(leaves / 2)
            return
        pods = [min(half, leaves - p) for p in range(0, leaves, half)]
        sw[(2, k, g)] += times * leaves  # one spine per leaf in its pod
        cab[(3, g)] += times * leaves * half
        for a in range(half):  # plane a: spine a of every pod with more than a leaves
            plane = sum(1 for m in pods if m > a)
            if plane:
                sw[(3, k, g)] += times * math.ceil(plane * half / k)

    if d.topology == "rail-only":
        t = clos.tiers(n, k)
        if t is None:
            raise ValueError(f"a rail of {n:,} GPUs needs more than three tiers at radix {k}")
        cab[(1, g)] += K * n
        if t == 1 and d.share_rails and n <= half:
            sw[(1, k, g)] += math.ceil(K / (k // n))
        elif t == 1:
            sw[(1, k, g)] += K
        else:
            leaves = clos.leaves_needed(n, k)
            sw[(1, k, g)] += K * leaves
            upper(leaves, t, K)
    else:
        t = clos.baseline_depth(K, n, k)
        if t is None:
            raise ValueError(f"the rail-optimized cluster of {K * n:,} GPUs needs more than three tiers at radix {k}")
        cab[(1, g)] += K * n
        if t == 1:
            sw[(1, k, g)] += 1
        else:
            leaves = K * clos.leaves_needed(n, k)
            sw[(1, k, g)] += leaves
            upper(leaves, t, 1)
    return Inventory(d.topology, t, K * n, sw, cab, dict(d.cable_length_m))
