"""PNG rendering (matplotlib, Agg). Byte-identical run to run: no timestamps or
software tag in the metadata, fixed sizes, no fonts picked by the machine's state."""

from __future__ import annotations

import io

import numpy as np


def _figure(w: float, h: float):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h), dpi=100)


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def heatmap_png(m: np.ndarray, block: int, title: str) -> bytes:
    from matplotlib.colors import LogNorm

    fig = _figure(6.4, 5.6)
    ax = fig.subplots()
    data = np.ma.masked_where(m <= 0, m)
    vmax = float(m.max()) if m.size and m.max() > 0 else 1.0
    im = ax.imshow(data, cmap="viridis", norm=LogNorm(vmin=max(vmax * 1e-6, 1.0), vmax=max(vmax, 1.0)),
                   interpolation="nearest", origin="upper")
    unit = "HB domain" if block == 1 else f"block of {block} HB domains"
    ax.set_xlabel(f"destination {unit}")
    ax.set_ylabel(f"source {unit}")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, label="bytes per iteration")
    fig.tight_layout()
    return _png(fig)


def sweep_png(points: list[dict], axis_label: str, title: str, log_x: bool) -> bytes:
    """Iteration time per network (top) and rail-only over ideal (bottom) along the swept axis."""
    return _png(sweep_figure(points, axis_label, title, log_x))


def sweep_figure(points: list[dict], axis_label: str, title: str, log_x: bool):
    fig = _figure(7.0, 6.0)
    top, low = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1.4]})
    colors = {"rail-only": "#d62728", "rail-optimized": "#1f77b4", "ideal": "#2ca02c"}
    xs = [p["value"] for p in points if p.get("networks")]
    for net, col in colors.items():
        ys = [p["networks"][net]["iteration_s"] for p in points if p.get("networks")]
        if ys:
            style = "--o" if net == "rail-optimized" else "-o"  # dashed: rail-only shows through where they meet
            top.plot(xs, ys, style, color=col, lw=2 if net == "rail-only" else 1.3, ms=4, label=net)
    ratio = [p["networks"]["ideal"]["iteration_s"] / p["networks"]["rail-only"]["iteration_s"] * 100
             for p in points if p.get("networks")]
    low.plot(xs, ratio, "-o", color="#d62728", ms=4)
    # honest axes: both start at zero, so a small difference looks small
    low.set_ylim(0, 105)
    low.set_ylabel("rail-only speed\n(% of ideal, from 0)")
    low.grid(True, alpha=0.3)
    top.set_ylim(bottom=0)
    top.set_ylabel("iteration time (s, from 0)")
    top.grid(True, alpha=0.3)
    if xs:
        top.legend(fontsize=8, frameon=False)
    top.set_title(title, fontsize=9)
    if log_x:
        low.set_xscale("log", base=2)
    low.set_xticks(xs)
    low.set_xticklabels([f"{x:g}" for x in xs], fontsize=8)
    low.set_xlabel(axis_label)
    fig.tight_layout()
    return fig
