"""The price book: switch models, transceivers and fibre, with unit price and power.

The default ships as package data (fabric/cost/data/prices.yaml, where every number's
origin is written down); `--prices FILE` replaces it. Both are validated with
the same declarative schema as the design file, so a missing or negative price
is reported with its key path and line, all problems at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..design import physical
from ..input.limits import MAX_POWER_W, MAX_PRICE_USD
from ..input.problems import InputError, Problem
from ..input.schema import Field, check
from ..input.shipped import read_shipped, shipped_name
from ..input.yamlsource import load_yaml_file, parse_yaml

DATA = "railonly.fabric.cost.data"
_PRICE = Field("number", required=True, min=0, max=MAX_PRICE_USD, hint=f"unit price in US dollars, 0 to {MAX_PRICE_USD:,}")
_POWER = Field("number", required=True, min=0, max=MAX_POWER_W, hint=f"unit power in watts, 0 to {MAX_POWER_W:,}")
_GBPS = Field("int", required=True, min=1, max=1600, hint="port speed in Gbit/s, e.g. 400")

FIELDS: dict[str, Field] = {
    "switches": Field("map", default={}, hint="switch models by name: {radix, port_gbps, price_usd, power_w}",
                      item=Field("section", fields={
                          "radix": Field("int", required=True, min=2, max=1024, hint="ports at port_gbps, e.g. 64"),
                          "port_gbps": _GBPS,
                          "price_usd": _PRICE,
                          "power_w": _POWER,
                      })),
    "platforms": Field("map", default={}, hint="catalog switch models by name (docs/platforms.md): {price_usd, power_w}; "
                                               "a model not listed is priced from its catalog file",
                       item=Field("section", fields={"price_usd": _PRICE, "power_w": _POWER})),
    "switch_ports": Field("map", required=True, key_kind="int",
                          hint="per-port price of switches with no model, by speed: {400: {price_usd: 1000, power_w: 19}}",
                          item=Field("section", fields={"price_usd": _PRICE, "power_w": _POWER})),
    "transceivers": Field("map", required=True, hint="optics by type as cabling.csv names them, e.g. 400G-DR4: {gbps, reach_m, price_usd, power_w}",
                          item=Field("section", fields={
                              "gbps": _GBPS,
                              "reach_m": Field("number", required=True, min=0, hint="reach in metres"),
                              "price_usd": _PRICE,
                              "power_w": _POWER,
                          })),
    "cables": Field("map", required=True, key_kind="int",
                    hint="fibre by cable tier (1 NIC-leaf, 2 leaf-spine, 3 spine-core): {type, price_usd, power_w}",
                    item=Field("section", fields={
                        "type": Field("str", required=True, pattern=r"[a-z0-9-]{1,32}", pattern_text="a NetBox cable type such as mmf-om4 or smf-os2",
                                      hint="NetBox cable type, e.g. mmf-om4 or smf-os2"),
                        "price_usd": _PRICE,
                        "power_w": _POWER,
                        "length_m": Field("number", default=None, hint="not used: lengths come from the design's cabling section"),
                    })),
}


@dataclass(frozen=True)
class Part:
    key: str  # price book key path, for messages ("transceivers.400G-DR4")
    model: str
    price_usd: float
    power_w: float
    detail: str = ""


@dataclass(frozen=True)
class PriceBook:
    values: dict
    file: str  # where it came from, for messages and the README

    def switch(self, radix: int, gbps: int) -> Part:
        for name, s in sorted(self.values["switches"].items()):
            if s["radix"] == radix and s["port_gbps"] == gbps:
                return Part(f"switches.{name}", name, s["price_usd"], s["power_w"], f"{radix} x {gbps}G")
        per = self.values["switch_ports"].get(int(gbps))
        if per is None:
            raise self._missing(f"switch_ports.{int(gbps)}", f"no switch model with radix {radix} at {gbps}G and no per-port price for {gbps}G",
                                f"add switches.<model> with radix {radix} and port_gbps {gbps}, or switch_ports.{int(gbps)}")
        return Part(f"switch_ports.{int(gbps)}", f"generic-{radix}x{gbps}G", radix * per["price_usd"], radix * per["power_w"],
                    f"{radix} x {gbps}G, priced per port")

    def platform(self, model) -> Part:
        """A catalog switch (catalog.Platform): this book's price for the model, else its file's."""
        own = self.values.get("platforms", {}).get(model.model)
        detail = f"{model.vendor} {model.name}, {model.cages} x {model.cage_gbps}G {model.form}"
        if own is not None:
            return Part(f"platforms.{model.model}", model.model, own["price_usd"], own["power_w"], detail)
        return Part(model.file, model.model, model.price_usd, model.power_w, detail + " (catalog price)")

    def transceiver(self, code: str) -> Part:
        t = self.values["transceivers"].get(code)
        if t is None:
            raise self._missing(f"transceivers.{code}", f"the design needs {code} optics but the price book has none",
                                f"add transceivers.{code}: {{gbps, reach_m, price_usd, power_w}}")
        return Part(f"transceivers.{code}", code, t["price_usd"], t["power_w"], f"{t['gbps']}G, reach {_num(t['reach_m'])} m")

    def cable(self, tier: int) -> Part:
        c = self.values["cables"].get(tier)
        if c is None:
            raise self._missing(f"cables.{tier}", f"the design has tier-{tier} cables but the price book has no cables.{tier}",
                                f"add cables.{tier}: {{type, price_usd, power_w}}")
        return Part(f"cables.{tier}", c["type"], c["price_usd"], c["power_w"], c["type"])

    def fibre(self, tier: int, nic_optic: str) -> Part:
        """The cable class of a tier as the design's media need it: NIC-leaf cables of a
        single-mode NIC optic (DR) are priced as single-mode (cables.2); an AOC or DAC is
        an assembly whose NetBox type says so (its price is the transceiver row's)."""
        o = physical.tier_optic(tier, nic_optic)
        if tier == 1 and o.code in physical.ASSEMBLIES:
            kind = {"AOC": "aoc", "DAC": "dac-passive"}[o.code]
            return Part(f"transceivers.{o.code}", kind, 0, 0, kind)
        if tier == 1 and o.fibre == "SMF":
            return self.cable(2)
        return self.cable(tier)

    def _missing(self, path: str, message: str, hint: str) -> InputError:
        return InputError([Problem(path, message, hint, None, self.file)])


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _from_source(src) -> PriceBook:
    values, problems = check(FIELDS, src, example=f"the shipped price book, {DEFAULT_NAME}")
    for tier, c in sorted((values.get("cables") or {}).items()):
        if c.get("length_m") is not None:  # an older price book: say where lengths went
            path = f"cables.{tier}.length_m"
            where = physical.key_of(tier) if tier in physical.TIERS else "the design's cabling section"
            problems.append(Problem(path, "cable lengths are not priced here any more: every cable's length comes from the design",
                                    f"delete it and set {where} in the design file", src.line(path), src.file))
    if problems:
        raise InputError(problems)
    return PriceBook(values, src.file or "price book")


def parse_prices(text: str, file: str | None = None) -> PriceBook:
    return _from_source(parse_yaml(text, file or "price book"))


def load_prices(path: str | None = None) -> PriceBook:
    """The price book at `path`, or the shipped default; raises InputError listing every problem."""
    if path is None:
        return default_prices()
    return _from_source(load_yaml_file(path, what="a price book YAML file"))


_DEFAULT: PriceBook | None = None
# The name the default book goes by in messages and the OUTDIR README: its path in the
# repository, as the docs and `bom --help` give it (a golden change, REGEN=1, when it moves).
DEFAULT_NAME = shipped_name(DATA, "prices.yaml")


def default_text() -> str:
    return read_shipped(DATA, "prices.yaml")[0]


def default_prices() -> PriceBook:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = parse_prices(default_text(), DEFAULT_NAME)
    return _DEFAULT
