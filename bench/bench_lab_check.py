"""Benchmark `railonly lab check`: the isolation check beside reachability, in one run.

Compiles a design's lab slice (``--lab-domains``), deploys it under a lab name of
its own (namespaces recorded first, so an interrupted run is removed by destroy
like any lab), runs every check once, prints each check's seconds, its planned
items and probes, and the floor the isolation check is held to: its probe frames
sent at the rate reachability reached in the same run (probes per second). Then
destroys the lab. Root; the full 1,024-GPU lab (``--domains 128``) takes minutes.

  .venv/bin/python bench/bench_lab_check.py [--design labs/dgx-h100-1k.yml] [--domains 16] [--json FILE]
  .venv/bin/python bench/bench_lab_check.py --outdir OUTDIR --lab-name NAME   # a lab already deployed: no deploy/destroy
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from railonly.emulation.checks import checker
from railonly.emulation.checks import check_plan
from railonly.emulation.lab import load_lab
from railonly.emulation.runtime.netns.runtime import NetnsRuntime

REPO = Path(__file__).resolve().parent.parent


def _cpu() -> float:
    """CPU seconds (user + system) of this process and its waited-for children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--design", default=str(REPO / "labs" / "dgx-h100-1k.yml"))
    ap.add_argument("--domains", type=int, default=16, help="HB domains of the lab slice (default 16; 128 = full 1,024 GPUs)")
    ap.add_argument("--outdir", help="an OUTDIR whose lab is already deployed (with --lab-name): check only")
    ap.add_argument("--lab-name", help="the deployed lab's name (default: rbc<domains>, deployed and destroyed here)")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root", file=sys.stderr)
        return 3
    rt = NetnsRuntime(ssh=False)
    owned = args.outdir is None
    if owned:
        outdir = os.path.join(tempfile.mkdtemp(prefix="rb-check-"), "out")
        subprocess.run([sys.executable, "-m", "railonly", "compile", args.design, "--lab-domains", str(args.domains),
                        "-o", outdir, "-q", "--no-check"], check=True)
        lab = load_lab(outdir).renamed(args.lab_name or f"rbc{args.domains}")
    else:
        lab = load_lab(args.outdir)
        if args.lab_name:
            lab = lab.renamed(args.lab_name)
    row: dict = {"lab": lab.name, "gpus": len(lab.gpus), "switches": len(lab.switches),
                 "load": os.getloadavg()[0]}
    try:
        if owned:
            t = time.perf_counter()
            rt.deploy(lab)
            row["deploy"] = time.perf_counter() - t
        cp = check_plan.load(lab)
        counts = cp.counts()
        row["load"] = os.getloadavg()[0]
        cpu0, t0 = _cpu(), time.perf_counter()
        run = checker.run(lab, rt, timeout=args.timeout)
        row["check_s"], row["check_cpu_s"] = time.perf_counter() - t0, _cpu() - cpu0
    finally:
        if owned:
            rt.destroy(lab)
    row["load_after"] = os.getloadavg()[0]
    row["passed"], row["failed"] = run.passed, run.failed
    row["timings"] = {k: round(v, 3) for k, v in run.timings.items()}
    reach_s = run.timings.get("reachability", 0.0)
    iso_s = run.timings.get("isolation", 0.0)
    reach_probes = counts["reachability"]
    # probe frames of the isolation check: routed, one per other rail per GPU; L2, two per GPU;
    # each sent twice (as reachability's probes are sent at least once)
    per_gpu = (len(cp.rails) - 1) if cp.mode == "routed" else 2
    iso_probes = 2 * per_gpu * len(cp.gpus)
    rate = reach_probes / reach_s if reach_s else 0.0
    row.update(reach_pairs=reach_probes, reach_s=reach_s, reach_rate=rate, isolation_checks=counts["isolation"],
               isolation_probes=iso_probes, isolation_s=iso_s,
               isolation_floor=iso_probes / rate if rate else None)
    print(f"lab {lab.name}: {row['gpus']} GPUs, {row['switches']} switches; load {row['load']:.1f} -> {row['load_after']:.1f}")
    print(f"  reachability  {reach_probes:>7} pairs     {reach_s:7.2f} s  ({rate:,.0f} probes/s)")
    floor = row["isolation_floor"]
    print(f"  isolation     {counts['isolation']:>7} checks    {iso_s:7.2f} s  ({iso_probes} frames; at reachability's rate"
          f" {floor if floor is not None else float('nan'):.2f} s + the check's fixed 1.0 s of listening)")
    print(f"  whole check   {row['check_s']:7.2f} s wall, {row['check_cpu_s']:.2f} s CPU of this process and its"
          f" children (on a loaded machine the wall time is the CPU time stretched by the load: 2 cores shared)")
    print(f"  timings: {row['timings']}")
    print(f"  results: {run.passed} passed, {run.failed} failed")
    if args.json:
        Path(args.json).write_text(json.dumps(row, indent=1))
    return 0 if run.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
