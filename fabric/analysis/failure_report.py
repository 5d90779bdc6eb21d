"""`analyze --fail`: the job with failures on rail-only and on the rail-optimized baseline (docs/failures.md)."""

from __future__ import annotations

from ..cost.compare import variant
from ..cost.inventory import check_caps
from ..graph.build import build_fabric
from ..input.problems import InputError
from .failure import impact, job_under, parse_spec, translate

COMPARED = ("rail-only", "rail-optimized")


def fabrics(design) -> dict:
    """The graph of each compared network over the design's HB domains."""
    check_caps(design, files=False)
    return {n: build_fabric(design if design.topology == n else variant(design, n)) for n in COMPARED}


def failures(design, job, pl, rates, healthy: dict, specs: list[str]) -> dict:
    """{network: the failure object (failure.JobFailure.as_dict)} for the `--fail` SPECs.

    A SPEC names an element of the design's own network, or of the other one
    (switch and cable names differ between them); it is carried to the other
    network by failure.translate."""
    fabs = fabrics(design)
    own = design.topology
    other = next(n for n in COMPARED if n != own)
    faults = {n: [] for n in COMPARED}
    problems = []
    for spec in specs:
        try:
            f = parse_spec(spec, fabs[own])
            home = own
        except InputError as first:
            try:
                f = parse_spec(spec, fabs[other])
                home = other
            except InputError:
                problems.extend(first.problems)
                continue
        away = next(n for n in COMPARED if n != home)
        faults[home].append(f)
        t = translate(f, fabs[home], fabs[away])
        if t.kind != "none":
            faults[away].append(t)
    if problems:
        raise InputError(problems)
    out = {}
    for n in COMPARED:
        im = impact(fabs[n], faults[n], n)
        out[n] = job_under(job, pl, rates, n, im, healthy[n]).as_dict()
    return out


def _names(names: list[str], most: int = 8) -> str:
    if not names:
        return "none"
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def failure_text(doc: dict) -> str:
    lines = ["", "with the failure:"]
    for n, f in doc.items():
        faults = ", ".join(f"{x['kind']}:{x['name']}" for x in f["faults"]) or "nothing on this network"
        lines.append(f"  {n} ({faults}):")
        lines.append(f"    off their rail: {_names(f['gpus_off_rail'])}; detoured through an HB sibling: {_names(f['gpus_detoured'])}")
        if f["groups_touched"]:
            lines.append("    groups touched: " + ", ".join(f"{k} {v}" for k, v in f["groups_touched"].items()))
        if f["bandwidth_left"] < 1:
            lines.append(f"    worst rail keeps {f['bandwidth_left']:.1%} of its upper-tier bandwidth")
        if f["runs"]:
            lines.append(f"    iteration {f['iteration_s']:.4g} s (healthy {f['healthy_iteration_s']:.4g} s, x{f['slowdown']:.3f})")
        else:
            lines.append(f"    cannot run: {', '.join(f['gpus_lost'][:8])} have no path; remedy: {f['remedy']}")
    return "\n".join(lines)
