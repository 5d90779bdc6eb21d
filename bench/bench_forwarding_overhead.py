"""The forwarding overhead of rail-only, measured: the same all-to-all on a rail-only
lab and on the rail-optimized lab of the same cluster (labs/mini-routed.yml vs
labs/mini-baseline.yml: 12 GPUs = 6 HB domains of K = 2, 2 rails, NIC:HB = 400:3600
scaled to the lab's shaped rates), printed beside the model and the paper (8.2% DGX
A100, 11.2% DGX H100).

Method (docs/lab/check.md):

- the all-to-all is *phased*, as NCCL runs it: 10 steps, in each every GPU sends one
  flow and receives one (a permutation), so a non-blocking fabric does not congest;
  a step's time is its slowest flow (the planned bytes at the rate iperf3's receiver
  measured: process start and the unread tail are not counted) and the steps add up;
- each lab runs twice over: with every link shaped as deployed (the tiers above the
  rail NICs are NIC-rate links with per-flow ECMP: realistic, and collisions of two
  flows on one uplink show), then with those switch-to-switch links unshaped (an
  ideal non-blocking fabric, the network the paper compares against; the rail NICs
  and HB ports stay shaped);
- rail-only runs the phased schedule with per-packet kernel forwarding through the
  HB domain (pipelined) and the *two-phase* schedule (the HB shuffle, then rail
  steps: the store-and-forward form of PXN the paper's overhead assumes);
- REPS repetitions of each (median, min-max); per-link counters (switch-to-switch
  ports, GPU NIC and HB ports) as evidence.

Needs root (network namespaces). Each lab is compiled under a unique name, deployed
once, and destroyed in a finally.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
REPS = int(os.environ.get("REPS", "5"))
STEP_S = float(os.environ.get("STEP_S", "0.4"))  # model seconds of one phased step (sets the bytes)
PAPER = {"DGX A100 (200G NIC, 2400G HB)": 8.2, "DGX H100 (400G NIC, 3600G HB)": 11.2}


def _stats(xs: list[float]) -> dict:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def run_design(tmp: Path, design: str, runs: list[tuple[str, str, bool, int]], nbytes: int) -> dict:
    """runs: (label, schedule, ideal, reps); shaped runs first, then the fabric is unshaped."""
    from railonly.cli import main
    from railonly.emulation.checks import check_plan as checks_plan
    from railonly.emulation.lab import load_lab
    from railonly.emulation.runtime.registry import get_runtime
    from railonly.emulation.traffic import iperf3, completion_time as model, patterns

    d = yaml.safe_load((ROOT / "labs" / f"{design}.yml").read_text())
    d["name"] = f"bfo{os.getpid() % 10000}{design[-1]}"
    src = tmp / f"{d['name']}.yml"
    src.write_text(yaml.safe_dump(d))
    out = tmp / d["name"]
    assert main(["compile", str(src), "-o", str(out)]) == 0
    rt, lab = get_runtime("netns"), load_lab(out)
    cp = checks_plan.load(lab)
    res: dict = {}
    try:
        rt.deploy(lab)
        converged = False
        unshaped = False
        for label, schedule, ideal, reps in sorted(runs, key=lambda r: r[2]):
            if ideal and not unshaped:
                iperf3.unshape_fabric(lab, rt)
                unshaped = True
            r = res.setdefault(label, {"reps": [], "fabric_imbalance": [], "gpu_tx": []})
            for _ in range(reps):
                f0, g0 = iperf3.fabric_counters(lab, rt), iperf3.gpu_counters(lab, rt, cp)
                rep = iperf3.run(lab, rt, "all-to-all", nbytes, schedule=schedule, converge=not converged)
                f1, g1 = iperf3.fabric_counters(lab, rt), iperf3.gpu_counters(lab, rt, cp)
                converged = True
                if rep["failed_flows"]:
                    raise RuntimeError(f"{design} {label}: {rep['failed_flows']} flows failed")
                r["reps"].append(rep)
                fd = [f1[k] - f0.get(k, 0) for k in f1]
                busy = [v for v in fd if v > 0]
                r["fabric_imbalance"].append((max(fd) / statistics.mean(busy), sum(1 for v in fd if v == 0), len(fd))
                                             if busy else None)
                r["gpu_tx"].append({k: g1[k] - g0.get(k, 0) for k in g1})
            r["planned"] = model.link_loads(patterns.plan_flows(cp, "all-to-all", nbytes, schedule))
    finally:
        iperf3.stop_servers(lab)
        rt.destroy(lab)
    return res


def main() -> int:
    if os.geteuid() != 0:
        print("bench_forwarding_overhead: needs root (network namespaces); skipped")
        return 0
    from railonly.emulation.lab import DEFAULT_NIC_MBPS

    nic = DEFAULT_NIC_MBPS
    nbytes = int(nic * 1e6 / 8 * STEP_S)
    t_start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="railonly-bfo-") as t:
        tmp = Path(t)
        os.chmod(tmp, 0o755)
        rail = run_design(tmp, "mini-routed", [
            ("shaped phased", "phased", False, REPS),
            ("shaped concurrent", "concurrent", False, 1),
            ("ideal phased", "phased", True, REPS),
            ("ideal two-phase", "two-phase", True, REPS),
        ], nbytes)
        base = run_design(tmp, "mini-baseline", [
            ("shaped phased", "phased", False, REPS),
            ("shaped concurrent", "concurrent", False, 1),
            ("ideal phased", "phased", True, REPS),
        ], nbytes)
    elapsed = time.monotonic() - t_start

    def meas(r: dict, key: str = "steps_completion_s") -> dict:
        return _stats([x[key] for x in r["reps"]])

    r0 = rail["ideal phased"]["reps"][0]
    nic_m, hb_m, ratio = r0["nic_gbps_emulated"] * 1000, r0["hb_gbps_emulated"] * 1000, r0["nic_hb_ratio"]
    print(f"all-to-all, 12 GPUs (6 HB domains of K=2, 2 rails), {nbytes} bytes per GPU pair, NIC {nic_m:g} Mbit/s,"
          f" HB {hb_m:g} Mbit/s (NIC/HB = {100 * ratio:.1f}%, as 400G/3600G); median [min-max] of {REPS}; {elapsed:.0f} s")
    print("measured = sum over steps of the step's slowest flow (planned bytes at the receiver's iperf3 rate);"
          " wall = first start to last end, process start included")
    rows = [
        ("rail-optimized", "ideal tiers", "phased", base["ideal phased"]),
        ("rail-only", "ideal tiers", "phased, kernel fwd", rail["ideal phased"]),
        ("rail-only", "ideal tiers", "two-phase (HB, rail)", rail["ideal two-phase"]),
        ("rail-optimized", "shaped tiers", "phased", base["shaped phased"]),
        ("rail-only", "shaped tiers", "phased, kernel fwd", rail["shaped phased"]),
        ("rail-optimized", "shaped tiers", "concurrent (1 run)", base["shaped concurrent"]),
        ("rail-only", "shaped tiers", "concurrent (1 run)", rail["shaped concurrent"]),
    ]
    print(f"  {'fabric':<15}{'tiers':<13}{'schedule':<22}{'measured s':>24}{'wall s':>8}{'model s':>9}{'model s&f s':>12}"
          f"  busiest fabric link / mean (idle links)")
    for fab, tiers, sched, r in rows:
        m, w = meas(r), meas(r, "completion_s")
        x = r["reps"][0]
        imb = [i for i in r["fabric_imbalance"] if i]
        imb_s = (f"{statistics.median(i[0] for i in imb):.2f} ({max(i[1] for i in imb)}/{imb[0][2]} idle)"
                 if imb and tiers == "shaped tiers" else "-")
        print(f"  {fab:<15}{tiers:<13}{sched:<22}{m['median']:>9.3f} [{m['min']:.3f}-{m['max']:.3f}]"
              f"{w['median']:>8.2f}{x['model_completion_s']:>9.3f}{x['model_store_forward_s']:>12.3f}  {imb_s}")

    def ov(a: dict, b: dict) -> float:
        return 100 * (meas(a)["median"] / meas(b)["median"] - 1)

    def ovm(a: dict, b: dict, k: str) -> float:
        return 100 * (a["reps"][0][k] / b["reps"][0][k] - 1)

    bi, bs = base["ideal phased"], base["shaped phased"]
    spread_i = [100 * (x["steps_completion_s"] / meas(bi)["median"] - 1) for x in rail["ideal two-phase"]["reps"]]
    print()
    print(f"  {'overhead of rail-only over rail-optimized':<52}{'measured':>10}{'model':>9}"
          f"{'NIC/HB':>8}{'(K-1)/K*NIC/HB':>16}  paper")
    paper = ", ".join(f"{v}% {k.split(' (')[0]}" for k, v in PAPER.items())
    print(f"  {'ideal tiers, phased, kernel forwarding (pipelined)':<52}{ov(rail['ideal phased'], bi):>+9.1f}%"
          f"{ovm(rail['ideal phased'], bi, 'model_completion_s'):>+8.1f}%{'':>8}{'':>16}  -")
    print(f"  {'ideal tiers, two-phase (store-and-forward, PXN)':<52}{ov(rail['ideal two-phase'], bi):>+9.1f}%"
          f"{ovm(rail['ideal two-phase'], bi, 'model_store_forward_s'):>+8.1f}%{100 * ratio:>7.1f}%"
          f"{100 * 0.5 * ratio:>15.1f}%  {paper}")
    print(f"  {'shaped tiers, phased (ECMP collisions in both)':<52}{ov(rail['shaped phased'], bs):>+9.1f}%"
          f"{ovm(rail['shaped phased'], bs, 'model_completion_s'):>+8.1f}%{'':>8}{'':>16}  -")
    print(f"  (two-phase runs vs the ideal baseline median: {', '.join(f'{v:+.1f}%' for v in spread_i)};"
          f" at K=8, (K-1)/K*NIC/HB = {100 * 7 / 8 * 400 / 3600:.1f}% (H100), {100 * 7 / 8 * 200 / 2400:.1f}% (A100))")
    # evidence: the forwarded bytes crossed the HB ports and the rail NICs of the via GPUs
    ri = rail["ideal phased"]
    hb_tx = statistics.median(v for k, v in ri["gpu_tx"][0].items() if k[1] == "hb")
    nic_tx = statistics.median(v for k, v in ri["gpu_tx"][0].items() if k[1] == "nic")
    plan_hb = statistics.median(v for k, v in ri["planned"].items() if k[1:] == ("hb", "out"))
    plan_nic = statistics.median(v for k, v in ri["planned"].items() if k[1:] == ("nic", "out"))
    print(f"  rail-only phased, per GPU tx (median): HB port {hb_tx / 1e6:.1f} MB (plan {plan_hb / 1e6:.1f}),"
          f" rail NIC {nic_tx / 1e6:.1f} MB (plan {plan_nic / 1e6:.1f}): cross-rail flows crossed the HB link,"
          f" then the destination rail's NIC")
    # evidence: what slows the kernel-forwarded steps (TCP over a shaped queue at the forwarding GPU)
    for name, r in (("rail-optimized", base["ideal phased"]), ("rail-only", ri)):
        for cross in (False, True):
            fl = [f for x in r["reps"] for f in x["flows"] if name == "rail-optimized" or (f["via"] is not None) == cross]
            if not fl:
                continue
            what = "cross-rail" + (" (forwarded)" if name == "rail-only" else "") if cross else "same-rail"
            if name == "rail-optimized":
                what = "all flows"
            print(f"  ideal phased, {name}, {what}: rate median {statistics.median(f['mbps'] for f in fl):.1f} Mbit/s,"
                  f" TCP rtt median {statistics.median(f.get('rtt_ms') or 0 for f in fl):.1f} ms,"
                  f" retransmits {sum(f.get('retransmits') or 0 for f in fl)} in {len(fl)} flows")
            if name == "rail-optimized":
                break
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
