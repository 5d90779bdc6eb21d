"""Persistent socket agents against an iperf3 client per flow, on one lab in the same run.

Two figures, each for both senders, alternated REPS times (median, min-max) so a host
whose load changes during the run weighs on both alike:

- overhead per step: a step's wall time (hand-out to the last flow's end) minus its
  network time (its slowest flow), on the ring all-reduce pattern with small flows, where
  start-up and barriers are the largest share; iperf3's figure is the floor the agents
  are measured against (a process per flow per step);
- the HB capacity: every GPU sends to the next GPU of its HB domain over HB at once
  (iperf3.host_capacity's probe), aggregate bytes over the slowest flow's seconds, beside
  the shaped rate: is the HB model's rate what this host forwards, whichever sender?

The load average is printed with the figures. Needs root (network namespaces).
Usage: bench_traffic_agents.py [OUTDIR of a deployed lab]  (default: labs/mini-routed.yml
compiled and deployed under a unique name, destroyed in a finally).
"""

from __future__ import annotations

import os
import statistics
import sys

REPS = int(os.environ.get("REPS", "3"))
RING_BYTES = int(os.environ.get("RING_BYTES", "500000"))


def _stats(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f}, n={len(xs)})" if xs else "-"


def measure(outdir: str) -> None:
    from railonly.emulation.checks import check_plan as checks_plan
    from railonly.emulation.lab import link_rates, load_lab
    from railonly.emulation.runtime.registry import get_runtime
    from railonly.emulation.traffic import iperf3, patterns

    rt = get_runtime()
    lab = rt.bind_lab(load_lab(outdir))
    cp = checks_plan.load(lab)
    nic, hb = link_rates(lab)
    nic, hb = (a or b for a, b in zip(iperf3.shaped_rates(rt, lab, cp), (nic, hb)))
    ring = patterns.steps_of(patterns.plan_flows(cp, "ring-allreduce", RING_BYTES, "concurrent"))
    out: dict[str, dict[str, list[float]]] = {"sockets": {"overhead": [], "hb": []}, "iperf3": {"overhead": [], "hb": []}}
    print(f"lab {lab.name}: {len(cp.gpus)} GPUs, NIC {nic:g} Mbit/s, HB {hb:g} Mbit/s; load average"
          f" {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    iperf3.stop_servers(lab, rt)
    for _ in range(REPS):
        for kind in ("sockets", "iperf3"):
            agents = iperf3.FlowAgents(lab, cp, rt.door(), 4, None) if kind == "sockets" else iperf3.Agents(lab, rt, cp)
            try:
                ran = iperf3.run_steps(lab, rt, cp, [list(s) for s in ring], nic_mbps=nic, streams=4, agents=agents)
                out[kind]["overhead"] += [s["overhead_s"] for s in ran.steps]
                if kind == "sockets":
                    cap = iperf3.host_capacity(agents, cp, hb)
                else:  # the same probe with an iperf3 client per flow
                    cap = _iperf3_capacity(lab, rt, cp, agents, hb)
                if cap:
                    out[kind]["hb"].append(cap["hb_bytes_per_s"] * 8 / 1e9)
                    shaped = cap["hb_shaped_bytes_per_s"] * 8 / 1e9
            finally:
                agents.stop()
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for kind in ("sockets", "iperf3"):
        print(f"  {kind:<8} overhead per step {_stats(out[kind]['overhead'])} s;"
              f" HB capacity {_stats(out[kind]['hb'])} Gbit/s of {shaped:.2f} shaped")


def _iperf3_capacity(lab, rt, cp, agents, hb) -> dict | None:
    from railonly.emulation.traffic import iperf3
    from railonly.emulation.traffic.patterns import BASE_PORT, Flow

    doms: dict[int, list[str]] = {}
    for g in sorted(cp.gpus.values(), key=lambda g: (g.hb, g.name)):
        doms.setdefault(g.hb, []).append(g.name)
    nbytes = int(hb * 1e6 / 8 * iperf3.HOST_PROBE_S)
    flows = [Flow(d[i], d[(i + 1) % len(d)], None, nbytes, BASE_PORT, 0, True) for d in doms.values() if len(d) > 1
             for i in range(len(d))]
    ran = iperf3.run_steps(lab, rt, cp, [flows], nic_mbps=hb, streams=4, agents=agents)
    secs = ran.steps[0]["seconds"]
    return {"hb_bytes_per_s": len(flows) * nbytes / secs, "hb_shaped_bytes_per_s": len(flows) * hb * 1e6 / 8} if secs else None


def main() -> None:
    if len(sys.argv) > 1:
        measure(sys.argv[1])
        return
    from _lab import deployed_lab

    with deployed_lab("bta", settle_s=5) as out:
        measure(out)


if __name__ == "__main__":
    main()
