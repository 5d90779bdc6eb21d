"""Compile time and peak memory from 256 to 65,536 GPUs, beside a floor.

The floor is the least any config generator must do: render one Jinja2
template per switch (a stanza per port) and write it to a file. The same run
measures both, each size in a fresh process so peak RSS is its own.

    .venv/bin/python bench/bench_compile.py [--sizes 256,1024,...] [--k 8] [--radix 64]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

FLOOR_TEMPLATE = """hostname {{ name }}
{% for p in ports %}interface {{ p }}
   mtu 9100
   description {{ name }}:{{ p }}
{% endfor %}"""


def design_text(gpus: int, k: int, radix: int) -> str:
    return f"name: bench\nhb_domain: {{size: {k}, count: {gpus // k}}}\nswitch: {{radix: {radix}}}\n"


def one(kind: str, gpus: int, k: int, radix: int) -> dict:
    """Runs in a child process: one measurement, printed as JSON."""
    out = tempfile.mkdtemp(prefix="railonly-bench-")
    try:
        if kind == "floor":
            import jinja2

            from railonly.fabric import clos

            switches = int(k * math.ceil(clos.model_counts(gpus // k, radix)["switches"]))
            t0 = time.perf_counter()
            tpl = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(FLOOR_TEMPLATE)
            ports = [f"Ethernet{i * 8}" for i in range(radix)]
            for s in range(switches):
                name = f"sw{s}"
                d = os.path.join(out, name)
                os.mkdir(d)
                with open(os.path.join(d, "config"), "w") as fh:
                    fh.write(tpl.render(name=name, ports=ports))
            seconds = time.perf_counter() - t0
            files = switches
        else:
            from railonly.fabric.compiler import compile_design
            from railonly.fabric.design import parse_design
            from railonly.fabric.writer import write_outdir

            t0 = time.perf_counter()
            design = parse_design(design_text(gpus, k, radix))
            fab, files_map = compile_design(design)
            write_outdir(os.path.join(out, "o"), files_map, design.sha256)
            seconds = time.perf_counter() - t0
            switches, files = len(fab.switches), len(files_map)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return {"seconds": seconds, "rss_mib": rss, "switches": switches, "files": files}
    finally:
        shutil.rmtree(out, ignore_errors=True)


def measure(kind: str, gpus: int, k: int, radix: int, repeat: int) -> dict:
    best = None
    for _ in range(repeat):
        cp = subprocess.run([sys.executable, __file__, "--one", kind, str(gpus), str(k), str(radix)],
                            capture_output=True, text=True, timeout=900, check=True)
        r = json.loads(cp.stdout)
        if best is None or r["seconds"] < best["seconds"]:
            best = r
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="256,1024,4096,16384,32768,65536")
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--radix", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=2, help="best of N runs per point")
    ap.add_argument("--one", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        kind, gpus, k, radix = a.one
        print(json.dumps(one(kind, int(gpus), int(k), int(radix))))
        return
    print(f"compile (all artifacts) vs floor (one Jinja2 template per switch, written); K={a.k}, radix {a.radix}; best of {a.repeat}")
    print(f"{'GPUs':>7} {'switches':>8} {'files':>6} {'floor s':>8} {'compile s':>9} {'ratio':>6} {'floor MiB':>9} {'compile MiB':>11} {'us/GPU':>7}")
    prev = None
    for gpus in (int(x) for x in a.sizes.split(",")):
        f = measure("floor", gpus, a.k, a.radix, a.repeat)
        c = measure("compile", gpus, a.k, a.radix, a.repeat)
        ratio = c["seconds"] / f["seconds"]
        print(f"{gpus:>7,} {c['switches']:>8,} {c['files']:>6,} {f['seconds']:>8.2f} {c['seconds']:>9.2f} {ratio:>5.1f}x "
              f"{f['rss_mib']:>9.0f} {c['rss_mib']:>11.0f} {1e6 * c['seconds'] / gpus:>7.1f}")
        if prev:
            g0, t0 = prev
            slope = math.log(c["seconds"] / t0) / math.log(gpus / g0)
            print(f"{'':>7} growth exponent since {g0:,} GPUs: time ~ GPUs^{slope:.2f}")
        prev = (gpus, c["seconds"])


if __name__ == "__main__":
    main()
