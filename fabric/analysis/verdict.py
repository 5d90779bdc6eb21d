"""The placement verdict: problems worth reporting, each with a fix, and `--place auto`.

Problems (docs/analyze.md): a TP group that leaves its HB domain; pipeline
neighbours on different rails (rank stride not a multiple of K); DP or
expert-DP groups whose members need another rail. The fix names an order that
keeps every byte on HB and rails when one exists (autoplace.py), else how much
the best order cuts and a dp that would do it. EP groups that span rails are a
note, not a problem: that all-to-all is what forwarding over HB is for.
"""

from __future__ import annotations

from math import gcd

import numpy as np

from .autoplace import auto_order, rail_aligned_hint
from .cluster import Cluster
from .job import Job
from .network import Rates
from .placement import CROSS, HB, Placement, PlacementProblem, dim_sizes, layout, strides


def place(job: Job, cluster: Cluster, order: tuple[str, ...] | None = None, problems: bool = True) -> Placement:
    """Place `job` on `cluster` in `order` (default: the job's) and find its problems
    (problems=False: the layout alone, as placement.layout)."""
    pl = layout(job, cluster, order)
    if problems:
        find_problems(pl)
    return pl


def place_auto(job: Job, cluster: Cluster, rates: Rates | None = None) -> Placement:
    """Place `job` in the order that keeps the most bytes off cross-rail paths."""
    return place(job, cluster, auto_order(job, cluster, rates))


def _share(kinds: np.ndarray, kind: int) -> float:
    return float((kinds == kind).mean()) if len(kinds) else 0.0


def find_problems(pl: Placement) -> None:
    p, K = pl.job.parallel, pl.cluster.hb_size
    if p.gpus < pl.cluster.gpus:
        pl.notes.append(f"the job uses {p.gpus:,} of the fabric's {pl.cluster.gpus:,} GPUs (the first {p.gpus // K if p.gpus % K == 0 else p.gpus / K:g} HB domains)")
    hint = None

    def fix() -> str:
        nonlocal hint
        if hint is None:
            hint = rail_aligned_hint(pl)
        return hint

    tp_kinds = pl.kinds["tp"]
    if p.tp > 1 and (tp_kinds != HB).any():
        if p.tp > K or K % p.tp:
            f = f"use a tp that divides K = {K} (e.g. tp {gcd(p.tp, K)}), so each TP group fits one HB domain"
        else:
            f = f"put tp first in the order (order: {'-'.join(('tp',) + tuple(d for d in pl.order if d != 'tp'))})"
        pl.problems.append(PlacementProblem(
            "tp", f"{(tp_kinds != HB).sum():,} of {len(tp_kinds):,} TP groups span HB domains: tensor-parallel traffic leaves NVLink", f))
    if p.pp > 1:
        cross = _share(pl.kinds["pp"], CROSS)
        if cross:
            stride = strides(dim_sizes(pl.job), pl.order)["pp"]
            pl.problems.append(PlacementProblem(
                "pp", f"{cross:.0%} of pipeline neighbours sit on different rails (rank stride {stride} is not a multiple of K = {K}): "
                      f"their activations cross rails", fix()))
    for name, label in (("dp", "DP"), ("edp", "expert-DP")):
        if name == "edp" and p.ep == 1:
            continue
        k = pl.kinds[name]
        cross = _share(k, CROSS)
        if cross:
            pl.problems.append(PlacementProblem(
                "dp", f"{cross:.0%} of {label} groups have members on different rails that no rail joins: their gradient reduction crosses rails",
                fix()))
    if p.ep > 1:
        cross = _share(pl.kinds["ep"], CROSS)
        if cross:
            pl.notes.append(f"{cross:.0%} of EP groups span rails: their all-to-all is forwarded through the HB domain on rail-only (PXN)")

