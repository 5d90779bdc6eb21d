"""The job file (docs/reference/job.md): keys, defaults, presets, validation, the Job object.

Loaded like a design: the file is read as hostile input (untrusted.py), every
key is checked against FIELDS with the design loader's schema (key path,
line, constraint, fix), presets fill in what the job leaves out, and checks
across keys (tp divides heads, the batch splits into micro-batches, ...) run
once every key is valid on its own. All problems are raised together.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..design.design import NAME_PATTERN
from ..input.problems import InputError, Problem, did_you_mean
from ..input.schema import Field, check
from ..input.yamlsource import Source
from .presets import GPU_FIELDS, MODEL_FIELDS, Presets, check_moe, load_presets
from .job_files import load_untrusted, parse_untrusted

ORDER_DIMS = ("tp", "cp", "ep", "dp", "pp")
DEFAULT_ORDER = "tp-cp-ep-dp-pp"  # Megatron's default, fastest-varying first
RECOMPUTE = ("none", "selective", "full")
GRAD_REDUCE = ("fp32", "bf16", "fp16")  # precision of the data-parallel gradient reduction
PRECISION = ("bf16", "fp16", "fp8")  # of the linear layers' matrix multiplies
GRAD_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
MAX_GPUS = 1 << 20  # bounds the analysis' arrays (a few MB each)

FIELDS: dict[str, Field] = {
    "name": Field("str", required=True, pattern=NAME_PATTERN,
                  pattern_text="lowercase letters, digits and '-', starting with a letter, at most 20 characters",
                  hint="e.g. name: gpt-1t"),
    "model": Field("section", required=True, hint="give model.preset (e.g. gpt-1t) or layers, hidden, heads, seq and vocab",
                   fields={"preset": Field("str", default=None, hint="a model preset, e.g. gpt-3-175b (the shipped ones: fabric/analysis/data/models.yaml; --presets adds yours)"),
                           **MODEL_FIELDS}),
    "parallel": Field("section", required=True, hint="give tp, pp, dp and global_batch", fields={
        "tp": Field("int", default=1, min=1, max=4096, hint="tensor-parallel size, e.g. 8 (inside an HB domain)"),
        "pp": Field("int", default=1, min=1, max=4096, hint="pipeline stages, a divisor of model.layers"),
        "dp": Field("int", default=1, min=1, max=10_000_000, hint="data-parallel size"),
        "ep": Field("int", default=1, min=1, max=1024, hint="expert-parallel size (MoE), a divisor of dp"),
        "sp": Field("bool", default=True, hint="sequence parallel alongside tp"),
        "vpp": Field("int", default=1, min=1, max=1024, hint="interleaved virtual stages per GPU"),
        "micro_batch": Field("int", default=1, min=1, max=65536, hint="micro-batch size b in sequences"),
        "global_batch": Field("int", required=True, min=1, max=100_000_000, hint="global batch B in sequences, e.g. 1536"),
        "order": Field("str", default=DEFAULT_ORDER, pattern=r"[a-z]{2}(-[a-z]{2}){0,4}",
                       pattern_text="parallel dimensions joined by '-', fastest-varying first, e.g. tp-cp-ep-dp-pp",
                       hint="the rank order: tp, cp, ep, dp, pp, fastest-varying first (tp, dp and pp must appear)"),
        "recompute": Field("choice", default="selective", choices=RECOMPUTE, hint="activation recomputation"),
        "cp": Field("int", default=1, min=1, max=1024, hint="context-parallel size: the sequence split over cp GPUs (ring attention)"),
        "dp_overlap": Field("number", default=0.0, min=0, max=1, hint="share of the DP gradient reduction (and parameter all-gather) hidden behind compute, 0 to 1 (Megatron: --overlap-grad-reduce)"),
        "tp_overlap": Field("number", default=0.0, min=0, max=1, hint="share of the TP collectives hidden behind GEMMs, 0 to 1 (Megatron: --tp-comm-overlap)"),
        "pp_overlap": Field("number", default=0.0, min=0, max=1, hint="share of the pipeline sends hidden behind compute, 0 to 1 (Megatron: --overlap-p2p-communication)"),
        "grad_reduce": Field("choice", default="fp32", choices=GRAD_REDUCE,
                             hint="precision of the DP gradient reduction: fp32 (Megatron's default for bf16 training, 4 bytes), bf16 or fp16 (2 bytes)"),
        "distributed_optimizer": Field("bool", default=False, hint="shard the optimizer over DP: reduce-scatter gradients, all-gather parameters (Megatron: --use-distributed-optimizer)"),
        "precision": Field("choice", default="bf16", choices=PRECISION, hint="matrix-multiply precision: bf16, fp16 or fp8 (needs gpu.fp8_tflops)"),
        "flash_attention": Field("bool", default=False, hint="fused (flash) attention: no s x s score matrix through memory; Megatron's --use-flash-attn, off by default"),
    }),
    "gpu": Field("section", required=True, hint="give gpu.preset (a100, h100, h200, gh200, b200) or gpu.tflops and gpu.memory_gb",
                 fields={"preset": Field("str", default=None, hint="a GPU preset: a100, h100, h200, gh200, b200 (or your own in --presets)"),
                         **{k: dataclasses.replace(f, required=False, default=None) for k, f in GPU_FIELDS.items()}}),
}


@dataclass(frozen=True)
class Model:
    name: str
    layers: int
    hidden: int
    heads: int
    seq: int
    vocab: int
    ffn: int
    experts: int = 0  # 0: a dense model
    top_k: int = 1
    moe_every: int = 1
    kv_heads: int = 0  # 0: as many as heads (no grouped-query attention)
    mlp: str = "gelu"  # gelu | swiglu (gated: three matrices)
    tied_embeddings: bool = True
    shared_experts: int = 0  # experts every token passes through, beside the routed top_k

    @property
    def kv(self) -> int:
        return self.kv_heads or self.heads

    @property
    def qkv_width(self) -> int:
        """Output width of the QKV projection: h for queries, 2 kv_heads x head size for keys and values."""
        return self.hidden + 2 * self.kv * (self.hidden // self.heads)

    @property
    def mlp_matrices(self) -> int:
        return 3 if self.mlp == "swiglu" else 2

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    def is_moe_layer(self, layer: int) -> bool:
        """Layer index from 0; every N-th layer (the N-th, 2N-th, ...) is an MoE layer."""
        return self.is_moe and (layer + 1) % self.moe_every == 0

    @property
    def moe_layers(self) -> int:
        return self.layers // self.moe_every if self.is_moe else 0

    @property
    def attention_params(self) -> int:
        """QKV and output projections with their biases, and the layer's two norms."""
        h = self.hidden
        return h * self.qkv_width + self.qkv_width + h * h + h + 4 * h

    @property
    def mlp_params(self) -> int:
        """One MLP (or one expert) of inner size ffn, biases included."""
        return self.mlp_matrices * self.hidden * self.ffn + (self.mlp_matrices - 1) * self.ffn + self.hidden

    @property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @property
    def dense_params(self) -> int:
        """Parameters outside the routed experts: attention, dense MLPs, shared experts, routers, embeddings."""
        h = self.hidden
        dense_layers = self.layers - self.moe_layers
        moe_extra = self.moe_layers * (h * self.experts + self.shared_experts * self.mlp_params)
        return self.layers * self.attention_params + dense_layers * self.mlp_params + moe_extra + self.embedding_params

    @property
    def expert_params(self) -> int:
        return self.moe_layers * self.experts * self.mlp_params

    @property
    def params(self) -> int:
        return self.dense_params + self.expert_params


