"""`--search` and `--sweep`.

Search: the best (tp, pp, dp, ep, micro-batch, vpp, recompute, distributed
optimizer: the job's setting or on) per network for
the job's model, global batch and GPU count (tp x cp x pp x dp = the job's GPUs,
cp as the job has it), among configurations whose memory estimate fits the GPU.
tp stays inside an HB domain (a divisor of kv_heads up to K). An empty result
says why (why_empty); a job that does not fit gets the fastest one that does
(would_fit). What makes it fast: memory is checked
first (no placement for what cannot fit); placement and collectives are built
once per (tp, pp, dp, ep) at micro-batch 1 and reused, since a call's time
scales with the micro-batch and the rest of the iteration is arithmetic.
`brute_force` evaluates the same space from scratch at every point (the bench's
baseline, and the test that both agree).

Sweep: one axis of the fabric or job (k, nic, hb, batch) over given values.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from dataclasses import dataclass

from .cluster import Cluster
from .job import RECOMPUTE, Job
from .memory import estimate
from .network import NETWORKS, Rates
from .placement import layout
from .timing import Result, assemble, call_times, evaluate, stage_compute_s
from .traffic import collectives

MICRO_BATCHES = (1, 2, 4, 8)
VPPS = (1, 2, 4)
SWEEP_AXES = {"k": "GPUs per HB domain (K)", "nic": "NIC Gb/s per GPU", "hb": "HB Gb/s per GPU", "batch": "global batch (sequences)"}


@dataclass(frozen=True)
class Best:
    job: Job
    result: Result
    memory_gb: float


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def candidates(job: Job, cluster: Cluster):
    """Every job variant of the space (before the memory check), in a fixed order."""
    m, p = job.model, job.parallel
    n = p.gpus // p.cp  # the job's context parallelism stays as it is
    for tp in _divisors(m.kv):  # a divisor of kv_heads (so of heads too)
        if tp > cluster.hb_size or n % tp:
            continue
        for pp in _divisors(m.layers):
            if n % (tp * pp):
                continue
            dp = n // (tp * pp)
            eps = [e for e in _divisors(dp) if m.is_moe and m.experts % e == 0] or [1]
            for ep in eps:
                for mb in MICRO_BATCHES:
                    if p.global_batch % (mb * dp):
                        continue
                    micro = p.global_batch // (mb * dp)
                    for vpp in VPPS:
                        if vpp > 1 and (pp == 1 or (m.layers // pp) % vpp or micro % pp):
                            continue
                        for rc in RECOMPUTE:
                            if p.sp and tp > 1 and m.seq % tp:
                                continue
                            # the distributed optimizer as the job has it, and on if it is off
                            for do in sorted({p.distributed_optimizer, True}):
                                yield job.replace(tp=tp, pp=pp, dp=dp, ep=ep, micro_batch=mb, vpp=vpp, recompute=rc,
                                                  distributed_optimizer=do)


def _better(best: Best | None, job: Job, r: Result, mem: float) -> bool:
    if best is None:
        return True
    def key(p, t: float) -> tuple:
        return (round(t, 9), p.tp, p.pp, p.ep, p.micro_batch, p.vpp, RECOMPUTE.index(p.recompute), p.distributed_optimizer)

    return key(job.parallel, r.iteration_s) < key(best.job.parallel, best.result.iteration_s)


def ideal_cluster(job: Job, cluster: Cluster) -> Cluster:
    """The ideal network's cluster: every GPU of the job in one HB domain (the paper's K = N), at the
    design's rates, so the ideal's best configuration does not depend on the design's K."""
    return dataclasses.replace(cluster, hb_size=job.parallel.gpus, hb_count=1)


def _split(networks) -> tuple[tuple[str, ...], bool]:
    return tuple(n for n in networks if n != "ideal"), "ideal" in networks


