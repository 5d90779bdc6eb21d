"""Check results as data, and their one JUnit form: shared by `railonly validate` and `railonly lab check`.

A result's id is unique in its run and is also the JUnit test name; a
failure's detail names what failed. Pure: text in, text out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable
from xml.etree import ElementTree as ET

from .safe_text import printable


@dataclass(frozen=True)
class Result:
    id: str  # unique, also the JUnit test name
    check: str  # validate: yang | frr | eos | hostname | cabling | ...; lab check: one of checks.check_plan.CHECKS
    passed: bool
    detail: str

    def as_dict(self) -> dict:
        return {"id": self.id, "check": self.check, "passed": self.passed, "detail": self.detail}


def summary(results: list[Result]) -> tuple[int, int]:
    """(passed, failed)."""
    failed = sum(not r.passed for r in results)
    return len(results) - failed, failed


def junit(title: str, results: list[Result], *, classname_prefix: str = "", order: Iterable[str] = (),
          timings: dict | None = None) -> str:
    """One <testsuite> per check (``order`` first, then the others as they come), one
    <testcase> per result named by its id; a pass carries its detail as system-out."""
    checks = list(order) + [c for c in dict.fromkeys(r.check for r in results) if c not in order]
    _, failed = summary(results)
    root = ET.Element("testsuites", name=title, tests=str(len(results)), failures=str(failed))
    for check in checks:
        rs = [r for r in results if r.check == check]
        if not rs:
            continue
        suite = ET.SubElement(root, "testsuite", name=check, tests=str(len(rs)),
                              failures=str(sum(not r.passed for r in rs)),
                              time=f"{(timings or {}).get(check, 0.0):.3f}")
        for r in rs:
            # XML 1.0 has no form for most control characters, even escaped: a file name or
            # a tool's output that holds one would make the report unreadable
            detail = printable(r.detail)
            tc = ET.SubElement(suite, "testcase", classname=f"{classname_prefix}{check}", name=printable(r.id, lines=False))
            if r.passed:
                ET.SubElement(tc, "system-out").text = detail
            else:
                f = ET.SubElement(tc, "failure", message=detail[:500], type=check)
                f.text = detail
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
