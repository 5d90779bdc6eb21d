"""`--place auto`: the rank order with the fastest iteration on rail-only.

Every order of tp, ep, dp and pp (cp just after tp), and the job's own, is
placed, its traffic counted and its rail-only iteration timed; the fastest
wins, and cross-rail bytes, then rail bytes, then tp-first orders and the
order's text only break ties (so the choice is deterministic and never slower
than the job's own order). The placement hint (`rail_aligned_hint`) ranks by
bytes instead: the order that keeps the most bytes off cross-rail paths, and
where none keeps every byte on HB and rails, a dp that would.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

from .cluster import Cluster
from .job import Job
from .network import Rates
from .placement import HB, Placement, layout, with_cp
from .timing import iteration
from .traffic import class_bytes, collectives


def _sig(x: float) -> float:
    """x to 9 significant digits: equal times compare equal whatever the summation order."""
    return float(f"{x:.9g}")


@dataclass(frozen=True)
class OrderScore:
    order: tuple[str, ...]
    cross_rail: float
    rail: float
    iteration_s: float
    tp_off_hb: int  # TP groups that leave their HB domain

    def key(self) -> tuple:
        """Fastest rail-only iteration first; bytes only break ties."""
        return (_sig(self.iteration_s), round(self.cross_rail), round(self.rail), self.order[0] != "tp", "-".join(self.order))

    def rail_key(self) -> tuple:
        """Fewest bytes off HB and rails first (TP on NVLink, then cross-rail bytes), then time."""
        return (self.tp_off_hb > 0, round(self.cross_rail), _sig(self.iteration_s), round(self.rail),
                self.order[0] != "tp", "-".join(self.order))


def candidate_orders(job: Job) -> list[tuple[str, ...]]:
    dims = ("tp", "ep", "dp", "pp")
    out = []
    for perm in permutations(dims):
        if job.parallel.ep == 1 and perm.index("ep") + 1 != perm.index("dp"):
            continue  # ep of size 1 sits before dp: one order per placement
        out.append(with_cp(perm))
    own = with_cp(job.parallel.order)
    if own not in out:  # the job's own order is always a candidate: auto is never slower than it
        out.append(own)
    return out


def score(job: Job, cluster: Cluster, order: tuple[str, ...], rates: Rates | None = None) -> OrderScore:
    pl = layout(job, cluster, order)
    colls = collectives(job, pl)
    b = class_bytes(colls)
    t = iteration(job, colls, "rail-only", rates or Rates.of(cluster)).iteration_s
    return OrderScore(order, b["cross_rail"], b["rail"], t, int((pl.kinds["tp"] > HB).sum()))


def ranked_orders(job: Job, cluster: Cluster, rates: Rates | None = None) -> list[OrderScore]:
    scores = [score(job, cluster, o, rates) for o in candidate_orders(job)]
    return sorted(scores, key=OrderScore.key)


def auto_order(job: Job, cluster: Cluster, rates: Rates | None = None) -> tuple[str, ...]:
    ranked = ranked_orders(job, cluster, rates)
    best = ranked[0]
    own = next(s for s in ranked if s.order == with_cp(job.parallel.order))
    # a tie at 9 digits may hide a last-bit difference: never return an order slower than the job's
    return own.order if own.iteration_s < best.iteration_s else best.order


def _aligned_dp(job: Job, cluster: Cluster) -> int | None:
    """The dp nearest the job's that keeps every byte off cross-rail paths in the job's order."""
    p = job.parallel
    limit = cluster.gpus // (p.tp * p.pp)
    for dp in sorted(range(1, min(limit, 4 * p.dp) + 1), key=lambda d: (abs(d - p.dp), d)):
        if dp == p.dp or dp % p.ep:
            continue
        batch = max(p.micro_batch * dp, p.global_batch // (p.micro_batch * dp) * p.micro_batch * dp)
        j = job.replace(dp=dp, global_batch=batch)
        if class_bytes(collectives(j, layout(j, cluster)))["cross_rail"] == 0:
            return dp
    return None


def rail_aligned_hint(pl: Placement) -> str:
    job, cluster = pl.job, pl.cluster
    ranked = sorted(ranked_orders(job, cluster), key=OrderScore.rail_key)
    now = score(job, cluster, pl.order)
    best = ranked[0]
    text = "-".join(best.order)
    if best.cross_rail == 0:
        return f"use order: {text}: then no byte crosses rails (--place auto picks the fastest order)"
    dp = _aligned_dp(job, cluster)
    alt = f"; or dp {dp}, which keeps every byte on HB and rails in this order" if dp else ""
    if best.cross_rail < now.cross_rail:
        cut = 1 - best.cross_rail / now.cross_rail
        return f"no order keeps every byte on rails; order: {text} cuts the cross-rail bytes by {cut:.0%}{alt}"
    return f"no order does better{alt or '; change tp or dp so that tp x dp is a multiple of K = ' + str(cluster.hb_size)}"
