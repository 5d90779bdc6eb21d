"""`railonly diff` time beside a floor, for growth within a plan.

Each case compiles a design at two counts under one `hb_domain.planned` and
times the change plan (read both OUTDIRs through the hostile-input reader,
compare, render text and JSON) against the floor any diff must pay: read
every file of both trees and compare bytes. Best of 3 each, alternating.
`--32k` adds labs/dgx-h100-32k.yml grown by one HB domain within a plan
(4,096 -> 4,097 of 4,160 domains: two 32,768-GPU OUTDIRs, minutes to compile);
`--outdirs OLD NEW` times two OUTDIRs compiled beforehand instead.

    .venv/bin/python bench/bench_diff.py [--32k | --outdirs OLD NEW]
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import time

from railonly.fabric.compiler import compile_design
from railonly.fabric.design.design import parse_design
from railonly.fabric.outdir.changeplan import plan, read_snapshot, render_text, settle, to_json
from railonly.fabric.outdir.writer import write_outdir

CASES = [  # (K, radix, old count, new count, planned)
    (8, 64, 128, 144, 256),
    (8, 64, 1024, 1152, 2048),
]
DESIGN_32K = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "labs", "dgx-h100-32k.yml")
GROWN_32K = (4096, 4097, 4160)  # (old count, new count, planned) of HB domains


def _design_32k(count: int, planned: int) -> str:
    with open(DESIGN_32K, encoding="utf-8") as fh:
        text = fh.read()
    return re.sub(r"(?m)^  count: \d+$", f"  count: {count}\n  planned: {planned}", text, count=1)


def _compile(text: str, out: str) -> None:
    d = parse_design(text)
    write_outdir(out, compile_design(d)[1], d.sha256)


def _floor(a: str, b: str) -> int:
    """Read every file of both trees once and compare the bytes of each pair: the least any
    diff does (files only in one tree are read and count as differing)."""
    differ, in_b = 0, set()
    for root, _dirs, files in os.walk(b):
        for f in files:
            pb = os.path.join(root, f)
            rel = os.path.relpath(pb, b)
            in_b.add(rel)
            with open(pb, "rb") as fb:
                db = fb.read()
            try:
                with open(os.path.join(a, rel), "rb") as fa:
                    differ += fa.read() != db
            except FileNotFoundError:
                differ += 1
    for root, _dirs, files in os.walk(a):
        for f in files:
            pa = os.path.join(root, f)
            if os.path.relpath(pa, a) not in in_b:
                with open(pa, "rb") as fa:
                    fa.read()
                differ += 1
    return differ


def _plan(a: str, b: str) -> dict:
    old, new = read_snapshot(a), read_snapshot(b)  # as `railonly diff` without --runbook
    doc = plan(old, new)
    settle(old, new)  # each side's fabric.json parse, run beside the reading and the plan
    render_text(doc)
    to_json(doc)
    return doc


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the forked diff workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _row(label: str, a: str, b: str) -> None:
    times: dict[str, list[float]] = {"diff": [], "floor": [], "diff_cpu": [], "floor_cpu": []}
    for _ in range(3):
        t, c = time.perf_counter(), _cpu()
        doc = _plan(a, b)
        times["diff"].append(time.perf_counter() - t)
        times["diff_cpu"].append(_cpu() - c)
        t, c = time.perf_counter(), _cpu()
        _floor(a, b)
        times["floor"].append(time.perf_counter() - t)
        times["floor_cpu"].append(_cpu() - c)
    files = sum(len(fs) for _r, _d, fs in os.walk(b))
    c = doc["cables"]
    best = {k: min(v) for k, v in times.items()}
    print(f"{label:<28} {files:>7,} {len(c['added']):>6,} {len(c['moved']):>6,} "
          f"{best['diff']:>7.2f} {best['floor']:>8.2f} {best['diff'] / best['floor']:>6.1f}x"
          f" {best['diff_cpu']:>7.2f} {best['floor_cpu']:>7.2f}  load {os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--32k", dest="big", action="store_true", help="add the 32,768-GPU design grown by one HB domain")
    ap.add_argument("--outdirs", nargs=2, metavar=("OLD", "NEW"), help="time these two OUTDIRs only")
    args = ap.parse_args()
    print(f"{'GPUs old -> new (planned)':<28} {'files':>7} {'added':>6} {'moved':>6} {'diff s':>7} {'floor s':>8} {'ratio':>7}"
          f" {'diffCPU':>7} {'flrCPU':>7}  (best of 3, same run)")
    if args.outdirs:
        _row("given OUTDIRs", *args.outdirs)
        return
    for K, radix, n0, n1, planned in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
            for n, out in ((n0, a), (n1, b)):
                _compile(f"name: bench\nhb_domain: {{size: {K}, count: {n}, planned: {planned}}}\nswitch: {{radix: {radix}}}\n", out)
            _row(f"{K * n0:,} -> {K * n1:,} ({K * planned:,})", a, b)
    if args.big:
        n0, n1, planned = GROWN_32K
        with tempfile.TemporaryDirectory() as tmp:
            a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
            for n, out in ((n0, a), (n1, b)):
                _compile(_design_32k(n, planned), out)
            _row(f"{8 * n0:,} -> {8 * n1:,} ({8 * planned:,})", a, b)


if __name__ == "__main__":
    main()
