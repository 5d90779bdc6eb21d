"""`railonly demo`: the main job end to end on an example design.

compile -> validate -> lab deploy -> check -> traffic (ring all-reduce,
all-to-all) -> lab destroy (always, in finally). Each phase is the command a
user would run (`railonly.cli.main` with the same arguments), run quietly
with a JSON report; the demo prints one line per phase and a summary table.
`-v` shows each command's own output instead (per-flow lines included).
Without `-o` its files go to a temporary folder that it removes at the end
(kept, and named, when a lab could not be destroyed).
"""

from __future__ import annotations

import json
import importlib.resources
import os
import shutil
import tempfile
import time
from pathlib import Path

from railonly.fabric.outdir_layout import MANIFEST

# The example designs ship in the package as railonly.labs (labs/ in the repository).
DEFAULT_DESIGN = Path(str(importlib.resources.files("railonly.labs") / "mini-routed.yml"))

# The traffic patterns the demo runs, in order.
PATTERNS = ("ring-allreduce", "all-to-all")
OK_MEANS = ("pass = every flow completed and the measured network time is within the tolerance of the placed model;"
            " inconclusive = the host's CPU was saturated (timing not judged); bytes = what the receivers got\n"
            "measured = network time (each step's slowest flow, summed; start-up apart); placed = the model under"
            " the flows' ECMP placement (link counters); ideal = perfect balance")


def register(sub) -> None:
    p = sub.add_parser("demo", help="compile an example design and run it end to end (needs root for the lab)")
    p.add_argument("design", nargs="?", default=str(DEFAULT_DESIGN), metavar="DESIGN.yml")
    p.add_argument("-o", "--outdir", default=None, metavar="OUTDIR",
                   help="keep the compiled OUTDIR here (default: a temporary folder, removed at the end)")
    p.set_defaults(func=run)


class _Phases:
    """Runs each phase as the CLI command and prints one line for it."""

    def __init__(self, main, verbose: bool, reports: str):
        self.main, self.verbose, self.reports = main, verbose, reports
        self.failed: list[tuple[str, int]] = []
        self.inconclusive: list[str] = []  # timed phases on a saturated host: neither pass nor fail

    def run(self, label: str, argv: list[str], summary=None, report: str | None = None) -> tuple[int, dict | None]:
        from railonly import console

        saved = (console.settings.quiet, console.settings.verbose, console.settings.color)
        path = os.path.join(self.reports, report) if report else None
        t0 = time.monotonic()
        try:
            rc = self.main([*argv, *(["--json", path] if path else []), "-v" if self.verbose else "-q",
                            *([] if saved[2] else ["--no-color"])])
        finally:
            console.settings.quiet, console.settings.verbose, console.settings.color = saved
        secs = time.monotonic() - t0
        doc = None
        if path and os.path.isfile(path):
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
        verdict = "ok" if rc == 0 else ("inconclusive" if rc == 3 and doc and doc.get("verdict") == "inconclusive"
                                         else f"FAILED (exit {rc})")
        detail = summary(doc) if summary and (doc is not None or report is None) else ""
        console.out(f"{label:<26} {verdict:<8} {detail}{'  ' if detail else ''}({secs:.1f} s)")
        if rc in (130, 143):  # the command was interrupted (Ctrl-C, SIGTERM): so is the demo, lab destroyed
            from railonly.proc import Terminated

            raise Terminated() if rc == 143 else KeyboardInterrupt()
        if verdict == "inconclusive":
            self.inconclusive.append(label)
        elif rc:
            self.failed.append((label, rc))
        return rc, doc


def run(args) -> int:
    from railonly.cli import main

    keep = args.outdir is not None
    work = tempfile.mkdtemp(prefix="railonly-demo-")
    outdir = args.outdir or os.path.join(work, "out")
    print(f"railonly demo: {args.design} -> {outdir}")
    phases = _Phases(main, bool(args.verbose), work)
    remove = not keep
    try:
        rc, _ = phases.run("compile", ["compile", args.design, "-o", outdir], lambda _: _compiled(outdir))
        if rc:
            return rc
        rc, _ = phases.run("validate", ["validate", outdir], _counts, "validate.json")
        if rc:
            return rc
        rc, remove_ok = run_lab(outdir, phases)
        remove = remove and remove_ok
        return rc
    finally:
        if remove:
            shutil.rmtree(work, ignore_errors=True)
            print(f"files: removed {work} (-o OUTDIR keeps them)")
        else:
            if not keep:
                outdir = work
            print(f"files: left in {outdir}")


