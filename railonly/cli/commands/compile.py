"""`railonly compile DESIGN -o OUTDIR`: every artifact, checked, written atomically."""

from __future__ import annotations

import sys
from contextlib import nullcontext


def register(sub) -> None:
    p = sub.add_parser("compile", help="compile a design into configs, cabling, BOM and lab files")
    p.add_argument("design", metavar="DESIGN.yml")
    p.add_argument("-o", "--outdir", required=True, metavar="OUTDIR")
    p.add_argument("--force", action="store_true",
                   help="replace OUTDIR even when it is not a railonly OUTDIR (everything in it is deleted)")
    p.add_argument("--progress", action="store_true", help="show progress (default: on for designs over 2,048 GPUs)")
    p.add_argument("--lab-domains", type=int, metavar="N",
                   help="HB domains in the emulation lab (a slice: all rails, N domains); overrides lab.domains")
    p.add_argument("--no-check", action="store_true",
                   help="skip the self-check of the generated configs (what `railonly validate` does)")
    p.set_defaults(func=run)


def run(args) -> int:
    from railonly.console import Bar
    from railonly.fabric.compiler import compile_design, summary
    from railonly.fabric.design import lab_slice
    from railonly.fabric.design.design import load_design
    from railonly.fabric.outdir import writer
    from railonly.fabric.outputs import clabernetes
    from railonly.fabric.progress import Silent

    design = load_design(args.design)
    target = writer.prepare(args.outdir, force=args.force, inputs=(args.design,))  # refuse before the work
    design = lab_slice.with_lab_domains(design, args.lab_domains)
    show = args.progress or args.verbose or (design.gpus > 2048 and not args.quiet)
    with Bar() if show else nullcontext(Silent()) as progress:
        fab, files = compile_design(design, progress)
        progress.step(f"checking generated configs and writing {len(files):,} files")
        failed = check_and_write(target, files, design.sha256, check=not args.no_check)
    for note in target.notes:
        print(note, file=sys.stderr)
    if failed:
        for r in failed[:20]:
            print(f"error: {r.id}: {r.detail}", file=sys.stderr)
        more = f" (showing 20 of {len(failed)})" if len(failed) > 20 else ""
        print(f"generated configs fail their own checks{more}; nothing was written. "
              "This is a railonly bug: please report it with the design.", file=sys.stderr)
        return 1
    if not args.quiet:
        print(summary(fab))
        print(lab_slice.describe(design))
        print(f"  wrote     {len(files) + 1:,} files to {args.outdir}")
        note = clabernetes.too_large(design.name, files)
        if note:
            print(f"  note      {note}")
    return 0


def check_and_write(outdir, files: dict[str, bytes], design_sha256: str, check: bool = True) -> list:
    """Stage the files beside OUTDIR while the self-check runs in a forked
    process; swap them in only when it passes. Returns the failed results
    (then nothing was written). `outdir`: a path or a writer.Target."""
    from railonly import proc
    from railonly.fabric import parallel
    from railonly.fabric.compiler import check_outputs
    from railonly.fabric.outdir import writer

    checker = parallel.Background(check_outputs, files, proc.which("vtysh") is not None) if check else None
    try:
        tmp = writer.stage(outdir, files, design_sha256)
    except BaseException:
        if checker:
            checker.cancel()
        raise
    try:
        failed = checker.result() if checker else []
    except BaseException:
        writer.discard(tmp)
        raise
    if failed:
        writer.discard(tmp)
        return failed
    writer.commit(tmp, outdir)
    return []
