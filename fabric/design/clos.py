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


def baseline_leaves(rails: int, domains: int, radix: int) -> int:
    """Leaves of the multi-tier baseline: packed leaves of whole rails, or rail-pure leaves."""
    per = rails_per_leaf(domains, radix)
    if per > 1:
        return math.ceil(rails / per)
    return rails * leaves_needed(domains, radix)


def baseline_depth(rails: int, domains: int, radix: int) -> int | None:
    """Tiers of the rail-optimized baseline: leaves of one rail (or several small
    whole rails), spines across rails."""
    return depth(rails * domains, baseline_leaves(rails, domains, radix), radix)
