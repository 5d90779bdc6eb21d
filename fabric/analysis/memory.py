"""Memory per GPU (the stage that holds the most), to keep --search and the fit verdict honest.

  weights and gradients  bf16 weights and fp32 main gradients: 6 bytes a parameter
  optimizer              fp32 master weights and Adam's two moments: 12 bytes a parameter,
                         sharded over dp x cp with the distributed optimizer (expert
                         parameters over dp x cp / ep), else held whole by every GPU
  activations            per layer and micro-batch (Korthikanti et al. 2022, Table 2, for
                         any attention and MLP shape): attention 7 + 4 kv/heads s b h,
                         MLP 3 s b h + 4 s b F (GELU) or 6 s b F (SwiGLU), norms 4 s b h;
                         all / t with sp, else 10 s b h stay whole on every TP rank;
                         without selective recompute and flash attention add 5 heads s^2 b / t;
                         full recompute keeps each layer's input, 2 s b h (/ t with sp);
                         s is s / cp with context parallelism. The first stage holds p
                         micro-batches in flight (1F1B); interleaving adds (p - 1) / (p v) of
                         it; an MoE layer's MLP part is held for each expert a token visits
  workspace              3 GB (CUDA context, NCCL buffers, fragmentation)
"""

from __future__ import annotations

from .compute import stage_layers, stage_params
from .job import Job

GB = 1e9
WORKSPACE_GB = 3.0


def _mlp_units(job: Job) -> float:
    """The MLP block's activations in units of s b h."""
    m = job.model
    return 3 + (6 if m.mlp == "swiglu" else 4) * m.ffn / m.hidden


def activation_bytes_per_layer(job: Job, moe: bool = False) -> float:
    m, p = job.model, job.parallel
    s, b, h, a, t = m.seq / p.cp, p.micro_batch, m.hidden, m.heads, p.tp
    sbh = s * b * h
    if p.recompute == "full":
        return 2 * sbh / (t if p.sp else 1)
    visits = (m.top_k + m.shared_experts) if moe else 1
    units = 7 + 4 * m.kv / a + _mlp_units(job) * visits + 4
    base = units * sbh / t if p.sp else (10 + (units - 10) / t) * sbh
    if p.recompute == "none" and not p.flash_attention:
        base += 5 * a * s * m.seq * b / t
    return base


def estimate(job: Job) -> dict:
    """GB per GPU by part, the total, and whether it fits the GPU."""
    p = job.parallel
    per, moe_most = stage_layers(job)
    dense, experts = stage_params(job)
    params = dense + experts
    weights = 6 * params
    if p.distributed_optimizer:
        optimizer = 12 * dense / (p.dp * p.cp) + 12 * experts / max(1, p.dp * p.cp // p.ep)
    else:
        optimizer = 12 * params
    in_flight = min(p.micro_batches, p.pp)
    interleave = 1 + (p.pp - 1) / (p.pp * p.vpp) if p.vpp > 1 else 1
    per_layer = (per - moe_most) * activation_bytes_per_layer(job) + moe_most * activation_bytes_per_layer(job, True)
    activations = per_layer * in_flight * interleave
    parts = {"weights_grads_gb": weights / GB, "optimizer_gb": optimizer / GB, "activations_gb": activations / GB,
             "workspace_gb": WORKSPACE_GB}
    total = sum(parts.values())
    return {**{k: round(v, 3) for k, v in parts.items()}, "total_gb": round(total, 3),
            "capacity_gb": job.gpu.memory_gb, "fits": total <= job.gpu.memory_gb}
