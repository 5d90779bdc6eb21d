"""What a GPU computes in an iteration, and how long it takes (docs/analyze.md, "Compute").

FLOPs (Korthikanti et al. 2022, eq. 7-8, for any attention and MLP shape). A
layer's forward pass on a micro-batch of b sequences of s tokens:

  QKV and output projections   2 b s h (q + h), q = h + 2 kv_heads h / heads (GQA)
  attention scores and values  4 b s^2 h
  MLP                          2 b s h F x matrices (2 GELU, 3 SwiGLU) x experts a token
                               visits (1 dense; top_k + shared_experts in an MoE layer)

training is 3x the forward pass; the logits 6 b s h V. For a GPT (q = 3h, F = 4h)
model FLOPs per iteration are 72 B L s h^2 (1 + s/(6h) + V/(12 h L)). Hardware
FLOPs add recomputation as the paper counts it (selective: s/(3h) in place of
s/(6h); full: a forward pass of every layer).

Time on one GPU (the stage that paces the pipeline: the last, which adds the
logits). Matrix multiplies run at peak x e(w), e(w) = gemm_efficiency x w /
(w + gemm_half_width), w = h / tp the per-GPU width: two constants per GPU,
fitted on Korthikanti et al. Table 5 only (docs/analyze-validation.md). FP8 runs
the linear layers at the GPU's FP8 peak. Memory-bound kernels move bytes through
HBM at hbm_gbps x memory_efficiency (data sheet x a stated share, not fitted);
per layer and micro-batch, forward (the backward kernels read the incoming gradient and the
saved input and write one gradient: 1.5x the forward's bytes):

  two norms                      2 x (read + write) of b s h activations      8 b s h
  two bias + dropout + residual  read 2, write 1, mask 1 byte                14 b s h
  MLP activation (bias + GELU)   read + write b s F (SwiGLU: read 2 F)        4 b s F (6 b s F)
  softmax + dropout (no flash)   scores: read + write, then read + write + mask  9 b s^2 heads
  MoE permutation                tokens out to experts and back              8 b s h top_k

The elementwise h-wide kernels run on 1/tp of the tokens with sequence
parallelism and on all of them (each TP rank repeats them) without. The logits'
softmax and cross entropy move 16 b s V / tp bytes; the embedding 6 b s h.
With context parallelism a GPU holds s / cp of each sequence.

The optimizer step (Adam, mixed precision) streams 34 bytes per parameter of
the GPU's optimizer shard (fp32 master weights, moments and gradient read and
written, the bf16 copy written, the gradient norm read) and zeroes 4 bytes per
local parameter's main gradient.
"""

from __future__ import annotations

from .job import Job

BACKWARD_BYTES = 1.5  # a memory-bound kernel's backward moves 1.5x its forward bytes (reads the gradient and the input, writes one)
OPTIMIZER_BYTES = 34  # per parameter of the shard the GPU updates
ZERO_GRAD_BYTES = 4  # per local parameter: the fp32 main gradient is cleared each iteration
LOGITS_BYTES = 16  # per logit element, forward and backward (softmax, cross entropy in fp32)


def stage_layers(job: Job) -> tuple[int, int]:
    """(layers per stage, MoE layers of the stage with the most)."""
    m, p = job.model, job.parallel
    per = m.layers // p.pp
    most = 0
    for s in range(p.pp):
        most = max(most, sum(1 for layer in range(s * per, (s + 1) * per) if m.is_moe_layer(layer)))
    return per, most


def _experts_per_token(job: Job, moe: bool) -> int:
    m = job.model
    return m.top_k + m.shared_experts if moe else 1


# --- FLOPs (whole micro-batch, before any split across GPUs) ---------------------------------

def linear_fwd_flops(job: Job, moe: bool) -> float:
    """Forward FLOPs of a layer's linear layers for one micro-batch (projections and MLP)."""
    m, b = job.model, job.parallel.micro_batch
    tokens = b * m.seq
    proj = 2 * tokens * m.hidden * (m.qkv_width + m.hidden)
    mlp = 2 * tokens * m.hidden * m.ffn * m.mlp_matrices * _experts_per_token(job, moe)
    router = 2 * tokens * m.hidden * m.experts if moe else 0
    return proj + mlp + router


def attention_fwd_flops(job: Job) -> float:
    m = job.model
    return 4 * job.parallel.micro_batch * m.seq * m.seq * m.hidden


def layer_fwd_flops(job: Job, moe: bool) -> float:
    """Forward FLOPs of one layer for one micro-batch."""
    return linear_fwd_flops(job, moe) + attention_fwd_flops(job)


def logits_flops(job: Job) -> float:
    m = job.model
    return 6 * job.parallel.micro_batch * m.seq * m.hidden * m.vocab


def model_flops(job: Job) -> float:
    """Model FLOPs of one iteration (all GPUs): 72 B L s h^2 (1 + s/(6h) + V/(12hL)) for a GPT."""
    m, p = job.model, job.parallel
    per_mb = sum(3 * layer_fwd_flops(job, m.is_moe_layer(i)) for i in range(m.layers)) + logits_flops(job)
    return per_mb * p.global_batch / p.micro_batch


