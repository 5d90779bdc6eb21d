"""An incremental compile beside a full one, for a one-domain growth within `planned`.

labs/dgx-h100-32k.yml with `planned: 4160` grows one HB domain at a time in one OUTDIR:
compiled at 4,094 domains (fresh, not timed), then at 4,095 (the first incremental
compile onto it: no spare yet, its stage is made from nothing) and at 4,096 (a compile
in a lineage: its stage starts from the spare, the tree the 4,095 compile swapped out,
kept in railonly's cache). Alternating with those, --full compiles 4,096 into a fresh
OUTDIR (the whole compile: every file rendered, checked and written). Old trees removed
in the background after a command returns are waited for before the next run. All are
the CLI in a fresh process, timed wall-clock and in CPU seconds (the compile's and its
forked workers': a loaded machine moves CPU less than wall); the incremental result
must be byte-identical to the full one (checked every round). Best of N each.

    .venv/bin/python bench/bench_compile_incremental.py [--repeat 2] [--count 4095] [--planned 4160]
"""

from __future__ import annotations

import argparse
import filecmp
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _host import HostTicks

REPO = Path(__file__).resolve().parents[1]
RAILONLY = [os.path.join(os.path.dirname(sys.executable), "railonly")]


def design(count: int, planned: int) -> str:
    text = (REPO / "labs" / "dgx-h100-32k.yml").read_text()
    assert "  count: 4096\n" in text
    return text.replace("  count: 4096\n", f"  count: {count}\n  planned: {planned}\n")


# steal and idle ticks over the timed compiles of each kind
TICKS = {"full": HostTicks(), "first": HostTicks(), "lineage": HostTicks()}


def compile_(design_file: str, out: str, *extra: str, kind: str | None = None) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds of the compile and its workers, seconds the old tree's
    folders took to go after the command returned: waited for, so no run overlaps it);
    `kind`: the TICKS it is timed in (None: not timed)."""
    ticks = TICKS[kind] if kind else HostTicks()
    ticks.start()
    t, r = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([*RAILONLY, "compile", "-q", design_file, "-o", out, *extra], check=True, cwd=os.path.dirname(out))
    r2 = resource.getrusage(resource.RUSAGE_CHILDREN)
    ticks.stop()
    done = time.perf_counter()
    while any(n.startswith(".railonly-stage-") for n in os.listdir(os.path.dirname(out))):
        time.sleep(0.02)
    return done - t, (r2.ru_utime - r.ru_utime) + (r2.ru_stime - r.ru_stime), time.perf_counter() - done


def same_tree(a: str, b: str) -> bool:
    """Same relative paths, same bytes."""
    def listing(top: str) -> list[str]:
        return sorted(os.path.relpath(os.path.join(r, f), top) for r, _d, fs in os.walk(top) for f in fs)

    paths = listing(a)
    return paths == listing(b) and all(filecmp.cmp(os.path.join(a, p), os.path.join(b, p), shallow=False) for p in paths)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=4095)
    ap.add_argument("--planned", type=int, default=4160)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="railonly-bench-incr-")
    env_cache = os.path.join(tmp, "cache")
    os.environ["RAILONLY_CACHE_DIR"] = env_cache  # the record of what was written, private to this run
    try:
        first, before, after = (os.path.join(tmp, f"{n}.yml") for n in ("first", "before", "after"))
        Path(first).write_text(design(a.count - 1, a.planned))
        Path(before).write_text(design(a.count, a.planned))
        Path(after).write_text(design(a.count + 1, a.planned))
        full_s, cold_s, incr_s = [], [], []
        for i in range(a.repeat):
            out, fresh = os.path.join(tmp, f"incr{i}"), os.path.join(tmp, f"full{i}")
            compile_(first, out)  # the OUTDIR as it stood before the growths (not timed)
            cold_s.append(compile_(before, out, kind="first"))
            incr_s.append(compile_(after, out, kind="lineage"))
            full_s.append(compile_(after, fresh, "--full", kind="full"))
            if not same_tree(out, fresh):
                raise SystemExit("incremental and full compile differ: a bug")
            shutil.rmtree(out)
            shutil.rmtree(fresh)
        load = os.getloadavg()[0]
        print(f"dgx-h100-32k growth {a.count - 1:,} -> {a.count:,} -> {a.count + 1:,} HB domains (planned {a.planned:,}), "
              f"best of {a.repeat}, load average {load:.1f}:")
        (fw, fc, _), (cw, cc, ct), (iw, ic, it) = min(full_s), min(cold_s), min(incr_s)
        print(f"{'':46} {'wall s':>8} {'CPU s':>8}")
        print(f"  full compile (--full, fresh OUTDIR)          {fw:8.2f} {fc:8.2f}   runs {', '.join(f'{r[0]:.1f}' for r in full_s)}")
        print(f"  first incremental (no spare: stage from 0)   {cw:8.2f} {cc:8.2f}   runs {', '.join(f'{r[0]:.1f}' for r in cold_s)}"
              f"; old tree kept as the spare ({ct:.1f} s after)")
        print(f"  incremental in a lineage (from the spare)    {iw:8.2f} {ic:8.2f}   runs {', '.join(f'{r[0]:.1f}' for r in incr_s)}")
        print(f"  first incremental / full                     {100 * cw / fw:7.1f}% {100 * cc / fc:7.1f}%")
        print(f"  incremental in a lineage / full              {100 * iw / fw:7.1f}% {100 * ic / fc:7.1f}%   (goal: at most 10%)")
        print("  outputs byte-identical: yes (every round)")
        print(f"  CPU time the hypervisor took during the compiles (steal): {HostTicks.summed(list(TICKS.values())).share()}")
        print("  core time left idle a compile (its serial stretches, when nothing else runs): "
              + ", ".join(f"{kind} {t.idle_per_span()}" for kind, t in TICKS.items()))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
