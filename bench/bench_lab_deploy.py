"""Benchmark `railonly lab deploy` (NetnsRuntime) against the raw `ip -batch` floor.

For each lab, in the same run:

  floor     one hand-written `ip -batch` creating the lab's namespaces and
            veth pairs (directly in their namespaces; nothing else), the
            floor of bench/bench_netns_engine.py applied to the lab's plan
  frr_floor the lab's FRR daemons started on those pre-made namespaces (files
            written, argv run in the namespace, per namespace in order, on the
            deploy's worker count; no readiness wait: frr_start), then their
            config loaded by `vtysh -b`: routed deploys are held to floor +
            frr_floor (frr_ratio); start_ratio holds them to the daemons alone
  deploy    NetnsRuntime.deploy: namespaces, veths, bridges, switch config
            read from the generated files, addresses, routes, sysctls,
            tbf/htb shaping, FRR, link-settle wait (BGP convergence timed
            separately in `bgp`)
  destroy   NetnsRuntime.destroy (daemons by PID, one `ip -batch` of netns del)
  setns     with --compare: the same deploy with the older strategy (one
            `ip -batch` and one `tc -batch` process per namespace, started
            from setns threads), in the same run

Labs: L2 EOS rails of 8-GPU HB domains, 16 to 1,024 GPUs; routed SONiC
two-tier rails with FRR, 8 to 64 switches. Lab names start with "rb" and
everything is recorded in a state file first, so an interrupted run is
removed by destroy like any lab. Root; about 2 minutes.

  .venv/bin/python bench/bench_lab_deploy.py [--quick] [--l2 2,16,128] [--routed 2,4] [--compare] [--json FILE]
  .venv/bin/python bench/bench_lab_deploy.py --l2 '' --routed '' --design labs/dgx-h100-1k.yml --lab-domains 128 \
      --lab-name NAME --repeat 1    # the full 1,024-GPU routed lab (48 FRR switches) only
"""

from __future__ import annotations

import argparse
import grp
import importlib.util
import json
import os
import pwd
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from railonly import proc
from railonly.emulation.lab import load_lab
from railonly.emulation.runtime.netns import engine, frr, lab_plan
from railonly.emulation.runtime.netns.runtime import NetnsRuntime
from railonly.fabric.compiler import compile_design
from railonly.fabric.design.design import parse_design
from railonly.fabric.outdir.writer import write_outdir

HERE = Path(__file__).resolve().parent