def run_lab(outdir: str, phases: _Phases) -> tuple[int, bool]:
    """deploy -> check -> traffic -> destroy (always). Returns (exit code, whether
    the files may be removed: not when the lab could not be destroyed). An interrupted
    phase (Ctrl-C, SIGTERM) stops the demo there, the lab destroyed."""
    if os.geteuid() != 0:
        print("lab: skipped (needs root for network namespaces); the plan it would deploy:"
              f" railonly lab deploy {outdir} --dry-run")
        return 0, True
    from railonly.proc import terminate_as_interrupt

    # a SIGTERM between the lab phases cleans up as Ctrl-C does (the lab outlives the demo)
    with terminate_as_interrupt():
        return _run_lab(outdir, phases)


def _run_lab(outdir: str, phases: _Phases) -> tuple[int, bool]:
    from railonly import console

    name = _lab_name(outdir)
    traffic: list[tuple[str, int, dict | None]] = []
    destroyed = False
    try:
        rc, _ = phases.run("lab deploy", ["lab", "deploy", outdir], lambda _: f"lab {name}: {_nodes(outdir)} nodes")
        if rc == 0:
            phases.run("lab check", ["lab", "check", outdir], _counts, "check.json")
            for pattern in PATTERNS:
                rc_t, doc = phases.run(f"lab traffic {pattern}", ["lab", "traffic", outdir, "--pattern", pattern],
                                       _traffic_line, f"traffic-{pattern}.json")
                traffic.append((pattern, rc_t, doc))
    finally:
        rc_d, _ = phases.run("lab destroy", ["lab", "destroy", outdir])
        destroyed = rc_d == 0
    if traffic:
        console.out(traffic_table(traffic))
    failed = phases.failed
    console.out(("result: ok" if not failed else "result: FAILED " + ", ".join(f"{n} (exit {c})" for n, c in failed))
                + (f" (timing inconclusive, host CPU saturated: {', '.join(phases.inconclusive)})" if phases.inconclusive else ""))
    return next((c for _, c in failed), 0), destroyed


def traffic_table(rows: list[tuple[str, int, dict | None]]) -> str:
    head = ("pattern", "flows", "bytes", "measured", "placed", "ideal", "result", "why the measured figure differs")
    table = [head]
    for pattern, rc, doc in rows:
        if not doc:
            table.append((pattern, "-", "-", "-", "-", "-", f"FAILED (exit {rc})", ""))
            continue
        got = sum(f.get("bytes") or 0 for f in doc["flows"])
        table.append((pattern, f"{len(doc['flows']):,}", f"{got:,}", f"{doc['network_s']:.2f} s",
                      f"{doc['model_placed_s']:.2f} s", f"{doc['model_ideal_s']:.2f} s", doc["verdict"], doc.get("why", "")))
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i in (0, 6, 7) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
             for r in table]
    return "\n".join(lines + [OK_MEANS])


# --- one-line summaries of each phase's report -------------------------------------------


def _compiled(outdir: str) -> str:
    try:
        with open(os.path.join(outdir, MANIFEST), encoding="utf-8") as fh:
            files = len(json.load(fh).get("files") or {})
    except (OSError, ValueError):
        return ""
    return f"{files + 1:,} files"  # and MANIFEST.json itself, as compile counts them


def _counts(doc: dict | None) -> str:
    return f"{doc['passed']:,} passed, {doc['failed']:,} failed" if doc else ""  # validate, lab check


def _traffic_line(doc: dict | None) -> str:
    if not doc:
        return ""
    got = sum(f.get("bytes") or 0 for f in doc["flows"])
    return f"{len(doc['flows']):,} flows, {got:,} bytes"


def _fabric(outdir: str):
    """The lab's fabric graph (lab/fabric.json for a lab slice), read by the OUTDIR reader;
    None when it cannot be read (the lab commands then say why)."""
    from railonly.fabric.input.problems import InputError
    from railonly.fabric.outdir.reader import OutdirReader, lab_fabric_rel

    try:
        reader = OutdirReader(outdir)
        return reader.read_fabric(lab_fabric_rel(reader))
    except InputError:
        return None


def _lab_name(outdir: str) -> str:
    fab = _fabric(outdir)
    return fab.design.name if fab is not None else "?"


def _nodes(outdir: str) -> str:
    fab = _fabric(outdir)
    return f"{len(fab.nodes) if fab is not None else 0:,}"
