"""Where rail-only pays: savings over HB-domain sizes, cluster sizes and radices.

Each point is one cluster built both ways and priced with the price book. The
counts come from :func:`railonly.fabric.cost.inventory.from_design`, the fast path
that tests prove equal to the fabric graph, so a sweep of a hundred clusters
up to 65,536 GPUs takes well under a second. Rendering returns bytes; the
command hands them to the writer.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math

from ..design import clos
from ..design.design import Design, parse_design
from .bom import price, saving
from .compare import TOPOLOGIES, variant, why_unbuildable
from .inventory import from_design
from .prices import PriceBook

DEFAULT_HB_SIZES = (8, 72, 256)
DEFAULT_GPUS = (1024, 2048, 4096, 8192, 16384, 32768, 65536)
DEFAULT_RADICES = (64, 128, 256)
# `railonly sweep -o DIR` writes these (and MANIFEST.json: DIR is a railonly OUTDIR of its own kind)
SWEEP_CSV, SWEEP_PNG = "sweep.csv", "sweep.png"

COLUMNS = ["hb_size", "radix", "target_gpus", "gpus", "hb_domains", "baseline_tiers", "rail_tiers",
           "baseline_switches", "rail_switches", "baseline_transceivers", "rail_transceivers",
           "baseline_cost_usd", "rail_cost_usd", "baseline_power_w", "rail_power_w",
           "cost_saving", "power_saving", "baseline_rails_per_leaf", "rail_rails_per_switch", "note"]


def _template(nic_gbps: int) -> Design:
    return parse_design(f"name: sweep\nhb_domain: {{size: 8, count: 1}}\nnic: {{gbps: {nic_gbps}}}\n", "sweep")


def point(hb_size: int, target_gpus: int, radix: int, book: PriceBook, share_rails: bool = True,
          nic_gbps: int = 400) -> dict:
    domains = math.ceil(target_gpus / hb_size)  # whole HB domains, at least the target
    d = dataclasses.replace(_template(nic_gbps), hb_size=hb_size, hb_count=domains, radix=radix, share_rails=share_rails)
    row = {"hb_size": hb_size, "radix": radix, "target_gpus": target_gpus, "gpus": hb_size * domains, "hb_domains": domains}
    problems = [p for p in (why_unbuildable(variant(d, t)) for t in TOPOLOGIES) if p]
    if problems:
        row["note"] = "baseline needs more than three tiers" if clos.tiers(domains, radix) else "a rail needs more than three tiers"
        return row
    ro, base = (price(from_design(variant(d, t)), book) for t in TOPOLOGIES)
    row.update({
        "baseline_tiers": base.inventory.tiers, "rail_tiers": ro.inventory.tiers,
        "baseline_switches": base.inventory.switch_count, "rail_switches": ro.inventory.switch_count,
        "baseline_transceivers": base.inventory.transceiver_count, "rail_transceivers": ro.inventory.transceiver_count,
        "baseline_cost_usd": round(base.cost_usd, 2), "rail_cost_usd": round(ro.cost_usd, 2),
        "baseline_power_w": round(base.power_w, 2), "rail_power_w": round(ro.power_w, 2),
        "cost_saving": round(saving(ro.cost_usd, base.cost_usd), 4),
        "power_saving": round(saving(ro.power_w, base.power_w), 4),
        # which side packs several small rails onto one tier-1 switch (1: none)
        "baseline_rails_per_leaf": base.inventory.rails_per_leaf, "rail_rails_per_switch": ro.inventory.rails_per_leaf,
        "note": "same tiers as the baseline: saves only spine ports" if ro.inventory.tiers == base.inventory.tiers else "",
    })
    return row


def sweep(hb_sizes, gpus, radices, book: PriceBook, share_rails: bool = True) -> list[dict]:
    return [point(k, n, r, book, share_rails) for k in hb_sizes for r in radices for n in gpus]


def render_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, COLUMNS, lineterminator="\n", restval="")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def render_png(rows: list[dict]) -> bytes:
    """Per HB-domain size: savings (top; cost solid, power dashed) and tiers (bottom) per radix.

    The tiers panel shows why: where a rail needs as many tiers as the whole
    cluster, the lines meet and the saving drops to zero.
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    sizes = sorted({r["hb_size"] for r in rows})
    radices = sorted({r["radix"] for r in rows})
    targets = sorted({r["target_gpus"] for r in rows})
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    fig = Figure(figsize=(max(6.0, 5.0 * len(sizes)), 7.0), dpi=110)
    grid = fig.subplots(2, len(sizes), sharex=True, sharey="row", squeeze=False, gridspec_kw={"height_ratios": [3, 1.3]})
    for col, k in enumerate(sizes):
        top, low = grid[0][col], grid[1][col]
        for i, radix in enumerate(radices):
            pts = [r for r in rows if r["hb_size"] == k and r["radix"] == radix and r.get("cost_saving") is not None]
            if not pts:
                continue
            xs = [r["target_gpus"] for r in pts]
            c = colors[i % len(colors)]
            top.plot(xs, [100 * r["cost_saving"] for r in pts], "-o", color=c, lw=2, ms=5, label=f"radix {radix}: cost")
            top.plot(xs, [100 * r["power_saving"] for r in pts], "--", color=c, lw=1.2, alpha=0.8, label=f"radix {radix}: power")
            dy = 0.12 * (i - (len(radices) - 1) / 2)  # keep the radices' tier lines apart
            low.plot(xs, [r["baseline_tiers"] + dy for r in pts], ":", color=c, lw=1.5, marker="s", ms=3)
            low.plot(xs, [r["rail_tiers"] + dy for r in pts], "-", color=c, lw=2, marker="o", ms=4)
        top.set_ylim(-5, 105)
        top.axhline(0, color="#888", lw=0.8)
        top.grid(True, alpha=0.3)
        top.set_title(f"HB domain K = {k} ({k} rails)")
        low.set_ylim(0.5, 3.5)
        low.set_yticks([1, 2, 3])
        low.grid(True, alpha=0.3)
        low.set_xscale("log", base=2)
        low.xaxis.set_major_locator(FixedLocator(targets))
        low.xaxis.set_minor_locator(NullLocator())
        low.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1024:g}k" if x >= 1024 else f"{x:g}"))
        low.set_xlim(targets[0] / 1.4, targets[-1] * 1.4)
        low.set_xlabel("GPUs in the cluster")
    grid[0][0].set_ylabel("saving vs rail-optimized (%)")
    grid[1][0].set_ylabel("tiers\n(\u25cf rail-only, \u25aa baseline)")
    handles, labels = [], []
    for ax in grid[0]:
        handles, labels = ax.get_legend_handles_labels()
        if handles:
            break
    fig.legend(handles, labels, loc="lower center", ncol=max(1, len(radices)) * 2, fontsize=8, frameon=False)
    fig.suptitle("Where rail-only pays: network cost and power saved against the rail-optimized baseline\n"
                 "(no saving where a rail needs as many tiers as the whole cluster; gaps: baseline over three tiers)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.94))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()
