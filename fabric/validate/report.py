"""Check results as data, and their JSON and JUnit forms (ids are unique)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr


@dataclass(frozen=True)
class Result:
    id: str  # unique, also the JUnit test name
    check: str  # yang | frr | eos | hostname | cabling | addressing | bgp | vlan | unique | plant | manifest
    passed: bool
    detail: str


def summary(results: list[Result]) -> tuple[int, int]:
    failed = sum(not r.passed for r in results)
    return len(results) - failed, failed


def to_json(outdir: str, results: list[Result]) -> str:
    passed, failed = summary(results)
    doc = {"outdir": outdir, "passed": passed, "failed": failed,
           "results": [{"id": r.id, "check": r.check, "passed": r.passed, "detail": r.detail} for r in results]}
    return json.dumps(doc, indent=1) + "\n"


def to_junit(outdir: str, results: list[Result]) -> str:
    passed, failed = summary(results)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuite name="railonly validate" tests="{len(results)}" failures="{failed}" errors="0">']
    for r in results:
        head = f'  <testcase classname={quoteattr(r.check)} name={quoteattr(r.id)}'
        if r.passed:
            out.append(head + "/>")
        else:
            out.append(head + ">")
            out.append(f'    <failure message={quoteattr(r.detail.splitlines()[0] if r.detail else "failed")}>{escape(r.detail)}</failure>')
            out.append("  </testcase>")
    out.append("</testsuite>")
    return "\n".join(out) + "\n"


def text(results: list[Result]) -> str:
    """Failures one problem per line, then the count."""
    lines = []
    for r in results:
        if not r.passed:
            for d in r.detail.splitlines():
                lines.append(f"FAIL {r.id}: {d}")
    passed, failed = summary(results)
    lines.append(f"{passed} passed, {failed} failed")
    return "\n".join(lines)
