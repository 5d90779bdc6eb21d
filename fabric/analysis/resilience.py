"""`railonly resilience`: per component class, its count and blast radius on rail-only and the baseline,
with failure rates: affected GPUs per month and the spare HB domains a job needs (docs/failures.md).

Counts come from the BOM's inventory (cost.inventory.from_fabric); blast radii
from failure.impact on one instance of each class (the one taking off the most
GPUs: the fullest leaf; other classes are alike within a tier).
"""

from __future__ import annotations

import math
from decimal import ROUND_DOWN, Decimal

from ..cost.failure_rates import CLASSES, FailureRates
from ..cost.inventory import from_fabric
from ..graph.model import Fabric
from .failure import Fault, impact

HOURS_PER_YEAR = 8766.0


def percent(share: float, least: int = 2, most: int = 10) -> str:
    """A share as a percentage with as many decimals as it has (at least `least`, at most
    `most`), cut, never rounded up: 0.999999 is '99.9999%' (':.2%' printed '100.00%'), 0.99
    '99.00%'; a share below 1 never prints as 100%."""
    exact = (Decimal(repr(float(share))) * 100).normalize()
    places = min(max(least, -exact.as_tuple().exponent), most)
    text = f"{exact.quantize(Decimal(1).scaleb(-places), rounding=ROUND_DOWN):f}"
    whole, _, frac = text.partition(".")
    return f"{whole}.{frac.rstrip('0').ljust(least, '0')}%"


def counts(fab: Fabric) -> dict[str, int]:
    """Components per class, read off the BOM's inventory (one source for both)."""
    inv = from_fabric(fab)
    sw = inv.switches_by_tier()
    cables: dict[int, int] = {}
    for (tier, _), n in inv.cables.items():
        cables[tier] = cables.get(tier, 0) + n
    return {"gpu_nic": cables.get(1, 0), "nic_cable": cables.get(1, 0), "leaf": sw.get(1, 0), "spine": sw.get(2, 0),
            "core": sw.get(3, 0), "leaf_spine_cable": cables.get(2, 0), "spine_core_cable": cables.get(3, 0),
            "hb_domain": len(fab.hbs)}


def instance(fab: Fabric, cls: str) -> Fault | None:
    """The instance of `cls` whose failure takes off the most GPUs (None: the class is absent)."""
    if cls == "gpu_nic":
        return Fault("nic", fab.gpus[0].name, cls) if fab.gpus else None
    if cls == "hb_domain":
        return Fault("domain", fab.hbs[0].name, cls) if fab.hbs else None
    tier = {"nic_cable": 1, "leaf_spine_cable": 2, "spine_core_cable": 3, "leaf": 1, "spine": 2, "core": 3}[cls]
    if cls.endswith("cable"):
        lk = next((lk for lk in fab.cables() if lk.tier == tier), None)
        return Fault("cable", lk.cable_id, cls) if lk else None
    below: dict[str, int] = {}
    for lk in fab.links:
        if lk.tier == tier and lk.kind != "hb":
            below[lk.b.node] = below.get(lk.b.node, 0) + 1
    tiered = [s.name for s in fab.switches if s.tier == tier]
    if not tiered:
        return None
    return Fault("switch", max(tiered, key=lambda n: below.get(n, 0)), cls)


def blast(fab: Fabric, fault: Fault) -> dict:
    im = impact(fab, [fault])
    lost_share = {}
    for rail, tiers in im.uplinks_lost.items():
        share = max((d / t for d, t in tiers.values() if t), default=0.0)
        if share:
            lost_share[rail] = round(share, 6)
    domains = {fab.node(n).hb_domain for n in im.gpus_lost}
    return {"instance": fault.name, "gpus_off_rail": len(im.gpus_off_rail), "gpus_detoured": len(im.gpus_detoured),
            "gpus_lost": len(im.gpus_lost), "domains_lost": len(domains), "bandwidth_lost_per_rail": lost_share,
            "off_rail": im.gpus_off_rail}


def poisson_quantile(mean: float, target: float) -> int:
    """Smallest s with P(Poisson(mean) <= s) >= target (target below 1).

    Summed in logs from ten standard deviations below the mean (the mass under that start
    is far below 1 - target): exp(-mean) alone is 0.0 past a mean of about 745, and the
    product form then never reached the target (it stopped at a cap of 100,000 whatever
    the mean)."""
    if mean <= 0:
        return 0
    s = max(0, math.floor(mean - 10 * math.sqrt(mean) - 10))
    log_mean, total = math.log(mean), 0.0
    while True:
        total += math.exp(s * log_mean - mean - math.lgamma(s + 1))
        if total >= target or s > mean + 20 * math.sqrt(mean) + 100:  # the sum's rounding: the target is reached
            return s
        s += 1


