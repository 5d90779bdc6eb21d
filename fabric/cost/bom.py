"""Bill of materials: an :class:`Inventory` priced with a :class:`PriceBook`.

Rows are grouped per orderable item: switches by model, switch-side
transceivers by type, NIC-side transceivers by type (listed apart because
they are bought with the servers), and fibre by type and length class.
Quantities come only from the inventory, so they are exactly the graph's.
"""

from __future__ import annotations

import csv
import dataclasses
import io
from collections import Counter
from dataclasses import dataclass

from ..outdir_layout import BOM_BUILDOUT_CSV, BOM_CSV
from ..design.physical import ASSEMBLIES, SWITCH_TIERS, optic_code, tier_name, tier_optic
from .inventory import Inventory, from_design
from .prices import PriceBook

COLUMNS = ["item", "category", "model", "quantity", "unit_cost_usd", "unit_power_w",
           "total_cost_usd", "total_power_w", "description", "length_m"]
CATEGORY_ORDER = {"switch": 0, "transceiver": 1, "nic-optic": 2, "cable": 3}


@dataclass(frozen=True)
class Row:
    item: str
    category: str
    model: str
    quantity: int
    unit_cost_usd: float
    unit_power_w: float
    description: str
    length_m: int | None = None  # fibre: the length of each cable of the line

    @property
    def total_cost_usd(self) -> float:
        return self.quantity * self.unit_cost_usd

    @property
    def total_power_w(self) -> float:
        return self.quantity * self.unit_power_w


@dataclass(frozen=True)
class Bom:
    inventory: Inventory
    rows: list[Row]

    @property
    def cost_usd(self) -> float:
        return sum(r.total_cost_usd for r in self.rows)

    @property
    def power_w(self) -> float:
        return sum(r.total_power_w for r in self.rows)

    def cost_of(self, category: str) -> float:
        return sum(r.total_cost_usd for r in self.rows if r.category == category)

    def power_of(self, category: str) -> float:
        return sum(r.total_power_w for r in self.rows if r.category == category)

    def summary(self) -> dict:
        """The per-topology object of `railonly bom --json`."""
        inv = self.inventory
        ports = inv.ports_by_tier()
        return {
            "gpus": inv.gpus,
            "tiers": inv.tiers,
            "switches": inv.switch_count,
            "switches_by_tier": {str(t): n for t, n in inv.switches_by_tier().items()},
            "rails_per_leaf": inv.rails_per_leaf,
            "switch_ports": sum(total for _, total in ports.values()),
            "switch_ports_used": sum(used for used, _ in ports.values()),
            "transceivers": inv.transceiver_count,
            "nic_transceivers": inv.nic_optics,
            "links": inv.link_count,
            "cost_usd": _round(self.cost_usd),
            "power_w": _round(self.power_w),
            "cost_by_category_usd": {c: _round(self.cost_of(c)) for c in CATEGORY_ORDER},
            "power_by_category_w": {c: _round(self.power_of(c)) for c in CATEGORY_ORDER},
        }


def price(inv: Inventory, book: PriceBook) -> Bom:
    rows: list[Row] = []
    models: dict[str, list] = {}
    for (tier, radix, gbps), n in sorted(inv.switches.items()):
        part = book.platform(inv.models[tier]) if inv.models else book.switch(radix, gbps)
        entry = models.setdefault(part.model, [part, 0, set()])
        entry[1] += n
        entry[2].add(tier)
    for model, (part, n, tiers) in sorted(models.items()):
        where = ", ".join(SWITCH_TIERS[t] for t in sorted(tiers))
        rows.append(Row(f"switch {model}", "switch", model, n, part.price_usd, part.power_w, f"{part.detail}; tiers: {where}"))

    switch_side: Counter = Counter()
    nic_side: Counter = Counter()
    cables: Counter = Counter()
    assembly = tier_optic(1, inv.nic_optic).code in ASSEMBLIES  # NIC-leaf AOC/DAC: its ends are built in
    for (tier, gbps), n in inv.cables.items():
        code = optic_code(gbps, tier, inv.nic_optic)
        if not inv.models:
            switch_side[code] += n if tier == 1 else 2 * n  # a fabric cable has a switch at both ends
        if tier == 1 and not assembly:
            nic_side[_nic_optic(inv, gbps) if inv.models else code] += n
        if tier > 1 or not assembly:
            cables[tier] += n
    nic_leaf_m = inv.cable_length_m[1]  # an assembly is bought by its length: the NIC-leaf cables'
    for code, n in sorted(switch_side.items()):
        p = book.transceiver(code)
        if code.endswith(ASSEMBLIES):
            rows.append(Row(f"transceiver {code}", "transceiver", code, n, p.price_usd, p.power_w,
                            f"NIC-leaf cable assembly, its ends built in; {p.detail}, {nic_leaf_m} m each", nic_leaf_m))
        else:
            rows.append(Row(f"transceiver {code}", "transceiver", code, n, p.price_usd, p.power_w, f"switch side; {p.detail}"))
    for code, n in sorted(inv.cage_optics.items()):  # catalog switches: what each cage in use takes
        p = book.transceiver(code)
        est = "" if inv.cages_exact else " (estimated: full cages)"
        length = f", {nic_leaf_m} m each" if code.endswith(ASSEMBLIES) else ""
        rows.append(Row(f"transceiver {code}", "transceiver", code, n, p.price_usd, p.power_w,
                        f"switch side, one per cage ({inv.breakout}){est}; {p.detail}{length}",
                        nic_leaf_m if length else None))
    for code, n in sorted(nic_side.items()):
        p = book.transceiver(code)
        rows.append(Row(f"NIC transceiver {code}", "nic-optic", code, n, p.price_usd, p.power_w, f"GPU NIC side; {p.detail}"))
    rows += _fibre_rows(inv, book, cables)
    return Bom(inv, rows)


