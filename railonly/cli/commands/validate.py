"""`railonly validate OUTDIR [--json F] [--junit F]`: schema and cross-file checks (CI)."""

from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("validate", help="check a compiled OUTDIR: SONiC YANG, FRR syntax, EOS parse, cross-file consistency")
    p.add_argument("outdir", metavar="OUTDIR")
    p.add_argument("--json", metavar="FILE", help="write results as JSON")
    p.add_argument("--junit", metavar="FILE", help="write results as JUnit XML (one testcase per id)")
    p.add_argument("--no-manifest", action="store_true",
                   help="skip the byte-for-byte checks: MANIFEST.json hashes and the clabernetes manifest (configs taken back from devices: same intent, other bytes)")
    p.add_argument("--progress", action="store_true",
                   help="show progress on stderr (default: on when stderr is a terminal)")
    p.set_defaults(func=run)


def run(args) -> int:
    from contextlib import nullcontext

    from railonly import console
    from railonly.console import Bar
    from railonly.fabric.input.problems import InputError, report_lines
    from railonly.fabric.progress import Silent
    from railonly.fabric.validate import validate_report as report
    from railonly.fabric.validate.validator import OutdirError, validate_outdir
    from railonly.reportfile import refuse_targets, write_report

    refuse_targets({"--json": args.json, "--junit": args.junit}, outdirs=(args.outdir,))  # exit 2 naming the path
    show = args.progress or args.verbose or (sys.stderr.isatty() and not args.quiet)
    try:
        with Bar() if show else nullcontext(Silent()) as progress:
            results = validate_outdir(args.outdir, manifest=not args.no_manifest, progress=progress)
    except OutdirError as exc:
        print(f"error: {exc}\n  fix: give the OUTDIR that railonly compile wrote (railonly compile DESIGN.yml -o OUTDIR)", file=sys.stderr)
        return 2
    except InputError as exc:  # a symlink, special or malformed file in OUTDIR: refused, never read
        import os

        for line in report_lines(exc.problems):
            print(line, file=sys.stderr)
        if os.path.isdir(args.outdir):  # else the problem is the argument itself (empty, absent, a file)
            print(f"{args.outdir}: refused; nothing in it was used.", file=sys.stderr)
        return 2
    for path, text in ((args.json, report.to_json), (args.junit, report.to_junit)):
        if path is not None:
            write_report(path, text(args.outdir, results))  # ReportNotWritten: exit 2 naming the path
    out = report.text(results)
    if args.quiet:
        out = "\n".join(line for line in out.splitlines() if line.startswith("FAIL"))
    if out:
        console.out(out)
    _, failed = report.summary(results)
    return 1 if failed else 0
