"""GPU and model presets: data files a user can extend (no code needed).

The shipped presets are package data (data/gpus.yaml, data/models.yaml); a
user file given with ``--presets FILE`` adds or replaces entries:

    gpus:   {mi300x: {tflops: 1307, memory_gb: 192, power_w: 750, price_usd: 20000}}
    models: {my-70b: {layers: 80, hidden: 8192, heads: 64, seq: 4096, vocab: 32000, ffn: 28672}}

Both are validated with the design loader's schema: every problem at once,
with its key path and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..input.problems import InputError, Problem
from ..input.schema import Checker, Field, check
from ..input.shipped import read_shipped, shipped_name
from ..input.yamlsource import Source
from .job_files import load_untrusted, parse_untrusted

DATA = "railonly.fabric.analysis.data"  # the shipped gpus.yaml and models.yaml

PRESET_NAME = r"[a-z0-9][a-z0-9._-]{0,39}"

GPU_FIELDS: dict[str, Field] = {
    "tflops": Field("number", required=True, min=0.001, max=1e6, hint="dense BF16 peak in TFLOPS, e.g. 989 for H100"),
    "memory_gb": Field("number", required=True, min=1, max=1e5, hint="HBM per GPU in GB, e.g. 80"),
    "power_w": Field("number", default=700, min=0, max=1e5, hint="board power in W"),
    "price_usd": Field("number", default=30000, min=0, max=1e8, hint="price of one GPU in USD (equal-budget view)"),
    "gemm_efficiency": Field("number", default=0.80, min=0.01, max=1, hint="fraction of peak a large matrix multiply reaches"),
    "gemm_half_width": Field("number", default=110, min=0, max=1e6, hint="per-GPU width h/tp where GEMMs reach half of gemm_efficiency"),
    "gemm_half_tokens": Field("number", default=64, min=0, max=1e7, hint="GEMM rows (a micro-batch's tokens b s) at which a GEMM reaches half its rate; 0: rows do not matter"),
    "hbm_gbps": Field("number", default=2039, min=1, max=1e6, hint="HBM bandwidth in GB/s (data sheet), e.g. 3350 for H100 SXM"),
    "memory_efficiency": Field("number", default=0.8, min=0.01, max=1, hint="share of hbm_gbps that memory-bound kernels (norms, softmax, dropout, ...) reach"),
    "fp8_tflops": Field("number", default=None, min=0.001, max=1e7, hint="dense FP8 peak in TFLOPS (no sparsity), e.g. 1979 for H100; needed for precision: fp8"),
}

MOE_FIELDS: dict[str, Field] = {
    "experts": Field("int", required=True, min=1, max=65536, hint="experts per MoE layer, e.g. 64"),
    "top_k": Field("int", default=2, min=1, max=64, hint="experts each token is routed to"),
    "every": Field("int", default=1, min=1, max=1024, hint="every N-th layer is an MoE layer (1: all)"),
    "shared_experts": Field("int", default=0, min=0, max=64, hint="experts every token passes through besides the routed ones (DeepSeek style), each of size ffn"),
}

MODEL_FIELDS: dict[str, Field] = {
    "layers": Field("int", min=1, max=100_000, hint="transformer layers L, e.g. 96"),
    "hidden": Field("int", min=1, max=1_000_000, hint="hidden size h, e.g. 12288"),
    "heads": Field("int", min=1, max=100_000, hint="attention heads, e.g. 96"),
    "seq": Field("int", min=1, max=10_000_000, hint="sequence length s, e.g. 2048"),
    "vocab": Field("int", min=1, max=10_000_000, hint="vocabulary size V, e.g. 51200"),
    "kv_heads": Field("int", min=1, max=100_000, hint="key/value heads for grouped-query attention (default: heads), e.g. 8"),
    "mlp": Field("choice", choices=("gelu", "swiglu"), hint="gelu: two matrices; swiglu: gated, three matrices (Llama)"),
    "ffn": Field("int", min=1, max=10_000_000, hint="MLP (or one expert's) inner size; default 4 x hidden (gelu), 8/3 x hidden rounded up to 256 (swiglu)"),
    "tied_embeddings": Field("bool", hint="true: the output layer reuses the input embedding (GPT); false: its own V x h matrix (Llama)"),
    # Checked against MOE_FIELDS by check_moe (a "section" would be filled in when absent).
    "moe": Field("map", default=None, hint="{experts, top_k, every, shared_experts} for a mixture-of-experts model"),
}

FILE_FIELDS: dict[str, Field] = {
    "gpus": Field("map", default={}, item=Field("section", fields=GPU_FIELDS), hint="GPU presets by name"),
    "models": Field("map", default={}, item=Field("section", fields=MODEL_FIELDS), hint="model presets by name"),
}


@dataclass(frozen=True)
class Presets:
    gpus: dict[str, dict]
    models: dict[str, dict]
    files: tuple[str, ...]

    def extended(self, other: "Presets") -> "Presets":
        return Presets({**self.gpus, **other.gpus}, {**self.models, **other.models}, self.files + other.files)


def check_moe(model: dict, path: str, src: Source, problems: list) -> None:
    """Validate (in place) a model's optional moe mapping against MOE_FIELDS."""
    if model.get("moe") is None:
        return
    checker = Checker(src)
    model["moe"] = checker.section(MOE_FIELDS, model["moe"], f"{path}.moe")
    problems.extend(checker.problems)


def _validate(src: Source) -> Presets:
    values, problems = check(FILE_FIELDS, src, example=f"the shipped presets: a gpus: section as in {shipped_name(DATA, 'gpus.yaml')}, a models: section as in models.yaml")
    for name, m in values.get("models", {}).items():
        check_moe(m, f"models.{name}", src, problems)
    for section in ("gpus", "models"):
        raw = src.data.get(section) if isinstance(src.data, dict) else None
        for name in raw if isinstance(raw, dict) else {}:
            if not isinstance(name, str) or not re.fullmatch(PRESET_NAME, name):
                problems.append(Problem(f"{section}.{name}", f"preset name {name!r} must be lowercase letters, digits, '.', '_' or '-'",
                                        "e.g. my-gpu", src.line(f"{section}.{name}"), src.file))
    for name, m in values.get("models", {}).items():
        for key in ("layers", "hidden", "heads", "seq", "vocab"):
            if m.get(key) is None:
                problems.append(Problem(f"models.{name}.{key}", "is required in a model preset", MODEL_FIELDS[key].hint,
                                        src.line(f"models.{name}"), src.file))
    if problems:
        raise InputError(problems)
    models = {n: {k: v for k, v in m.items() if v is not None} for n, m in values["models"].items()}
    return Presets(dict(values["gpus"]), models, (src.file or "presets",))


_SHIPPED: Presets | None = None


def shipped() -> Presets:
    global _SHIPPED
    if _SHIPPED is None:
        gpus = parse_untrusted(*read_shipped(DATA, "gpus.yaml"))
        models = parse_untrusted(*read_shipped(DATA, "models.yaml"))
        a = _validate(Source({"gpus": gpus.data}, {f"gpus.{k}": v for k, v in gpus.lines.items()}, gpus.file))
        b = _validate(Source({"models": models.data}, {f"models.{k}": v for k, v in models.lines.items()}, models.file))
        _SHIPPED = a.extended(b)
    return _SHIPPED


def load_presets(path: str | None = None) -> Presets:
    """The shipped presets, extended by the user's file at `path` (InputError lists every problem)."""
    if path is None:
        return shipped()
    src, _ = load_untrusted(path, "presets")
    return shipped().extended(_validate(src))
