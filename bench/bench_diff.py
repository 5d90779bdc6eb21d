"""`railonly diff` time beside a floor, for growth within a plan.

Each case compiles a design at two counts under one `hb_domain.planned` and
times the change plan (read both OUTDIRs through the hostile-input reader,
compare, render text and JSON) against the floor any diff must pay: read
every file of both trees and compare bytes. Best of 3 each, alternating.

    .venv/bin/python bench/bench_diff.py
"""

from __future__ import annotations

import os
import tempfile
import time

from railonly.fabric.compiler import compile_design
from railonly.fabric.design.design import parse_design
from railonly.fabric.outdir.changeplan import plan, read_snapshot, render_text, to_json
from railonly.fabric.outdir.writer import write_outdir

CASES = [  # (K, radix, old count, new count, planned)
    (8, 64, 128, 144, 256),
    (8, 64, 1024, 1152, 2048),
]


def _compile(text: str, out: str) -> None:
    d = parse_design(text)
    write_outdir(out, compile_design(d)[1], d.sha256)


def _floor(a: str, b: str) -> int:
    differ = 0
    for root, _dirs, files in os.walk(a):
        for f in files:
            pa = os.path.join(root, f)
            pb = os.path.join(b, os.path.relpath(pa, a))
            with open(pa, "rb") as fa:
                da = fa.read()
            try:
                with open(pb, "rb") as fb:
                    differ += fb.read() != da
            except FileNotFoundError:
                differ += 1
    for root, _dirs, files in os.walk(b):
        for f in files:
            with open(os.path.join(root, f), "rb") as fb:
                fb.read()
    return differ


def _plan(a: str, b: str) -> dict:
    doc = plan(read_snapshot(a), read_snapshot(b))
    render_text(doc)
    to_json(doc)
    return doc


def main() -> None:
    print(f"{'GPUs old -> new (planned)':<28} {'files':>7} {'added':>6} {'moved':>6} {'diff s':>7} {'floor s':>8}")
    for K, radix, n0, n1, planned in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
            for n, out in ((n0, a), (n1, b)):
                _compile(f"name: bench\nhb_domain: {{size: {K}, count: {n}, planned: {planned}}}\nswitch: {{radix: {radix}}}\n", out)
            times: dict[str, list[float]] = {"diff": [], "floor": []}
            for _ in range(3):
                t = time.perf_counter()
                doc = _plan(a, b)
                times["diff"].append(time.perf_counter() - t)
                t = time.perf_counter()
                _floor(a, b)
                times["floor"].append(time.perf_counter() - t)
            files = sum(len(fs) for _r, _d, fs in os.walk(b))
            c = doc["cables"]
            print(f"{f'{K * n0:,} -> {K * n1:,} ({K * planned:,})':<28} {files:>7,} {len(c['added']):>6,} {len(c['moved']):>6,} "
                  f"{min(times['diff']):>7.2f} {min(times['floor']):>8.2f}")


if __name__ == "__main__":
    main()