@dataclass(frozen=True)
class Parallel:
    tp: int
    pp: int
    dp: int
    ep: int = 1
    sp: bool = True
    vpp: int = 1
    micro_batch: int = 1
    global_batch: int = 1
    order: tuple[str, ...] = ("tp", "cp", "ep", "dp", "pp")
    recompute: str = "selective"
    dp_overlap: float = 0.0
    cp: int = 1
    tp_overlap: float = 0.0
    pp_overlap: float = 0.0
    grad_reduce: str = "fp32"
    distributed_optimizer: bool = False
    precision: str = "bf16"
    flash_attention: bool = False

    @property
    def gpus(self) -> int:
        return self.tp * self.cp * self.pp * self.dp

    @property
    def grad_bytes(self) -> int:
        return GRAD_BYTES[self.grad_reduce]

    @property
    def micro_batches(self) -> int:
        """m = B / (b dp): micro-batches each pipeline runs per iteration."""
        return self.global_batch // (self.micro_batch * self.dp)

    @property
    def order_text(self) -> str:
        return "-".join(self.order)


@dataclass(frozen=True)
class Gpu:
    name: str
    tflops: float
    memory_gb: float
    # defaults: the preset schema's (presets.GPU_FIELDS), one place for each
    power_w: float = GPU_FIELDS["power_w"].default
    price_usd: float = GPU_FIELDS["price_usd"].default
    gemm_efficiency: float = GPU_FIELDS["gemm_efficiency"].default
    gemm_half_width: float = GPU_FIELDS["gemm_half_width"].default
    gemm_half_tokens: float = GPU_FIELDS["gemm_half_tokens"].default
    hbm_gbps: float = GPU_FIELDS["hbm_gbps"].default
    memory_efficiency: float = GPU_FIELDS["memory_efficiency"].default
    fp8_tflops: float | None = None


