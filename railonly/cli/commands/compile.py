"""`railonly compile DESIGN -o OUTDIR`: every artifact, checked, written atomically."""

from __future__ import annotations

import sys
from contextlib import nullcontext

from railonly.cli.commands import number


def register(sub) -> None:
    p = sub.add_parser("compile", help="compile a design into configs, cabling, BOM and lab files")
    p.add_argument("design", metavar="DESIGN.yml")
    p.add_argument("-o", "--outdir", required=True, metavar="OUTDIR")
    p.add_argument("--force", action="store_true",
                   help="replace OUTDIR even when it is not a railonly OUTDIR, holds files railonly did not write "
                        "or files changed since it wrote them (everything in it is deleted)")
    p.add_argument("--progress", action="store_true", help="show progress (default: on for designs over 2,048 GPUs)")
    p.add_argument("--lab-domains", type=number(int), metavar="N",
                   help="HB domains in the emulation lab (a slice: all rails, N domains); overrides lab.domains")
    p.add_argument("--no-check", action="store_true",
                   help="skip the self-check of the generated configs (what `railonly validate` does)")
    p.add_argument("--full", action="store_true",
                   help="render and write every file, even those unchanged since the last compile into OUTDIR")
    p.set_defaults(func=run)


def run(args) -> int:
    from railonly.fabric import parallel

    # Paused for the whole command: the graph and the files are freed (by reference
    # count) when _compile returns, before the collector is back; re-enabled while they
    # lived, its first pass would walk every one of them (0.3 s at 32,768 GPUs).
    with parallel.no_cyclic_gc():
        return _compile(args)


def _compile(args) -> int:
    from railonly.console import Bar
    from railonly.fabric.compiler import compile_design_units, summary
    from railonly.fabric.design import lab_slice
    from railonly.fabric.design.design import load_design
    from railonly.fabric.devices import configs
    from railonly.fabric.outdir import previous as prev
    from railonly.fabric.outdir import writer
    from railonly.fabric.outputs import clabernetes
    from railonly.fabric.progress import Silent
    from railonly.fabric.safe_text import printable

    from railonly.fabric.cost.inventory import check_caps

    design = load_design(args.design)
    check_caps(design)  # caps on GPUs, switches and files, before any work
    target = writer.prepare(args.outdir, force=args.force, inputs=design.input_files)  # refuse before the work
    design = lab_slice.with_lab_domains(design, args.lab_domains)
    show = args.progress or args.verbose or (design.gpus > 2048 and not args.quiet)
    # What railonly wrote into OUTDIR last time, verified file by file (outdir/previous.py).
    last = None if args.full else prev.load(target.path)
    inputs = configs.inputs_key(design)
    if last is not None and last.up_to_date(inputs, check=not args.no_check, folder_mode=writer.DIR_MODE):
        for note in target.notes:
            print(note, file=sys.stderr)
        if not args.quiet:
            print(f"{args.outdir} is up to date: its {last.recorded:,} files are what this design compiles to with "
                  "this railonly, unchanged since it wrote them (--full writes them again)")
        return 0
    if not args.force:  # an edit by hand is not railonly's to throw away
        known = last if last is not None else prev.load(target.path)  # with --full too: what it vouches is not read
        writer.refuse_changed(target, known.sha if known is not None else ())
    with Bar() if show else nullcontext(Silent()) as progress:
        fab, out = compile_design_units(design, progress, last.units if last else {}, last.read if last else None,
                                        last.paths if last else None, parse_back=args.no_check)
        files = out.files
        progress.step(f"checking generated configs and writing {len(files.rendered):,} files")
        sums: dict[str, str] = {}
        staged: dict[str, list[int]] = {}
        # The stage starts from the spare, the tree swapped out last time and kept in railonly's
        # cache; the tree swapped out now becomes the next one. --full takes the spare's folders
        # alone (its files go: its links would keep the replaced tree's bytes on disk) and keeps none.
        spare = prev.spare_path(target.path)
        prev.note_owner(target.path)
        # the self-check covers the switches rendered now only when the previous compile's
        # judged the others (after a --no-check compile, it judges all of them)
        tree: list[int] = []
        failed = check_and_write(target, files, design.sha256, check=not args.no_check, previous=last,
                                 only=out.changed_switches if last and last.checked else None, sums=sums,
                                 spare=spare, keep=None if args.full else spare, tree=tree, staged=staged)
        if not failed:
            prev.save(target.path, out.units, sums, inputs, checked=not args.no_check, tree=tuple(tree), staged=staged)
    for note in target.notes:
        print(note, file=sys.stderr)
    if failed:
        for r in failed[:20]:
            print(f"error: {printable(r.id, lines=False)}: {printable(r.detail)}", file=sys.stderr)
        more = f" (showing 20 of {len(failed)})" if len(failed) > 20 else ""
        print(f"generated configs fail their own checks{more}; nothing was written. "
              "This is a railonly bug: please report it with the design.", file=sys.stderr)
        return 1
    if not args.quiet:
        print(summary(fab))
        print(lab_slice.describe(design))
        kept = f" ({len(files.carried):,} unchanged since the last compile, kept)" if files.carried else ""
        print(f"  wrote     {len(files) + 1:,} files to {args.outdir}{kept}")
        note = clabernetes.too_large(design.name, files)
        if note:
            print(f"  note      {note}")
    return 0


def check_and_write(outdir, files, design_sha256: str, check: bool = True, previous=None,
                    only: "set[str] | None" = None, sums: "dict | None" = None, spare: "str | None" = None,
                    keep: "str | None" = None, tree: "list[int] | None" = None,
                    staged: "dict | None" = None) -> list:
    """Stage the files beside OUTDIR while the self-check runs in a forked
    process; swap them in only when it passes. Returns the failed results
    (then nothing was written). `outdir`: a path or a writer.Target. `files`:
    {path: bytes}, or a compiler.Tree whose carried files are linked from
    `previous`; `only`: the switches an incremental self-check covers;
    `sums` is filled with every file's sha256; `spare`: where the stage starts
    from (writer.stage), `keep`: where the swapped-out tree goes (writer.commit);
    `tree` gets the (device, inode) of the folder swapped in, `staged` each file's stat
    key as staged (writer.stage)."""
    from railonly import proc
    from railonly.fabric import parallel
    from railonly.fabric.compiler import Tree, check_outputs
    from railonly.fabric.outdir import writer

    rendered, carried = (files.rendered, files.carried) if isinstance(files, Tree) else (files, frozenset())
    base = previous.read_checked if previous is not None and only is not None else None
    checker = parallel.Background(check_outputs, files, proc.which("vtysh") is not None, only, base) if check else None
    try:
        tmp = writer.stage(outdir, rendered, design_sha256, carried, previous, sums, spare, staged)
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
    swapped_in = writer.commit(tmp, outdir, keep=keep,
                               remove_later=_remove_later if len(files) >= writer.BACKGROUND_REMOVAL_FILES else None)
    if tree is not None:
        tree[:] = swapped_in
    return []


_removals: list[int] = []  # pids of old trees still being removed after a compile (writer.reaper_argv)


def _remove_later(tmp: str, lock_fd: int) -> None:
    """The old tree's folders go in a detached process that inherits the staging lock."""
    from railonly import proc
    from railonly.fabric.outdir import writer

    _removals.append(proc.spawn(writer.reaper_argv(tmp), pass_fds=(lock_fd,)))


def wait_for_removals() -> None:
    """Wait until every old tree this process handed to the background is gone."""
    from railonly import proc

    while _removals:
        proc.wait(_removals.pop())