def network_view(fab: Fabric, rates: FailureRates | None, job_gpus: int) -> dict:
    """One network's `components` (count and blast radius per class) and, with rates,
    the expected GPUs affected per month and the spares a job of `job_gpus` GPUs needs."""
    K = fab.design.hb_size
    n = counts(fab)
    comps = {}
    domains_down = 0.0  # mean HB domains of the job out at any time
    per_month = 0.0
    total_gpus = max(1, len(fab.gpus))
    job_share = min(1.0, job_gpus / total_gpus)
    for cls in CLASSES:
        f = instance(fab, cls) if n[cls] else None
        entry = {"count": n[cls], **(blast(fab, f) if f else {"instance": None, "gpus_off_rail": 0, "gpus_detoured": 0,
                                                                 "gpus_lost": 0, "domains_lost": 0,
                                                                 "bandwidth_lost_per_rail": {}, "off_rail": []})}
        entry.pop("off_rail")
        if rates is not None:
            r = rates.rates[cls]
            yearly = n[cls] * rates.per_year(cls, K)
            entry["failures_per_year"] = round(yearly, 6)
            entry["gpus_affected_per_month"] = round(yearly / 12 * entry["gpus_off_rail"], 6)
            entry["rate_source"] = r.source
            per_month += yearly / 12 * entry["gpus_off_rail"]
            domains_down += yearly * r.repair_hours / HOURS_PER_YEAR * entry["domains_lost"] * job_share
        comps[cls] = entry
    out = {"gpus": len(fab.gpus), "components": comps}
    if rates is not None:
        spares = poisson_quantile(domains_down, rates.target_availability)
        out["gpus_affected_per_month"] = round(per_month, 6)
        out["spares"] = {"job_gpus": job_gpus, "target_availability": rates.target_availability,
                         "mean_domains_down": round(domains_down, 6), "spare_hb_domains": spares,
                         "domains_free": len(fab.hbs) - math.ceil(job_gpus / K),
                         "enough": len(fab.hbs) - math.ceil(job_gpus / K) >= spares}
    return out


def resilience(fabs: dict, rates: FailureRates | None, job_gpus: int | None = None) -> dict:
    """{network: network_view} for the compared networks' graphs."""
    return {net: network_view(fab, rates, job_gpus if job_gpus is not None else len(fab.gpus)) for net, fab in fabs.items()}


LABELS = {"gpu_nic": "GPU NIC", "nic_cable": "NIC cable", "leaf": "leaf", "spine": "spine", "core": "core",
          "leaf_spine_cable": "leaf-spine cable", "spine_core_cable": "spine-core cable", "hb_domain": "HB domain"}


# (heading, width) of each network's columns: the headings and the numbers share one width each
COLUMNS = (("count", 10), ("off-rail", 10), ("detour", 8), ("bw-lost", 9))
NET_WIDTH = sum(w for _, w in COLUMNS)


def text(doc: dict, name: str) -> str:
    nets = list(doc)
    lines = [f"{name}: failure blast radius per component class (docs/failures.md)"]
    head = f"  {'class':<17}" + "".join(f"{n:>{NET_WIDTH}}" for n in nets)
    lines += [head, f"  {'':<17}" + "".join(f"{h:>{w}}" for _ in nets for h, w in COLUMNS)]
    (_, cw), (_, ow), (_, dw), (_, bw_w) = COLUMNS
    for cls in CLASSES:
        row = f"  {LABELS[cls]:<17}"
        for n in nets:
            c = doc[n]["components"][cls]
            bw = max(c["bandwidth_lost_per_rail"].values(), default=0.0)
            # a class the network has none of: a dash under count, the rest blank
            row += (f"{c['count']:>{cw},}{c['gpus_off_rail']:>{ow},}{c['gpus_detoured']:>{dw},}{bw:>{bw_w}.1%}"
                    if c["count"] else f"{'-':>{cw}}" + " " * (NET_WIDTH - cw))
        lines.append(row.rstrip())
    if "spares" in doc[nets[0]]:
        lines.append("")
        for n in nets:
            s = doc[n]["spares"]
            lines.append(f"  {n}: {doc[n]['gpus_affected_per_month']:.2f} GPUs affected per month; a job of {s['job_gpus']:,} GPUs "
                         f"needs {s['spare_hb_domains']} spare HB domain{'' if s['spare_hb_domains'] == 1 else 's'} for {percent(s['target_availability'])} availability "
                         f"(mean {s['mean_domains_down']:.3f} down; {s['domains_free']} free"
                         + ("" if s["enough"] else ", NOT enough") + ")")
    return "\n".join(lines)
