"""`railonly analyze DESIGN JOB`: a training job on the fabric (placement, traffic,
iteration time on rail-only / rail-optimized / ideal, cost, search, sweeps).

Every input is read and every figure computed before anything is written; each
output file appears whole (temporary file in the same directory, then rename).
"""

from __future__ import annotations

import json
import os
import sys

from railonly.cli.commands import PRESETS_HELP, number, platform_reads, refuse_empty

MAX_SWEEP_POINTS = 64


def register(sub) -> None:
    p = sub.add_parser("analyze", help="a training job on the fabric: placement, traffic by class, iteration time, cost per throughput")
    p.add_argument("design", metavar="DESIGN.yml")
    p.add_argument("job", metavar="JOB.yml")
    p.add_argument("--json", metavar="FILE", help="write the analysis (docs/reference/outdir.md) to FILE ('-' for standard output)")
    p.add_argument("--place", choices=("given", "auto"), default="given",
                   help="auto: the rank order with the fastest rail-only iteration, fewest cross-rail bytes breaking ties (default: the job's order)")
    p.add_argument("--oversub", type=number(float), default=1.0, metavar="X",
                   help="oversubscription of the rail-optimized spine, e.g. 2 (default 1: non-blocking)")
    p.add_argument("--traffic", metavar="FILE.csv", help="write the HB-domain traffic matrix as CSV and a heat map beside it (FILE.png)")
    p.add_argument("--launcher", metavar="FILE.csv", help="write the rank-to-GPU map for a launcher, and its NCCL settings beside it (FILE.env)")
    p.add_argument("--search", action="store_true", help="best tp, pp, dp, ep, micro-batch, vpp and recompute per network under memory limits")
    p.add_argument("--sweep", metavar="AXIS=V,...", help="sweep k, nic, hb or batch over values, e.g. k=8,16,32,72,256")
    p.add_argument("--plot", metavar="FILE.png", default=None, help="where --sweep draws its PNG (default sweep.png), with FILE.csv beside it")
    p.add_argument("--prices", metavar="FILE", help="price book YAML replacing the default")
    p.add_argument("--presets", metavar="FILE", help=PRESETS_HELP)
    p.add_argument("--fail", metavar="SPEC", action="append", default=[],
                   help="the job with a failure (repeatable): nic:GPU, cable:CABLE_ID, switch:NAME or domain:NAME "
                        "(docs/failures.md)")
    p.set_defaults(func=run)


def _problem(flag: str, message: str, fix: str):
    from railonly.fabric.input.problems import InputError, Problem

    return InputError([Problem(flag, message, fix, None, "command line")])


def parse_sweep(text: str) -> tuple[str, list[float]]:
    from railonly.fabric.analysis.search import SWEEP_AXES

    axis, sep, values = text.partition("=")
    axis = axis.strip().lower()
    if not sep or axis not in SWEEP_AXES:
        raise _problem("--sweep", f"must be AXIS=V1,V2,... with AXIS one of {', '.join(SWEEP_AXES)}, got {text!r}", "e.g. --sweep k=8,16,32,72,256")
    out = []
    from railonly.fabric.safe_text import decimal

    for part in values.split(","):
        part = part.strip().replace("_", "")
        v = decimal(part)  # ASCII digits: float() reads '٣' as 3
        if v is None:
            v = -1.0
        whole = axis in ("k", "batch")
        if not v > 0 or (whole and not v.is_integer()) or (axis == "k" and v > 512) or v > 1e9:
            raise _problem("--sweep", f"{axis} values must be {'whole ' if whole else ''}numbers above 0{' up to 512' if axis == 'k' else ''}, got {part!r}",
                           "e.g. --sweep k=8,16,32,72,256 or --sweep batch=256,1024,4096")
        out.append(int(v) if whole else v)
    if len(set(out)) > MAX_SWEEP_POINTS:
        raise _problem("--sweep", f"at most {MAX_SWEEP_POINTS} values, got {len(set(out))}", "sweep fewer points")
    return axis, sorted(set(out))


def _atomic_write(path: str, data: bytes) -> None:
    """railonly.reportfile: replaces a regular file only, never a link or a device."""
    from railonly.reportfile import write_report

    write_report(path, data)


