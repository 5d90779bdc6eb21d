"""Annual failure rates per component class, with their sources (docs/failures.md).

The default ships as package data (fabric/cost/data/failure_rates.yaml, every
number with its source and arithmetic); `resilience --rates FILE` replaces it.
Read as hostile input with the design file's schema checker, as the price book is.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..input.problems import InputError, Problem
from ..input.schema import Field, check
from ..input.shipped import read_shipped, shipped_name
from ..input.yamlsource import load_yaml_file, parse_yaml

# The component classes, bottom up; inventory.Inventory counts each (resilience.counts).
CLASSES = ("gpu_nic", "nic_cable", "leaf", "spine", "core", "leaf_spine_cable", "spine_core_cable", "hb_domain")

_RATE = Field("number", min=0, max=1000, hint="failures per component per year, e.g. 0.078")
_REPAIR = Field("number", required=True, min=0, max=24 * 365, hint="hours a failed component keeps its GPUs out, e.g. 4")
_TEXT = Field("str", required=True, hint="where the number comes from (paper, dataset, fleet)")

FIELDS: dict[str, Field] = {
    "target_availability": Field("number", required=True, min=0.5, max=0.999999,
                                 hint="share of time a job must find enough healthy HB domains, e.g. 0.99"),
    "components": Field("section", required=True, hint=f"one entry per class: {', '.join(CLASSES)}", fields={
        c: Field("section", required=True, hint="{per_year (hb_domain: per_gpu_year), repair_hours, source, note}", fields={
            **({"per_gpu_year": Field("number", required=True, min=0, max=1000,
                                      hint="failures per GPU per year; a domain of K GPUs fails K times as often")}
               if c == "hb_domain" else {"per_year": Field("number", required=True, min=0, max=1000, hint=_RATE.hint)}),
            "repair_hours": _REPAIR,
            "source": _TEXT,
            "note": Field("str", default="", hint="how the number was derived"),
        }) for c in CLASSES}),
}

DEFAULT_NAME = shipped_name("railonly.fabric.cost.data", "failure_rates.yaml")


@dataclass(frozen=True)
class Rate:
    per_year: float  # per component (hb_domain: per GPU)
    repair_hours: float
    source: str
    note: str


@dataclass(frozen=True)
class FailureRates:
    target_availability: float
    rates: dict  # class -> Rate
    file: str

    def per_year(self, cls: str, hb_size: int = 1) -> float:
        r = self.rates[cls]
        return r.per_year * (hb_size if cls == "hb_domain" else 1)


def _from_source(src) -> FailureRates:
    values, problems = check(FIELDS, src, example=f"the shipped rates, {DEFAULT_NAME}")
    if problems:
        raise InputError(problems)
    comps = values["components"]
    rates = {c: Rate(float(comps[c].get("per_gpu_year", comps[c].get("per_year"))), float(comps[c]["repair_hours"]),
                     comps[c]["source"], comps[c].get("note") or "") for c in CLASSES}
    if not any(r.per_year for r in rates.values()):
        raise InputError([Problem("components", "every rate is 0: nothing would ever fail", "give at least one class a rate",
                                  src.line("components"), src.file)])
    return FailureRates(float(values["target_availability"]), rates, src.file or "failure rates")


def parse_rates(text: str, file: str | None = None) -> FailureRates:
    return _from_source(parse_yaml(text, file or "failure rates"))


def load_rates(path: str | None = None) -> FailureRates:
    """The rates at `path`, or the shipped default; raises InputError listing every problem."""
    if path is None:
        return parse_rates(*read_shipped("railonly.fabric.cost.data", "failure_rates.yaml"))
    return _from_source(load_yaml_file(path, what="a failure rates YAML file"))
