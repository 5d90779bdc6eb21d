"""Iteration time, MFU and HFU: one model for every network (docs/analyze.md, "Time").

Per micro-batch the pacing stage takes t = compute + the exposed part of its tp,
cp, ep and pp collectives (compute.py has what compute costs). The overlap
settings hide a share of a collective behind compute, never more than the
compute there is. A 1F1B pipeline with m micro-batches, p stages and v virtual
stages runs m t + (p - 1) / v x t (the bubble); then the data-parallel
reduction adds its exposed share (dp_overlap hides it behind at most one
micro-batch's compute: the last backward pass, the next forward for the
parameter all-gather), and the optimizer step its time.
"""

from __future__ import annotations

from dataclasses import dataclass

from .compute import (attention_fwd_flops, gemm_efficiency, hardware_flops, layer_fwd_flops, logits_flops, model_flops,
                      optimizer_s, stage_compute_s, stage_layers)
from .job import Job
from .network import NETWORKS, Rates
from .placement import Placement
from .traffic import Collective, collectives, tp_passes

PARTS = ("compute", "bubble", "tp", "cp", "pp", "dp", "ep", "optimizer")

__all__ = ["PARTS", "Result", "assemble", "attention_fwd_flops", "call_times", "evaluate", "gemm_efficiency", "hardware_flops",
           "iteration", "layer_fwd_flops", "logits_flops", "model_flops", "stage_compute_s"]


@dataclass(frozen=True)
class Result:
    network: str
    iteration_s: float
    breakdown_s: dict  # PARTS -> exposed seconds; they add up to iteration_s
    mfu: float
    hfu: float
    tokens_per_s: float

    def as_dict(self) -> dict:
        return {"iteration_s": self.iteration_s, "mfu": self.mfu, "hfu": self.hfu, "tokens_per_s": self.tokens_per_s,
                "breakdown_s": dict(self.breakdown_s)}


def call_times(colls: list[Collective], network: str, rates: Rates) -> list[tuple[str, str, float, float]]:
    """(parallelism, op, exposed share, seconds of one call) of every collective."""
    return [(c.parallelism, c.op, c.exposed, c.time(network, rates)) for c in colls]


def calls_per_micro_batch(job: Job, parallelism: str, op: str) -> float:
    """How often a per-micro-batch collective runs on the pacing stage (traffic.py counts the same)."""
    p = job.parallel
    per, moe_most = stage_layers(job)
    if parallelism == "tp":
        return per * tp_passes(job, op)
    if parallelism == "cp":
        return per * (3 if p.recompute == "none" else 4)
    if parallelism == "ep":
        return moe_most * (6 if p.recompute == "full" else 4)
    return 2 * p.vpp  # pp


def assemble(job: Job, times: list[tuple[str, str, float, float]], network: str, comp: float | None = None,
             opt: float | None = None) -> Result:
    """The iteration from one call's time per collective (search reuses the times across variants)."""
    p = job.parallel
    m = p.micro_batches
    comp = stage_compute_s(job) if comp is None else comp
    opt = optimizer_s(job) if opt is None else opt
    full = dict.fromkeys(("tp", "cp", "ep", "pp"), 0.0)
    hide = dict.fromkeys(full, 0.0)
    dp_total = dp_hide = 0.0
    for par, op, exposed, t in times:
        if par == "dp":
            dp_total += t
            dp_hide += (1 - exposed) * t
        else:
            n = calls_per_micro_batch(job, par, op)
            full[par] += t * n
            hide[par] += (1 - exposed) * t * n
    # what overlap hides comes out of the compute it hides behind, never more than there is
    room = comp
    exposed_mb = {}
    for par in ("tp", "cp", "ep", "pp"):
        hidden = min(hide[par], room)
        room -= hidden
        exposed_mb[par] = full[par] - hidden
    t_mb = comp + sum(exposed_mb.values())
    dp = dp_total - min(dp_hide, comp)
    parts = {"compute": m * comp, "bubble": (p.pp - 1) / p.vpp * t_mb, **{k: m * v for k, v in exposed_mb.items()},
             "dp": dp, "optimizer": opt}
    parts = {k: parts[k] for k in PARTS}
    total = sum(parts.values())
    peak = job.gpu.tflops * 1e12 * p.gpus
    return Result(network, total, parts, model_flops(job) / (total * peak), hardware_flops(job) / (total * peak),
                  p.global_batch * job.model.seq / total)


def iteration(job: Job, colls: list[Collective], network: str, rates: Rates) -> Result:
    """The iteration on one network, from the job's collectives and the link rates."""
    return assemble(job, call_times(colls, network, rates), network)


def evaluate(job: Job, pl: Placement, rates: Rates, networks=NETWORKS) -> dict[str, Result]:
    colls = collectives(job, pl)
    return {n: iteration(job, colls, n, rates) for n in networks}
