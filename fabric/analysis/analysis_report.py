"""The analysis as JSON (docs/reference/outdir.md, analysis report) and as a short human table.

`analyze` runs the whole pipeline once: place, count, time on the three
networks, memory, cost; everything else formats its result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .cluster import Cluster
from .cost import cost_view
from .job import Job
from .matrix import silent_pair_share
from .memory import estimate
from .network import NETWORKS, Rates
from .placement import Placement
from .timing import PARTS, Result, iteration
from .traffic import Collective, all_to_all_overhead, class_bytes, collectives

SCHEMA_VERSION = 1


@dataclass
class Analysis:
    job: Job
    cluster: Cluster
    placement: Placement
    collectives: list[Collective]
    rates: Rates
    results: dict[str, Result]
    memory: dict
    cost: dict | None = None
    search: dict | None = None  # network -> {"parallel": ..., "result": ...}
    extra: dict = field(default_factory=dict)

    @property
    def moe_overhead(self) -> float | None:
        """Expert all-to-all time on rail-only over rail-optimized, minus one (paper's convention)."""
        return all_to_all_overhead(self.collectives, self.rates, "paper")

    @property
    def moe_overhead_hierarchical(self) -> float | None:
        """The store-and-forward form: only cross-rail bytes take the NVLink hop, (K-1)/K x NIC/HB."""
        return all_to_all_overhead(self.collectives, self.rates, "store-forward")


def analyze(job: Job, cluster: Cluster, pl: Placement, rates: Rates, boms: dict | None = None) -> Analysis:
    """The job on the three networks; with `boms` ({} when they cannot be built) also its cost."""
    colls = collectives(job, pl)
    results = {n: iteration(job, colls, n, rates) for n in NETWORKS}
    a = Analysis(job, cluster, pl, colls, rates, results, estimate(job))
    a.cost = cost_view(job, results, boms) if boms is not None else None
    return a


def _r(x: float, digits: int = 6) -> float:
    return float(f"{x:.{digits}g}")


def contract(a: Analysis, design_name: str) -> dict:
    pl = a.placement
    bytes_ = class_bytes(a.collectives)
    total = sum(bytes_.values())
    n = a.job.parallel.gpus
    colls = []
    for c in a.collectives:
        per = c.bytes_per_gpu() * c.gpus / max(1, n) * c.calls
        for cls, b in zip(("hb", "rail", "cross_rail"), per):
            if b > 0:
                colls.append({"parallelism": c.parallelism, "op": c.op, "class": cls.replace("_", "-"),
                              "group_size": c.group_size, "bytes_per_gpu": round(float(b)), "params": c.params or None,
                              "calls": _r(c.calls)})
    busiest = max(bytes_, key=lambda k: bytes_[k]) if total else None
    busy = link_busy_s(bytes_, n, a.rates)
    doc = {
        "schema_version": SCHEMA_VERSION, "job": a.job.name, "design": design_name, "gpus": n,
        "model": model_dict(a.job),
        "placement": {"ok": pl.ok, "order": "-".join(pl.order),
                      "problems": [{"group": p.group, "message": p.message, "fix": p.fix} for p in pl.problems],
                      "notes": list(pl.notes),
                      "groups": {k: pl.kind_counts(k) for k in ("tp", "pp", "dp", "ep")}},
        "traffic": {"bytes": {k: round(v) for k, v in bytes_.items()},
                    "silent_pair_share": _r(silent_pair_share(a.collectives, pl)),
                    "most_loaded_class": busiest.replace("_", "-") if busiest else None,
                    "link_busy_s": busy,
                    "most_loaded_link": max(busy, key=lambda k: busy[k]) if total else None,
                    "collectives": colls},
        "networks": {k: {**{m: _r(v) for m, v in r.as_dict().items() if m != "breakdown_s"},
                         "breakdown_s": {m: _r(v) for m, v in r.breakdown_s.items()}}
                     for k, r in a.results.items()},
        "moe_all_to_all_overhead": None if a.moe_overhead is None else _r(a.moe_overhead, 4),
        "moe_all_to_all_overhead_convention": "paper: every inter-domain byte of a cross-rail all-to-all takes one NVLink hop, serial with the NIC (about NIC/HB)",
        "moe_all_to_all_overhead_hierarchical": None if a.moe_overhead_hierarchical is None else _r(a.moe_overhead_hierarchical, 4),
        "memory": a.memory,
        "cost": _cost(a.cost),
        "rates": {"nic_gbps": a.cluster.nic_gbps, "hb_gbps": a.cluster.hb_gbps, "oversub": a.rates.oversub},
    }
    if a.search is not None:
        doc["search"] = a.search
    doc.update(a.extra)
    return doc


def model_dict(job: Job) -> dict:
    """The model as the analysis counts it: parameters (all, and those outside the routed experts)."""
    m = job.model
    return {"parameters": m.params, "dense_parameters": m.dense_params, "expert_parameters": m.expert_params,
            "layers": m.layers, "hidden": m.hidden, "heads": m.heads, "kv_heads": m.kv, "ffn": m.ffn, "mlp": m.mlp,
            "tied_embeddings": m.tied_embeddings}


def link_busy_s(bytes_: dict, gpus: int, r: Rates) -> dict:
    """Seconds per iteration a GPU's NVLink and NIC are busy on rail-only (cross-rail bytes use both)."""
    hb = (bytes_["hb"] + bytes_["cross_rail"]) / gpus / r.hb
    nic = (bytes_["rail"] + bytes_["cross_rail"]) / gpus / r.nic
    return {"hb": _r(hb), "nic": _r(nic)}


def _cost(cost: dict | None):
    if cost is None:
        return None
    return {k: {m: (_r(v) if isinstance(v, float) else v) for m, v in d.items()} for k, d in cost.items()}


def _bytes(n: float) -> str:
    """Bytes in the largest decimal unit that keeps a digit before the point (0 B stays 0 B)."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:,.2f} {unit}"
    return f"{n:,.0f} B"


def _t(x: float) -> str:
    """Seconds as people read them: 1,234.5 s, 12.345 s, 0.123 s; below a millisecond in ms."""
    if x >= 100:
        return f"{x:,.1f} s"
    if x >= 1e-3 or x == 0:
        return f"{x:.3f} s"
    return f"{x * 1e3:.3g} ms"


def _params(n: float) -> str:
    return f"{n / 1e9:,.1f}B" if n >= 1e9 else f"{n / 1e6:,.0f}M"


def _equal_budget(eb: dict) -> str:
    """What the network cost difference buys in GPUs, in words: rail-only may cost more (a switch
    per small rail against a packed baseline), and the view then takes GPUs away from it."""
    n = abs(eb["extra_gpus"])
    s = "" if n == 1 else "s"
    if eb["spine_usd"] >= 0:
        return f"the spine's ${eb['spine_usd']:,.0f} buys {n:,} more GPU{s}"
    return f"rail-only's network costs ${-eb['spine_usd']:,.0f} more, {n:,} fewer GPU{s} for the same money"


def text(a: Analysis, design_name: str) -> str:
    j, p, pl = a.job, a.job.parallel, a.placement
    doc = contract(a, design_name)
    lines = [f"{j.name} on {design_name}: {p.gpus:,} GPUs (K = {a.cluster.hb_size}), tp {p.tp}"
             + (f" x cp {p.cp}" if p.cp > 1 else "") + f" x pp {p.pp} x dp {p.dp}"
             + (f" (ep {p.ep})" if p.ep > 1 else "") + f", order {'-'.join(pl.order)}, "
             f"{j.gpu.name} {j.gpu.tflops:g} TFLOPS, NIC {a.cluster.nic_gbps:g} / HB {a.cluster.hb_gbps:g} Gb/s",
             f"model: {_params(j.model.params)} parameters"
             + (f" ({_params(j.model.expert_params)} in routed experts)" if j.model.is_moe else "")]
    if pl.ok:
        lines.append("placement: ok (every TP, PP and DP group stays on HB or on one rail)")
    else:
        lines.append(f"placement: {len(pl.problems)} problem{'s' if len(pl.problems) > 1 else ''}")
        for prob in pl.problems:
            lines.append(f"  {prob.group}: {prob.message}\n    fix: {prob.fix}")
    for note in pl.notes:
        lines.append(f"  note: {note}")
    b = doc["traffic"]["bytes"]
    tot = sum(b.values()) or 1
    lines.append(f"traffic per iteration: HB {_bytes(b['hb'])} ({b['hb'] / tot:.1%}), rail {_bytes(b['rail'])} "
                 f"({b['rail'] / tot:.1%}), cross-rail {_bytes(b['cross_rail'])} ({b['cross_rail'] / tot:.1%}); "
                 f"silent GPU pairs {doc['traffic']['silent_pair_share']:.2%}")
    busy = doc["traffic"]["link_busy_s"]
    lines.append(f"busiest link on rail-only: {doc['traffic']['most_loaded_link'] or '-'} (a GPU's NVLink busy {_t(busy['hb'])}, "
                 f"its NIC {_t(busy['nic'])} per iteration)")
    shown = [k for k in PARTS if k not in ("cp", "ep") or any(r.breakdown_s[k] for r in a.results.values())]
    head = ("network", "iteration", *shown, "MFU", "HFU", "tokens/s")
    rows = [head]
    for n, r in a.results.items():
        bd = r.breakdown_s
        rows.append((n, _t(r.iteration_s), *(_t(bd[k]) for k in shown),
                     f"{r.mfu:.1%}", f"{r.hfu:.1%}", f"{r.tokens_per_s:,.0f}"))
    w = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines += ["  " + "  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r)) for r in rows]
    ro, opt, ideal = (a.results[n].iteration_s for n in NETWORKS)
    lines.append(f"rail-only runs at {opt / ro:.1%} of rail-optimized and {ideal / ro:.1%} of the ideal network")
    if a.moe_overhead is not None:
        lines.append(f"MoE all-to-all overhead on rail-only: {a.moe_overhead:.1%} (paper's convention; "
                     f"{a.moe_overhead_hierarchical:.1%} if only cross-rail bytes took the NVLink hop)")
    env = a.extra.get("launcher", {}).get("env")
    if env:
        lines.append("launcher: " + " ".join(f"{k}={v}" for k, v in env.items()))
    mem = a.memory
    lines.append(f"memory per GPU: {mem['total_gb']:.1f} of {mem['capacity_gb']:g} GB" + ("" if mem["fits"] else "  DOES NOT FIT"))
    if not mem["fits"] and a.extra.get("would_fit") is not None:
        lines.append(f"  would fit: {a.extra['would_fit']['text']}")
    if a.cost:
        c = a.cost
        if c["rail-only"]["network_usd"] is not None:
            # the job pays its GPUs' share of the network: say so where it is not the design's whole BOM
            share = f" the job's share ({p.gpus:,} of {a.cluster.gpus:,} GPUs):" if p.gpus < a.cluster.gpus else ""
            lines.append(f"network cost:{share} rail-only ${c['rail-only']['network_usd']:,.0f} (${c['rail-only']['usd_per_token_per_s']:,.2f} per token/s), "
                         f"rail-optimized ${c['rail-optimized']['network_usd']:,.0f} (${c['rail-optimized']['usd_per_token_per_s']:,.2f} per token/s); "
                         f"energy {c['rail-only']['joules_per_token']:.3g} J/token on rail-only")
            eb = c.get("equal_budget")
            if eb:
                lines.append(f"equal budget: {_equal_budget(eb)}: rail-only "
                             f"{eb['rail_only_tokens_per_s']:,.0f} tokens/s vs rail-optimized {eb['rail_optimized_tokens_per_s']:,.0f}")
        else:
            lines.append("network cost: not available (one of the two networks cannot be built at this radix)")
    if a.search is not None and a.search.get("empty"):
        lines.append(f"search: nothing feasible: {a.search['empty']}")
    elif a.search:
        lines.append("search (best per network, memory-feasible):")
        for n, s in a.search.items():
            if n in ("evaluated", "empty"):
                continue
            q = s["parallel"]
            lines.append(f"  {n}: tp {q['tp']} pp {q['pp']} dp {q['dp']} ep {q['ep']} micro-batch {q['micro_batch']} vpp {q['vpp']} "
                         f"{q['recompute']}{', distributed optimizer' if q['distributed_optimizer'] else ''}: "
                         f"{_t(s['iteration_s'])}, MFU {s['mfu']:.1%}, {s['memory_gb']:.1f} GB")
    return "\n".join(lines)
