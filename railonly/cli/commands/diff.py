"""`railonly diff OLD_OUTDIR NEW_OUTDIR [--json FILE] [--runbook FILE.md]`: the change plan between two compiles.

--runbook writes the plan as a runbook (docs/push.md): a summary of fabric-wide
effects, the cable work by rail and rack, then the push waves with their checks;
--json then carries the same runbook under "runbook".

Exit codes (as `git diff --exit-code`): 0 nothing changes, 1 something does,
2 an OUTDIR (or a file in it) is not a compiled fabric, or FILE cannot be written.
"""

from __future__ import annotations

import sys

from railonly.cli.commands import number


def register(sub) -> None:
    p = sub.add_parser("diff", help="change plan between two compiles: cables added/removed/moved, configs, hosts, BOM delta")
    p.add_argument("old", metavar="OLD_OUTDIR")
    p.add_argument("new", metavar="NEW_OUTDIR")
    p.add_argument("--json", metavar="FILE", help="write the plan as JSON (cables, devices, hosts, bom)")
    p.add_argument("--runbook", metavar="FILE.md",
                   help="write a Markdown runbook: summary, cable work by rail and rack, push waves with checks (also in --json)")
    p.add_argument("--max-per-group", type=number(int), default=1, metavar="N",
                   help="switches of one rail and tier per push wave in the runbook (default 1, as railonly push)")
    p.add_argument("--no-diffs", action="store_true", help="list what changes, without the per-device unified diffs (also left out of --json)")
    p.set_defaults(func=run)


def run(args) -> int:
    from railonly.fabric.outdir.changeplan import abandon, has_changes, plan, read_snapshot, render_text, settle, to_json
    from railonly.reportfile import refuse_targets, write_report

    if args.max_per_group < 1:
        print(f"error: --max-per-group must be at least 1, got {args.max_per_group}", file=sys.stderr)
        return 2
    refuse_targets({"--json": args.json, "--runbook": args.runbook}, outdirs=(args.old, args.new))  # exit 2 naming the path
    # a malformed OUTDIR raises UntrustedFile (an InputError: exit 2, the file named); each
    # side's fabric.json parse may still run beside the plan: settled before any output
    old = new = None
    try:
        old = read_snapshot(args.old, switches=args.runbook is not None)
        new = read_snapshot(args.new, switches=args.runbook is not None)
        doc = plan(old, new, diffs=not args.no_diffs)
        settle(old, new)
    finally:
        abandon(old, new)
    if args.runbook is not None:
        from railonly.fabric.outdir.runbook import render_markdown, runbook

        doc["runbook"] = runbook(doc, old, new, args.max_per_group)
        write_report(args.runbook, render_markdown(doc["runbook"]))  # never through a link; exit 2 naming the path
    if args.json is not None:
        write_report(args.json, to_json(doc))  # never through a link; ReportNotWritten: exit 2 naming the path
    changes = has_changes(doc)
    if changes or not args.quiet:  # -q: nothing to say when nothing changes
        sys.stdout.write(render_text(doc, diffs=not args.no_diffs))
    return 1 if changes else 0
