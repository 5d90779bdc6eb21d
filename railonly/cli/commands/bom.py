"""`railonly bom DESIGN [--compare] [--detail] [--json] [--prices FILE]`: counts, cost and power."""

from __future__ import annotations

import json


def register(sub) -> None:
    p = sub.add_parser("bom", help="bill of materials with cost and power; --compare against the rail-optimized baseline")
    p.add_argument("design", metavar="DESIGN.yml")
    p.add_argument("--compare", action="store_true", help="build the cluster both ways (rail-only and rail-optimized) and show the saving")
    p.add_argument("--detail", action="store_true", help="also print the line items (part, quantity, unit and total cost and power)")
    p.add_argument("--json", action="store_true", help="print JSON (with --compare: rail-only, rail-optimized and saving)")
    p.add_argument("--prices", metavar="FILE", help="price book YAML replacing the default (see fabric/cost/data/prices.yaml)")
    p.set_defaults(func=run)


def run(args) -> int:
    from railonly.fabric.cost.bom import buildout, line_items, price
    from railonly.fabric.cost.compare import compare, inventory, report
    from railonly.fabric.cost.prices import load_prices
    from railonly.fabric import parallel
    from railonly.fabric.design.design import load_design

    design = load_design(args.design)
    book = load_prices(args.prices)
    with parallel.no_cyclic_gc():
        if args.compare:
            boms = compare(design, book)
            doc = report(boms)
        else:
            bom = price(inventory(design), book)
            boms = {design.topology: bom}
            doc = {design.topology: bom.summary()}
            later = buildout(design, bom.inventory)
            if later is not None:
                doc["build_out"] = {"hb_domains": design.planned, "adds": price(later, book).summary()}
    if args.detail:
        for topo, each in boms.items():
            doc[topo]["items"] = line_items(each)
    if args.json:  # data asked for: printed under -q too, as analyze --json -
        print(json.dumps(doc, indent=2, sort_keys=False))
    elif not args.quiet:  # -q: nothing on success, as every command (it printed the whole table)
        print(_text(design, doc))
        if args.detail:
            for topo in boms:
                print(_items(topo, doc[topo]["items"]))
    return 0


def _items(topo: str, items: list[dict]) -> str:
    """The line items of one topology as an aligned table."""
    rows = [("item", "qty", "unit cost", "total cost", "unit W", "total power")]
    rows += [(i["item"], f"{i['quantity']:,}", _money(i["unit_cost_usd"]), _money(i["total_cost_usd"]),
              f"{i['unit_power_w']:,.1f}", _power(i["total_power_w"])) for i in items]
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    lines = [f"{topo} line items:"]
    lines += ["  " + "  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths))) for r in rows]
    return "\n".join(lines)


def _money(x: float) -> str:
    return f"${x:,.0f}"


def _power(w: float) -> str:
    return f"{w / 1000:,.1f} kW" if w < 1e6 else f"{w / 1e6:,.2f} MW"


def _fewer(switches: int, transceivers: int) -> str:
    """What rail-only saves in parts, or adds (a switch per small rail against a packed baseline)."""
    if switches >= 0 and transceivers >= 0:
        return f"{switches:,} switches and {transceivers:,} transceivers fewer"
    return " and ".join(f"{abs(n):,} {what} {'fewer' if n >= 0 else 'more'}"
                        for n, what in ((switches, "switches"), (transceivers, "transceivers")))


def _text(design, doc: dict) -> str:
    topos = [t for t in ("rail-only", "rail-optimized") if t in doc]
    head = f"{design.name}: {design.gpus:,} GPUs ({design.hb_size} rails x {design.hb_count:,} HB domains), radix {design.radix}, {design.nic_gbps}G"
    rows = [("", *topos)]
    rows.append(("tiers", *(str(doc[t]["tiers"]) for t in topos)))
    rows.append(("switches", *(f"{doc[t]['switches']:,}" for t in topos)))
    rows.append(("links", *(f"{doc[t]['links']:,}" for t in topos)))
    rows.append(("transceivers", *(f"{doc[t]['transceivers']:,}" for t in topos)))
    rows.append(("cost", *(_money(doc[t]["cost_usd"]) for t in topos)))
    rows.append(("power", *(_power(doc[t]["power_w"]) for t in topos)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [head] + ["  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
    if "saving" in doc:
        s = doc["saving"]
        lines.append(f"  saving: {s['cost_percent']:.1f}% of cost, {s['power_percent']:.1f}% of power "
                     f"({_fewer(s['switches'], s['transceivers'])})")
    if "packing" in doc:
        lines.append("  packing: " + "; ".join(f"{t} {doc['packing'][t]}" for t in topos))
    if "build_out" in doc:
        b = doc["build_out"]
        a = b["adds"]
        lines.append(f"  bought now: the above (spines and cores sized for the build-out of {b['hb_domains']:,} HB domains)")
        lines.append(f"  build-out adds: {a['gpus']:,} GPUs, {a['switches']:,} switches, {a['links']:,} cables, "
                     f"{a['transceivers']:,} transceivers, {_money(a['cost_usd'])}, {_power(a['power_w'])}")
    return "\n".join(lines)
