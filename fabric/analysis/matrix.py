"""Who talks to whom: GPU pairs of an iteration, silent pairs, the HB-domain matrix.

Pairs follow the collectives' algorithms: ring hops (flat rings in rank order;
grid groups as an HB ring in each domain plus one ring per rail), every pair
of an all-to-all, pipeline neighbours both ways. The matrix is kept sparse
(domain pairs that exchange bytes) so 4,096 domains cost nothing.
"""

from __future__ import annotations

import csv
import io

import numpy as np

from .placement import CLASSES, Placement, classify, pair_class
from .traffic import Collective


def _ring_pairs(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return rows.ravel(), np.roll(rows, -1, axis=1).ravel()


def collective_pairs(c: Collective, pl: Placement) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(src, dst, bytes per iteration) of every directed GPU pair the collective uses."""
    K = pl.cluster.hb_size
    g = c.groups
    if c.parallelism == "pp":
        a, b = pl.pp_pairs()
        per = c.payload * c.calls / 2
        return np.concatenate([a, b]), np.concatenate([b, a]), np.full(2 * len(a), per)
    n = g.shape[1]
    if n == 1 or not g.size:
        z = np.zeros(0, dtype=np.int64)
        return z, z, np.zeros(0)
    if c.op == "all-to-all":
        a = np.repeat(g, n, axis=1).ravel()
        b = np.tile(g, (1, n)).ravel()
        keep = a != b
        return a[keep], b[keep], np.full(int(keep.sum()), c.payload / n * c.calls)
    ar = c.op == "all-reduce"
    factor = 2 * (n - 1) / n if ar else (n - 1) / n
    kinds = classify(g, K)
    src, dst, w = [], [], []
    flat = g[kinds != 3]
    if len(flat):
        a, b = _ring_pairs(flat)
        src.append(a), dst.append(b), w.append(np.full(len(a), factor * c.payload * c.calls))
    grid = g[kinds == 3]
    if len(grid):
        doms = len(np.unique(grid[0] // K))
        per = n // doms
        cube = grid.reshape(len(grid), doms, per)
        a, b = _ring_pairs(cube.reshape(-1, per))  # HB ring inside each domain
        hb = (per - 1) / per * c.payload * (2 if ar else 1)
        src.append(a), dst.append(b), w.append(np.full(len(a), hb * c.calls))
        a, b = _ring_pairs(cube.transpose(0, 2, 1).reshape(-1, doms))  # one ring per rail
        rail = (2 if ar else 1) * (doms - 1) / doms * c.payload / per
        src.append(a), dst.append(b), w.append(np.full(len(a), rail * c.calls))
    return np.concatenate(src), np.concatenate(dst), np.concatenate(w)


def all_pairs(colls: list[Collective], pl: Placement):
    parts = [collective_pairs(c, pl) for c in colls]
    parts = [p for p in parts if len(p[0])]
    if not parts:
        z = np.zeros(0, dtype=np.int64)
        return z, z, np.zeros(0)
    return tuple(np.concatenate(x) for x in zip(*parts))


def silent_pair_share(colls: list[Collective], pl: Placement) -> float:
    """Share of the job's unordered GPU pairs that exchange no byte in an iteration."""
    n = pl.gpus
    if n < 2:
        return 1.0
    a, b, w = all_pairs(colls, pl)
    keep = (w > 0) & (a != b)
    lo, hi = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
    talking = len(np.unique(lo.astype(np.int64) * n + hi))
    return 1 - talking / (n * (n - 1) / 2)


def domain_matrix(colls: list[Collective], pl: Placement) -> list[tuple[int, int, float, float, float]]:
    """Sparse (src domain, dst domain, hb, rail, cross_rail bytes) rows, sorted."""
    K = pl.cluster.hb_size
    a, b, w = all_pairs(colls, pl)
    if not len(a):
        return []
    cls = pair_class(a, b, K)
    D = pl.cluster.hb_count
    codes = (a // K) * D + (b // K)
    keys, inv = np.unique(codes, return_inverse=True)
    sums = np.zeros((len(keys), 3))
    for c in range(3):
        sums[:, c] = np.bincount(inv, weights=np.where(cls == c, w, 0.0), minlength=len(keys))
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
