"""Hostile design files are refused fast: each attack beside a normal design.

The baseline is loading labs/mini-routed.yml (what every compile does); each
attack is the time from text to InputError. Best of 5, in this process, so
the numbers compare parsing only (the CLI adds ~0.5 s of imports).

    .venv/bin/python bench/bench_hostile_yaml.py
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from railonly.fabric.design.design import parse_design  # noqa: E402
from railonly.fabric.input.problems import InputError  # noqa: E402


def best(fn, n: int = 5) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def refused(text: str):
    def run():
        try:
            parse_design(text, "x.yml")
        except InputError:
            return
        raise SystemExit("accepted a hostile design")
    return run


def main() -> int:
    bad = REPO / "tests" / "core" / "bad_designs"
    cases = [("baseline: labs/mini-routed.yml (accepted)", lambda: parse_design((REPO / "labs" / "mini-routed.yml").read_text()))]
    for name in ("alias-bomb", "deep-nesting", "recursive-alias", "huge-int", "nan-inf", "class-e-pool", "duplicate-keys"):
        cases.append((f"{name}.yml ({os.path.getsize(bad / f'{name}.yml')} bytes)", refused((bad / f"{name}.yml").read_text())))
    flat = "name: big\nhb_domain: {size: 2, count: 2}\nlab: [" + ",".join(["1"] * 49_000) + "]\n"
    cases.append((f"49,000-item list ({len(flat):,} bytes, just under the limits)", refused(flat)))
    huge = "name: big\nhb_domain: {size: 2, count: 2}\nlab: [" + ",".join(["1"] * 500_000) + "]\n"
    cases.append((f"500,000-item list ({len(huge):,} bytes, at the size limit)", refused(huge)))
    wide = "name: wide\nhb_domain: {size: 2, count: 2}\nx: &a [" + ",".join(["1"] * 1000) + "]\ny: [" + ",".join(["*a"] * 100) + "]\n"
    cases.append((f"100 aliases of a 1,000-item list ({len(wide):,} bytes)", refused(wide)))
    print(f"{'input':58} {'best of 5':>10}")
    for label, fn in cases:
        print(f"{label:58} {best(fn) * 1000:8.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
