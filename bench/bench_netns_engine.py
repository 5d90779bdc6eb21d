"""Benchmark the netns engine against the raw floor of hand-written `ip -batch`.

For each size N: N namespaces in a chain joined by M = N-1 veth pairs.

  raw floor   one `ip -batch` with every `netns add` and `link add ... netns A
              type veth peer ... netns B` (nothing brought up, no addresses)
  raw+config  the floor plus one `ip -n NS -batch` per namespace bringing the
              links up and adding an address per veth end (what a careful
              shell script does)
  engine      engine.deploy of the same content (plus lo up), strategy
              "setns" (default) and "ip-n"; without and with the link-settle wait
  destroy     engine.destroy (one `ip -batch` of `netns del`)

Run as root: .venv/bin/python bench/bench_netns_engine.py [--sizes 16,128,1024]
Every namespace is named clab-robench*-... and recorded in a state file first,
so an interrupted run is cleaned up by destroy like any lab.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from railonly import proc
from railonly.emulation.runtime.netns import engine, setns
from railonly.emulation.runtime.netns import ns_plan as nsplan


def chain_plan(lab: str, n: int, addresses: bool = True) -> nsplan.Plan:
    b = nsplan.PlanBuilder(lab)
    names = [b.ns(f"n{i}") for i in range(n)]
    for i in range(n - 1):
        b.add(nsplan.Veth(names[i], "e1", names[i + 1], "e0"))
        if addresses:
            base = 4 * i
            net = f"10.{base >> 16 & 255}.{base >> 8 & 255}.{base & 255}"
            peer = f"10.{base >> 16 & 255}.{base >> 8 & 255}.{(base & 255) + 1}"
            b.add(nsplan.Address(names[i], "e1", net + "/31")).add(nsplan.Address(names[i + 1], "e0", peer + "/31"))
    return b.build()


def record_raw(state_path: str, plan: nsplan.Plan) -> None:
    # the raw floor's namespaces go in a state file too, so destroy removes them
    engine._save(state_path, {
        "version": engine.STATE_VERSION, "lab": plan.lab, "prefix": plan.prefix,
        "fingerprint": "raw", "phase": "deploying",
        "namespaces": [x.name for x in plan.namespaces], "processes": [], "root_sysctls": [], "dirs": [],
    })


def raw_floor(plan: nsplan.Plan, state: str, config: bool) -> float:
    record_raw(state, plan)
    script = "".join(f"netns add {x.name}\n" for x in plan.namespaces)
    script += "".join(f"link add {v.a_dev} netns {v.a_ns} type veth peer name {v.b_dev} netns {v.b_ns}\n"
                      for v in plan.veths)
    t = time.perf_counter()
    res = proc.run(["ip", "-batch", "-"], input=script, timeout=120)
    assert res.ok, res.stderr
    if config:
        per: dict[str, list[str]] = {x.name: [] for x in plan.namespaces}
        for v in plan.veths:
            per[v.a_ns].append(f"link set {v.a_dev} up\n")
            per[v.b_ns].append(f"link set {v.b_dev} up\n")
        for a in plan.addresses:
            per[a.netns].append(f"addr add {a.cidr} dev {a.dev}\n")
        for nsn, lines in per.items():
            r = proc.run(["ip", "-n", nsn, "-batch", "-"], input="".join(lines), timeout=30)
            assert r.ok, r.stderr
    return time.perf_counter() - t


def settle_kernel(timeout: float = 20.0) -> None:
    # namespace teardown is asynchronous (cleanup_net): wait for it so the next
    # measurement does not pay for the previous one
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open("/proc/net/dev"):
            pass
        if not [x for x in setns.list_netns() if x.startswith("clab-robench")]:
            break
        time.sleep(0.05)
    time.sleep(0.3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="16,128,1024")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root", file=sys.stderr)
        return 3
    tmp = tempfile.mkdtemp(prefix="robench-")
    rows = []
    try:
        for n in (int(x) for x in args.sizes.split(",")):
            row = {"N": n, "M": n - 1}
            lab = f"robench{n}"
            bare, full = chain_plan(lab, n, addresses=False), chain_plan(lab, n)
            state = os.path.join(tmp, f"{lab}.json")
            for key, config in (("raw", False), ("raw+cfg", True)):
                row[key] = raw_floor(full, state, config)
                t = time.perf_counter()
                engine.destroy(state)
                row["raw_del"] = time.perf_counter() - t
                settle_kernel()
            for key, plan, kw in (
                ("eng_bare", bare, {"wait_links": 0}),
                ("eng_setns", full, {"wait_links": 0}),
                ("eng_ip-n", full, {"wait_links": 0, "strategy": "ip-n"}),
                ("eng+settle", full, {}),
            ):
                rep = engine.deploy(plan, state, **kw)
                row[key] = rep.seconds
                if key == "eng+settle":
                    row["settle"] = rep.phases.get("settle", 0.0)
                t = time.perf_counter()
                d = engine.destroy(state)
                row["destroy"] = time.perf_counter() - t
                assert d.ok, d.leftovers
                settle_kernel()
            rows.append(row)
            print(f"  N={n} done", file=sys.stderr)
    finally:
        for f in os.listdir(tmp):
            if f.endswith(".json"):
                engine.destroy(os.path.join(tmp, f))
        os.rmdir(tmp) if not os.listdir(tmp) else None
    cols = ["N", "M", "raw", "raw+cfg", "eng_bare", "eng_setns", "eng_ip-n", "eng+settle", "settle", "destroy", "raw_del"]
    print("seconds; raw = one hand-written ip -batch (netns add + veth add); raw+cfg adds one ip -n NS -batch per ns")
    print("eng_bare = engine, no addresses (same content as raw + links up); eng_* = engine with addresses")
    print(" ".join(f"{c:>10}" for c in cols))
    for r in rows:
        print(" ".join(f"{r[c]:>10}" if isinstance(r[c], int) else f"{r[c]:>10.3f}" for c in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
