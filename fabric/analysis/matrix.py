"""Who talks to whom: GPU pairs of an iteration, silent pairs, the HB-domain matrix.

Pairs follow the collectives' algorithms: ring hops (flat rings in rank order;
grid groups as an HB ring in each domain plus one ring per rail), every pair
of an all-to-all, pipeline neighbours both ways. The matrix is kept sparse
(domain pairs that exchange bytes) so 4,096 domains cost nothing, and the
n^2 pairs of all-to-all groups are enumerated in bounded chunks (or counted by
formula, for silent pairs).
"""

from __future__ import annotations

import csv
import io

import numpy as np

from .placement import CLASSES, GRID, Placement, classify, pair_class
from .traffic import Collective


CHUNK_PAIRS = 1 << 22  # all-to-all pairs are enumerated in chunks of at most this many


def _ring_pairs(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return rows.ravel(), np.roll(rows, -1, axis=1).ravel()


def collective_pairs(c: Collective, pl: Placement):
    """Chunks of (src, dst, bytes per iteration) of every directed GPU pair the collective uses."""
    K = pl.cluster.hb_size
    g = c.groups
    if c.parallelism == "pp":
        a, b = pl.pp_pairs()
        per = c.payload * c.calls / 2
        yield np.concatenate([a, b]), np.concatenate([b, a]), np.full(2 * len(a), per)
        return
    n = g.shape[1]
    if n == 1 or not g.size:
        return
    if c.op == "all-to-all":
        rows = max(1, CHUNK_PAIRS // (n * n))
        for start in range(0, len(g), rows):
            part = g[start:start + rows]
            a = np.repeat(part, n, axis=1).ravel()
            b = np.tile(part, (1, n)).ravel()
            keep = a != b
            yield a[keep], b[keep], np.full(int(keep.sum()), c.payload / n * c.calls)
        return
    ar = c.op == "all-reduce"
    factor = 2 * (n - 1) / n if ar else (n - 1) / n
    kinds = classify(g, K)
    flat = g[kinds != GRID]
    if len(flat):
        a, b = _ring_pairs(flat)
        yield a, b, np.full(len(a), factor * c.payload * c.calls)
    grid = g[kinds == GRID]
    if len(grid):
        doms = len(np.unique(grid[0] // K))
        per = n // doms
        cube = grid.reshape(len(grid), doms, per)
        a, b = _ring_pairs(cube.reshape(-1, per))  # HB ring inside each domain
        hb = (per - 1) / per * c.payload * (2 if ar else 1)
        yield a, b, np.full(len(a), hb * c.calls)
        a, b = _ring_pairs(cube.transpose(0, 2, 1).reshape(-1, doms))  # one ring per rail
        rail = (2 if ar else 1) * (doms - 1) / doms * c.payload / per
        yield a, b, np.full(len(a), rail * c.calls)


def iter_pairs(colls: list[Collective], pl: Placement):
    for c in colls:
        for a, b, w in collective_pairs(c, pl):
            if len(a):
                yield a, b, w


def silent_pair_share(colls: list[Collective], pl: Placement) -> float:
    """Share of the job's unordered GPU pairs that exchange no byte in an iteration.

    All-to-all groups (disjoint, every pair talks) are counted by formula; the other
    collectives' pairs, O(GPUs) each, are enumerated and the ones inside an
    all-to-all group dropped, so nothing is counted twice and nothing grows as n^2.
    """
    n = pl.gpus
    if n < 2:
        return 1.0
    group_of = None
    talking = 0
    codes = []
    for c in colls:
        if c.op == "all-to-all" and c.group_size > 1:
            talking += c.groups.shape[0] * c.group_size * (c.group_size - 1) // 2
            group_of = np.empty(n, dtype=np.int64)
            group_of[c.groups.ravel()] = np.repeat(np.arange(c.groups.shape[0]), c.group_size)
    for c in colls:
        if c.op == "all-to-all":
            continue
        for a, b, w in collective_pairs(c, pl):
            keep = (w > 0) & (a != b)
            if group_of is not None:
                keep &= group_of[a] != group_of[b]
            lo, hi = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
            codes.append(np.unique(lo.astype(np.int64) * n + hi))
    if codes:
        talking += len(np.unique(np.concatenate(codes)))
    return 1 - talking / (n * (n - 1) / 2)


def domain_matrix(colls: list[Collective], pl: Placement) -> list[tuple[int, int, float, float, float]]:
    """Sparse (src domain, dst domain, hb, rail, cross_rail bytes) rows, sorted."""
    K, D = pl.cluster.hb_size, pl.cluster.hb_count
    keys = np.zeros(0, dtype=np.int64)
    sums = np.zeros((0, 3))
    for a, b, w in iter_pairs(colls, pl):
        cls = pair_class(a, b, K)
        codes = np.concatenate([keys, (a // K) * D + (b // K)])
        weights = np.concatenate([sums, np.where(cls[:, None] == np.arange(3), w[:, None], 0.0)])
        keys, inv = np.unique(codes, return_inverse=True)
        sums = np.zeros((len(keys), 3))
        for k in range(3):
            sums[:, k] = np.bincount(inv, weights=weights[:, k], minlength=len(keys))
    return [(int(k // D), int(k % D), *map(float, row)) for k, row in zip(keys, sums)]


def render_csv(rows) -> str:
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(["src_domain", "dst_domain", *(f"{c}_bytes" for c in CLASSES), "total_bytes"])
    for s, d, hb, rail, cross in rows:
        out.writerow([s, d, *(f"{x:.0f}" for x in (hb, rail, cross, hb + rail + cross))])
    return buf.getvalue()


def render_heatmap(rows, domains: int, title: str) -> bytes:
    """Bytes between HB domains (log colour), blocks of domains summed past 256."""
    from .plots import heatmap_png

    bins = min(domains, 256)
    size = -(-domains // bins)
    m = np.zeros((bins, bins))
    for s, d, hb, rail, cross in rows:
        m[s // size, d // size] += hb + rail + cross
    return heatmap_png(m, size, title)
