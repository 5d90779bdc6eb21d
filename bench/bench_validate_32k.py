"""`railonly validate` of a big OUTDIR beside its read+hash+parse floor, one run.

The floor is what any validate must pay at least: read every file below OUTDIR,
sha256 it, and parse every JSON file, no check, on as many forked workers as
validate uses (`RAILONLY_JOBS`, both cores here: a one-process floor would flatter
validate's ratio); the one-process floor is printed beside it. Validate, every check on
(YANG, FRR syntax, cross-checks, MANIFEST, trust), is timed as users run it: `railonly
validate OUTDIR` in a fresh process each round, imports and the YANG models' load included
(timed in this process, round 2 on would find the models loaded and flatter it by ~0.7 s).
The two alternate, so a shared and loaded machine weighs on both alike; the load average
is printed beside them.

    .venv/bin/python bench/bench_validate_32k.py [OUTDIR] [--rounds N]

Without OUTDIR it compiles labs/dgx-h100-32k.yml to a temporary folder first
(minutes on a loaded machine); pass an OUTDIR compiled once to skip that.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DESIGN = os.path.join(HERE, "..", "labs", "dgx-h100-32k.yml")


def _cpu() -> float:
    """User+system CPU seconds of this process and its reaped children (pool workers, vtysh)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _floor_shard(paths: list[str], i: int, n: int) -> tuple[int, int]:
    files = size = 0
    for path in paths[i::n]:
        with open(path, "rb") as fh:
            data = fh.read()
        hashlib.sha256(data).hexdigest()
        if path.endswith(".json"):
            json.loads(data)
        files += 1
        size += len(data)
    return files, size


def floor(outdir: str, workers: bool = True) -> tuple[int, int]:
    """Read, sha256 and (for .json) parse every file, on validate's workers (or in this
    process only); returns (files, bytes)."""
    from railonly.fabric import parallel

    paths = [os.path.join(root, name) for root, _dirs, names in os.walk(outdir) for name in names]
    if not workers:
        return _floor_shard(paths, 0, 1)
    parts = parallel.map_shards(_floor_shard, paths, len(paths))
    return sum(f for f, _ in parts), sum(b for _, b in parts)


def run_validate(outdir: str) -> tuple[int, int]:
    """(results, failed) of `railonly validate OUTDIR`, run as a command (its last line
    says "N passed, M failed")."""
    proc = subprocess.run([sys.executable, "-m", "railonly", "validate", outdir],
                          capture_output=True, text=True)
    last = proc.stdout.strip().splitlines()[-1:] or [""]
    m = re.fullmatch(r"(\d+) passed, (\d+) failed", last[0])
    if m is None:
        raise SystemExit(f"railonly validate {outdir}: exit {proc.returncode}, no count line: {last[0]!r}\n"
                         f"{proc.stderr[-2000:]}")
    passed, failed = int(m[1]), int(m[2])
    return passed + failed, failed


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    outdir = args.outdir
    if outdir is None:
        from railonly.fabric.compiler import compile_design
        from railonly.fabric.design.design import parse_design
        from railonly.fabric.outdir.writer import write_outdir

        outdir = os.path.join(tempfile.mkdtemp(prefix="bench-validate-"), "out")
        with open(DESIGN, encoding="utf-8") as fh:
            d = parse_design(fh.read())
        write_outdir(outdir, compile_design(d)[1], d.sha256)
    from railonly.fabric import parallel

    from _host import HostTicks

    print(f"OUTDIR {outdir}  jobs {parallel.jobs()}  cpus {os.cpu_count()}  load at start {os.getloadavg()[0]:.1f}")
    ticks_floor, ticks_val = HostTicks(), HostTicks()
    t_floor: list[float] = []
    t_one: list[float] = []
    t_val: list[float] = []
    for _ in range(args.rounds):
        t = time.perf_counter()
        floor(outdir, workers=False)
        t_one.append(time.perf_counter() - t)
        ticks_floor.start()
        t, c = time.perf_counter(), _cpu()
        files, size = floor(outdir)
        t_floor.append(time.perf_counter() - t)
        cpu_floor = _cpu() - c
        ticks_floor.stop()
        ticks_val.start()
        t, c = time.perf_counter(), _cpu()
        n, failed = run_validate(outdir)
        t_val.append(time.perf_counter() - t)
        cpu_val = _cpu() - c
        ticks_val.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    f, v = min(t_floor), min(t_val)
    print(f"files {files:,}  bytes {size / 1e6:,.0f} MB  results {n:,}  failed {failed}")
    print(f"floor (read+sha256+json parse, {parallel.jobs()} workers) {f:7.2f} s   (one process: {min(t_one):.2f} s)")
    print(f"validate (every check)                 {v:7.2f} s   ratio {v / f:.1f}x floor")
    print(f"CPU seconds (user+sys, workers included): floor {cpu_floor:.1f}, validate {cpu_val:.1f}"
          f" ({cpu_val / cpu_floor:.1f}x; less swayed by load than wall time)")
    print(f"max RSS: largest process of validate (its workers and the floor's too) {kids:,.0f} MB, "
          f"this bench {rss:,.0f} MB; load at end {os.getloadavg()[0]:.1f}")
    print(f"CPU time the hypervisor took (steal, all rounds): floor {ticks_floor.share()}, validate {ticks_val.share()}")
    print(f"core time left idle a run (its serial stretches, when nothing else runs): floor {ticks_floor.idle_per_span()}, "
          f"validate {ticks_val.idle_per_span()}")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
