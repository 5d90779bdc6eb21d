"""Check results as a human table, the JSON of docs/reference/outdir.md, and JUnit XML (pure renderers + one writer)."""

from __future__ import annotations

import json

from railonly.fabric.results import junit
from railonly.fabric.safe_text import printable

from .check_plan import CHECKS


def as_json(lab: str, results, timings: dict | None = None, notes: list | None = None) -> dict:
    doc = {"lab": lab, "passed": sum(r.passed for r in results), "failed": sum(not r.passed for r in results),
           "results": [r.as_dict() for r in results]}
    if timings:
        doc["timings_s"] = {k: round(v, 3) for k, v in timings.items()}
    if notes:
        doc["notes"] = list(notes)
    return doc


def as_junit(lab: str, results, timings: dict | None = None) -> str:
    """One <testsuite> per check, one <testcase> per result (name = the unique id)."""
    return junit(f"railonly lab check {lab}", results, classname_prefix=f"{lab}.", order=CHECKS, timings=timings)


def table(lab: str, results, timings: dict | None = None, notes: list | None = None, max_failures: int = 40) -> str:
    lines = [f"lab {lab}: {sum(r.passed for r in results)} passed, {sum(not r.passed for r in results)} failed"]
    lines.append(f"  {'check':<13} {'passed':>7} {'failed':>7} {'seconds':>8}")
    for check in [*CHECKS, *sorted({r.check for r in results} - set(CHECKS))]:  # e.g. failover
        rs = [r for r in results if r.check == check]
        if not rs:
            continue
        t = (timings or {}).get(check)
        lines.append(f"  {check:<13} {sum(r.passed for r in rs):>7} {sum(not r.passed for r in rs):>7} "
                     f"{(f'{t:.2f}' if t is not None else ''):>8}")
    if timings and "total" in timings:
        lines.append(f"  total {timings['total']:.2f} s")
    bad = [r for r in results if not r.passed]
    if bad:
        lines.append("FAILED:")
        for r in bad[:max_failures]:
            lines.append(f"  {printable(r.id, lines=False)}: {printable(r.detail)}")  # a host's output, escaped
        if len(bad) > max_failures:
            lines.append(f"  ... and {len(bad) - max_failures} more (see --json)")
    for n in notes or ():
        lines.append(f"note: {n}")
    return "\n".join(lines)


def write_text(path: str, text: str) -> None:
    """Atomic write of a report file, never through a link (railonly.reportfile)."""
    from railonly.reportfile import write_report

    write_report(path, text)


def write_json(path: str, doc: dict) -> None:
    write_text(path, json.dumps(doc, indent=1, sort_keys=False) + "\n")