def search(job: Job, cluster: Cluster, rates: Rates, networks=NETWORKS) -> tuple[dict[str, Best], dict]:
    """({network: Best}, counts) over the space; counts say how much was evaluated. The ideal
    network is searched on its own cluster (K = N): tp is not held to the design's K there."""
    real, ideal = _split(networks)
    found, counts = _search(job, cluster, rates, real)
    if ideal:
        more, ideal_counts = _search(job, ideal_cluster(job, cluster), rates, ("ideal",))
        found.update(more)
        counts["ideal"] = {k: v for k, v in ideal_counts.items() if k != "least_memory"}
    return {n: found[n] for n in networks if n in found}, counts


def _search(job: Job, cluster: Cluster, rates: Rates, networks) -> tuple[dict[str, Best], dict]:
    if not networks:
        return {}, {"space": 0, "fit_memory": 0, "placements": 0}
    best: dict[str, Best | None] = {n: None for n in networks}
    cache: dict[tuple, dict] = {}
    counts = {"space": 0, "fit_memory": 0, "placements": 0}
    least: tuple[float, Job] | None = None
    for cand in candidates(job, cluster):
        counts["space"] += 1
        mem = estimate(cand)
        if least is None or mem["total_gb"] < least[0]:
            least = (mem["total_gb"], cand)
        if not mem["fits"]:
            continue
        counts["fit_memory"] += 1
        p = cand.parallel
        key = (p.tp, p.pp, p.dp, p.ep, p.vpp > 1, p.distributed_optimizer)
        if key not in cache:
            unit = cand.replace(micro_batch=1, vpp=2 if p.vpp > 1 else 1, global_batch=p.dp * p.pp * 2)
            colls = collectives(unit, layout(unit, cluster))
            cache[key] = {n: call_times(colls, n, rates) for n in networks}
            counts["placements"] += 1
        comp = stage_compute_s(cand)
        for n in networks:
            times = [(par, op, e, t * p.micro_batch if par != "dp" else t) for par, op, e, t in cache[key][n]]
            r = assemble(cand, times, n, comp)
            if _better(best[n], cand, r, mem["total_gb"]):
                best[n] = Best(cand, r, mem["total_gb"])
    if least is not None:
        counts["least_memory"] = {"gb": round(least[0], 3), "parallel": parallel_dict(least[1])}
    return {n: b for n, b in best.items() if b is not None}, counts


def why_empty(job: Job, cluster: Cluster, counts: dict) -> str:
    """Why the search found nothing, and what to change."""
    p, m = job.parallel, job.model
    if not counts["space"]:
        return (f"no split of the job's {p.gpus:,} GPUs works: tp must divide model.heads ({m.heads}) and be at most K = "
                f"{cluster.hb_size}, pp divide model.layers ({m.layers}), and micro_batch x dp divide global_batch "
                f"({p.global_batch}); change dp or global_batch")
    least = counts.get("least_memory")
    fix = "use more GPUs (dp) or a GPU with more memory (the search already tries the distributed optimizer)"
    if least:
        q = least["parallel"]
        return (f"none of the {counts['space']:,} configurations fits in {job.gpu.memory_gb:g} GB per GPU; the smallest needs "
                f"{least['gb']:.1f} GB (tp {q['tp']} pp {q['pp']} dp {q['dp']} micro-batch {q['micro_batch']} recompute "
                f"{q['recompute']}): {fix}")
    return f"no configuration fits in memory: {fix}"


def would_fit(job: Job, cluster: Cluster, rates: Rates) -> dict:
    """For a job that does not fit: the fastest configuration on its GPUs that does, or why none does."""
    found, counts = search(job, cluster, rates, ("rail-only",))
    best = found.get("rail-only")
    if best is None:
        return {"parallel": None, "text": why_empty(job, cluster, counts)}
    q = parallel_dict(best.job)
    return {"parallel": q, "memory_gb": round(best.memory_gb, 3), "iteration_s": best.result.iteration_s,
            "text": f"tp {q['tp']} pp {q['pp']} dp {q['dp']} ep {q['ep']} micro-batch {q['micro_batch']} vpp {q['vpp']} "
                    f"recompute {q['recompute']}" + (", distributed_optimizer: true" if q["distributed_optimizer"] else "")
                    + f" ({best.memory_gb:.1f} GB, {best.result.iteration_s:.3g} s an iteration on rail-only)"}


