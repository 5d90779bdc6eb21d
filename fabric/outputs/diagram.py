"""Topology diagram as SVG text: rails (columns), tiers (rows above), HB domains (rows below).

A large fabric is summarised, not drawn cable by cable: at most a few rails
and HB domains are shown ("... N more"), and each tier of a rail shows at most
two switches plus a "+N more" box standing for the rest. Lines join boxes
that have at least one cable between them, read from the fabric graph, so the
picture cannot disagree with the graph. Output is deterministic (no ids,
timestamps or floating-point noise).
"""

from __future__ import annotations

from html import escape

from ..design.physical import SWITCH_TIERS
from ..graph.model import Fabric

MAX_RAILS = 4  # shown: the first MAX_RAILS-1 and the last
MAX_DOMAINS = 3  # shown: the first MAX_DOMAINS-1 and the last
MAX_BOXES = 2  # switch boxes per tier and column group before "+N more"
COL_W, TIER_H, DOM_H, LEFT, TOP = 230, 78, 46, 120, 70
BOX_H = 34
RAIL_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
PLURAL = {1: "leaves", 2: "spines", 3: "cores"}


def _shown(n: int, most: int) -> list[int | None]:
    """Indices to draw, None marking the gap ("... N more")."""
    if n <= most:
        return list(range(n))
    return list(range(most - 1)) + [None, n - 1]


