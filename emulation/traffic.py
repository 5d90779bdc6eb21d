"""Synthetic collective traffic on a deployed lab: planned (pure), run with iperf3, modelled.

Patterns, planned from the rail-only layout of fabric.json:

- ``ring-allreduce``: per rail, a ring over the rail's GPUs in HB-domain order
  (the cross-domain step of a hierarchical data-parallel all-reduce); every
  rail's ring runs at the same time. Each GPU sends one flow of BYTES to its
  successor.
- ``all-to-all``: every GPU sends BYTES to every GPU of every *other* HB
  domain (MoE expert exchange). Pairs inside one HB domain are left out: they
  travel over NVLink in the rail-only fabric and in its rail-optimized
  baseline alike. On a rail-only fabric a cross-rail flow is addressed to the
  destination GPU and forwarded by the kernel routes the compiler wrote:
  over the source's HB domain to the GPU of the destination's rank (``via``),
  then over the destination's rail; on the baseline it crosses the spine.

The model (stated here and in the README). Links are the shaped per-GPU NIC
(rate N, each direction) and per-GPU HB port (rate H, each direction); rail
switches are non-blocking. A flow loads every link it crosses:
same rail: src NIC out, dst NIC in; forwarded: src HB out, via HB in, via NIC
out, dst NIC in; baseline cross-rail: src NIC out, dst NIC in.

- ``model_completion_s`` (pipelined, fluid): max over links of load / rate. On
  these patterns the NIC is the bottleneck, so forwarding costs nothing here:
  rail-only and baseline predict the same time.
- ``model_store_forward_s`` (the paper's convention, PXN-like): the HB
  forwarding step completes before the rail step (max HB load / H) plus
  (max NIC load / N); its overhead over the pipelined time is about
  (K-1)/K * N/H, and the paper's figures are N/H (8.2% A100, 11.2% H100).

iperf3 servers run one per flow (``-1``: one test, then exit) in the
destination namespace, daemonized with a pid file, recorded in
``OUTDIR/.lab/traffic.json`` and stopped by pid in a ``finally``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

from . import checks_plan, pids, proc
from .runtime import Lab, Runtime

PATTERNS = ("ring-allreduce", "all-to-all")
BASE_PORT = 5201


class NotDeployed(Exception):
    pass


@dataclass(frozen=True)
class Flow:
    src: str
    dst: str
    via: str | None
    bytes: int
    port: int = 0


def plan_flows(cp: checks_plan.CheckPlan, pattern: str, nbytes: int) -> list[Flow]:
    """The flows of a pattern (pure)."""
    flows: list[tuple[str, str]] = []
    if pattern == "ring-allreduce":
        for r in sorted(cp.rails):
            m = cp.rails[r]
            if len(m) > 1:
                flows += [(m[i], m[(i + 1) % len(m)]) for i in range(len(m))]
    elif pattern == "all-to-all":
        names = sorted(cp.gpus, key=lambda n: (cp.gpus[n].hb, cp.gpus[n].rail))
        flows = [(a, b) for a in names for b in names if cp.gpus[a].hb != cp.gpus[b].hb]
    else:
        raise ValueError(f"unknown pattern {pattern!r}")
    by = {(g.hb, g.rail): g.name for g in cp.gpus.values()}
    out = []
    for i, (a, b) in enumerate(flows):
        ga, gb = cp.gpus[a], cp.gpus[b]
        via = None
        if cp.topology == "rail-only" and ga.rail != gb.rail:
            via = by.get((ga.hb, gb.rail))
        out.append(Flow(a, b, via, nbytes, BASE_PORT + i))
    return out


def link_loads(cp: checks_plan.CheckPlan, flows: list[Flow]) -> dict[tuple[str, str, str], int]:
    """{(gpu, 'nic'|'hb', 'out'|'in'): bytes} (pure)."""
    load: dict[tuple[str, str, str], int] = {}

    def add(k, n):
        load[k] = load.get(k, 0) + n

    for f in flows:
        if f.via and f.via != f.src:
            add((f.src, "hb", "out"), f.bytes)
            add((f.via, "hb", "in"), f.bytes)
            if f.via != f.dst:
                add((f.via, "nic", "out"), f.bytes)
                add((f.dst, "nic", "in"), f.bytes)
        else:
            add((f.src, "nic", "out"), f.bytes)
            add((f.dst, "nic", "in"), f.bytes)
    return load


def model(cp: checks_plan.CheckPlan, flows: list[Flow], nic_mbps: float, hb_mbps: float) -> dict[str, float]:
    """Predicted completion times in seconds (pure; see the module docstring)."""
    load = link_loads(cp, flows)
    rate = {"nic": nic_mbps * 1e6 / 8, "hb": hb_mbps * 1e6 / 8}
    t_nic = max([v / rate["nic"] for k, v in load.items() if k[1] == "nic"] or [0.0])
    t_hb = max([v / rate["hb"] for k, v in load.items() if k[1] == "hb"] or [0.0])
    return {"pipelined": max(t_nic, t_hb), "store_forward": t_nic + t_hb, "nic": t_nic, "hb": t_hb}


def default_bytes(cp: checks_plan.CheckPlan, pattern: str, nic_mbps: float, seconds: float = 2.0) -> int:
    """Bytes per flow so that the busiest NIC needs about `seconds`."""
    probe = plan_flows(cp, pattern, 1)
    busiest = max(v for k, v in link_loads(cp, probe).items() if k[1] == "nic") if probe else 1
    return max(256 * 1024, int(nic_mbps * 1e6 / 8 * seconds / busiest))


# --- running ----------------------------------------------------------------------------------


def _state_file(lab: Lab) -> str:
    return str(lab.state_dir / "traffic.json")


def _run_dir(lab: Lab) -> str:
    return f"/run/railonly/{lab.name}/iperf3"


def stop_servers(lab: Lab) -> int:
    """Stop every recorded iperf3 server by pid (checked against its command line)."""
    path = _state_file(lab)
    try:
        with open(path) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        return 0
    targets = []
    for s in rec.get("servers", []):
        pid = pids.read_pidfile(s["pidfile"])
        pi = pids.matches(pid, s["argv"]) if pid else None
        if pi is not None:
            targets.append(pi)
    pids.terminate(targets, 3.0)
    for s in rec.get("servers", []):
        try:
            os.unlink(s["pidfile"])
        except OSError:
            pass
    os.unlink(path)
    return len(targets)


def _start_servers(lab: Lab, cp, flows: list[Flow]) -> None:
    rundir = _run_dir(lab)
    os.makedirs(rundir, exist_ok=True)
    lab.state_dir.mkdir(parents=True, exist_ok=True)
    servers = []
    for f in flows:
        pidfile = f"{rundir}/{f.dst}-{f.port}.pid"
        argv = ["iperf3", "-s", "-1", "-D", "-p", str(f.port), "-B", cp.gpus[f.dst].ip, "--pidfile", pidfile]
        servers.append({"netns": lab.netns(f.dst), "argv": argv, "pidfile": pidfile})
    # intent first: the record exists before any server does
    with open(_state_file(lab), "w") as fh:
        json.dump({"lab": lab.name, "servers": servers}, fh, indent=1)
    for s in servers:
        res = proc.run(s["argv"], netns=s["netns"], timeout=10)
        if not res.ok:
            raise RuntimeError(f"iperf3 server in {s['netns']} failed: {res.stderr.strip()[:200]}")
    deadline = time.monotonic() + 10
    while any(pids.read_pidfile(s["pidfile"]) is None for s in servers) and time.monotonic() < deadline:
        time.sleep(0.05)


def shaped_rates(rt: Runtime, lab: Lab, cp) -> tuple[float | None, float | None]:
    """(NIC, HB) Mbit/s read back from tc in one GPU namespace (None if unreadable)."""
    g = next(iter(sorted(cp.gpus.values(), key=lambda g: g.name)), None)
    if g is None:
        return None, None
    out = []
    for dev, what in ((g.port, "qdisc"), (g.hb_port, "class")):
        rc, text = rt.exec(lab.netns(g.name), ["tc", "-j", what, "show", "dev", dev or "lo"], timeout=10)
        rate = None
        try:
            for q in json.loads(text or "[]") if rc == 0 else []:
                r = (q.get("options") or {}).get("rate")
                if r:
                    rate = r * 8 / 1e6  # tc -j reports bytes/s
        except (ValueError, AttributeError):
            rate = None
        out.append(rate)
    return out[0], out[1]


def run(lab: Lab, rt: Runtime, pattern: str, nbytes: int | None = None, *,
        progress: Callable[[str], None] = lambda s: None) -> dict:
    if rt.status(lab).state == "absent":
        raise NotDeployed(f"lab {lab.name} is not deployed; run: railonly lab deploy {lab.outdir}")
    from .lab_plan import rates

    cp = checks_plan.load(lab)
    nic_plan, hb_plan = rates(lab)
    nic_tc, hb_tc = shaped_rates(rt, lab, cp)
    nic = nic_tc or nic_plan
    hb = hb_tc or hb_plan
    nbytes = nbytes or default_bytes(cp, pattern, nic)
    flows = plan_flows(cp, pattern, nbytes)
    m = model(cp, flows, nic, hb)
    progress(f"{pattern}: {len(flows)} flows of {nbytes} bytes; NIC {nic:g} Mbit/s, HB {hb:g} Mbit/s;"
             f" model {m['pipelined']:.2f} s")
    # converged first (bounded poll): BGP sessions up, subnets installed, every rail pair answers
    from . import checks_run

    pre = checks_run.run(lab, rt, timeout=60.0, checks=("bgp", "reachability"))
    if pre.failed:
        progress(f"warning: {pre.failed} reachability/bgp checks fail before traffic starts")
    results: dict[int, dict] = {}
    lock = threading.Lock()
    stop_servers(lab)  # leftovers of an interrupted run
    try:
        _start_servers(lab, cp, flows)
        t0 = time.monotonic()

        def one(i: int, f: Flow) -> None:
            argv = ["iperf3", "-c", cp.gpus[f.dst].ip, "-p", str(f.port), "-n", str(f.bytes), "-J",
                    "--connect-timeout", "3000", "-w", "128K"]
            start = time.monotonic()
            for _attempt in range(3):
                rc, out = rt.exec(lab.netns(f.src), argv, timeout=120 + f.bytes * 8 / (nic * 1e6) * 4)
                if rc == 0 or "unable to connect" not in out:
                    break
                time.sleep(0.2)
            end = time.monotonic()
            r = {"src": f.src, "dst": f.dst, "via": f.via, "bytes": 0, "seconds": None,
                 "start_s": round(start - t0, 3), "end_s": round(end - t0, 3)}
            try:
                doc = json.loads(out)
                if doc.get("error"):
                    raise KeyError(doc["error"])
                sent = doc["end"]["sum_sent"]
                recv = doc["end"].get("sum_received", {})
                # "bytes": what the receiver really got. iperf3 3.12 ends a -n test when the
                # sender has *written* the bytes, so up to a socket buffer of them (kept small
                # with -w) may never be read; bytes_written is the sender's figure.
                r["bytes_written"] = int(sent["bytes"])
                r["bytes"] = int(recv.get("bytes", 0))
                r["seconds"] = round(float(recv.get("seconds") or sent["seconds"]), 4)
                r["mbps"] = round(r["bytes"] * 8 / r["seconds"] / 1e6, 3) if r["seconds"] else None
                if doc.get("error"):
                    r["error"] = doc["error"]
            except KeyError as exc:
                r["error"] = str(exc.args[0] if exc.args else exc)[:300]
            except (ValueError, TypeError):
                r["error"] = (out or f"iperf3 exited {rc}").strip()[-300:]
            with lock:
                results[i] = r
                progress(f"[{len(results)}/{len(flows)}] {f.src}->{f.dst}"
                         + (f" via {f.via}" if f.via else "")
                         + (f": {r['bytes']} B in {r['seconds']} s" if r.get("seconds") else f": FAILED {r.get('error', '')[:80]}"))

        with ThreadPoolExecutor(max_workers=min(len(flows), 512) or 1) as ex:
            list(ex.map(lambda a: one(*a), enumerate(flows)))
        completion = max((r["end_s"] for r in results.values()), default=0.0)
    finally:
        stop_servers(lab)
    fl = [results[i] for i in range(len(flows))]
    return {
        "lab": lab.name, "pattern": pattern, "topology": cp.topology,
        "completion_s": round(completion, 3),
        "model_completion_s": round(m["pipelined"], 3),
        "model_store_forward_s": round(m["store_forward"], 3),
        "model": "completion = max over shaped links (per-GPU NIC and HB, each direction) of bytes/rate;"
                 " store_forward adds the HB step before the rail step (PXN, the paper's convention)",
        "nic_gbps_emulated": round(nic / 1000, 6), "hb_gbps_emulated": round(hb / 1000, 6),
        "nic_hb_ratio": round(nic / hb, 4) if hb else None,
        "bytes_per_flow": nbytes,
        "failed_flows": sum(1 for r in fl if r.get("error") or not r.get("seconds")),
        "flows": fl,
    }


def format_report(rep: dict) -> str:
    fl = rep["flows"]
    ok = [f for f in fl if f.get("seconds")]
    total = sum(f["bytes"] for f in fl)
    lines = [f"lab {rep['lab']} {rep['pattern']} ({rep['topology']}): {len(fl)} flows, {total} bytes sent",
             f"  completion {rep['completion_s']:.2f} s; model {rep['model_completion_s']:.2f} s pipelined,"
             f" {rep['model_store_forward_s']:.2f} s store-and-forward"
             f" (NIC {rep['nic_gbps_emulated'] * 1000:g} Mbit/s, HB {rep['hb_gbps_emulated'] * 1000:g} Mbit/s)"]
    if ok:
        secs = sorted(f["seconds"] for f in ok)
        lines.append(f"  flow seconds: min {secs[0]:.2f}, median {secs[len(secs) // 2]:.2f}, max {secs[-1]:.2f};"
                     f" forwarded through an HB domain: {sum(1 for f in fl if f['via'])}")
    for f in fl:
        if f.get("error") or not f.get("seconds"):
            lines.append(f"  FAILED {f['src']}->{f['dst']}: {f.get('error', 'no result')[:120]}")
    return "\n".join(lines)