def brute_force(job: Job, cluster: Cluster, rates: Rates, networks=NETWORKS) -> dict[str, Best]:
    """The same space, every point placed and evaluated from scratch."""
    real, ideal = _split(networks)
    found = _brute_force(job, cluster, rates, real)
    if ideal:
        found.update(_brute_force(job, ideal_cluster(job, cluster), rates, ("ideal",)))
    return {n: found[n] for n in networks if n in found}


def _brute_force(job: Job, cluster: Cluster, rates: Rates, networks) -> dict[str, Best]:
    best: dict[str, Best | None] = {n: None for n in networks}
    for cand in candidates(job, cluster):
        mem = estimate(cand)
        if not mem["fits"]:
            continue
        results = evaluate(cand, layout(cand, cluster), rates, networks)
        for n in networks:
            if _better(best[n], cand, results[n], mem["total_gb"]):
                best[n] = Best(cand, results[n], mem["total_gb"])
    return {n: b for n, b in best.items() if b is not None}


def sweep_point(job: Job, cluster: Cluster, axis: str, value: float, do_search: bool = False) -> tuple[Job, Cluster] | str:
    """The job and cluster at one value of the axis, or why the point is skipped."""
    if axis == "k":
        k = int(value)
        cluster = dataclasses.replace(cluster, hb_size=k, hb_count=math.ceil(cluster.gpus / k))
    elif axis == "nic":
        cluster = dataclasses.replace(cluster, nic_gbps=float(value))
    elif axis == "hb":
        cluster = dataclasses.replace(cluster, hb_gbps=float(value))
    elif axis == "batch":
        p = job.parallel
        if int(value) % (p.micro_batch * p.dp) and not do_search:
            return f"global batch {int(value)} is not a multiple of micro_batch x dp ({p.micro_batch * p.dp})"
        job = job.replace(global_batch=int(value))
    return job, cluster


def sweep(job: Job, cluster: Cluster, axis: str, values: list[float], oversub: float = 1.0,
          do_search: bool = False) -> list[dict]:
    points = []
    for v in values:
        got = sweep_point(job, cluster, axis, v, do_search)
        if isinstance(got, str):
            points.append({"value": v, "note": got})
            continue
        j, c = got
        rates = Rates.of(c, oversub)
        if do_search:
            found, counts = search(j, c, rates)
            if any(n not in found for n in NETWORKS):  # the ideal alone may fit (its tp is not held to K)
                points.append({"value": v, "note": why_empty(j, c, counts)})
                continue
            results = {n: b.result for n, b in found.items()}
            chosen = {n: parallel_dict(b.job) for n, b in found.items()}
        else:
            results = evaluate(j, layout(j, c), rates)
            chosen = None
        pt = {"value": v, "networks": {n: r.as_dict() for n, r in results.items()}}
        if chosen:
            pt["parallel"] = chosen
        points.append(pt)
    return points


def parallel_dict(job: Job) -> dict:
    p = job.parallel
    return {"tp": p.tp, "cp": p.cp, "pp": p.pp, "dp": p.dp, "ep": p.ep, "micro_batch": p.micro_batch, "vpp": p.vpp,
            "recompute": p.recompute, "distributed_optimizer": p.distributed_optimizer, "order": p.order_text}


def render_sweep_csv(points: list[dict]) -> str:
    """One row per swept value: each network's iteration time and MFU, or why the point was skipped."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    nets = NETWORKS
    w.writerow(["value", *(f"{n}_iteration_s" for n in nets), *(f"{n}_mfu" for n in nets), "note"])
    for p in points:
        if "networks" in p:
            w.writerow([p["value"], *(f"{p['networks'][n]['iteration_s']:.6g}" for n in nets),
                        *(f"{p['networks'][n]['mfu']:.4f}" for n in nets), ""])
        else:
            w.writerow([p["value"], "", "", "", "", "", "", p.get("note", "")])
    return buf.getvalue()