def render_svg(fab: Fabric) -> str:
    d = fab.design
    K, D = d.hb_size, len(fab.hbs)
    cols = _shown(K, MAX_RAILS)
    col_of = {r: i for i, r in enumerate(cols) if r is not None}
    doms = _shown(D, MAX_DOMAINS)
    row_of = {dom: i for i, dom in enumerate(doms) if dom is not None}
    tiers = fab.tiers
    width = LEFT + COL_W * len(cols) + 30
    y_gpu0 = TOP + TIER_H * tiers + 40
    height = y_gpu0 + DOM_H * len(doms) + 60

    # Group switches per tier by the displayed columns they span.
    groups: dict[tuple[int, tuple[int, ...]], list] = {}
    for sw in fab.switches:
        if sw.rails:
            span = tuple(sorted({col_of[r] for r in sw.rails if r in col_of}))
            if not span:
                continue
        else:
            span = tuple(range(len(cols)))  # joins rails: the whole width
        groups.setdefault((sw.tier, span), []).append(sw)

    box_of: dict[str, tuple] = {}  # switch name -> box key
    boxes: list[tuple] = []  # (key, x, y, w, label, sublabel, color)
    for (tier, span), sws in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        x0 = LEFT + COL_W * span[0] + 8
        x1 = LEFT + COL_W * (span[-1] + 1) - 8
        y = TOP + TIER_H * (tiers - tier) + 12
        shown = sws if len(sws) <= MAX_BOXES + 1 else sws[:MAX_BOXES]
        n_boxes = len(shown) + (len(sws) > len(shown))
        bw = (x1 - x0 - 6 * (n_boxes - 1)) // n_boxes
        color = "#555" if len(span) > 1 or not sws[0].rails else RAIL_COLORS[cols[span[0]] % len(RAIL_COLORS)]
        for i, sw in enumerate(shown):
            key = ("sw", sw.name)
            box_of[sw.name] = key
            sub = f"{len(sw.rails)} rails as partitions" if len(sw.rails) > 1 else ("all rails" if not sw.rails else f"{d.radix} x {d.nic_gbps}G")
            boxes.append((key, x0 + i * (bw + 6), y, bw, _short(sw.name, d.site), sub, color))
        if len(sws) > len(shown):
            key = ("more", tier, span)
            for sw in sws[len(shown):]:
                box_of[sw.name] = key
            boxes.append((key, x0 + len(shown) * (bw + 6), y, bw, f"+{len(sws) - len(shown):,} more", f"{len(sws):,} {PLURAL[tier]} in all", color))
    box_at = {b[0]: b for b in boxes}

    def gpu_xy(dom: int, rail: int) -> tuple[int, int]:
        return LEFT + COL_W * col_of[rail] + COL_W // 2, y_gpu0 + DOM_H * row_of[dom] + DOM_H // 2

    edges: set[tuple] = set()
    gpu_edges: set[tuple] = set()
    for lk in fab.cables():
        up = box_of.get(lk.b.node)
        if up is None:
            continue
        if lk.kind == "rail":
            g = fab.by_name[lk.a.node]
            if g.hb_domain in row_of and g.rail in col_of:
                gpu_edges.add((g.hb_domain, g.rail, up))
        else:
            down = box_of.get(lk.a.node)
            if down is not None:
                edges.add((down, up, lk.rail))

    title = (f"{d.name}: {d.topology}, {K} rails x {D:,} HB domains of {d.hb_size} GPUs, "
             f"radix {d.radix}, {fab.tiers} tier{'s' if fab.tiers > 1 else ''} {'per rail' if d.topology == 'rail-only' else 'across rails'}")
    subtitle = (f"{len(fab.switches):,} switches, {len(fab.cables()):,} cables; "
                "a line joins two boxes with at least one cable between them")
    footer = (f"HB domain bands: NVLink inside the domain ({_num(d.hb_gbps)} Gbit/s per GPU); "
              "coloured lines: one rail; grey: joins rails (baseline spine)")
    # Small fabrics: widen to the text (approximate glyph widths at 15 px bold, 12 px, 10 px).
    width = max(width, LEFT + 9 * len(title) + 20, LEFT + 7 * len(subtitle) + 20, LEFT + 6 * len(footer) + 20)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'font-family="DejaVu Sans, Arial, sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>']
    out.append(f'<text x="{LEFT}" y="24" font-size="15" font-weight="bold">{escape(title)}</text>')
    out.append(f'<text x="{LEFT}" y="44" fill="#555">{escape(subtitle)}</text>')
    # Rail bands behind everything.
    for i, r in enumerate(cols):
        x = LEFT + COL_W * i
        if r is None:
            hidden = K - (len(cols) - 1)
            out.append(f'<text x="{x + COL_W // 2}" y="{y_gpu0 - 14}" text-anchor="middle" fill="#555">... {hidden:,} more rails</text>')
            continue
        c = RAIL_COLORS[r % len(RAIL_COLORS)]
        out.append(f'<rect x="{x + 3}" y="{TOP}" width="{COL_W - 6}" height="{y_gpu0 + DOM_H * len(doms) - TOP}" fill="{c}" fill-opacity="0.06" stroke="{c}" stroke-opacity="0.25"/>')
        out.append(f'<text x="{x + COL_W // 2}" y="{y_gpu0 + DOM_H * len(doms) + 18}" text-anchor="middle" fill="{c}" font-weight="bold">rail {r}</text>')
    for t in range(1, tiers + 1):
        y = TOP + TIER_H * (tiers - t) + 12 + BOX_H // 2 + 4
        out.append(f'<text x="12" y="{y}" fill="#333">tier {t} ({SWITCH_TIERS[t]})</text>')
    # Lines first, boxes on top.
    for down, up, rail in sorted(edges, key=repr):
        a, b = box_at[down], box_at[up]
        c = "#888" if rail is None else RAIL_COLORS[rail % len(RAIL_COLORS)]
        out.append(f'<line x1="{a[1] + a[3] // 2}" y1="{a[2]}" x2="{b[1] + b[3] // 2}" y2="{b[2] + BOX_H}" stroke="{c}" stroke-opacity="0.55"/>')
    for dom, rail, up in sorted(gpu_edges, key=repr):
        b = box_at[up]
        x, y = gpu_xy(dom, rail)
        c = RAIL_COLORS[rail % len(RAIL_COLORS)]
        out.append(f'<line x1="{x}" y1="{y - 8}" x2="{b[1] + b[3] // 2}" y2="{b[2] + BOX_H}" stroke="{c}" stroke-opacity="0.55"/>')
    for key, x, y, w, label, sub, color in boxes:
        dash = ' stroke-dasharray="4 3"' if key[0] == "more" else ""
        out.append(f'<rect x="{x}" y="{y}" width="{w}" height="{BOX_H}" rx="4" fill="#ffffff" stroke="{color}" stroke-width="1.5"{dash}/>')
        out.append(f'<text x="{x + w // 2}" y="{y + 14}" text-anchor="middle">{escape(_fit(label, w))}</text>')
        out.append(f'<text x="{x + w // 2}" y="{y + 28}" text-anchor="middle" font-size="10" fill="#555">{escape(_fit(sub, w, 6))}</text>')
    # HB domains: one band per shown domain across all rails (its NVLink/NVSwitch fabric).
    for i, dom in enumerate(doms):
        y = y_gpu0 + DOM_H * i
        if dom is None:
            hidden = D - (len(doms) - 1)
            out.append(f'<text x="{LEFT + 10}" y="{y + DOM_H // 2 + 4}" fill="#555">... {hidden:,} more HB domains</text>')
            continue
        out.append(f'<rect x="{LEFT}" y="{y + 6}" width="{COL_W * len(cols)}" height="{DOM_H - 12}" rx="8" fill="#f2f2f2" stroke="#999"/>')
        out.append(f'<text x="12" y="{y + DOM_H // 2 + 4}" fill="#333">HB domain {dom}</text>')
        for r in cols:
            if r is None:
                continue
            x, yy = gpu_xy(dom, r)
            c = RAIL_COLORS[r % len(RAIL_COLORS)]
            out.append(f'<circle cx="{x}" cy="{yy}" r="8" fill="{c}"/>')
            out.append(f'<text x="{x + 12}" y="{yy + 4}" font-size="10" fill="#333">{escape(f"hb{dom}-gpu{r}")}</text>')
    out.append(f'<text x="{LEFT}" y="{height - 12}" font-size="10" fill="#555">{escape(footer)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _short(name: str, site: str) -> str:
    """Switch name without its site and rail prefixes (the title names the design, the
    column the rail)."""
    if site and name.startswith(site + "-"):
        name = name[len(site) + 1:]
    head, sep, rest = name.partition("-")
    return rest if sep and head.startswith("rail") and head[4:].isdigit() else name


def _fit(text: str, width: int, px: int = 7) -> str:
    most = max(4, width // px)
    return text if len(text) <= most else text[: most - 1] + "\u2026"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)