def _fibre_rows(inv: Inventory, book: PriceBook, cables: Counter) -> list[Row]:
    """One line per purchasable fibre, `<type> <length>m`: tiers whose cables are the same
    type and length (single-mode NIC-leaf and leaf-spine cables, both 100 m) are one line of
    the summed quantity, its description giving each tier's count. Should the price book
    price one type differently by tier, the lines stay apart and say their tier."""
    groups: dict[str, list] = {}
    for tier, n in sorted(cables.items()):
        p = book.fibre(tier, inv.nic_optic)
        length = inv.cable_length_m[tier]
        groups.setdefault(f"{p.model} {length}m", []).append((tier, n, p, length))
    rows = []
    for model, members in groups.items():
        if len({(p.price_usd, p.power_w) for _, _, p, _ in members}) > 1:
            rows += [Row(f"fibre {model} ({tier_name(tier)})", "cable", model, n, p.price_usd, p.power_w,
                         f"{tier_name(tier)} cables; {p.detail}, {length} m each", length) for tier, n, p, length in members]
            continue
        _, _, p, length = members[0]
        tiers = (f"{tier_name(members[0][0])} cables" if len(members) == 1 else
                 " and ".join(f"{tier_name(tier)} {n:,}" for tier, n, _, _ in members) + " cables")
        rows.append(Row(f"fibre {model}", "cable", model, sum(n for _, n, _, _ in members), p.price_usd, p.power_w,
                        f"{tiers}; {p.detail}, {length} m each", length))
    return rows


def _nic_optic(inv: Inventory, gbps: int) -> str:
    """The optic at a NIC on a catalog leaf: the breakout's port optic of the NIC medium."""
    return inv.models[1].breakouts[inv.breakout].port_optics[tier_optic(1, inv.nic_optic).code]


def line_items(bom: Bom) -> list[dict]:
    """The rows as `railonly bom --detail --json` prints them (bom.csv's columns)."""
    return [{"item": r.item, "category": r.category, "model": r.model, "quantity": r.quantity,
             "unit_cost_usd": _round(r.unit_cost_usd), "unit_power_w": _round(r.unit_power_w),
             "total_cost_usd": _round(r.total_cost_usd), "total_power_w": _round(r.total_power_w),
             "description": r.description} for r in bom.rows]


def render_csv(bom: Bom) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in bom.rows:
        w.writerow([r.item, r.category, r.model, r.quantity, _fmt(r.unit_cost_usd), _fmt(r.unit_power_w),
                    _fmt(r.total_cost_usd), _fmt(r.total_power_w), r.description,
                    "" if r.length_m is None else r.length_m])
    return buf.getvalue()


def saving(rail_only: float, baseline: float) -> float:
    """Fraction of the baseline that rail-only saves (0 when the baseline costs nothing)."""
    return 0.0 if baseline == 0 else 1 - rail_only / baseline


def saving_percent(rail_only: float, baseline: float) -> float:
    """The saving as every output prints it (`bom --compare`, the OUTDIR README): percent of
    the baseline, rounded once, to 0.1."""
    return round(100 * saving(rail_only, baseline), 1)


def _round(x: float) -> float | int:
    r = round(x, 2)
    return int(r) if float(r).is_integer() else r


def _fmt(x: float) -> str:
    """Deterministic number text: integers bare, otherwise at most two decimals."""
    r = round(float(x), 2)
    return str(int(r)) if r.is_integer() else f"{r:.2f}".rstrip("0")


def buildout(design, now: Inventory) -> Inventory | None:
    """What the build-out (`hb_domain.planned` domains) adds to what is built now; None when
    the design is built out. Spines and cores are bought now (sized for the build-out), so
    the later purchase is leaves (and the spines of new pods), cables and optics."""
    if design.planned == design.hb_count:
        return None
    return from_design(dataclasses.replace(design, hb_count=design.planned)).minus(now)


def produce(fab, progress) -> dict[str, str]:
    """Compiler producer: bom.csv (bought now) from the fabric graph, with the default
    price book, and bom-buildout.csv (bought at build-out) when hb_domain.planned is larger."""
    from .inventory import from_fabric
    from .prices import default_prices

    book = default_prices()
    now = from_fabric(fab)
    out = {BOM_CSV: render_csv(price(now, book))}
    later = buildout(fab.design, now)
    if later is not None:
        out[BOM_BUILDOUT_CSV] = render_csv(price(later, book))
    return out
