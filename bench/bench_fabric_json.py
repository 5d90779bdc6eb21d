"""Reading fabric.json into the typed graph (graph/fabric_json.parse) beside its floor, one run.

The floor is json.loads of the same text: what any reader of the file pays. parse is
json.loads plus every field's type checked and the typed graph built. Both run in the
same process, alternating, timed in CPU seconds so a shared machine weighs on both alike.

    .venv/bin/python bench/bench_fabric_json.py [DESIGN.yml] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    from railonly.fabric import build_fabric, load_design
    from railonly.fabric.graph import fabric_json

    ap = argparse.ArgumentParser()
    ap.add_argument("design", nargs="?", default=os.path.join(HERE, "..", "labs", "dgx-h100-32k.yml"))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    fab = build_fabric(load_design(args.design))
    text = fabric_json.render(fab)
    best = {"json.loads (floor)": float("inf"), "fabric_json.parse": float("inf")}
    for _ in range(args.rounds):
        for what, fn in (("json.loads (floor)", json.loads), ("fabric_json.parse", fabric_json.parse)):
            t = time.process_time()
            fn(text)
            best[what] = min(best[what], time.process_time() - t)
    print(f"{os.path.basename(args.design)}: {len(text) / 1e6:.1f} MB, {len(fab.nodes):,} nodes, {len(fab.links):,} links; "
          f"load average {os.getloadavg()[0]:.1f}")
    for what, s in best.items():
        print(f"  {what:<20} {s:7.3f} s CPU (best of {args.rounds})")
    print(f"  parse / floor        {best['fabric_json.parse'] / best['json.loads (floor)']:7.2f}x")


if __name__ == "__main__":
    main()
