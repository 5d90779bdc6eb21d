"""`railonly validate` results as JSON, JUnit and text (the Result type and JUnit form: railonly.fabric.results)."""

from __future__ import annotations

import json

from ..results import Result, junit, summary
from ..safe_text import printable

__all__ = ["Result", "summary", "text", "to_json", "to_junit"]


def to_json(outdir: str, results: list[Result]) -> str:
    passed, failed = summary(results)
    doc = {"outdir": outdir, "passed": passed, "failed": failed, "results": [r.as_dict() for r in results]}
    return json.dumps(doc, indent=1) + "\n"


def to_junit(outdir: str, results: list[Result]) -> str:
    return junit(f"railonly validate {outdir}", results)


def text(results: list[Result]) -> str:
    """Failures one problem per line, then the count; what came from the OUTDIR (file
    names, a tool's echo of a line) escaped for the terminal."""
    lines = []
    for r in results:
        if not r.passed:
            for d in r.detail.splitlines():
                lines.append(f"FAIL {printable(r.id, lines=False)}: {printable(d)}")
    passed, failed = summary(results)
    lines.append(f"{passed} passed, {failed} failed")
    return "\n".join(lines)
