"""Cost per unit of throughput, energy per token, and the equal-budget view.

Network cost and power come from the project's bill of materials: the design
built both ways (fabric/cost/compare.py, counted by the fast path that tests prove
equal to the graph) and priced with the price book (fabric/cost/prices.py). The
ideal network has no price: it is a bound, not a product.

  usd_per_token_per_s   network cost / tokens per second on that network
  joules_per_token      (GPUs x GPU power + network power) x iteration time / tokens an iteration
  equal budget          the rail-optimized spine's extra cost buys extra GPUs instead; with
                        throughput assumed to scale with GPUs, rail-only then trains at
                        tokens/s x (N + extra) / N for the same money (extra is negative, GPUs
                        taken away, where rail-only's network costs more)
"""

from __future__ import annotations

from ..cost.compare import TOPOLOGIES, compare, variant, why_unbuildable
from ..cost.prices import PriceBook, default_prices
from .job import Job


def network_boms(design, book: PriceBook | None = None) -> dict | None:
    """{topology: Bom} of the design built both ways, or None when one of them cannot be built.

    A price book without a part the design needs is an input error (InputError, exit 2, as
    `bom` says it), not a network that cannot be built."""
    if any(why_unbuildable(variant(design, t)) for t in TOPOLOGIES):
        return None
    return compare(design, book or default_prices(), fast=True)


def cost_view(job: Job, results: dict, boms: dict | None) -> dict:
    """The analysis report's "cost" (docs/reference/outdir.md): per network, plus "equal_budget" (rail-only against rail-optimized)."""
    out = {}
    n = job.parallel.gpus
    tokens = job.parallel.global_batch * job.model.seq
    for net in ("rail-only", "rail-optimized"):
        if not boms or net not in results:
            out[net] = {"network_usd": None, "usd_per_token_per_s": None, "network_power_w": None, "joules_per_token": None}
            continue
        bom, r = boms[net], results[net]
        share = n / bom.inventory.gpus if bom.inventory.gpus else 1.0  # the job's share of the network
        usd, watts = bom.cost_usd * share, bom.power_w * share
        out[net] = {"network_usd": round(usd, 2), "usd_per_token_per_s": usd / r.tokens_per_s,
                    "network_power_w": round(watts, 2),
                    "joules_per_token": (n * job.gpu.power_w + watts) * r.iteration_s / tokens}
    if boms and "rail-only" in results:
        spine = out["rail-optimized"]["network_usd"] - out["rail-only"]["network_usd"]
        extra = int(spine // job.gpu.price_usd) if job.gpu.price_usd else 0
        ro = results["rail-only"].tokens_per_s
        out["equal_budget"] = {"spine_usd": round(spine, 2), "gpu_price_usd": job.gpu.price_usd, "extra_gpus": extra,
                               "rail_only_tokens_per_s": ro * (n + extra) / n,
                               "rail_optimized_tokens_per_s": results["rail-optimized"].tokens_per_s}
    return out
