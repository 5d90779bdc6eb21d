"""The replay's counter reads between phases and steps, each beside its former way, same run.

- nftables counters by class (replay.Counters.read, twice a phase): one netlink dump per
  GPU namespace through the runtime's door, against one ``nft -j list counters`` process
  per GPU namespace (the former read, and the fallback of a runtime without a door);
- link counters after every step (iperf3.LinkCounters.read): every shaped link (GPU NICs
  and HB ports, switch links: the placed model's links since it counts the forwarding
  sibling's NIC), against switch-to-switch links only (the former set).

Alternated REPS times (median, min-max) so a host whose load changes weighs on both
alike; the load average is printed with the figures. Needs root (network namespaces).
Usage: bench_replay_counters.py [OUTDIR of a deployed lab]  (default: labs/mini-routed.yml
compiled and deployed under a unique name, destroyed in a finally).
"""

from __future__ import annotations

import os
import statistics
import sys
import time

REPS = int(os.environ.get("REPS", "20"))


def _stats(xs: list[float]) -> str:
    return f"{1000 * statistics.median(xs):.1f} ms ({1000 * min(xs):.1f}-{1000 * max(xs):.1f}, n={len(xs)})"


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def measure(outdir: str) -> None:
    from railonly.emulation.checks import check_plan as checks_plan
    from railonly.emulation.lab import load_lab
    from railonly.emulation.runtime.registry import get_runtime
    from railonly.emulation.traffic import iperf3, replay

    rt = get_runtime()
    lab = rt.bind_lab(load_lab(outdir))
    cp = checks_plan.load(lab)
    gpus = sorted(cp.gpus)
    every = iperf3.directed_links(lab, 100)
    links = {"every shaped link": iperf3.LinkCounters(lab, rt, every),
             "switch links only": iperf3.LinkCounters(lab, rt, [d for d in every if d.group is not None])}
    by_netlink, by_nft = replay.Counters(lab, rt, gpus, []), replay.Counters(lab, rt, gpus, [])
    by_nft.door = None
    out: dict[str, list[float]] = {k: [] for k in ("netlink", "nft", *links)}
    print(f"lab {lab.name}: {len(gpus)} GPU namespaces, {len(every)} directed links on"
          f" {len({d.end[0] for d in every})} nodes; load average {_load()}")
    by_netlink.install()
    try:
        assert by_netlink.read() == by_nft.read(), "netlink and nft read different counters"
        for _ in range(REPS):
            for name, c in (("netlink", by_netlink), ("nft", by_nft)):
                t = time.perf_counter()
                c.read()
                out[name].append(time.perf_counter() - t)
            for name, lc in links.items():
                t = time.perf_counter()
                lc.read()
                out[name].append(time.perf_counter() - t)
    finally:
        by_netlink.remove()
    print(f"load average after: {_load()}")
    print(f"  nftables counters, one read of every GPU: netlink {_stats(out['netlink'])}; nft processes {_stats(out['nft'])}")
    for name in links:
        print(f"  link counters, {name}: {_stats(out[name])}")


def main() -> None:
    if len(sys.argv) > 1:
        measure(sys.argv[1])
        return
    from _lab import deployed_lab

    with deployed_lab("brc", settle_s=2) as out:
        measure(out)


if __name__ == "__main__":
    main()
