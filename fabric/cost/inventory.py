"""What a fabric is made of, as counts: switches by (tier, radix, speed), cables by (tier, speed).

Everything the BOM prices follows from these two counters: every cable is
optical with a transceiver at each end, and the lower end of a tier-1 cable is
the GPU's NIC. :func:`from_fabric` reads them off the fabric graph (the source
of truth, used for bom.csv and `railonly bom`). :func:`from_design` computes
the same counters without building the graph, by following
:mod:`railonly.fabric.graph.build` step by step (not the closed-form counting model,
which ignores partly filled leaves); tests prove it equal to
:func:`from_fabric` over many sizes, and the sweep uses it.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from ..design import clos, physical
from ..design.design import Design
from ..graph.model import Fabric


@dataclass
class Inventory:
    topology: str
    tiers: int
    gpus: int
    switches: Counter = field(default_factory=Counter)  # (tier, radix, gbps) -> switches
    cables: Counter = field(default_factory=Counter)  # (cable tier, gbps) -> cables
    rails_per_leaf: int = 1  # rails packed onto one tier-1 switch (1: rail-pure leaves)
    cable_length_m: dict[int, int] = field(default_factory=physical.default_lengths)  # cable tier -> metres
    nic_optic: str = physical.NIC_OPTIC_DEFAULT  # the NIC-leaf medium
    models: dict = field(default_factory=dict)  # switch tier -> catalog.Platform (empty: generic)
    breakout: str | None = None
    cage_optics: Counter = field(default_factory=Counter)  # catalog switches: item -> cages that take it
    cages_exact: bool = True  # False: cage_optics estimated from port counts (from_design)

    @property
    def switch_count(self) -> int:
        return sum(self.switches.values())

    @property
    def link_count(self) -> int:
        return sum(self.cables.values())

    @property
    def assembly(self) -> bool:
        """NIC-leaf cables are AOC/DAC assemblies (no transceiver at either end)."""
        return physical.tier_optic(1, self.nic_optic).code in physical.ASSEMBLIES

    @property
    def transceiver_count(self) -> int:
        """Optics and cable assemblies bought: one per cable end (the NIC's included), one per
        NIC-leaf AOC/DAC; on catalog switches one per cage in use, not per port."""
        tier1 = sum(n for (tier, _), n in self.cables.items() if tier == 1)
        if self.models:
            return sum(self.cage_optics.values()) + self.nic_optics
        return 2 * self.link_count - (tier1 if self.assembly else 0)

    @property
    def nic_optics(self) -> int:
        return 0 if self.assembly else sum(n for (tier, _), n in self.cables.items() if tier == 1)

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
        return (self.topology, self.tiers, self.gpus, sorted(self.switches.items()), sorted(self.cables.items()),
                self.rails_per_leaf)

    def minus(self, earlier: "Inventory") -> "Inventory":
        """What this inventory adds to `earlier` (the build-out over what is built now)."""
        return Inventory(self.topology, self.tiers, self.gpus - earlier.gpus,
                         self.switches - earlier.switches, self.cables - earlier.cables, self.rails_per_leaf,
                         dict(self.cable_length_m), self.nic_optic, self.models, self.breakout,
                         self.cage_optics - earlier.cage_optics, self.cages_exact and earlier.cages_exact)


def _catalog_fields(d: Design) -> dict:
    return {"cable_length_m": dict(d.cable_length_m), "nic_optic": d.nic_optic, "models": dict(d.models), "breakout": d.breakout}


def cage_item(d: Design, switch_tier: int, cable_tier: int) -> str:
    """What one cage of a tier-`switch_tier` catalog switch takes for cables of `cable_tier`."""
    code = physical.tier_optic(cable_tier, d.nic_optic).code
    return d.model_of_tier(switch_tier).breakouts[d.breakout].cage_optics[code]


def from_fabric(fab: Fabric) -> Inventory:
    d = fab.design
    inv = Inventory(d.topology, fab.tiers, len(fab.gpus), **_catalog_fields(d))
    for sw in fab.switches:
        inv.switches[(sw.tier, d.radix, d.nic_gbps)] += 1
        if sw.tier == 1:
            inv.rails_per_leaf = max(inv.rails_per_leaf, len(sw.rails))
        if d.models:  # one optic per cage in use, whatever number of its ports is cabled
            n = d.model_of_tier(sw.tier).breakouts[d.breakout].ports_per_cage
            cages = {ep.index // n: fab.link_at(sw.name, ep.port).tier for ep in sw.ports.values()}
            for cable_tier in cages.values():
                inv.cage_optics[cage_item(d, sw.tier, cable_tier)] += 1
    for lk in fab.links:
        if lk.kind != "hb":
            inv.cables[(lk.tier, lk.gbps)] += 1
    return inv


def from_design(d: Design) -> Inventory:
    """The counters :func:`from_fabric` would give for `build_fabric(d)`, without building it.

    Raises ValueError where the builder could not build the design (over three tiers).
    """
    k, K, n, P, g = d.radix, d.hb_size, d.hb_count, d.planned, d.nic_gbps
    half = k // 2
    sw: Counter = Counter()
    cab: Counter = Counter()

    def upper(leaves: int, planned: int, tiers: int, times: int) -> None:
        """Spine/core tiers (build._Builder.upper_tiers) over `leaves` built leaves
        of a build-out of `planned`, `times` over: spines and cores are the build-out's."""
        cab[(2, g)] += times * leaves * half
        if tiers == 2:
            sw[(2, k, g)] += times * math.ceil(planned / 2)
            return
        pods = [min(half, planned - p) for p in range(0, planned, half)]
        spines = sum(m for p, m in zip(range(0, planned, half), pods) if p < leaves)  # a pod is built with its first leaf
        sw[(2, k, g)] += times * spines
        cab[(3, g)] += times * spines * half
        for a in range(half):  # plane a: spine a of every pod with more than a leaves
            plane = sum(1 for m in pods if m > a)
            if plane:
                sw[(3, k, g)] += times * math.ceil(plane * half / k)

    cab[(1, g)] += K * n
    per = 1
    if d.topology == "rail-only":
        t = clos.tiers(P, k)
        if t is None:
            raise ValueError(f"a rail of {P:,} GPUs needs more than three tiers at radix {k}")
        if t == 1 and d.share_rails and P <= half:
            per = min(K, k // P)
            sw[(1, k, g)] += math.ceil(K / (k // P))
        elif t == 1:
            sw[(1, k, g)] += K
        else:
            sw[(1, k, g)] += K * clos.leaves_needed(n, k)
            upper(clos.leaves_needed(n, k), clos.leaves_needed(P, k), t, K)
    else:
        t = clos.baseline_depth(K, P, k)
        if t is None:
            raise ValueError(f"the rail-optimized cluster of {K * P:,} GPUs needs more than three tiers at radix {k}")
        if t == 1:
            per = K
            sw[(1, k, g)] += 1
        elif clos.rails_per_leaf(P, k) > 1:  # packed leaves: all built with the first domain
            per = min(K, clos.rails_per_leaf(P, k))
            leaves = clos.baseline_leaves(K, P, k)
            sw[(1, k, g)] += leaves
            upper(leaves, leaves, t, 1)
        else:
            leaves = K * clos.leaves_needed(n, k)
            sw[(1, k, g)] += leaves
            upper(leaves, clos.baseline_leaves(K, P, k), t, 1)
    inv = Inventory(d.topology, t, K * n, sw, cab, per, **_catalog_fields(d))
    if d.models:  # estimated: every cage full (exact where leaves are; from_fabric counts each cage)
        inv.cages_exact = False
        for (tier, _), cables in cab.items():
            for switch_tier in ((1,) if tier == 1 else (tier - 1, tier)):
                n = d.model_of_tier(switch_tier).breakouts[d.breakout].ports_per_cage
                inv.cage_optics[cage_item(d, switch_tier, tier)] += -(-cables // n)
    return inv


def check_caps(design: Design, files: bool = True) -> None:
    """InputError (exit 2) when the design is over a cap (input.limits): counts only, nothing built.
    Every command that builds a fabric graph asks it first (a graph of millions of GPUs
    took 20 GB before any word); `files=False`: no OUTDIR is written, its file cap is moot."""
    from ..input import limits
    from ..input.problems import InputError

    problems = []
    planned_gpus = design.planned * design.hb_size  # addresses and tiers are planned for the build-out
    if design.gpus > limits.GPUS.value:
        problems.append(design.problem("hb_domain.count", *limits.GPUS.message(design.gpus)))
    elif planned_gpus > limits.GPUS.value:
        problems.append(design.problem("hb_domain.planned", *limits.GPUS.message(planned_gpus, "the design's build-out")))
    else:
        try:
            switches = sum(from_design(design).switches.values())
        except ValueError:
            switches = 0  # over three tiers: the design check says so
        if switches > limits.SWITCHES.value:
            problems.append(design.problem("switch.radix", *limits.SWITCHES.message(switches)))
        written = limits.estimated_files(switches, design.hb_count)
        if files and written > limits.FILES.value:
            problems.append(design.problem("hb_domain.count", *limits.FILES.message(written)))
    if problems:
        raise InputError(problems)