def _check_target(flag: str, path: str) -> None:
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise _problem(flag, f"directory {d} does not exist", "create it first or give another path")
    if os.path.isdir(path):
        raise _problem(flag, f"{path} is a directory", "give a file name")


def _beside(path: str, ext: str) -> str:
    root, _ = os.path.splitext(path)
    return root + ext


def run(args) -> int:
    from railonly.fabric.analysis import Cluster, Rates, load_job, load_presets, place, place_auto
    from railonly.fabric.analysis.cost import network_boms
    from railonly.fabric.analysis.launcher import env_file, launcher_csv, nccl_settings
    from railonly.fabric.analysis.matrix import domain_matrix, render_csv, render_heatmap
    from railonly.fabric.analysis.analysis_report import analyze, contract, text
    from railonly.fabric.analysis.search import SWEEP_AXES, parallel_dict, render_sweep_csv, search, sweep, why_empty, would_fit
    from railonly.fabric.analysis.traffic import class_bytes
    from railonly.fabric.cost.prices import load_prices
    from railonly.fabric.design.design import load_design
    from railonly.fabric.input.problems import AllInputs
    from railonly.reportfile import refuse_targets

    if not (1.0 <= args.oversub <= 64):
        raise _problem("--oversub", f"must be from 1 to 64, got {args.oversub:g}", "e.g. --oversub 2 (1: non-blocking spine)")
    # --plot '' wrote ./sweep.png, --sweep '' did nothing
    refuse_empty(*((flag, value, "give a value, or leave the option out") for flag, value in (
        ("--json", args.json), ("--traffic", args.traffic), ("--launcher", args.launcher), ("--plot", args.plot),
        ("--sweep", args.sweep))))
    sweep_spec = parse_sweep(args.sweep) if args.sweep else None
    for flag, path in (("--json", args.json if args.json != "-" else None), ("--traffic", args.traffic),
                       ("--launcher", args.launcher), ("--plot", args.plot)):
        if path:
            _check_target(flag, path)
    # the CSV and its picture sit side by side: they must not be the same file
    if args.traffic and args.traffic.lower().endswith(".png"):
        raise _problem("--traffic", f"names the CSV (the heat map goes beside it as .png), got {args.traffic}", "e.g. --traffic traffic.csv")
    if args.launcher and args.launcher.lower().endswith(".env"):
        raise _problem("--launcher", f"names the CSV (the NCCL settings go beside it as .env), got {args.launcher}", "e.g. --launcher ranks.csv")
    if args.plot and not sweep_spec:  # it drew nothing and said nothing: exit 0, no file
        raise _problem("--plot", "draws a --sweep, and none is given", "add --sweep AXIS=V1,V2,..., or leave out --plot")
    if args.plot and args.plot.lower().endswith(".csv"):
        raise _problem("--plot", f"names the PNG (the CSV goes beside it), got {args.plot}", "e.g. --plot sweep.png")
    if sweep_spec and not args.plot:
        # an implicit name never replaces a file the user did not name
        taken = [f for f in ("sweep.png", "sweep.csv") if os.path.lexists(f)]
        if taken:
            raise _problem("--sweep", f"would write sweep.png and sweep.csv here, but {taken[0]} exists",
                           "give --plot FILE.png (an explicit name replaces the file)")
    plot = (args.plot or "sweep.png") if sweep_spec else args.plot
    reports = {"--json": args.json if args.json != "-" else None, "--traffic": args.traffic,
               "--traffic's heat map": args.traffic and _beside(args.traffic, ".png"), "--launcher": args.launcher,
               "--launcher's NCCL settings": args.launcher and _beside(args.launcher, ".env"),
               "--plot": plot, "--plot's CSV": plot and _beside(plot, ".csv")}
    refuse_targets(reports, {"the design": args.design, "the job": args.job, "the price book": args.prices,
                             "the presets": args.presets})

    inputs = AllInputs()
    design = inputs.read(load_design, args.design)
    presets = inputs.read(load_presets, args.presets)
    job = inputs.read(load_job, args.job, presets) if presets is not None else None
    book = inputs.read(load_prices, args.prices)
    inputs.stop_if_any()
    # the platform files the design names are inputs too, known once it is read
    refuse_targets(reports, platform_reads(design))

    cluster = Cluster.from_design(design)
    rates = Rates.of(cluster, args.oversub)
    pl = place_auto(job, cluster, rates) if args.place == "auto" else place(job, cluster)
    a = analyze(job, cluster, pl, rates, network_boms(design, book) or {})  # {}: no price, said so
    outputs: dict[str, bytes] = {}
    failed = False  # exit 1: the job does not fit, or the search found nothing feasible
    if args.search:
        found, counts = search(job, cluster, rates)
        a.search = {n: {"parallel": parallel_dict(b.job), **b.result.as_dict(), "memory_gb": round(b.memory_gb, 3)}
                    for n, b in found.items()}
        a.search["evaluated"] = counts
        if not any(n != "ideal" for n in found):
            a.search["empty"] = why_empty(job, cluster, counts)
            failed = True
    if not a.memory["fits"]:
        a.extra["would_fit"] = would_fit(job, cluster, rates)
        failed = True
    if args.fail:
        from railonly.fabric.analysis.failure_report import failures

        a.extra["failure"] = failures(design, job, pl, rates, a.results, args.fail)
    cross = class_bytes(a.collectives)["cross_rail"]
    a.extra["launcher"] = nccl_settings(design.topology, cross, job.parallel.sp and job.parallel.tp > 1)
    if sweep_spec:
        axis, values = sweep_spec
        points = sweep(job, cluster, axis, values, args.oversub, args.search)
        if not any(p.get("networks") for p in points):  # nothing to draw: the plot's log axis had no point
            why = "; ".join(f"{p['value']:g}: {p['note']}" for p in points[:3]) + ("; ..." if len(points) > 3 else "")
            raise _problem("--sweep", f"no {axis} value gives a job to time ({why})",
                           "give values at which the job runs (the reason of each is above)")
        a.extra["sweep"] = {"axis": axis, "points": points}
        from railonly.fabric.analysis.plots import sweep_png

        title = (f"{job.name} on {design.name} ({job.parallel.gpus:,} GPUs)\niteration time along {SWEEP_AXES[axis]}"
                 + (", best configuration at each point" if args.search else ""))
        outputs[plot] = sweep_png(points, SWEEP_AXES[axis], title, axis in ("k", "batch"))
        outputs[_beside(plot, ".csv")] = render_sweep_csv(points).encode()
    if args.traffic:
        rows = domain_matrix(a.collectives, pl)
        outputs[args.traffic] = render_csv(rows).encode()
        outputs[_beside(args.traffic, ".png")] = render_heatmap(
            rows, -(-job.parallel.gpus // cluster.hb_size), f"{job.name} on {design.name}: bytes per iteration between HB domains")
    if args.launcher:
        outputs[args.launcher] = launcher_csv(pl).encode()
        outputs[_beside(args.launcher, ".env")] = env_file(a.extra["launcher"], job.name, design.name).encode()
    doc = contract(a, design.name)
    body = (json.dumps(doc, indent=2) + "\n").encode()
    if args.json and args.json != "-":
        outputs[args.json] = body
    for path, data in outputs.items():
        _atomic_write(path, data)
    if args.json == "-":
        sys.stdout.write(body.decode())
    elif not args.quiet:  # -q: nothing on success, as every command
        print(text(a, design.name))
        if args.fail:
            from railonly.fabric.analysis.failure_report import failure_text

            print(failure_text(a.extra["failure"]))
        for path in outputs:
            print(f"wrote {path}")
    if failed:
        mem = a.memory
        if not mem["fits"]:
            print(f"error: {job.name} needs {mem['total_gb']:.1f} GB per GPU, {job.gpu.name} has {mem['capacity_gb']:g} GB; "
                  f"would fit: {a.extra['would_fit']['text']}", file=sys.stderr)
        if a.search is not None and a.search.get("empty"):
            print(f"error: --search found nothing feasible: {a.search['empty']}", file=sys.stderr)
        return 1
    return 0
