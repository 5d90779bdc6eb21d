"""An iteration's communication: collectives in schedule order, bytes by class.

Bytes per GPU (bf16, 2 bytes an element; docs/analyze.md, from the Megatron papers):

  tp   per layer and micro-batch, 4 all-reduces of 2 b s h (6 with full recompute);
       with sp the same bytes as all-gathers + reduce-scatters. Ring: 2 (n-1)/n S a GPU.
  ep   per MoE layer and micro-batch, 4 all-to-alls of top_k 2 b s h / tp (6 with full
       recompute); a GPU sends (n-1)/n of it.
  pp   per micro-batch and virtual stage, one activation forward and one gradient
       backward of 2 b s h / tp between neighbouring stages.
  dp   the GPU's dense gradient shard 2 P / (tp pp), ring all-reduce over dp (the
       distributed optimizer's reduce-scatter + all-gather moves the same); expert
       gradients over the expert-data-parallel group (dp / ep).

A group that is a full grid of d domains x c rails reduces hierarchically: HB
reduce-scatter, rail all-reduce of S / c, HB all-gather. A group that needs
another rail runs a flat ring in rank order (some hops cross rails).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .job import Job
from .network import Rates, Step, step_time
from .placement import CLASSES, Placement, pair_class

BYTES = 2  # bf16


@dataclass(frozen=True)
class GroupType:
    """Groups of a collective that move the same bytes the same way."""

    groups: int  # how many groups of this type
    members: int  # GPUs in each
    steps: tuple[Step, ...]  # run one after another
    kind: str  # hb | rail | hb+rail | cross-rail

    def time(self, network: str, rates: Rates) -> float:
        return sum(step_time(s, network, rates) for s in self.steps)

    def bytes(self) -> np.ndarray:
        """Bytes a member sends per call, by class (hb, rail, cross_rail)."""
        out = np.zeros(3)
        for s in self.steps:
            out += s.bytes()
        return out


@dataclass
class Collective:
    """One kind of collective of the iteration (e.g. TP all-gather), run `calls` times per GPU.

    `groups` lists the member GPUs of every group (rows); pp rows are pipelines in
    stage order. `exposed` is the share of its time not hidden behind compute.
    """

    parallelism: str  # tp | ep | pp | dp
    op: str  # all-reduce | all-gather | reduce-scatter | all-to-all | send-recv
    payload: float  # S, bytes per call (per GPU input)
    calls: float  # per GPU per iteration
    groups: np.ndarray = field(repr=False)
    types: list[GroupType] = field(default_factory=list)
    params: str = ""  # dp: dense | experts
    exposed: float = 1.0

    @property
    def group_size(self) -> int:
        return int(self.groups.shape[1]) if self.groups.size else 0

    @property
    def gpus(self) -> int:
        return sum(t.groups * t.members for t in self.types)

    def time(self, network: str, rates: Rates) -> float:
        """Seconds of one call: the slowest group type paces it (groups run at once)."""
        return max((t.time(network, rates) for t in self.types), default=0.0)

    def bytes_per_gpu(self) -> np.ndarray:
        """Bytes a GPU sends per call by class (hb, rail, cross_rail), averaged over the job's GPUs."""
        total = np.zeros(3)
        for t in self.types:
            total += t.groups * t.members * t.bytes()
        return total / max(1, self.gpus)

    def kind(self) -> str:
        kinds = {t.kind for t in self.types if t.kind != "none"}
        for k in ("cross-rail", "hb+rail", "rail", "hb"):
            if k in kinds:
                return k
        return "none"


def _share(counts) -> tuple[float, float, float]:
    total = float(sum(counts))
    return tuple(float(c) / total for c in counts) if total else (1.0, 0.0, 0.0)


def _kind(n: int, doms: int, rails: int, cross: bool) -> str:
    if n == 1:
        return "none"
    if doms == 1:
        return "hb"
    if rails == 1:
        return "rail"
    if doms * rails == n and not cross:
        return "hb+rail"
    return "cross-rail"


