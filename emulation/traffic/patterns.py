"""Collective traffic patterns planned from the rail-only layout of fabric.json (pure).

Patterns, planned from the rail-only layout of fabric.json:

- ``ring-allreduce``: per rail, a ring over the rail's GPUs in HB-domain order
  (the cross-domain step of a hierarchical data-parallel all-reduce); every
  rail's ring runs at the same time. Each GPU sends one flow of BYTES to its
  successor.
- ``all-to-all``: every GPU sends BYTES to every GPU of every *other* HB
  domain (MoE expert exchange). Pairs inside one HB domain are left out: they
  travel over NVLink in the rail-only fabric and in its rail-optimized
  baseline alike. On a rail-only fabric a cross-rail flow is addressed to the
  destination GPU and forwarded by the kernel routes the compiler wrote:
  over the source's HB domain to the GPU of the destination's rank (``via``),
  then over the destination's rail; on the baseline it crosses the spine.

Schedules of the all-to-all (``schedule``):

- ``phased`` (the default; how NCCL runs an all-to-all): (D-1)*K steps for D
  HB domains of K GPUs. In step (d, s) GPU (domain a, rank r) sends to GPU
  (a+d mod D, r+s mod K), so every GPU sends one flow and receives one per
  step (a permutation: a non-blocking fabric does not congest) and a step
  starts when the previous one has finished. Steps with s = 0 are same-rail,
  steps with s != 0 are cross-rail (forwarded on rail-only).
- ``concurrent``: all flows at once (the old plan; on a fabric with ECMP it
  measures hash collisions as much as bandwidth).
- ``two-phase`` (rail-only only; the hierarchical, store-and-forward form of
  PXN the paper's overhead assumes): K-1 HB steps in which GPU (a, r) hands
  GPU (a, r+s) over the HB domain the (D-1)*BYTES destined to rank r+s
  (``hb`` flows to its HB address), then D-1 rail steps in which GPU (a, r)
  sends K*BYTES to GPU (a+d, r) over its own rail. The same bytes reach the
  same GPUs; nothing is forwarded by the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from railonly.fabric.input.problems import InputError, Problem
from ..checks.plan import CheckPlan

PATTERNS = ("ring-allreduce", "all-to-all")
SCHEDULES = ("phased", "concurrent", "two-phase")
BASE_PORT = 5201


@dataclass(frozen=True)
class Flow:
    src: str
    dst: str
    via: str | None
    bytes: int
    port: int = 0
    step: int = 0
    hb: bool = False  # over the HB domain only, to dst's HB address (two-phase)
    pair_class: str = ""  # job replay: the class its bytes are counted in (job_plan.CLASSES)
    group: int = -1  # job replay: index of the group it serves in its phase


def _domains(cp: CheckPlan) -> tuple[list[int], list[int], dict[tuple[int, int], str]]:
    doms = sorted({g.hb for g in cp.gpus.values()})
    ranks = sorted({g.rank for g in cp.gpus.values()})
    return doms, ranks, {(g.hb, g.rank): g.name for g in cp.gpus.values()}


def plan_flows(cp: CheckPlan, pattern: str, nbytes: int, schedule: str = "phased") -> list[Flow]:
    """The flows of a pattern, each with its step (pure). ring-allreduce is one step."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}")
    pairs: list[tuple[str, str, int, int, bool]] = []  # src, dst, step, bytes, hb
    if pattern == "ring-allreduce":
        for r in sorted(cp.rails):
            m = cp.rails[r]
            if len(m) > 1:
                pairs += [(m[i], m[(i + 1) % len(m)], 0, nbytes, False) for i in range(len(m))]
    elif pattern == "all-to-all":
        doms, ranks, by = _domains(cp)
        D, K = len(doms), len(ranks)
        if schedule == "concurrent":
            names = sorted(cp.gpus, key=lambda n: (cp.gpus[n].hb, cp.gpus[n].rail))
            pairs = [(a, b, 0, nbytes, False) for a in names for b in names if cp.gpus[a].hb != cp.gpus[b].hb]
        elif schedule == "phased":
            step = 0
            for d in range(1, D):
                for s in range(K):
                    for ai, a in enumerate(doms):
                        for ri, r in enumerate(ranks):
                            src, dst = by.get((a, r)), by.get((doms[(ai + d) % D], ranks[(ri + s) % K]))
                            if src and dst:
                                pairs.append((src, dst, step, nbytes, False))
                    step += 1
        else:  # two-phase
            if cp.topology != "rail-only":
                raise InputError([Problem("--schedule", "two-phase is rail-only's store-and-forward schedule (HB shuffle, then rails); this lab is rail-optimized", "use --schedule phased or concurrent", file="command line")])
            step = 0
            for s in range(1, K):  # HB shuffle: what rank r+s's peers will get, moved to rank r+s
                for a in doms:
                    for ri, r in enumerate(ranks):
                        src, dst = by.get((a, r)), by.get((a, ranks[(ri + s) % K]))
                        if src and dst:
                            n_peers = sum(1 for b in doms if b != a and (b, ranks[(ri + s) % K]) in by)
                            pairs.append((src, dst, step, n_peers * nbytes, True))
                step += 1
            for d in range(1, D):  # rail steps: each GPU carries its whole HB domain's data for one peer
                for ai, a in enumerate(doms):
                    for r in ranks:
                        src, dst = by.get((a, r)), by.get((doms[(ai + d) % D], r))
                        if src and dst:
                            n_src = sum(1 for q in ranks if (a, q) in by)
                            pairs.append((src, dst, step, n_src * nbytes, False))
                step += 1
    else:
        raise ValueError(f"unknown pattern {pattern!r}")
    by_rail = {(g.hb, g.rail): g.name for g in cp.gpus.values()}
    out = []
    for i, (a, b, step, n, hb) in enumerate(pairs):
        ga, gb = cp.gpus[a], cp.gpus[b]
        via = None
        if not hb and cp.topology == "rail-only" and ga.rail != gb.rail:
            via = by_rail.get((ga.hb, gb.rail))
        out.append(Flow(a, b, via, n, BASE_PORT + i, step, hb))
    return out


def steps_of(flows: list[Flow]) -> list[list[Flow]]:
    """Flows grouped by step, in step order (pure)."""
    groups: dict[int, list[Flow]] = {}
    for f in flows:
        groups.setdefault(f.step, []).append(f)
    return [groups[k] for k in sorted(groups)]