def hardware_flops(job: Job) -> float:
    """FLOPs executed, recomputation included (the paper's convention for HFU)."""
    m, p = job.model, job.parallel
    extra = 0.0
    if p.recompute == "selective":
        extra = 3 * attention_fwd_flops(job) * m.layers
    elif p.recompute == "full":
        extra = sum(layer_fwd_flops(job, m.is_moe_layer(i)) for i in range(m.layers))
    return model_flops(job) + extra * p.global_batch / p.micro_batch


# --- Time on one GPU ------------------------------------------------------------------------

def gemm_efficiency(job: Job, width: float | None = None) -> float:
    """e(w) at the per-GPU width h / tp, or at `width` (the attention's batched products: the head size)."""
    w = job.model.hidden / job.parallel.tp if width is None else width
    return job.gpu.gemm_efficiency * w / (w + job.gpu.gemm_half_width)


def token_efficiency(job: Job) -> float:
    """The linear layers' rows are the micro-batch's tokens T = b s / cp; a GEMM with few rows
    leaves SMs idle: T / (T + gemm_half_tokens). Mild by design (64: 2,048 rows reach 97%)."""
    tokens = job.parallel.micro_batch * job.model.seq / job.parallel.cp
    return tokens / (tokens + job.gpu.gemm_half_tokens)


def _hbm(job: Job) -> float:
    return job.gpu.hbm_gbps * 1e9 * job.gpu.memory_efficiency


def _attention_memory_bytes(job: Job) -> float:
    """Softmax and dropout over the s x s scores (none with flash attention), forward."""
    m, p = job.model, job.parallel
    return 0.0 if p.flash_attention else 9 * p.micro_batch * m.seq / p.cp * m.seq * m.heads / p.tp


def layer_memory_bytes(job: Job, moe: bool) -> float:
    """Bytes the memory-bound kernels of one layer move on one GPU, forward, one micro-batch."""
    m, p = job.model, job.parallel
    tokens = p.micro_batch * m.seq / p.cp
    t = p.tp
    wide = tokens * m.hidden / (t if p.sp and t > 1 else 1)  # h-wide activations on this GPU
    out = 22 * wide
    out += (6 if m.mlp == "swiglu" else 4) * tokens * m.ffn * _experts_per_token(job, moe) / t
    out += _attention_memory_bytes(job)
    if moe:
        out += 8 * tokens * m.hidden * m.top_k / t
    return out


def stage_compute_s(job: Job) -> float:
    """Seconds of compute per micro-batch on the slowest stage (the last: it adds the logits)."""
    m, p, g = job.model, job.parallel, job.gpu
    per, moe_most = stage_layers(job)
    split = p.tp * p.cp  # every FLOP of a layer is split over tp and (the sequence) over cp
    linear_peak = (g.fp8_tflops if p.precision == "fp8" and g.fp8_tflops else g.tflops) * 1e12
    bf16_peak = g.tflops * 1e12
    eff = gemm_efficiency(job) * token_efficiency(job)
    attn_eff = gemm_efficiency(job, m.hidden / m.heads)  # one head's products: narrow, so less efficient
    hbm = _hbm(job)
    passes = 4 if p.recompute == "full" else 3  # forward, backward (2x), and a forward again
    mem_passes = 1 + BACKWARD_BYTES + (1 if p.recompute == "full" else 0)
    t = 0.0
    for moe, count in ((False, per - moe_most), (True, moe_most)):
        if not count:
            continue
        gemm = passes * linear_fwd_flops(job, moe) / split / (linear_peak * eff)
        attn_passes = passes + (1 if p.recompute == "selective" else 0)
        gemm += attn_passes * attention_fwd_flops(job) / split / (bf16_peak * attn_eff)
        mem = mem_passes * layer_memory_bytes(job, moe)
        if p.recompute == "selective":
            mem += _attention_memory_bytes(job)
        t += count * (gemm + mem / hbm)
    tokens = p.micro_batch * m.seq / p.cp
    t += logits_flops(job) / split / (bf16_peak * eff)
    t += (LOGITS_BYTES * tokens * m.vocab / p.tp + 6 * tokens * m.hidden) / hbm
    return t


def stage_params(job: Job) -> tuple[float, float]:
    """(dense, expert) parameters one GPU of the largest stage holds (its layers, plus the
    embedding or output layer a first or last stage carries)."""
    m, p = job.model, job.parallel
    per, moe_most = stage_layers(job)
    dense_layer = m.attention_params + m.mlp_params
    moe_dense = m.attention_params + m.hidden * m.experts + m.shared_experts * m.mlp_params
    local_experts = m.experts // p.ep
    dense = ((per - moe_most) * dense_layer + moe_most * moe_dense + m.vocab * m.hidden) / p.tp
    experts = moe_most * local_experts * m.mlp_params / p.tp
    return dense, experts


def optimizer_shards(job: Job) -> tuple[float, float]:
    """The GPU's share of the dense and expert parameters it updates: all of its own without the
    distributed optimizer, 1 / (dp cp) of them (expert ones 1 / (dp cp / ep)) with it."""
    p = job.parallel
    dense, experts = stage_params(job)
    if not p.distributed_optimizer:
        return dense, experts
    return dense / (p.dp * p.cp), experts / max(1, p.dp * p.cp // p.ep)


def optimizer_s(job: Job) -> float:
    """Seconds of the optimizer step (memory-bound) once per iteration."""
    dense, experts = stage_params(job)
    sd, se = optimizer_shards(job)
    return (OPTIMIZER_BYTES * (sd + se) + ZERO_GRAD_BYTES * (dense + experts)) / _hbm(job)
