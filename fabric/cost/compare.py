"""One cluster built both ways: rail-only against the rail-optimized baseline.

Whatever topology the design names, the comparison builds the same HB domains,
NICs and switch radix as rail-only and as rail-optimized. The baseline is
always routed (its spine joins rails at L3; a pure-L2 baseline is invalid).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from ..design import clos
from ..design.design import Design
from ..graph.build import build_fabric
from ..input.problems import InputError, Problem
from .bom import Bom, price, saving_percent
from .inventory import Inventory, check_caps, from_design, from_fabric
from .prices import PriceBook

TOPOLOGIES = ("rail-only", "rail-optimized")


def variant(design: Design, topology: str) -> Design:
    if topology == "rail-optimized":
        return dataclasses.replace(design, topology=topology, rail_mode="routed")
    return dataclasses.replace(design, topology=topology)


def why_unbuildable(design: Design) -> Problem | None:
    """Why `design` (as given) cannot be built, or None."""
    k, K, n = design.radix, design.hb_size, design.planned  # the tiers are those of the build-out
    if design.topology == "rail-only":
        if clos.tiers(n, k) is None:
            return design.problem("hb_domain.count", f"a rail of {n:,} GPUs needs more than three tiers at radix {k}",
                                  "use a larger switch.radix or fewer HB domains")
        return None
    if clos.baseline_depth(K, n, k) is None:
        return design.problem("hb_domain.count",  # located in the design file, as every design problem
                              f"the rail-optimized baseline of {K * n:,} GPUs needs more than three tiers at radix {k} "
                              f"(at most {clos.max_endpoints(3, k):,} GPUs)",
                              "use a larger switch.radix, or compare without --compare")
    return None


def inventory(design: Design, fast: bool = False) -> Inventory:
    """Counts of `design`: from its fabric graph, or (fast) from the proven-equal arithmetic."""
    problem = why_unbuildable(design)
    if problem:
        raise InputError([problem])
    if fast:
        return from_design(design)
    check_caps(design, files=False)
    try:
        return from_fabric(build_fabric(design))
    except InputError as exc:  # e.g. a pool too small for the baseline's spine: say which build failed
        raise InputError([dataclasses.replace(p, message=f"building the {design.topology} variant: {p.message}")
                          for p in exc.problems]) from None


def compare(design: Design, book: PriceBook, fast: bool = False,
            counts: Callable[[Design, bool], Inventory] = inventory) -> dict[str, Bom]:
    return {topo: price(counts(variant(design, topo), fast), book) for topo in TOPOLOGIES}


def report(boms: dict[str, Bom]) -> dict:
    """The `railonly bom --compare --json` document."""
    ro, base = boms["rail-only"], boms["rail-optimized"]
    out = {topo: boms[topo].summary() for topo in TOPOLOGIES}
    cost, power = saving_percent(ro.cost_usd, base.cost_usd), saving_percent(ro.power_w, base.power_w)
    out["saving"] = {
        "cost": round(cost / 100, 4),  # the printed percentage as a fraction: one rounding for both
        "power": round(power / 100, 4),
        "cost_percent": cost,
        "power_percent": power,
        "switches": base.inventory.switch_count - ro.inventory.switch_count,
        "transceivers": base.inventory.transceiver_count - ro.inventory.transceiver_count,
        "tiers": base.inventory.tiers - ro.inventory.tiers,
    }
    out["packing"] = {topo: packing(boms[topo].inventory) for topo in TOPOLOGIES}
    return out


def packing(inv: Inventory) -> str:
    """Which rails share a tier-1 switch, in words (so a comparison says which side packs)."""
    if inv.rails_per_leaf > 1:
        return f"packs {inv.rails_per_leaf} whole rails per leaf"
    if inv.topology == "rail-only":
        return "one switch per rail (switch.share_rails packs one-tier rails of at most radix/2 GPUs)"
    return "rail-pure leaves (rails fill at least half a leaf)"
