"""`railonly resilience DESIGN [--job JOB] [--presets FILE] [--rates FILE] [--json FILE]`: failure blast radius per
component class on rail-only and the rail-optimized baseline, with failure rates (docs/failures.md)."""

from __future__ import annotations

import json
import sys

from railonly.cli.commands import PRESETS_HELP


def register(sub) -> None:
    p = sub.add_parser("resilience", help="blast radius of every component class on rail-only and the baseline; "
                                          "affected GPUs per month and spare HB domains from failure rates")
    p.add_argument("design", metavar="DESIGN.yml")
    p.add_argument("--job", metavar="JOB.yml", help="size the spare HB domains for this job's GPUs (default: the whole cluster)")
    p.add_argument("--presets", metavar="FILE", help=PRESETS_HELP)
    p.add_argument("--rates", metavar="FILE", help="failure rates YAML replacing the default (fabric/cost/data/failure_rates.yaml)")
    p.add_argument("--json", metavar="FILE", help="write the result as JSON to FILE ('-' for standard output)")
    p.set_defaults(func=run)


def run(args) -> int:
    from railonly.cli.commands.analyze import _atomic_write, _check_target
    from railonly.fabric.analysis import load_job, load_presets
    from railonly.fabric.analysis.failure_report import fabrics
    from railonly.fabric.analysis.resilience import resilience, text
    from railonly.fabric.cost.failure_rates import load_rates
    from railonly.fabric.design.design import load_design
    from railonly.cli.commands import platform_reads, refuse_empty
    from railonly.fabric.input.problems import AllInputs, InputError, Problem
    from railonly.reportfile import refuse_targets

    # it ran and wrote nothing
    refuse_empty(("--json", args.json, "give a file name, - for standard output, or leave it out"))
    if args.json and args.json != "-":
        _check_target("--json", args.json)
        refuse_targets({"--json": args.json}, {"the design": args.design, "the job": args.job, "the presets": args.presets,
                                               "the failure rates": args.rates})
    if args.presets is not None and args.job is None:  # they would be read for nothing
        raise InputError([Problem("--presets", "adds GPU and model presets for the --job file, and no --job is given",
                                  "add --job JOB.yml, or leave out --presets", None, "command line")])
    inputs = AllInputs()
    design = inputs.read(load_design, args.design)
    rates = inputs.read(load_rates, args.rates)
    job = None
    if args.job is not None:  # an empty --job is a missing file, not "no job"
        presets = inputs.read(load_presets, args.presets)
        job = inputs.read(load_job, args.job, presets) if presets is not None else None
    inputs.stop_if_any()
    if args.json and args.json != "-":  # the platform files the design names are inputs too
        refuse_targets({"--json": args.json}, platform_reads(design))
    if job is not None and job.parallel.gpus > design.gpus:
        # the job's key is what is too large for this design: located there, as analyze does
        raise InputError([job.problem("parallel", f"the job needs {job.parallel.gpus:,} GPUs, the design '{design.name}' "
                                                  f"({args.design}) has {design.gpus:,}",
                                      "give a smaller job (tp x cp x pp x dp) or a larger design")])
    doc = {"design": design.name, "rates": rates.file,
           "networks": resilience(fabrics(design), rates, job.parallel.gpus if job else None)}
    body = json.dumps(doc, indent=2) + "\n"
    if args.json == "-":
        sys.stdout.write(body)
        return 0
    if args.json:
        _atomic_write(args.json, body.encode())
    if not args.quiet:
        print(text(doc["networks"], design.name))
        if args.json:
            print(f"wrote {args.json}")
    return 0
