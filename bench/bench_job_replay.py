"""A training job replayed on a rail-only lab and on its rail-optimized baseline, measured
beside the model (docs/lab/replay.md).

The same jobs on labs/mini-routed.yml (rail-only: 2 rails x 6 HB domains of K = 2) and
labs/mini-baseline.yml (rail-optimized: spines join the rails), both with ideal tiers
(the switch-to-switch links unshaped, as bench_forwarding_overhead.py: the network the
paper compares against; rail NICs and HB ports stay shaped):

- dense: labs/jobs/gpt-small.yml (tp 2 in the HB domain, pp 3 and dp 2 on the rails):
  the iteration's measured time beside the model at lab rates, rail-only beside
  rail-optimized, and the bytes on cross-rail paths (counters: GPU output by class,
  kernel forwarding, the baseline's rail-joining spines);
- MoE: labs/jobs/moe-mini.yml (EP groups of 2 HB domains x 2 rails): the all-to-all's
  overhead of rail-only over rail-optimized, measured, beside the analysis model (the
  paper's convention: every inter-domain byte crosses NVLink, so NIC/HB), the lab plan's
  own model (only the cross-rail bytes are staged: their share x NIC/HB) and the paper
  (8.2% DGX A100, 11.2% DGX H100); the staged bytes on the HB ports of the forwarding GPUs.

Median of REPS iterations (each phase measured per iteration). Needs root; run under
the lab lock (flock /tmp/railonly-netns.lock). Each lab is compiled under a unique
name, deployed once and destroyed in a finally; or REPLAY_OUTDIRS=ROUTED,BASELINE names
two OUTDIRs of these designs already deployed (their tiers are unshaped, they stay up).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
REPS = int(os.environ.get("REPS", "3"))
JOBS = {"dense": "gpt-small", "moe": "moe-mini"}
PAPER = {"DGX A100": 8.2, "DGX H100": 11.2}


def run_design(tmp: Path, design: str, outdir: str | None = None) -> dict:
    from railonly.cli import main
    from railonly.emulation.lab import load_lab
    from railonly.emulation.runtime.registry import get_runtime
    from railonly.emulation.traffic import iperf3, replay
    from railonly.fabric.analysis import load_job

    if outdir is None:
        d = yaml.safe_load((ROOT / "labs" / f"{design}.yml").read_text())
        d["name"] = f"bjr{os.getpid() % 10000}{design[5]}"
        src = tmp / f"{d['name']}.yml"
        src.write_text(yaml.safe_dump(d))
        out = tmp / d["name"]
        assert main(["compile", str(src), "-o", str(out), "-q"]) == 0
    rt, lab = get_runtime("netns"), load_lab(outdir or out)
    res = {}
    try:
        if outdir is None:
            rt.deploy(lab)
        iperf3.unshape_fabric(lab, rt)
        converge = True
        for kind, job in JOBS.items():
            res[kind] = replay.run(lab, rt, load_job(ROOT / "labs" / "jobs" / f"{job}.yml"), iterations=REPS,
                                   converge=converge, progress=lambda s: print(f"  .. {design}: {s}", file=sys.stderr))
            converge = False
    finally:
        iperf3.stop_servers(lab)
        if outdir is None:
            rt.destroy(lab)
    return res


def _phase(rep: dict, parallelism: str) -> list[dict]:
    return [p for p in rep["phases"] if p["parallelism"] == parallelism]


def _per_iter(rep: dict, parallelism: str) -> list[float]:
    ph = _phase(rep, parallelism)
    return [sum(p["iterations"][k]["measured_s"] for p in ph) for k in range(rep["iterations"])]


def _plan_model(rep: dict, parallelism: str) -> float:
    return sum(p["plan_model_s"] for p in _phase(rep, parallelism))


def main() -> int:
    if os.geteuid() != 0:
        print("bench_job_replay: needs root (network namespaces); skipped")
        return 0
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="railonly-bjr-") as t:
        tmp = Path(t)
        os.chmod(tmp, 0o755)
        given = os.environ.get("REPLAY_OUTDIRS", "").split(",") if os.environ.get("REPLAY_OUTDIRS") else [None, None]
        ro = run_design(tmp, "mini-routed", given[0])
        rb = run_design(tmp, "mini-baseline", given[1])
    elapsed = time.monotonic() - t0
    if os.environ.get("BENCH_JSON"):  # every report, for a closer look
        Path(os.environ["BENCH_JSON"]).write_text(json.dumps({"rail-only": ro, "rail-optimized": rb}, indent=1))
    x = ro["dense"]
    print(f"job replay on the mini labs (12 GPUs: 6 HB domains of K=2, 2 rails), ideal tiers; NIC {x['nic_gbps_emulated'] * 1000:g}"
          f" Mbit/s, HB {x['hb_gbps_emulated'] * 1000:g} Mbit/s; median [min-max] of {REPS} iterations; {elapsed:.0f} s")
    print(f"  {'job':<11}{'fabric':<16}{'measured s':>22}{'model s':>9}{'vs model':>9}"
          f"{'cross-rail B':>14}{'kernel fwd B':>14}{'spines: cross-rail B':>22}{'staged B':>14}  verdict")
    for kind in JOBS:
        for fab, r in (("rail-only", ro[kind]), ("rail-optimized", rb[kind])):
            it = r["iteration_s"]
            sw = "-" if r["joining_switch_bytes"] is None else f"{r['joining_switch_bytes']['cross_rail']:,}"
            print(f"  {r['job']:<11}{fab:<16}{statistics.median(it):>9.2f} [{min(it):.2f}-{max(it):.2f}]"
                  f"{r['model_iteration_s']:>9.2f}{100 * (r['measured_iteration_s'] / r['model_iteration_s'] - 1):>+8.1f}%"
                  f"{r['bytes']['cross_rail']:>14,}{r['kernel_forwarded_bytes']:>14,}{sw:>22}"
                  f"{r['staged_bytes']:>14,}  {r['verdict']}")
    d_ro, d_rb = ro["dense"]["measured_iteration_s"], rb["dense"]["measured_iteration_s"]
    print(f"\n  dense: rail-only {100 * (d_ro / d_rb - 1):+.1f}% over rail-optimized (model {100 * (ro['dense']['model_iteration_s'] / rb['dense']['model_iteration_s'] - 1):+.1f}%)")
    a_ro, a_rb = _per_iter(ro["moe"], "ep"), _per_iter(rb["moe"], "ep")
    meas = statistics.median(a_ro) / statistics.median(a_rb) - 1
    m_ro = sum(p["model_s"] for p in _phase(ro["moe"], "ep"))
    m_rb = sum(p["model_s"] for p in _phase(rb["moe"], "ep"))
    plan = _plan_model(ro["moe"], "ep") / _plan_model(rb["moe"], "ep") - 1
    ratio = x["nic_gbps_emulated"] / x["hb_gbps_emulated"]
    paper = ", ".join(f"{v}% {k}" for k, v in PAPER.items())
    print(f"  MoE all-to-all: rail-only {statistics.median(a_ro):.2f} s [{min(a_ro):.2f}-{max(a_ro):.2f}],"
          f" rail-optimized {statistics.median(a_rb):.2f} s [{min(a_rb):.2f}-{max(a_rb):.2f}]")
    sf = ro["moe"]["moe_all_to_all_overhead_model"]
    print(f"  {'overhead of rail-only over rail-optimized':<44}{'measured':>9}{'model (as run)':>16}{'lab plan model':>16}"
          f"{'model (paper conv.)':>21}{'NIC/HB':>8}  paper")
    print(f"  {'MoE all-to-all (EP 2 domains x 2 rails)':<44}{100 * meas:>+8.1f}%{100 * sf:>+15.1f}%"
          f"{100 * plan:>+15.1f}%{100 * (m_ro / m_rb - 1):>+20.1f}%{100 * ratio:>7.1f}%  {paper}")
    print("  (model as run: the analysis model's store-and-forward form, where PXN stages only the bytes bound for"
          " another rail over NVLink; the paper's convention stages every inter-domain byte)")
    # evidence: the staged bytes arrived on the HB ports of the forwarding GPUs
    ep = _phase(ro["moe"], "ep")[0]["iterations"][0]
    staged_rx = ep["staged_in"]
    hb_rx = {g: v.get("hb_rx", 0) for g, v in ep["ports"].items()}
    print("  rail-only MoE all-to-all, staged bytes received by each forwarding GPU (nft input hook) and its HB port rx:")
    for g in sorted(staged_rx):
        print(f"    {g:<12}{staged_rx[g]:>14,} B staged{hb_rx.get(g, 0):>16,} B on the HB port")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
