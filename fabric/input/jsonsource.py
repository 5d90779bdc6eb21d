"""JSON from a hostile file: malformed, NaN/Infinity or nested too deep is UntrustedFile (exit 2).

The OUTDIR reader (outdir/reader.py) and the fabric.json parser (graph/fabric_json.py)
decode through :func:`parse_json`; the caller bounds the text's size when it reads it.
"""

from __future__ import annotations

import json

from .problems import InputError, Problem, short


class UntrustedFile(InputError):
    """A file in OUTDIR that must not be used: exit 2, the file named."""

    def __init__(self, file: str, message: str, hint: str = "", line: int | None = None):
        super().__init__([Problem("", message, hint, line, file)])
        self.file = file

    def __reduce__(self):  # picklable across forked workers
        p = self.problems[0]
        return (UntrustedFile, (p.file, p.message, p.hint, p.line))


def parse_json(text: str, file: str):
    """JSON from OUTDIR: malformed, NaN/Infinity or too deep is UntrustedFile."""
    def no_constant(name: str):
        raise ValueError(f"{name} is not allowed")
    try:
        return json.loads(text, parse_constant=no_constant)
    except RecursionError:
        raise UntrustedFile(file, "is not valid JSON: nested too deep", "recompile the design") from None
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        msg = getattr(exc, "msg", str(exc))
        raise UntrustedFile(file, f"is not valid JSON: {short(msg, 120)}", "recompile the design", line) from None
