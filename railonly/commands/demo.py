"""`railonly demo`: the main job end to end on an example design.

Compile -> validate -> lab deploy -> (check -> traffic, where those lab
actions exist) -> lab destroy (always, in finally) -> print the results. Each step is the same code the individual
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
    if rc:
        return rc
    return run_lab(outdir, main)


# Lab steps after deploy, each `railonly lab <action> OUTDIR` (check/traffic join when they exist).
LAB_STEPS: list[list[str]] = [["check"], ["traffic", "--pattern", "ring-allreduce"],
                               ["traffic", "--pattern", "all-to-all"]]


def run_lab(outdir: str, main) -> int:
    """deploy -> the lab steps that exist -> destroy (always, in finally)."""
    from railonly.commands import lab as lab_cmd

    if os.geteuid() != 0:
        print("== lab: skipped (needs root for network namespaces); the plan it would deploy:"
              f" railonly lab deploy {outdir} --dry-run")
        return 0
    actions = {name for name, *_ in lab_cmd.ACTIONS}
    results: list[tuple[str, int]] = []
    try:
        print(f"== lab deploy {outdir}")
        rc = main(["lab", "deploy", outdir])
        results.append(("deploy", rc))
        if rc == 0:
            for step in LAB_STEPS:
                if step[0] in actions:
                    print(f"== lab {' '.join(step)} {outdir}")
                    results.append((step[0], main(["lab", step[0], outdir, *step[1:]])))
    finally:
        print(f"== lab destroy {outdir}")
        results.append(("destroy", main(["lab", "destroy", outdir])))
    print("== results: " + ", ".join(f"{name} {'ok' if rc == 0 else f'FAILED (exit {rc})'}" for name, rc in results))
    return next((rc for _, rc in results if rc), 0)


def _has(command: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(f"railonly.commands.{command}") is not None