@dataclass(frozen=True)
class Job:
    name: str
    model: Model
    parallel: Parallel
    gpu: Gpu
    file: str | None = None
    lines: dict = field(default_factory=dict, repr=False, compare=False)

    def replace(self, **parallel_changes) -> "Job":
        """The same job with other parallel settings (placement and search use it)."""
        return dataclasses.replace(self, parallel=dataclasses.replace(self.parallel, **parallel_changes))

    def problem(self, path: str, message: str, hint: str = "") -> Problem:
        return Problem(path, message, hint, Source(None, self.lines, self.file).line(path), self.file)


def default_ffn(hidden: int, mlp: str) -> int:
    """4 h for a GELU MLP; a SwiGLU MLP keeps about its parameters with three matrices: 8/3 h,
    rounded up to a multiple of 256 (as Llama: 11,008 for h = 4,096)."""
    if mlp == "swiglu":
        return -(-(8 * hidden // 3) // 256) * 256
    return 4 * hidden


def parse_order(text: str) -> tuple[tuple[str, ...] | None, str]:
    """(dims, "") or (None, why): tp, dp and pp once each; cp and ep at most once."""
    dims = tuple(text.split("-"))
    unknown = [d for d in dims if d not in ORDER_DIMS]
    if unknown:
        return None, f"unknown dimension '{unknown[0]}' (known: {', '.join(ORDER_DIMS)})"
    dup = [d for d in ORDER_DIMS if dims.count(d) > 1]
    if dup:
        return None, f"'{dup[0]}' appears more than once"
    missing = [d for d in ("tp", "dp", "pp") if d not in dims]
    if missing:
        return None, f"'{missing[0]}' is missing (tp, dp and pp must appear)"
    return dims, ""


def full_order(dims: tuple[str, ...]) -> tuple[str, ...]:
    """The order with ep placed just before dp when the job leaves it out (ep is carved out of dp;
    a missing cp sits just after tp, placement.with_cp)."""
    if "ep" in dims:
        return dims
    i = dims.index("dp")
    return dims[:i] + ("ep",) + dims[i:]


def _divisors_hint(n: int, near: int) -> str:
    divs = [d for d in range(1, n + 1) if n % d == 0]
    best = sorted(divs, key=lambda d: (abs(d - near), d))[:3]
    return ", ".join(map(str, sorted(best)))


def _with_preset(values: dict, section: str, table: dict, required: tuple[str, ...], fields: dict,
                 problems: list, bad) -> tuple[dict, str | None]:
    """The section's values over its preset's, and the preset's name; reports an unknown
    preset and, when none fills them, the keys the section must give."""
    given = dict(values.get(section) or {})
    name = given.pop("preset", None)
    if name is not None:
        if name not in table:
            what = "model" if section == "model" else "GPU"
            bad(f"{section}.preset", f"unknown {what} preset '{name}'",
                did_you_mean(name, sorted(table), "presets"))
        given = {**table.get(name, {}), **{k: v for k, v in given.items() if v is not None}}
    if values.get(section) is not None and not any(p.path == f"{section}.preset" for p in problems):
        for key in required:
            if given.get(key) is None and not any(p.path == f"{section}.{key}" for p in problems):
                bad(f"{section}.{key}", f"is required (or give {section}.preset)", fields[key].hint)
    return given, name


def job_from_source(src: Source, presets: Presets | None = None) -> Job:
    presets = presets or load_presets()
    values, problems = check(FIELDS, src, example="an example in labs/jobs/")
    if values.get("model"):
        check_moe(values["model"], "model", src, problems)

    def bad(path: str, msg: str, hint: str) -> None:
        problems.append(Problem(path, msg, hint, src.line(path), src.file))

    # Presets fill in what the job leaves out; the job's own keys win.
    model_v, mname = _with_preset(values, "model", presets.models, ("layers", "hidden", "heads", "seq", "vocab"),
                                  MODEL_FIELDS, problems, bad)
    gpu_v, gname = _with_preset(values, "gpu", presets.gpus, ("tflops", "memory_gb"), GPU_FIELDS, problems, bad)

    par = values.get("parallel") or {}
    order = None
    if isinstance(par.get("order"), str):
        order, why = parse_order(par["order"])
        if order is None:
            bad("parallel.order", f"{why}, got {par['order']!r}", f"e.g. order: {DEFAULT_ORDER}")
    if any(pr.path == "" or pr.path.split(".")[0] in ("model", "parallel") for pr in problems):
        raise InputError(problems)  # the checks across keys need a valid model and parallel section

    # Checks across keys, with a fix that names a value that works (reported with any gpu problems).
    m, p = model_v, par
    tp, pp, dp, ep, vpp, cp = p["tp"], p["pp"], p["dp"], p["ep"], p["vpp"], p["cp"]
    if m["heads"] % tp:
        bad("parallel.tp", f"must divide model.heads ({m['heads']}), got {tp}", f"use tp {_divisors_hint(m['heads'], tp)}")
    kv = m.get("kv_heads")
    if kv is not None:
        if m["heads"] % kv:
            bad("model.kv_heads", f"must divide model.heads ({m['heads']}): each key/value head serves a group of query heads, got {kv}",
                f"use kv_heads {_divisors_hint(m['heads'], kv)}")
        elif kv % tp:
            bad("parallel.tp", f"must divide model.kv_heads ({kv}): each tensor-parallel rank holds whole key/value heads, got {tp}",
                f"use tp {_divisors_hint(kv, tp)}")
    if m["hidden"] % m["heads"]:
        bad("model.hidden", f"must be a multiple of model.heads ({m['heads']}), got {m['hidden']}",
            f"use hidden {m['hidden'] // m['heads'] * m['heads'] or m['heads']} (or change heads)")
    if cp > 1 and m["seq"] % (2 * cp):
        bad("parallel.cp", f"context parallelism splits model.seq ({m['seq']}) into 2 x cp chunks, which must divide it, got cp {cp}",
            f"use cp {_divisors_hint(m['seq'] // 2, cp)} or cp: 1")
    if p["precision"] == "fp8" and gpu_v.get("fp8_tflops") is None:
        bad("parallel.precision", "fp8 needs the GPU's FP8 peak, and gpu.fp8_tflops is not given",
            "give gpu.fp8_tflops (e.g. 1979 for H100), use a preset that has it (h100, h200, gh200, b200), or precision: bf16")
    if m["layers"] % pp:
        bad("parallel.pp", f"must divide model.layers ({m['layers']}), got {pp}", f"use pp {_divisors_hint(m['layers'], pp)}")
    elif (m["layers"] // pp) % vpp:
        bad("parallel.vpp", f"must divide the layers per stage ({m['layers'] // pp}), got {vpp}",
            f"use vpp {_divisors_hint(m['layers'] // pp, vpp)}")
    if vpp > 1 and pp == 1:
        bad("parallel.vpp", "interleaving needs pipeline parallelism (pp > 1)", "use vpp: 1, or pp of 2 or more")
    if tp * cp * pp * dp > MAX_GPUS:
        bad("parallel.dp", f"the job would use tp x cp x pp x dp = {tp * cp * pp * dp:,} GPUs, more than the {MAX_GPUS:,} the analysis handles",
            f"use at most {MAX_GPUS:,} GPUs")
    per_step = p["micro_batch"] * dp
    if p["global_batch"] % per_step:
        bad("parallel.global_batch", f"must be a multiple of micro_batch x dp ({p['micro_batch']} x {dp} = {per_step}), got {p['global_batch']}",
            f"use global_batch {max(per_step, p['global_batch'] // per_step * per_step)} or {(p['global_batch'] // per_step + 1) * per_step}")
    elif vpp > 1 and (p["global_batch"] // per_step) % pp:
        bad("parallel.vpp", f"interleaving needs the micro-batches ({p['global_batch'] // per_step}) to be a multiple of pp ({pp})",
            "use vpp: 1, or a global_batch that gives a multiple of pp micro-batches")
    if dp % ep:
        bad("parallel.ep", f"must divide dp ({dp}): experts are spread over part of the data-parallel group, got {ep}",
            f"use ep {_divisors_hint(dp, ep)}")
    moe = m.get("moe")
    if ep > 1 and not moe:
        bad("parallel.ep", f"expert parallelism needs an MoE model (model.moe), got ep {ep}", "use ep: 1, or give model.moe")
    if moe:
        if moe["experts"] % ep:
            bad("parallel.ep", f"must divide model.moe.experts ({moe['experts']}), got {ep}", f"use ep {_divisors_hint(moe['experts'], ep)}")
        if moe["top_k"] > moe["experts"]:
            bad("model.moe.top_k", f"must be at most model.moe.experts ({moe['experts']}), got {moe['top_k']}", "e.g. top_k: 2")
        if moe["every"] > m["layers"]:
            bad("model.moe.every", f"must be at most model.layers ({m['layers']}), got {moe['every']}", "e.g. every: 1 or 2")
    if p["sp"] and tp > 1 and m["seq"] % tp:
        bad("parallel.sp", f"sequence parallel splits model.seq ({m['seq']}) over tp ({tp}), which does not divide it",
            "use sp: false, or a tp that divides seq")
    if problems:
        raise InputError(problems)

    mlp = m.get("mlp") or "gelu"
    model = Model(
        name=mname or values["name"], layers=m["layers"], hidden=m["hidden"], heads=m["heads"], seq=m["seq"],
        vocab=m["vocab"], ffn=m.get("ffn") or default_ffn(m["hidden"], mlp),
        experts=moe["experts"] if moe else 0, top_k=moe["top_k"] if moe else 1, moe_every=moe["every"] if moe else 1,
        kv_heads=kv or 0, mlp=mlp, tied_embeddings=m.get("tied_embeddings", True) is not False,
        shared_experts=moe.get("shared_experts", 0) if moe else 0)
    parallel = Parallel(tp=tp, pp=pp, dp=dp, ep=ep, sp=p["sp"], vpp=vpp, micro_batch=p["micro_batch"],
                        global_batch=p["global_batch"], order=full_order(order), recompute=p["recompute"],
                        dp_overlap=float(p["dp_overlap"]), cp=cp, tp_overlap=float(p["tp_overlap"]),
                        pp_overlap=float(p["pp_overlap"]), grad_reduce=p["grad_reduce"],
                        distributed_optimizer=p["distributed_optimizer"], precision=p["precision"],
                        flash_attention=p["flash_attention"])
    g = {k: (v if v is not None else GPU_FIELDS[k].default) for k, v in gpu_v.items()}
    optional = ("power_w", "price_usd", "gemm_efficiency", "gemm_half_width", "gemm_half_tokens", "hbm_gbps", "memory_efficiency")
    gpu = Gpu(name=gname or "custom", tflops=float(g["tflops"]), memory_gb=float(g["memory_gb"]),
              fp8_tflops=float(g["fp8_tflops"]) if g.get("fp8_tflops") is not None else None,
              **{k: float(g[k]) for k in optional})
    return Job(values["name"], model, parallel, gpu, src.file, src.lines)


def parse_job(text: str, file: str = "job", presets: Presets | None = None) -> Job:
    return job_from_source(parse_untrusted(text, file), presets)


def load_job(path: str, presets: Presets | None = None) -> Job:
    """Read (as hostile input), parse and validate a job file; InputError lists every problem."""
    src, _ = load_untrusted(path, "job")
    return job_from_source(src, presets)
