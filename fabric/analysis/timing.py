"""Iteration time, MFU and HFU: one model for every network.

Compute (Korthikanti et al. 2022, eq. 7-8, generalised to any MLP width and
MoE layers): a layer's forward pass costs 2 b s (4 h^2 + 2 h F k) + 4 b s^2 h
FLOPs (k experts a token for MoE layers, 1 for dense), training 3x that; the
logits 6 b s h V. Model FLOPs per iteration for F = 4h, k = 1:
72 B L s h^2 (1 + s/(6h) + V/(12 h L)). Hardware FLOPs add recomputation:
selective doubles the attention term (s/(3h) in place of s/(6h), as eq. 8),
full adds a forward pass of every layer.

A GPU runs its stage's FLOPs / tp at peak x e(w), the GEMM efficiency at the
per-GPU width w = h / tp: e(w) = gemm_efficiency x w / (w + gemm_half_width)
(two constants per GPU, fitted on Table 5; docs/analyze.md).

Per micro-batch a stage takes t = compute + tp + ep + pp (Megatron of 2022
overlaps none of them). A 1F1B pipeline with m micro-batches, p stages and v
virtual stages runs m t + (p - 1) / v x t (the bubble); the data-parallel
reduction adds its exposed share. The stage with the most work (the last one
carries the logits) paces the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass

from .job import Job
from .network import NETWORKS, Rates
from .placement import Placement
from .traffic import Collective, collectives, stage_layers

PARTS = ("compute", "bubble", "tp", "pp", "dp", "ep")


def layer_fwd_flops(job: Job, moe: bool) -> float:
    """Forward FLOPs of one layer for one micro-batch."""
    m, b = job.model, job.parallel.micro_batch
    s, h = m.seq, m.hidden
    k = m.top_k if moe else 1
    return 2 * b * s * (4 * h * h + 2 * h * m.ffn * k) + 4 * b * s * s * h


def attention_fwd_flops(job: Job) -> float:
    m = job.model
    return 4 * job.parallel.micro_batch * m.seq * m.seq * m.hidden


def logits_flops(job: Job) -> float:
    m = job.model
    return 6 * job.parallel.micro_batch * m.seq * m.hidden * m.vocab


def model_flops(job: Job) -> float:
    """Model FLOPs of one iteration (all GPUs): 72 B L s h^2 (1 + s/(6h) + V/(12hL)) for a dense GPT."""
    m, p = job.model, job.parallel
    per_mb = sum(3 * layer_fwd_flops(job, m.is_moe_layer(i)) for i in range(m.layers)) + logits_flops(job)
    return per_mb * p.global_batch / p.micro_batch


def hardware_flops(job: Job) -> float:
    """FLOPs executed, recomputation included."""
    m, p = job.model, job.parallel
    extra = 0.0
    if p.recompute == "selective":
        extra = 3 * attention_fwd_flops(job) * m.layers
    elif p.recompute == "full":
        extra = sum(layer_fwd_flops(job, m.is_moe_layer(i)) for i in range(m.layers))
    return model_flops(job) + extra * p.global_batch / p.micro_batch


def gemm_efficiency(job: Job) -> float:
    w = job.model.hidden / job.parallel.tp
    return job.gpu.gemm_efficiency * w / (w + job.gpu.gemm_half_width)


def stage_compute_s(job: Job) -> float:
    """Seconds of compute per micro-batch on the slowest stage (the last: it adds the logits)."""
    m, p = job.model, job.parallel
    per, moe_most = stage_layers(job)
    layer = 3 * layer_fwd_flops(job, False)
    moe_layer = 3 * layer_fwd_flops(job, True)
    flops = (per - moe_most) * layer + moe_most * moe_layer
    if p.recompute == "selective":
        flops += per * 3 * attention_fwd_flops(job)
    elif p.recompute == "full":
        flops += (per - moe_most) * layer / 3 + moe_most * moe_layer / 3
    flops += logits_flops(job)
    return flops / p.tp / (job.gpu.tflops * 1e12 * gemm_efficiency(job))


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


def call_times(colls: list[Collective], network: str, rates: Rates) -> list[tuple[str, float, float]]:
    """(parallelism, exposed share, seconds of one call) of every collective."""
    return [(c.parallelism, c.exposed, c.time(network, rates)) for c in colls]


def assemble(job: Job, times: list[tuple[str, float, float]], network: str, comp: float | None = None) -> Result:
    """The iteration from one call's time per collective (search reuses the times across variants)."""
    p = job.parallel
    m = p.micro_batches
    comp = stage_compute_s(job) if comp is None else comp
    per, moe_most = stage_layers(job)
    layer_calls = 6 if p.recompute == "full" else 4
    tp = sum(t for par, _, t in times if par == "tp") * per * layer_calls
    ep = sum(t for par, _, t in times if par == "ep") * moe_most * layer_calls
    pp = sum(t for par, _, t in times if par == "pp") * 2 * p.vpp
    dp = sum(e * t for par, e, t in times if par == "dp")
    t_mb = comp + tp + ep + pp
    parts = {"compute": m * comp, "bubble": (p.pp - 1) / p.vpp * t_mb, "tp": m * tp, "pp": m * pp, "dp": dp, "ep": m * ep}
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
