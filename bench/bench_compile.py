"""Compile time and peak memory from 256 to 65,536 GPUs, beside a floor.

The floor is the least any config generator must do: render one Jinja2
template per switch (a stanza per port) and write it to a file. The same run
measures both, each size in a fresh process so peak RSS is its own. The
compile is split into its phases (build the graph, render every artifact,
and the self-check `railonly compile` runs overlapped with the atomic write),
with the bytes it writes, so it is clear which part grows with what.

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


# The naive generator the pipeline competes with: ONE template per switch that
# prints its whole SONiC config_db.json (the same per-port tables railonly
# emits: PORT, QUEUE, PORT_QOS_MAP, PFC_WD, DEVICE_NEIGHBOR, CABLE_LENGTH), with
# no graph, no structured config, no checks.
FLOOR_FULL_TEMPLATE = """{
    "CABLE_LENGTH": {
        "AZURE": {
{% for p in ports %}            "{{ p.name }}": "40m"{{ "," if not loop.last }}
{% endfor %}        }
    },
    "DEVICE_METADATA": {
        "localhost": {
            "hostname": "{{ name }}",
            "hwsku": "generic-64x400G",
            "type": "LeafRouter"
        }
    },
    "DEVICE_NEIGHBOR": {
{% for p in ports %}        "{{ p.name }}": {
            "name": "{{ p.peer }}",
            "port": "{{ p.peer_port }}"
        }{{ "," if not loop.last }}
{% endfor %}    },
    "PFC_WD": {
{% for p in ports %}        "{{ p.name }}": {
            "action": "drop",
            "detection_time": "200",
            "restoration_time": "200"
        }{{ "," if not loop.last }}
{% endfor %}    },
    "PORT": {
{% for p in ports %}        "{{ p.name }}": {
            "admin_status": "up",
            "alias": "etp{{ p.index + 1 }}",
            "description": "{{ p.peer }}:{{ p.peer_port }}",
            "fec": "rs",
            "index": "{{ p.index + 1 }}",
            "lanes": "{{ p.lanes }}",
            "mtu": "9100",
            "speed": "400000"
        }{{ "," if not loop.last }}
{% endfor %}    },
    "PORT_QOS_MAP": {
{% for p in ports %}        "{{ p.name }}": {
            "dscp_to_tc_map": "AZURE",
            "pfc_enable": "3",
            "pfc_to_queue_map": "AZURE",
            "pfcwd_sw_enable": "3",
            "tc_to_pg_map": "AZURE",
            "tc_to_queue_map": "AZURE"
        }{{ "," if not loop.last }}
{% endfor %}    },
    "QUEUE": {
{% for p in ports %}{% for q, sched in queues %}        "{{ p.name }}|{{ q }}": {
            "scheduler": "{{ sched }}"{% if q == "3" %},
            "wred_profile": "AZURE_LOSSLESS"{% endif %}
        }{{ "," if not (loop.last and loop.revindex == 1 and p.last) }}
{% endfor %}{% endfor %}    }
}
"""
QUEUES = [("0-2", "scheduler.lossy"), ("3", "scheduler.lossless"), ("4-5", "scheduler.lossy"),
          ("6", "scheduler.cnp"), ("7", "scheduler.lossy")]


def design_text(gpus: int, k: int, radix: int) -> str:
    return f"name: bench\nhb_domain: {{size: {k}, count: {gpus // k}}}\nswitch: {{radix: {radix}}}\n"


def one(kind: str, gpus: int, k: int, radix: int) -> dict:
    """Runs in a child process: one measurement, printed as JSON."""
    out = tempfile.mkdtemp(prefix="railonly-bench-")
    try:
        if kind in ("floor", "floor-full"):
            import jinja2

            from railonly.fabric.design import clos

            switches = int(k * math.ceil(clos.model_counts(gpus // k, radix)["switches"]))
            t0 = time.perf_counter()
            env = jinja2.Environment(undefined=jinja2.StrictUndefined)
            if kind == "floor":
                tpl = env.from_string(FLOOR_TEMPLATE)
                ports = [f"Ethernet{i * 8}" for i in range(radix)]
            else:
                tpl = env.from_string(FLOOR_FULL_TEMPLATE)
                ports = [{"name": f"Ethernet{i * 8}", "index": i, "lanes": ",".join(str(8 * i + j) for j in range(8)),
                          "peer": f"peer{i}", "peer_port": "eth1", "last": i == radix - 1} for i in range(radix)]
            for s in range(switches):
                name = f"sw{s}"
                d = os.path.join(out, name)
                os.mkdir(d)
                with open(os.path.join(d, "config"), "w") as fh:
                    fh.write(tpl.render(name=name, ports=ports, queues=QUEUES))
            seconds = time.perf_counter() - t0
            files = switches
            phases = {}
        else:
            # What `railonly compile` does, phase by phase.
            from railonly.cli.commands.compile import check_and_write
            from railonly.fabric.compiler import compile_fabric
            from railonly.fabric.design.design import parse_design
            from railonly.fabric.graph.build import build_fabric

            t0 = time.perf_counter()
            design = parse_design(design_text(gpus, k, radix))
            fab = build_fabric(design)
            t1 = time.perf_counter()
            files_map = compile_fabric(fab)
            t2 = time.perf_counter()
            failed = check_and_write(os.path.join(out, "o"), files_map, design.sha256)
            assert not failed, failed[:3]
            t3 = time.perf_counter()
            seconds = t3 - t0
            switches, files = len(fab.switches), len(files_map)
            phases = {"build": t1 - t0, "render": t2 - t1, "check+write": t3 - t2,
                      "mbytes": sum(map(len, files_map.values())) / 1e6}
        # Children's peak too: workers fork from this process.
        rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
        return {"seconds": seconds, "rss_mib": rss, "switches": switches, "files": files, "phases": phases}
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
    print(f"compile (all artifacts, self-check, atomic write) vs two floors, K={a.k}, radix {a.radix}, best of {a.repeat}:")
    print("  floor: one Jinja2 template per switch with a 3-line stanza per port, written;")
    print("  full:  one Jinja2 template per switch printing its whole config_db.json (same per-port tables), written")
    print(f"{'GPUs':>7} {'switches':>8} {'files':>6} {'MB out':>7} {'floor s':>8} {'full s':>7} {'compile s':>9} {'ratio':>6} {'/full':>6} "
          f"{'build':>6} {'render':>6} {'check+write':>11} {'peak MiB':>8} {'us/GPU':>7}")
    prev = None
    for gpus in (int(x) for x in a.sizes.split(",")):
        f = measure("floor", gpus, a.k, a.radix, a.repeat)
        full = measure("floor-full", gpus, a.k, a.radix, a.repeat)
        c = measure("compile", gpus, a.k, a.radix, a.repeat)
        ratio = c["seconds"] / f["seconds"]
        ratio_full = c["seconds"] / full["seconds"]
        ph = c["phases"]
        print(f"{gpus:>7,} {c['switches']:>8,} {c['files']:>6,} {ph['mbytes']:>7.0f} {f['seconds']:>8.2f} {full['seconds']:>7.2f} "
              f"{c['seconds']:>9.2f} {ratio:>5.1f}x {ratio_full:>5.1f}x "
              f"{ph['build']:>6.2f} {ph['render']:>6.2f} {ph['check+write']:>11.2f} {c['rss_mib']:>8.0f} "
              f"{1e6 * c['seconds'] / gpus:>7.1f}")
        if prev:
            g0, t0 = prev
            slope = math.log(c["seconds"] / t0) / math.log(gpus / g0)
            print(f"{'':>7} growth exponent since {g0:,} GPUs: time ~ GPUs^{slope:.2f}")
        prev = (gpus, c["seconds"])


if __name__ == "__main__":
    main()
