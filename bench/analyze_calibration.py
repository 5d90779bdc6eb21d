"""Refit the analysis' GEMM constants on Korthikanti et al. Table 5, and print the validation table.

The fit: a grid over gemm_efficiency (0.60-1.00, step 0.01) and gemm_half_width (0-400,
step 10), least squares on the 8 Table 5 iteration times (relative errors), with every
other constant as gpus.yaml has it. Nothing else is fitted; the held-out points
(tests/analysis/published.py) are only evaluated. The tables it prints are the ones in
docs/analyze-validation.md, the paper's batch-size sweep last (paste them there when the
model changes, and say so).

    .venv/bin/python bench/analyze_calibration.py [--no-fit]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-fit", action="store_true", help="only print the table with gpus.yaml's constants")
    args = ap.parse_args()

    from railonly.fabric.analysis import Rates, evaluate, load_job, place
    from tests.analysis.published import (HELDOUT, KORTHIKANTI, OTHER_SOFTWARE, SELENE, TABLE5,
                                          published_seconds)

    jobs = os.path.join(REPO, "labs", "jobs")

    def predict(job, **gpu) -> float:
        if gpu:
            job = dataclasses.replace(job, gpu=dataclasses.replace(job.gpu, **gpu))
        pl = place(job, SELENE, problems=False)
        return evaluate(job, pl, Rates.of(SELENE), ("rail-only",))["rail-only"].iteration_s

    table5 = []
    for model, (full, sel, _, _) in TABLE5.items():
        for mode, seconds in (("full", full), ("sel", sel)):
            table5.append((f"table5/{model}-{mode}", load_job(os.path.join(jobs, "table5", f"{model}-{mode}.yml")), seconds))

    if not args.no_fit:
        best = None
        for e in range(60, 101):
            for w in range(0, 401, 10):
                errs = [predict(j, gemm_efficiency=e / 100, gemm_half_width=float(w)) / s - 1 for _, j, s in table5]
                rms = math.sqrt(sum(x * x for x in errs) / len(errs))
                if best is None or rms < best[0]:
                    best = (rms, e / 100, w)
        print(f"least squares on Table 5: gemm_efficiency {best[1]:.2f}, gemm_half_width {best[2]} (rms {best[0]:.2%})")
        a100 = table5[0][1].gpu
        print(f"gpus.yaml a100 has:       gemm_efficiency {a100.gemm_efficiency:.2f}, gemm_half_width {a100.gemm_half_width:g}")

    rows, held, tp8 = [], [], []
    for name, job, seconds in table5:
        t = predict(job)
        rows.append((name, KORTHIKANTI, f"{seconds:.2f} s", seconds, t, "fitted"))
    for group, label in ((HELDOUT, "held out"), (OTHER_SOFTWARE, "other software")):
        for name, source, unit, value in group:
            job = load_job(os.path.join(jobs, "heldout", f"{name}.yml"))
            seconds = published_seconds(job, unit, value)
            t = predict(job)
            rows.append((f"heldout/{name}", source, f"{value:g} TFLOP/s" if unit == "tflops" else f"{value:g} s", seconds, t, label))
            if group is HELDOUT:
                held.append(t / seconds - 1)
                if job.parallel.tp == 8:
                    tp8.append(t / seconds - 1)
    print("\n| job (labs/jobs/) | published | published s | railonly s | error | use | source |")
    print("|---|---|---|---|---|---|---|")
    for name, source, shown, seconds, t, use in rows:
        print(f"| {name} | {shown} | {seconds:.2f} | {t:.2f} | {t / seconds - 1:+.1%} | {use} | {source} |")
    fit = [abs(t / s - 1) for _, _, _, s, t, use in rows if use == "fitted"]
    print(f"\nTable 5 (fitted): mean {sum(fit) / len(fit):.2%}, worst {max(fit):.2%}")
    print(f"held out ({len(held)}): mean {sum(map(abs, held)) / len(held):.2%}, worst {max(map(abs, held)):.2%}, "
          f"mean signed {sum(held) / len(held):+.2%}; tp-8 points ({len(tp8)}): spread (std) {statistics.pstdev(tp8):.2%}")
    batch_sweep()
    return 0


def batch_sweep() -> None:
    """The Rail-only paper's batch-size sweep (held out), the table of docs/analyze-validation.md:
    rail-only's iteration time as a share of the ideal network's (every GPU in one HB domain)."""
    from railonly.fabric.analysis import Cluster, load_job
    from railonly.fabric.analysis.search import sweep
    from railonly.fabric.design.design import load_design
    from tests.analysis.published import RAIL_ONLY_BATCH_SWEEP

    batches = (256, 512, 1024, 2048, 4096)
    setups = (("K = 8, H100, the job's fixed tp 8 x pp 64 x dp 64 (the audit)", "dgx-h100-32k", "gpt-1t-32k.yml", False),
              ("K = 8, H100, searched (the ideal searched at K = N)", "dgx-h100-32k", "gpt-1t-32k.yml", True),
              ("K = 256, GH200, searched (`labs/gh200-32k.yml`, `labs/jobs/gpt-1t-gh200-32k.yml`)", "gh200-32k",
               "gpt-1t-gh200-32k.yml", True))
    print("\nThe Rail-only paper's batch-size sweep (held out): rail-only as a share of the ideal\n")
    print("| setup | " + " | ".join(f"{b:,}" for b in batches) + " |")
    print("|---|" + "---|" * len(batches))
    for label, design, job, searched in setups:
        cluster = Cluster.from_design(load_design(os.path.join(REPO, "labs", f"{design}.yml")))
        points = sweep(load_job(os.path.join(REPO, "labs", "jobs", job)), cluster, "batch", batches, do_search=searched)
        share = {int(pt["value"]): pt["networks"]["ideal"]["iteration_s"] / pt["networks"]["rail-only"]["iteration_s"]
                 for pt in points}
        print(f"| {label} | " + " | ".join(f"{share[b]:.1%}" for b in batches) + " |")
    print("| the paper [RO] | " + " | ".join(f"about {RAIL_ONLY_BATCH_SWEEP[b]:.0%}" if b in RAIL_ONLY_BATCH_SWEEP else ""
                                             for b in batches) + " |")


if __name__ == "__main__":
    sys.exit(main())
