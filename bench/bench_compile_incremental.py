"""An incremental compile beside a full one, for a one-domain growth within `planned`.

labs/dgx-h100-32k.yml at 4,095 HB domains with `planned: 4160` is compiled into
OUTDIR; then the design grows to 4,096 domains and `railonly compile` runs again
onto that OUTDIR (incremental: unchanged units carried over) and, alternating,
with --full into a fresh OUTDIR (the whole compile: every file rendered, checked
and written). The old tree's folders, removed in the background after the command
returns, are waited for before the next run. Both are the CLI in a fresh process, timed wall-clock and in CPU
seconds (the compile's and its forked workers': a loaded machine moves CPU less than
wall); the two results must be byte-identical (checked every round). Best of N each.

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

REPO = Path(__file__).resolve().parents[1]
RAILONLY = [os.path.join(os.path.dirname(sys.executable), "railonly")]


def design(count: int, planned: int) -> str:
    text = (REPO / "labs" / "dgx-h100-32k.yml").read_text()
    assert "  count: 4096\n" in text
    return text.replace("  count: 4096\n", f"  count: {count}\n  planned: {planned}\n")


def compile_(design_file: str, out: str, *extra: str) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds of the compile and its workers, seconds the old tree's
    folders took to go after the command returned: waited for, so no run overlaps it)."""
    t, r = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([*RAILONLY, "compile", "-q", design_file, "-o", out, *extra], check=True, cwd=os.path.dirname(out))
    r2 = resource.getrusage(resource.RUSAGE_CHILDREN)
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
        before, after = os.path.join(tmp, "before.yml"), os.path.join(tmp, "after.yml")
        Path(before).write_text(design(a.count, a.planned))
        Path(after).write_text(design(a.count + 1, a.planned))
        full_s, incr_s = [], []
        for i in range(a.repeat):
            out, fresh = os.path.join(tmp, f"incr{i}"), os.path.join(tmp, f"full{i}")
            compile_(before, out)  # the OUTDIR as it stood before the growth (not timed)
            incr_s.append(compile_(after, out))
            full_s.append(compile_(after, fresh, "--full"))
            if not same_tree(out, fresh):
                raise SystemExit("incremental and full compile differ: a bug")
            shutil.rmtree(out)
            shutil.rmtree(fresh)
        load = os.getloadavg()[0]
        print(f"dgx-h100-32k growth {a.count:,} -> {a.count + 1:,} HB domains (planned {a.planned:,}), best of {a.repeat}, "
              f"load average {load:.1f}:")
        (fw, fc, _), (iw, ic, it) = min(full_s), min(incr_s)
        print(f"{'':38} {'wall s':>8} {'CPU s':>8}")
        print(f"  full compile (--full, fresh OUTDIR)  {fw:8.2f} {fc:8.2f}   runs {', '.join(f'{r[0]:.1f}' for r in full_s)}")
        print(f"  incremental (onto the previous one)  {iw:8.2f} {ic:8.2f}   runs {', '.join(f'{r[0]:.1f}' for r in incr_s)}"
              f"; the old tree's folders gone {it:.1f} s after it returned (background)")
        print(f"  incremental / full                   {100 * iw / fw:7.1f}% {100 * ic / fc:7.1f}%   (goal: at most 10%)")
        print("  outputs byte-identical: yes (every round)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
