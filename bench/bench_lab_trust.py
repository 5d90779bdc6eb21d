"""Benchmark what treating an OUTDIR as untrusted costs a lab deploy, beside the plan it guards.

For each lab, in the same run (no root needed; nothing is deployed):

  load      load_lab: bounded symlink-free reads, tree scan outside .lab,
            shape checks, check_clab / check_fabric (exec lines on the allow-list)
  checks    check_lab_files: the whole-OUTDIR check `validate` runs
            (check_outdir) plus every switch's FRR files, before a deploy
  plan      NetnsRuntime.plan without the checks (lab_plan.build): the
            baseline, the work a deploy does anyway before it touches the kernel
  state     the state file of the deployed lab checked (statefile.check),
            as deploy, status and destroy do

Labs: L2 EOS rails of 8-GPU HB domains (16 to 1,024 GPUs) and a routed SONiC
lab of 64 FRR switches. Best of 3 each.

  .venv/bin/python bench/bench_lab_trust.py [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

from railonly.cli import main as cli
from railonly.emulation.lab import load_lab
from railonly.emulation.runtime.netns import lab_plan, sshd, statefile
from railonly.emulation.runtime.netns.runtime import check_lab_files, owner

L2 = "name: {name}\nhb_domain: {{size: 8, count: {n}}}\nswitch: {{radix: {radix}, platform: eos}}\nrail: {{mode: l2}}\nlab: {{domains: {n}}}\n"
ROUTED64 = "name: {name}\nhb_domain: {{size: 8, count: 20}}\nswitch: {{radix: 8, platform: sonic}}\nrail: {{mode: routed}}\nlab: {{domains: 20}}\n"


def best(fn, n: int = 3) -> float:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def fake_state(lab, lp) -> dict:
    """The state a deploy of this plan records (as engine.deploy writes it)."""
    return {"version": 1, "lab": lab.name, "prefix": f"clab-{lab.name}-", "fingerprint": "x", "phase": "deployed",
            "namespaces": [n.name for n in lp.plan.namespaces],
            "processes": [{"name": p.name, "netns": p.netns, "argv": list(p.argv), "pidfile": p.pidfile,
                           "pid": 1000 + i, "starttime": 1, "dirs": list(p.dirs)} for i, p in enumerate(lp.plan.processes)],
            "root_sysctls": [], "dirs": []}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    sizes = [2, 16] if args.quick else [2, 16, 128]
    designs = [(f"bt{n * 8}", L2.format(name=f"bt{n * 8}", n=n, radix=max(8, 2 * n))) for n in sizes]
    designs.append(("btr64", ROUTED64.format(name="btr64")))
    print(f"{'lab':>8} {'nodes':>6} {'files':>6} {'load s':>8} {'checks s':>9} {'plan s':>8} {'state s':>8}"
          f" {'checks/plan':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in designs:
            d = Path(tmp) / f"{name}.yml"
            d.write_text(text)
            out = Path(tmp) / name
            with contextlib.redirect_stdout(io.StringIO()):
                rc = cli(["compile", str(d), "-o", str(out)])
            if rc != 0:
                print(f"compile of {name} failed", file=sys.stderr)
                return 1
            files = sum(1 for p in out.rglob("*") if p.is_file())
            lab = load_lab(out)
            t_load = best(lambda: load_lab(out))
            t_checks = best(lambda: check_lab_files(lab))
            lp = lab_plan.build(lab)
            if sshd.sonic_switches(lab):
                from dataclasses import replace

                lp.plan = replace(lp.plan, processes=lp.plan.processes + sshd.processes(lab))
            t_plan = best(lambda: lab_plan.build(lab))
            blob = json.dumps(fake_state(lab, lp))
            t_state = best(lambda: statefile.check(statefile.parse(blob), "s.json", owner(lab)))
            print(f"{name:>8} {len(lab.nodes):>6} {files:>6} {t_load:>8.3f} {t_checks:>9.3f} {t_plan:>8.3f}"
                  f" {t_state:>8.4f} {t_checks / t_plan:>10.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
