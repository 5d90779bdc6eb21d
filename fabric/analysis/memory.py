"""Memory per GPU (the stage that holds the most), to keep --search honest.

  weights and gradients  6 bytes a parameter (bf16 weights, fp32 main gradients)
  optimizer              12 bytes a parameter (fp32 master, Adam m and v), sharded
                         over the data-parallel group (distributed optimizer); expert
                         parameters over the expert-data-parallel group
  activations            per layer and micro-batch (Korthikanti et al. 2022, Table 2):
                         sp + selective 34 s b h / t; sp, none s b h (34 + 5 a s / h) / t;
                         without sp (10 + 24/t) s b h, plus 5 a s^2 b / t with no recompute;
                         full recompute keeps each layer's input, 2 s b h (/ t with sp).
                         The first stage holds p micro-batches in flight (1F1B), so
                         L layers' worth; interleaving adds (p - 1) / (p v) of it;
                         an MoE layer's MLP half is held top_k times
  workspace              3 GB (CUDA context, NCCL buffers, fragmentation)
"""

from __future__ import annotations

from .job import Job
from .traffic import stage_layers

GB = 1e9
WORKSPACE_GB = 3.0


def activation_bytes_per_layer(job: Job) -> float:
    m, p = job.model, job.parallel
    s, b, h, a, t = m.seq, p.micro_batch, m.hidden, m.heads, p.tp
    if p.recompute == "full":
        return 2 * s * b * h / (t if p.sp else 1)
    if p.sp:
        base = 34 * s * b * h / t
        return base if p.recompute == "selective" else base + 5 * a * s * s * b / t
    base = s * b * h * (10 + 24 / t)
    return base if p.recompute == "selective" else base + 5 * a * s * s * b / t


def estimate(job: Job) -> dict:
    """GB per GPU by part, the total, and whether it fits the GPU."""
    m, p = job.model, job.parallel
    per, moe_most = stage_layers(job)
    h, F = m.hidden, m.ffn
    attn = 4 * h * h + 8 * h
    dense_layer = attn + 2 * h * F + F + h
    moe_layer = attn + h * m.experts + (m.experts // p.ep) * (2 * h * F + F + h)
    expert_part = moe_most * (m.experts // p.ep) * (2 * h * F + F + h) / p.tp
    params = ((per - moe_most) * dense_layer + moe_most * moe_layer + m.vocab * h) / p.tp
    dense = params - expert_part
    edp = max(1, p.dp // p.ep)
    weights = 6 * params
    optimizer = 12 * dense / p.dp + 12 * expert_part / edp
    in_flight = min(p.micro_batches, p.pp)
    interleave = 1 + (p.pp - 1) / (p.pp * p.vpp) if p.vpp > 1 else 1
    activations = activation_bytes_per_layer(job) * per * in_flight * interleave
    if m.is_moe:  # an MoE layer keeps top_k copies of its MLP half (about half a layer's activations)
        activations += moe_most * activation_bytes_per_layer(job) * in_flight * interleave * 0.5 * (m.top_k - 1)
    parts = {"weights_grads_gb": weights / GB, "optimizer_gb": optimizer / GB, "activations_gb": activations / GB,
             "workspace_gb": WORKSPACE_GB}
    total = sum(parts.values())
    return {**{k: round(v, 3) for k, v in parts.items()}, "total_gb": round(total, 3),
            "capacity_gb": job.gpu.memory_gb, "fits": total <= job.gpu.memory_gb}

