"""`railonly sweep`: rail-only savings over HB-domain sizes, cluster sizes and radices (CSV + PNG)."""

from __future__ import annotations

import hashlib
import sys


def register(sub) -> None:
    from railonly.fabric.cost.sweep import DEFAULT_GPUS, DEFAULT_HB_SIZES, DEFAULT_RADICES

    p = sub.add_parser("sweep", help="savings of rail-only over the baseline across HB sizes, cluster sizes and radices")
    p.add_argument("--hb-sizes", default=",".join(map(str, DEFAULT_HB_SIZES)), metavar="K,...", help="GPUs per HB domain (default %(default)s)")
    p.add_argument("--gpus", default=",".join(map(str, DEFAULT_GPUS)), metavar="N,...", help="cluster sizes in GPUs (default %(default)s)")
    p.add_argument("--radix", default=",".join(map(str, DEFAULT_RADICES)), metavar="R,...", help="switch radices (default %(default)s)")
    p.add_argument("--no-share-rails", action="store_true", help="do not let small one-tier rails share a switch")
    p.add_argument("--prices", metavar="FILE", help="price book YAML replacing the default")
    p.add_argument("-o", "--outdir", default="sweep", metavar="DIR", help="where sweep.csv and sweep.png go (default %(default)s)")
    p.add_argument("--force", action="store_true",
                   help="replace DIR even when it is not a railonly output directory or a file of it was changed "
                        "since (everything in it is deleted)")
    p.set_defaults(func=run)


# An example of each list flag's values, for the fix line of a bad value.
EXAMPLES = {"--hb-sizes": "8,72,256", "--gpus": "1024,8192,32768", "--radix": "64,128,256"}


def _ints(flag: str, text: str, low: int, high: int, even: bool = False) -> list[int]:
    from railonly.fabric.input.problems import InputError, Problem
    from railonly.fabric.safe_text import whole

    out = []
    for part in text.split(","):
        part = part.strip().replace("_", "")
        n = whole(part)
        if n is None or not low <= n <= high or (even and n % 2):
            what = "even whole numbers" if even else "whole numbers"
            raise InputError([Problem(flag, f"must be {what} from {low:,} to {high:,} separated by commas, got {part!r}",
                                      f"e.g. {flag} {EXAMPLES[flag]}", None, "command line")])
        out.append(n)
    return sorted(set(out))


def run(args) -> int:
    from railonly.fabric.cost.prices import load_prices
    from railonly.fabric.cost.sweep import SWEEP_CSV, SWEEP_PNG, render_csv, render_png, sweep
    from railonly.fabric.input import limits
    from railonly.fabric.input.problems import InputError, Problem
    from railonly.fabric.outdir.writer import prepare, refuse_changed, write_outdir

    target = prepare(args.outdir, force=args.force, inputs=(args.prices,) if args.prices else (), kind=SWEEP_CSV)
    refuse_changed(target)
    hb = _ints("--hb-sizes", args.hb_sizes, 1, 512)
    gpus = _ints("--gpus", args.gpus, 1, 10_000_000)
    radices = _ints("--radix", args.radix, 4, 1024, even=True)
    points = len(hb) * len(gpus) * len(radices)
    if points > limits.SWEEP_POINTS.value:
        cap = limits.SWEEP_POINTS
        raise InputError([Problem("--hb-sizes x --gpus x --radix",
                                  f"{len(hb):,} x {len(gpus):,} x {len(radices):,} = {points:,} {cap.what}, more than "
                                  f"the cap of {cap.value:,} ({cap.env})", f"sweep fewer values, or raise the cap for "
                                  f"this run: {cap.env}={points} railonly sweep ...", None, "command line")])
    book = load_prices(args.prices)
    rows = sweep(hb, gpus, radices, book, share_rails=not args.no_share_rails)
    text = render_csv(rows)
    files = {SWEEP_CSV: text.encode(), SWEEP_PNG: render_png(rows)}
    write_outdir(target, files, hashlib.sha256(text.encode()).hexdigest())
    for note in target.notes:
        print(note, file=sys.stderr)
    # a saving below zero is rail-only costing more (a switch per small rail with --no-share-rails)
    paying = [r for r in rows if (r.get("cost_saving") or 0) > 0]
    best = max(paying, key=lambda r: r["cost_saving"], default=None)
    if args.quiet:
        return 0
    dearer = sum(1 for r in rows if (r.get("cost_saving") or 0) < 0)
    print(f"{len(rows)} {_clusters(len(rows))}, {len(paying)} where rail-only saves"
          + (f", {dearer} where it costs more" if dearer else "") + f"; wrote {SWEEP_CSV} and {SWEEP_PNG} to {args.outdir}")
    if best:
        print(f"  largest saving: {best['cost_saving']:.0%} of cost at K = {best['hb_size']}, "
              f"{best['gpus']:,} GPUs, radix {best['radix']} (tiers {best['baseline_tiers']} -> {best['rail_tiers']})")
    packed = [r for r in rows if r.get("baseline_rails_per_leaf", 1) > 1 or r.get("rail_rails_per_switch", 1) > 1]
    if packed:
        both = sum(1 for r in packed if r["baseline_rails_per_leaf"] > 1 and r["rail_rails_per_switch"] > 1)
        print(f"  small rails packed onto shared tier-1 switches in {len(packed)} {_clusters(len(packed))} "
              f"({both} on both sides; columns baseline_rails_per_leaf, rail_rails_per_switch)")
    return 0


def _clusters(n: int) -> str:
    return "cluster" if n == 1 else "clusters"
