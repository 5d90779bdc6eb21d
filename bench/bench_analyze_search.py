"""`railonly analyze --search` for GPT-1T on 32,768 GPUs, beside a brute-force loop.

Both walk the same space (tp, pp, dp, ep, micro-batch, vpp, recompute under the
GPU memory limit) on the same design and find the best configuration per
network. The search checks memory before anything, builds each (tp, pp, dp, ep)
placement once and reuses a call's time across micro-batch, vpp and recompute;
the brute force places and evaluates every memory-feasible point from scratch.
Each is timed best of N in the same run; the bench fails if they disagree.

    .venv/bin/python bench/bench_analyze_search.py [--design labs/dgx-h100-32k.yml]
        [--job labs/jobs/gpt-1t-32k.yml] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def best_of(n: int, fn):
    times, out = [], None
    for _ in range(n):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--design", default=os.path.join(REPO, "labs", "dgx-h100-32k.yml"))
    ap.add_argument("--job", default=os.path.join(REPO, "labs", "jobs", "gpt-1t-32k.yml"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from railonly.fabric.analysis import Cluster, Rates, load_job
    from railonly.fabric.analysis.memory import estimate
    from railonly.fabric.analysis.search import brute_force, candidates, search
    from railonly.fabric.design.design import load_design

    cluster = Cluster.from_design(load_design(args.design))
    job = load_job(args.job)
    rates = Rates.of(cluster)
    space = list(candidates(job, cluster))
    feasible = sum(1 for j in space if estimate(j)["fits"])
    print(f"{job.name} on {cluster.name}: {job.parallel.gpus:,} GPUs, K = {cluster.hb_size}; "
          f"space {len(space):,} configurations, {feasible:,} fit in {job.gpu.memory_gb:g} GB")
    t_fast, (fast, counts) = best_of(args.repeat, lambda: search(job, cluster, rates))
    t_slow, slow = best_of(max(1, args.repeat - 1), lambda: brute_force(job, cluster, rates))
    print(f"  search       {t_fast:8.3f} s   ({counts['placements']} placements built, best of {args.repeat})")
    print(f"  brute force  {t_slow:8.3f} s   ({feasible} placements built, best of {max(1, args.repeat - 1)})")
    print(f"  speed-up     {t_slow / t_fast:8.1f} x")
    ok = True
    for net, b in fast.items():
        p = b.job.parallel
        same = slow[net].job.parallel == p and abs(slow[net].result.iteration_s - b.result.iteration_s) < 1e-9
        ok &= same
        print(f"  {net:15s} tp {p.tp} pp {p.pp} dp {p.dp} ep {p.ep} mb {p.micro_batch} vpp {p.vpp} {p.recompute:9s} "
              f"{b.result.iteration_s:.3f} s  MFU {b.result.mfu:.1%}  {b.memory_gb:.1f} GB  {'same as brute force' if same else 'DIFFERS'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
