"""Ranks onto GPUs, and which path each group's traffic takes.

Rank g runs on GPU g of the fabric: HB domain g // K, local rank (= rail)
g mod K. The job's rank order (fastest-varying first) decides which ranks form
a TP, DP, EP or PP group, so the order alone decides where traffic goes. Every
group is classified:

  hb          all members in one HB domain (NVLink)
  rail        all members on one rail, in different domains (one rail's network)
  hb+rail     a full grid: d domains x c rails (hierarchical: HB, then rails)
  cross-rail  anything else: some pair needs another rail (forwarded over HB
              on rail-only, the spine on rail-optimized)

Groups are numpy arrays (groups x members, members by rank), so a 32,768-GPU
placement classifies in milliseconds. The verdict (problems with fixes) is in
verdict.py, which can try other orders (autoplace.py) without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..graph.build import gpu_node_name
from ..input.problems import InputError
from .cluster import Cluster
from .job import Job

CLASSES = ("hb", "rail", "cross_rail")  # pair classes (bytes are counted by these)
KINDS = ("none", "hb", "rail", "hb+rail", "cross-rail")  # group kinds
NONE, HB, RAIL, GRID, CROSS = range(len(KINDS))  # their indices, as classify returns them


def dim_sizes(job: Job) -> dict[str, int]:
    p = job.parallel
    return {"tp": p.tp, "cp": 1, "ep": p.ep, "dp": p.dp // p.ep, "pp": p.pp}


def strides(sizes: dict[str, int], order: tuple[str, ...]) -> dict[str, int]:
    """Rank distance between neighbours along each dimension (fastest-varying first)."""
    out, s = {}, 1
    for d in order:
        out[d] = s
        s *= sizes.get(d, 1)
    return out


def rank_groups(sizes: dict[str, int], order: tuple[str, ...], vary: tuple[str, ...]) -> np.ndarray:
    """Ranks grouped by the dims in `vary` (groups x members, members ascending)."""
    dims = [d for d in order if d in sizes]
    shape = [sizes[d] for d in reversed(dims)]  # C order: slowest first
    ranks = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    axes = list(reversed(dims))
    fixed = [axes.index(d) for d in axes if d not in vary]
    varying = [axes.index(d) for d in axes if d in vary]
    n = int(np.prod([sizes[d] for d in vary])) if vary else 1
    g = ranks.transpose(fixed + varying).reshape(-1, n)
    return np.sort(g, axis=1)


def _distinct_per_row(a: np.ndarray) -> np.ndarray:
    s = np.sort(a, axis=1)
    return 1 + (np.diff(s, axis=1) != 0).sum(axis=1)


def classify(groups: np.ndarray, K: int) -> np.ndarray:
    """Kind index (into KINDS) of every group."""
    n = groups.shape[1]
    if n == 1:
        return np.zeros(groups.shape[0], dtype=np.int8)
    doms = _distinct_per_row(groups // K)
    rails = _distinct_per_row(groups % K)
    kind = np.full(groups.shape[0], CROSS, dtype=np.int8)
    kind[doms * rails == n] = GRID
    kind[rails == 1] = RAIL
    kind[doms == 1] = HB
    return kind


def pair_class(a: np.ndarray, b: np.ndarray, K: int) -> np.ndarray:
    """0 hb, 1 rail, 2 cross-rail for GPU pairs (a[i], b[i])."""
    same_dom = (a // K) == (b // K)
    same_rail = (a % K) == (b % K)
    return np.where(same_dom, 0, np.where(same_rail, 1, 2)).astype(np.int8)


@dataclass(frozen=True)
class PlacementProblem:
    group: str  # tp | pp | dp | ep
    message: str
    fix: str


@dataclass
class Placement:
    job: Job
    cluster: Cluster
    order: tuple[str, ...]
    groups: dict[str, np.ndarray]  # tp, dp, ep, edp (expert data parallel), pp (pipelines, stage order)
    kinds: dict[str, np.ndarray]  # group kind per group (KINDS index); pp: per neighbour pair
    problems: list[PlacementProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def gpus(self) -> int:
        return self.job.parallel.gpus

    @property
    def ok(self) -> bool:
        return not self.problems

    def kind_counts(self, name: str) -> dict[str, int]:
        counts = np.bincount(self.kinds[name], minlength=len(KINDS))
        return {KINDS[i]: int(c) for i, c in enumerate(counts) if c}

    def pp_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(sender, receiver) of every pipeline hop, forward direction; with vpp > 1
        the last stage also feeds the first (the next virtual chunk)."""
        pipes = self.groups["pp"]
        a, b = pipes[:, :-1].ravel(), pipes[:, 1:].ravel()
        if self.job.parallel.vpp > 1 and pipes.shape[1] > 1:
            a, b = np.concatenate([a, pipes[:, -1]]), np.concatenate([b, pipes[:, 0]])
        return a, b

    def rank_to_gpu(self) -> list[dict]:
        """What a launcher needs per rank: GPU (domain, local rank) and the rank's group coordinates."""
        sizes = dim_sizes(self.job)
        step = strides(sizes, self.order)
        K = self.cluster.hb_size
        out = []
        for r in range(self.gpus):
            row = {"rank": r, "gpu": r, "node": gpu_node_name(r // K, r % K), "hb_domain": r // K, "local_rank": r % K}
            for d in ("tp", "pp", "dp", "ep"):
                row[f"{d}_rank"] = (r // step[d]) % sizes[d]
            row["dp_rank"] = row["dp_rank"] * sizes["ep"] + row["ep_rank"]
            out.append(row)
        return out


def layout(job: Job, cluster: Cluster, order: tuple[str, ...] | None = None) -> Placement:
    """Place `job` on the first tp x pp x dp GPUs of `cluster` in `order` (default: the job's),
    groups classified; verdict.place adds the problems and their fixes."""
    p = job.parallel
    if p.gpus > cluster.gpus:
        raise InputError([job.problem("parallel", f"the job needs tp x pp x dp = {p.tp} x {p.pp} x {p.dp} = {p.gpus:,} GPUs, "
                                      f"the fabric '{cluster.name}' has {cluster.gpus:,}",
                                      f"lower dp to at most {max(1, cluster.gpus // (p.tp * p.pp))}, or use a larger design")])
    order = order or p.order
    sizes = dim_sizes(job)
    groups = {
        "tp": rank_groups(sizes, order, ("tp",)),
        "dp": rank_groups(sizes, order, ("ep", "dp")),
        "ep": rank_groups(sizes, order, ("ep",)),
        "edp": rank_groups(sizes, order, ("dp",)),
    }
    pipes = rank_groups(sizes, order, ("pp",))
    # members of a pipeline sorted by rank are not necessarily in stage order: order by the pp coordinate
    groups["pp"] = _stage_order(pipes, sizes, order)
    K = cluster.hb_size
    kinds = {k: classify(g, K) for k, g in groups.items() if k != "pp"}
    kinds["ep"][kinds["ep"] == GRID] = CROSS  # an all-to-all on a grid has pairs on neither a domain nor a rail
    pl = Placement(job, cluster, tuple(order), groups, kinds)
    a, b = pl.pp_pairs()
    kinds["pp"] = np.array([HB, RAIL, CROSS], dtype=np.int8)[pair_class(a, b, K)] if len(a) else np.zeros(0, dtype=np.int8)
    return pl


def _stage_order(pipes: np.ndarray, sizes: dict[str, int], order: tuple[str, ...]) -> np.ndarray:
    stage = (pipes // strides(sizes, order)["pp"]) % sizes["pp"]
    idx = np.argsort(stage, axis=1, kind="stable")
    return np.take_along_axis(pipes, idx, axis=1)