def _run_counts_sq(keys: np.ndarray) -> np.ndarray:
    """Per row: the sum over distinct values of (occurrences)^2 (ordered pairs sharing a value, self included)."""
    s = np.sort(keys, axis=1)
    n = s.shape[1]
    starts = np.ones_like(s, dtype=bool)
    starts[:, 1:] = s[:, 1:] != s[:, :-1]
    idx = np.where(starts, np.arange(n), 0)
    first = np.maximum.accumulate(idx, axis=1)  # start of the run each element belongs to
    run_len = np.zeros_like(s)
    np.add.at(run_len, (np.repeat(np.arange(s.shape[0]), n), first.ravel()), 1)
    return (run_len.astype(np.int64) ** 2).sum(axis=1)


def _features(groups: np.ndarray, K: int, pattern: str) -> np.ndarray:
    """Per group: domains, rails and the pair-class counts of its ring hops / all ordered pairs."""
    n = groups.shape[1]
    s = np.sort(groups // K, axis=1)
    doms = 1 + (np.diff(s, axis=1) != 0).sum(axis=1)
    s = np.sort(groups % K, axis=1)
    rails = 1 + (np.diff(s, axis=1) != 0).sum(axis=1)
    if pattern == "ring":
        cls = pair_class(groups, np.roll(groups, -1, axis=1), K)
        counts = np.stack([(cls == c).sum(axis=1) for c in range(3)], axis=1)
    else:  # all ordered pairs, counted without enumerating n^2 of them
        same_dom = _run_counts_sq(groups // K) - n
        same_rail = _run_counts_sq(groups % K) - n
        counts = np.stack([same_dom, same_rail, n * (n - 1) - same_dom - same_rail], axis=1)
    return np.column_stack([doms, rails, counts])


def ring_types(groups: np.ndarray, K: int, S: float, op: str) -> list[GroupType]:
    """Group types of a ring collective of payload S (all-reduce, all-gather or reduce-scatter)."""
    n = groups.shape[1]
    if n == 1 or S == 0:
        return [GroupType(groups.shape[0], n, (), "none")]
    factor = 2 * (n - 1) / n if op == "all-reduce" else (n - 1) / n
    feats, counts = np.unique(_features(groups, K, "ring"), axis=0, return_counts=True)
    out = []
    for (doms, rails, h, r, c), cnt in zip(feats.tolist(), counts.tolist()):
        kind = _kind(n, doms, rails, False)
        if kind == "hb+rail":  # hierarchical: HB, then the rails, then HB
            per = n // doms
            hb_part = (per - 1) / per * S
            rail_part = (2 if op == "all-reduce" else 1) * (doms - 1) / doms * S / per
            if op == "all-reduce":
                steps = (Step("ring", hb_part, (1, 0, 0)), Step("ring", rail_part, (0, 1, 0)), Step("ring", hb_part, (1, 0, 0)))
            else:
                steps = (Step("ring", hb_part, (1, 0, 0)), Step("ring", rail_part, (0, 1, 0)))
        else:
            kind = _kind(n, doms, rails, c > 0)
            steps = (Step("ring", factor * S, _share((h, r, c))),)
        out.append(GroupType(int(cnt), n, steps, kind))
    return out


def a2a_types(groups: np.ndarray, K: int, S: float) -> list[GroupType]:
    n = groups.shape[1]
    if n == 1 or S == 0:
        return [GroupType(groups.shape[0], n, (), "none")]
    feats, counts = np.unique(_features(groups, K, "pairs"), axis=0, return_counts=True)
    out = []
    for (doms, rails, h, r, c), cnt in zip(feats.tolist(), counts.tolist()):
        out.append(GroupType(int(cnt), n, (Step("all-to-all", (n - 1) / n * S, _share((h, r, c))),), _kind(n, doms, rails, c > 0)))
    return out


def p2p_types(pl: Placement, S: float) -> list[GroupType]:
    a, b = pl.pp_pairs()
    if not len(a) or S == 0:
        return [GroupType(pl.gpus, 1, (), "none")]
    cls = pair_class(a, b, pl.cluster.hb_size)
    counts = np.bincount(cls, minlength=3)
    # every sender sends S per call; spread over the job's GPUs for the per-GPU average
    senders = len(a)
    kind = "cross-rail" if counts[2] else ("rail" if counts[1] else "hb")
    return [GroupType(1, senders, (Step("p2p", S, _share(counts.tolist())),), kind)]


def stage_layers(job: Job) -> tuple[int, int]:
    """(layers per stage, MoE layers of the stage with the most)."""
    m, p = job.model, job.parallel
    per = m.layers // p.pp
    most = 0
    for s in range(p.pp):
        most = max(most, sum(1 for layer in range(s * per, (s + 1) * per) if m.is_moe_layer(layer)))
    return per, most


def collectives(job: Job, pl: Placement) -> list[Collective]:
    """The iteration's collectives in schedule order: tp, ep, pp (per micro-batch), then dp."""
    m, p = job.model, job.parallel
    K = pl.cluster.hb_size
    b, s, h = p.micro_batch, m.seq, m.hidden
    mb = p.micro_batches
    layers, _ = stage_layers(job)
    moe_avg = m.moe_layers / p.pp
    act = BYTES * b * s * h  # one activation tensor of a micro-batch
    out: list[Collective] = []

    tp_calls = mb * layers * (6 if p.recompute == "full" else 4)
    if p.tp > 1:
        g = pl.groups["tp"]
        if p.sp:
            for op in ("all-gather", "reduce-scatter"):
                out.append(Collective("tp", op, act, tp_calls, g, ring_types(g, K, act, op)))
        else:
            out.append(Collective("tp", "all-reduce", act, tp_calls, g, ring_types(g, K, act, "all-reduce")))
    if m.is_moe and p.ep > 1:
        g = pl.groups["ep"]
        payload = m.top_k * act / p.tp
        calls = mb * moe_avg * (6 if p.recompute == "full" else 4)
        out.append(Collective("ep", "all-to-all", payload, calls, g, a2a_types(g, K, payload)))
    if p.pp > 1:
        payload = act / p.tp
        calls = 2 * mb * p.vpp
        out.append(Collective("pp", "send-recv", payload, calls, pl.groups["pp"], p2p_types(pl, payload)))
    if p.dp > 1:
        g = pl.groups["dp"]
        grads = BYTES * m.dense_params / (p.tp * p.pp)
        out.append(Collective("dp", "all-reduce", grads, 1, g, ring_types(g, K, grads, "all-reduce"), "dense", 1 - p.dp_overlap))
    if m.is_moe and p.dp // p.ep > 1:
        g = pl.groups["edp"]
        grads = BYTES * m.expert_params / (p.tp * p.pp * p.ep)
        out.append(Collective("dp", "all-reduce", grads, 1, g, ring_types(g, K, grads, "all-reduce"), "experts", 1 - p.dp_overlap))
    return out


def class_bytes(colls: list[Collective]) -> dict[str, float]:
    """Bytes sent in one iteration by pair class, all GPUs together."""
    total = np.zeros(3)
    for c in colls:
        total += c.calls * c.bytes_per_gpu() * c.gpus
    return dict(zip(CLASSES, map(float, total)))


def all_to_all_overhead(colls: list[Collective], rates: Rates, form: str = "paper") -> float | None:
    """The expert all-to-all's time on rail-only over rail-optimized, minus one (None without EP).

    "paper": the model's own rail-only path (every inter-domain byte crosses NVLink before the
    NIC), the convention of the Rail-only paper's 8.2% / 11.2%. "store-forward": PXN as it
    runs, where only the bytes bound for another rail take the NVLink hop first: (K-1)/K of
    the paper's figure for a uniform all-to-all (the lab replay runs this form)."""
    ep = [c for c in colls if c.parallelism == "ep"]
    if not ep:
        return None
    flat = Rates(rates.nic, rates.hb, 1.0)  # the overhead is against a non-blocking spine
    if form == "paper":
        ro = sum(c.time("rail-only", rates) for c in ep)
        opt = sum(c.time("rail-optimized", flat) for c in ep)
        return ro / opt - 1 if opt else 0.0
    tot_ro = tot_opt = 0.0
    for c in ep:
        for t in c.types:
            for s in t.steps:
                hb, rail, cross = s.bytes()
                opt = max(hb / rates.hb, (rail + cross) / rates.nic)
                tot_opt = max(tot_opt, opt)
                tot_ro = max(tot_ro, opt + cross / rates.hb)
    return tot_ro / tot_opt - 1 if tot_opt else 0.0
