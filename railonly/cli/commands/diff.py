"""`railonly diff OLD_OUTDIR NEW_OUTDIR [--json FILE]`: the change plan between two compiles.

Exit codes (as `git diff --exit-code`): 0 nothing changes, 1 something does,
2 an OUTDIR (or a file in it) is not a compiled fabric, or FILE cannot be written.
"""

from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("diff", help="change plan between two compiles: cables added/removed/moved, configs, hosts, BOM delta")
    p.add_argument("old", metavar="OLD_OUTDIR")
    p.add_argument("new", metavar="NEW_OUTDIR")
    p.add_argument("--json", metavar="FILE", help="write the plan as JSON (cables, devices, hosts, bom)")
    p.add_argument("--no-diffs", action="store_true", help="list what changes, without the per-device unified diffs (also left out of --json)")
    p.set_defaults(func=run)


def run(args) -> int:
    from railonly.fabric.outdir.changeplan import has_changes, plan, read_snapshot, render_text, to_json

    # a malformed OUTDIR raises UntrustedFile (an InputError: exit 2, the file named)
    doc = plan(read_snapshot(args.old), read_snapshot(args.new), diffs=not args.no_diffs)
    if args.json:
        from railonly.reportfile import write_report

        write_report(args.json, to_json(doc))  # never through a link; ReportNotWritten: exit 2 naming the path
    changes = has_changes(doc)
    if changes or not args.quiet:  # -q: nothing to say when nothing changes
        sys.stdout.write(render_text(doc, diffs=not args.no_diffs))
    return 1 if changes else 0
