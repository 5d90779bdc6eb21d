"""The counting model of a non-blocking folded Clos (docs/fabric.md), as pure arithmetic.

The fabric builder uses :func:`tiers` to pick the depth of each Clos; the
closed-form counts here are what tests compare the built graph against.
"""

from __future__ import annotations

import math


def max_endpoints(tiers: int, radix: int) -> int:
    return {1: radix, 2: radix * radix // 2, 3: radix**3 // 4}[tiers]


def tiers(n: int, radix: int) -> int | None:
    """Fewest tiers whose Clos holds n endpoints at this radix; None past three."""
    for t in (1, 2, 3):
        if n <= max_endpoints(t, radix):
            return t
    return None


def model_counts(n: int, radix: int) -> dict:
    """Switches, links and transceivers of the paper's counting model (n endpoints)."""
    t = tiers(n, radix)
    if t is None:
        raise ValueError(f"{n} endpoints exceed three tiers at radix {radix}")
    switches = {1: math.ceil(n / radix), 2: 3 * n / radix, 3: 5 * n / radix}[t]
    return {"tiers": t, "switches": switches, "links": t * n, "transceivers": 2 * t * n}


def leaves_needed(endpoints: int, radix: int) -> int:
    """Leaves of a multi-tier Clos: each leaf has radix/2 ports down."""
    return math.ceil(endpoints / (radix // 2))


def depth(endpoints: int, leaves: int, radix: int) -> int | None:
    """Tiers for a Clos whose tier-1 is `leaves` switches (used for the baseline,
    whose leaves hold whole rails, so the leaf count is not just n/(k/2)).

    One tier when everything fits one switch; two while every leaf can reach
    every spine (leaves <= radix); three while pods of radix/2 leaves fit the
    cores (pods <= radix); otherwise None.
    """
    if endpoints <= radix:
        return 1
    half = radix // 2
    if leaves <= radix:
        return 2
    if math.ceil(leaves / half) <= radix:
        return 3
    return None


def rails_per_leaf(domains: int, radix: int) -> int:
    """Rails one baseline leaf carries: several when a rail fills at most half of
    a leaf's radix/2 down ports (as an engineer would pack them), else one."""
    return max(1, (radix // 2) // domains)


def baseline_leaves(hb_size: int, domains: int, radix: int) -> int:
    """Leaves of the multi-tier baseline: packed leaves of whole rails, or rail-pure leaves."""
    per = rails_per_leaf(domains, radix)
    if per > 1:
        return math.ceil(hb_size / per)
    return hb_size * leaves_needed(domains, radix)


def baseline_depth(hb_size: int, domains: int, radix: int) -> int | None:
    """Tiers of the rail-optimized baseline: leaves of one rail (or several small
    whole rails), spines across rails."""
    return depth(hb_size * domains, baseline_leaves(hb_size, domains, radix), radix)


def upper_counts(leaves: int, tiers: int, radix: int) -> tuple[int, int]:
    """(spines, cores) above `leaves` leaves, as the fabric builder wires them: two
    tiers, one spine per two leaves; three, pods of radix/2 leaves with one spine
    per leaf and each spine index a plane of cores."""
    if tiers < 2:
        return 0, 0
    if tiers == 2:
        return math.ceil(leaves / 2), 0
    half = radix // 2
    pods = [min(half, leaves - p) for p in range(0, leaves, half)]
    cores = sum(math.ceil(sum(1 for m in pods if m > a) * half / radix) for a in range(half))
    return leaves, cores


def shape(topology: str, hb_size: int, domains: int, radix: int) -> dict:
    """The Clos a design's fabric has, by tier (pure): ``tiers``, ``leaves``, ``spines``,
    ``cores``, each per rail on rail-only (one Clos per rail) or for the whole fabric on
    the baseline (``per_rail`` False), and ``rails_per_leaf`` (baseline leaves that pack
    several small rails)."""
    if topology == "rail-only":
        t = tiers(domains, radix) or 0
        leaves = 1 if t == 1 else leaves_needed(domains, radix)
        spines, cores = upper_counts(leaves, t, radix)
        return {"tiers": t, "per_rail": True, "leaves": leaves, "spines": spines, "cores": cores, "rails_per_leaf": 1}
    t = baseline_depth(hb_size, domains, radix) or 0
    leaves = 1 if t == 1 else baseline_leaves(hb_size, domains, radix)
    spines, cores = upper_counts(leaves, t, radix)
    return {"tiers": t, "per_rail": False, "leaves": leaves, "spines": spines, "cores": cores,
            "rails_per_leaf": hb_size if t == 1 else rails_per_leaf(domains, radix)}