def _engine_bench():
    # reuse the floor and the kernel-settle wait of the engine benchmark
    spec = importlib.util.spec_from_file_location("bench_netns_engine", HERE / "bench_netns_engine.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


L2 = "name: {name}\nhb_domain: {{size: 8, count: {n}}}\nswitch: {{radix: {radix}, platform: eos}}\nrail: {{mode: l2}}\nlab: {{domains: {n}}}\n"
ROUTED = "name: {name}\nhb_domain: {{size: {k}, count: 6}}\nswitch: {{radix: 4, platform: sonic}}\nrail: {{mode: routed}}\nlab: {{domains: 6}}\n"
# 64 FRR switches: 8 rails of 20 GPUs on radix 8 = 5 leaves + 3 spines per rail.
ROUTED64 = "name: rbr64\nhb_domain: {size: 8, count: 20}\nswitch: {radix: 8, platform: sonic}\nrail: {mode: routed}\nlab: {domains: 20}\n"


def frr_floor(plan, state: str, workers: int) -> tuple[float, float]:
    """The plan's FRR daemons started on the namespaces the ip -batch floor made, then their
    config loaded: per namespace in plan order (zebra first), namespaces on the deploy's
    worker count; each file written and each daemon's argv run in its namespace until it
    daemonizes, nothing else (no readiness wait on pid files); then every instance's
    ``vtysh -b`` (a process's ``then``) on the same workers. Recorded in the state file
    first. Returns (start, load) seconds: the two rounds one after the other."""
    procs = [p for p in plan.processes if p.argv and p.argv[0].startswith(frr.FRR_LIBDIR)]
    st = json.loads(Path(state).read_text())
    st["processes"] = [{"name": p.name, "netns": p.netns, "argv": list(p.argv), "pidfile": p.pidfile,
                        "pid": None, "starttime": None, "dirs": list(p.dirs)} for p in procs]
    engine._save(state, st)
    uid, gid = pwd.getpwnam("frr").pw_uid, grp.getgrnam("frr").gr_gid
    by_ns: dict[str, list] = {}
    for p in procs:
        by_ns.setdefault(p.netns, []).append(p)

    def start(group: list) -> None:
        for p in group:
            for d in p.dirs:
                os.makedirs(d, exist_ok=True)
                os.chown(d, uid, gid)
            for path, text in p.files:
                Path(path).write_text(text)
                os.chown(path, uid, gid)
            res = proc.run(list(p.argv), netns=p.netns, timeout=p.ready_timeout)
            assert res.ok, res.stderr

    def load(p) -> None:
        res = proc.run(list(p.then), netns=p.netns, timeout=p.ready_timeout)
        assert res.ok, res.stderr

    t = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as ex:
        list(ex.map(start, by_ns.values()))
    t_start = time.perf_counter() - t
    t = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as ex:
        list(ex.map(load, [p for p in procs if p.then]))
    return t_start, time.perf_counter() - t


def labs(quick: bool, l2: list[int] | None = None, routed: list[int] | None = None) -> list[tuple[str, str]]:
    if l2 is None:
        l2 = [2, 16] if quick else [2, 16, 64, 128]  # x 8 GPUs
    routed_default = routed is None
    if routed is None:
        routed = [2, 4] if quick else [2, 4, 8, 12]  # rails x 5 switches each (3 leaves, 2 spines): 10 to 60
    out = [(f"l2-{8 * n}gpu", L2.format(name=f"rbl{n}", n=n, radix=max(8, n))) for n in l2]
    out += [(f"routed-{5 * k}sw", ROUTED.format(name=f"rbr{k}", k=k)) for k in routed]
    if not quick and routed_default:
        out.append(("routed-64sw", ROUTED64))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the two smallest labs of each kind")
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--l2", help="HB domains (x 8 GPUs) of the L2 labs, e.g. 2,16,128 (empty: none)")
    ap.add_argument("--routed", help="rails of the routed labs, e.g. 2,4 (empty: none)")
    ap.add_argument("--compare", action="store_true", help="also deploy with the older setns strategy (ip/tc processes)")
    ap.add_argument("--repeat", type=int, default=3, help="best of N floor/deploy pairs per lab (default 3)")
    ap.add_argument("--design", help="also a design file's lab, e.g. labs/dgx-h100-1k.yml (the full 1,024-GPU"
                    " routed lab with --lab-domains 128)")
    ap.add_argument("--lab-domains", type=int, help="HB domains of --design's lab (default: the design's lab.domains)")
    ap.add_argument("--lab-name", default="rbdesign", help="lab name for --design (default rbdesign)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root", file=sys.stderr)
        return 3
    eb = _engine_bench()
    tmp = tempfile.mkdtemp(prefix="rb-lab-")
    os.chmod(tmp, 0o755)
    rt = NetnsRuntime(ssh=False)  # the push sshd is measured separately by its own feature
    rows, opened = [], []
    t_all = time.perf_counter()
    try:
        sizes = lambda v: None if v is None else [int(x) for x in v.split(",") if x]  # noqa: E731
        todo = labs(args.quick, sizes(args.l2), sizes(args.routed))
        if args.design:
            d = yaml.safe_load(Path(args.design).read_text(encoding="utf-8"))
            d["name"] = args.lab_name
            if args.lab_domains:
                d.setdefault("lab", {})["domains"] = args.lab_domains
            todo.append((f"{Path(args.design).stem}-{args.lab_domains or 'lab'}dom", yaml.safe_dump(d)))
        for label, text in todo:
            design = parse_design(text, f"{label}.yml")
            outdir = os.path.join(tmp, label)
            _, files = compile_design(design)
            write_outdir(outdir, files, design.sha256)
            lab = load_lab(outdir)
            opened.append(lab)
            plan = lab_plan.build(lab).plan
            row = {"lab": label, "gpus": len(lab.gpus), "switches": len(lab.switches),
                   "ns": len(plan.namespaces), "veths": len(plan.veths), "frr": len(plan.processes)}
            # Floor and deploy alternate, best of --repeat runs each: the floor swings
            # (1.2-3.9 s at 1,024 GPUs) with the kernel's clean-up of the last lab.
            floors, frr_floors, frr_starts, deploys, destroys = [], [], [], [], []
            for _ in range(args.repeat):
                state = os.path.join(tmp, f"{label}.floor.json")
                floors.append(eb.raw_floor(plan, state, config=False))
                started, loaded = frr_floor(plan, state, engine._workers(None))
                frr_floors.append(started + loaded)
                frr_starts.append(started)
                engine.destroy(state, kill_all_inside=True)
                eb.settle_kernel()
                res = rt.deploy(lab)
                deploys.append(res.seconds)
                t = time.perf_counter()
                rt.destroy(lab)
                destroys.append(time.perf_counter() - t)
                eb.settle_kernel()
            row["floor"] = min(floors)
            row["frr_floor"] = min(frr_floors)
            row["frr_start"] = min(frr_starts)
            row["load"] = round(os.getloadavg()[0], 1)
            row["deploy"] = min(deploys)
            row["destroy"] = min(destroys)
            row["settle"] = res.phases.get("settle", 0.0)
            row["procs"] = res.phases.get("processes", 0.0)
            row["phases"] = {k: round(v, 3) for k, v in res.phases.items()}
            row["bgp"] = res.bgp_seconds if res.bgp_converged is not None else None
            row["converged"] = res.bgp_converged
            row["ratio"] = row["deploy"] / row["floor"]
            row["frr_ratio"] = row["deploy"] / (row["floor"] + row["frr_floor"])
            row["start_ratio"] = row["deploy"] / (row["floor"] + row["frr_start"])
            row["setns"] = row["s_ratio"] = None
            if args.compare:
                eb.settle_kernel()
                old = NetnsRuntime(ssh=False, strategy="setns").deploy(lab)
                row["setns"], row["s_ratio"] = old.seconds, old.seconds / row["floor"]
                rt.destroy(lab)
            rows.append(row)
            eb.settle_kernel()
            print(f"  {label}: {row['phases']}", file=sys.stderr)
    finally:
        for lab in opened:
            try:
                rt.destroy(lab)
            except Exception as exc:  # report and go on: the others must go too
                print(f"destroy {lab.name}: {exc}", file=sys.stderr)
    cols = ["lab", "gpus", "switches", "ns", "veths", "frr", "floor", "frr_start", "frr_floor", "deploy", "ratio",
            "frr_ratio", "start_ratio", "settle", "procs", "bgp", "destroy", "load"]
    if args.compare:
        cols += ["setns", "s_ratio"]
    print("seconds; floor = one ip -batch of the same namespaces + veths; frr_floor = the same FRR daemons started "
          "on those namespaces (frr_start) and their config loaded by vtysh -b (frr_ratio = deploy / (floor + "
          "frr_floor); start_ratio = deploy / (floor + frr_start), daemons alone); load = 1-minute load average; "
          "deploy = NetnsRuntime.deploy "
          "(settle/procs are parts of it; bgp = convergence wait after it); setns = the same deploy with "
          "ip/tc processes per namespace (ratio s_ratio)")
    print(" ".join(f"{c:>12}" for c in cols))
    for r in rows:
        cells = []
        for c in cols:
            v = r[c]
            cells.append(f"{'-':>12}" if v is None else f"{v:>12}" if isinstance(v, (int, str)) else f"{v:>12.3f}")
        print(" ".join(cells))
    print(f"total {time.perf_counter() - t_all:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(r["converged"] in (None, True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
