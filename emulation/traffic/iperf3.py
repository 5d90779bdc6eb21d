"""Synthetic collective traffic on a deployed lab, run with iperf3 and judged against the model.

iperf3 servers run one per flow (``-1``: one test, then exit) in the
destination namespace, daemonized with a pid file, recorded in
``OUTDIR/.lab/traffic.json`` and stopped by pid in a ``finally``. A step's
time (``steps[].seconds``, summed in ``steps_completion_s``) is its slowest
flow's ``seconds_at_rate``: the planned bytes at the rate iperf3's receiver
measured, so neither process start (tens of ms with 2 CPUs) nor the tail a
``-n`` test leaves unread is counted; ``completion_s`` is the wall time of all
steps, start-up included.
"""

from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

from ..checks import plan as checks_plan
from ..lab import Lab, LabError, link_rates, run_dir
from ..netns import pids, setns
from ..runtime.outdir_writer import OutdirWriter
from ..runtime.protocol import Runtime, deployed_status
from .model import default_bytes, model
from .patterns import Flow, plan_flows, steps_of

# --- running ----------------------------------------------------------------------------------


def _run_dir(lab: Lab) -> str:
    return f"{run_dir(lab.name)}/iperf3"


def stop_servers(lab: Lab) -> int:
    """Stop every recorded iperf3 server by pid (checked against its command line).

    The record sits in the untrusted OUTDIR: an entry is used only when it is
    one this module writes (an iperf3 server argv, a pid file in the lab's
    iperf3 run dir, a lab namespace), and a process is signalled only when it
    runs in that namespace; anything else is exit 2 naming the file."""
    from railonly.fabric.outdir.reader import OutdirReader

    rel = str(lab.traffic_state_file.relative_to(lab.outdir))
    rec = OutdirReader(str(lab.outdir)).read_json(rel, limit=16 * 1024 * 1024)
    if rec is None:
        return 0
    servers = rec.get("servers") if isinstance(rec, dict) and rec.get("lab") == lab.name else None
    nss = {n.netns for n in lab.nodes.values()}
    ok = isinstance(servers, list) and all(
        isinstance(s, dict) and s.get("netns") in nss and isinstance(s.get("pidfile"), str)
        and os.path.dirname(s["pidfile"]) == _run_dir(lab) and os.path.basename(s["pidfile"]).endswith(".pid")
        and "/" not in os.path.basename(s["pidfile"]) and ".." not in s["pidfile"]
        and isinstance(s.get("argv"), list) and s["argv"][:3] == ["iperf3", "-s", "-1"]
        and all(isinstance(a, str) for a in s["argv"]) for s in servers)
    if not ok:
        raise LabError(str(lab.traffic_state_file), "is not a record of the lab's iperf3 servers (refused: nothing"
                       " was stopped or removed)", "remove the file; railonly lab destroy stops every process of the lab")
    targets = []
    for s in servers:
        pid = pids.read_pidfile(s["pidfile"])
        ino = setns.inode(s["netns"])
        pi = pids.matches(pid, s["argv"], netns_inode=ino) if pid and ino else None
        if pi is not None:
            targets.append(pi)
    pids.terminate(targets, 3.0)
    for s in servers:
        try:
            os.unlink(s["pidfile"])
        except OSError:
            pass
    OutdirWriter(lab.outdir).unlink(rel)
    for d in (_run_dir(lab), os.path.dirname(_run_dir(lab))):  # only when empty (FRR's run dir is the parent)
        try:
            os.rmdir(d)
        except OSError:
            break
    return len(targets)


def _dst_ip(cp, f: Flow) -> str:
    ip = cp.gpus[f.dst].hb_ip if f.hb else cp.gpus[f.dst].ip
    if not ip:
        raise ValueError(f"{f.dst} has no HB address for an HB flow")
    return ip


def _start_servers(lab: Lab, rt: Runtime, cp, flows: list[Flow]) -> None:
    rundir = _run_dir(lab)
    os.makedirs(rundir, exist_ok=True)
    servers = []
    for f in flows:
        pidfile = f"{rundir}/{f.dst}-{f.port}.pid"
        argv = ["iperf3", "-s", "-1", "-D", "-p", str(f.port), "-B", _dst_ip(cp, f), "--pidfile", pidfile]
        servers.append({"netns": lab.netns(f.dst), "argv": argv, "pidfile": pidfile})
    # intent first: the record exists before any server does
    OutdirWriter(lab.outdir).write_text(str(lab.traffic_state_file.relative_to(lab.outdir)),
                                        json.dumps({"lab": lab.name, "servers": servers}, indent=1))
    for s in servers:  # -D: each forks away and writes its pid file
        rc, out = rt.exec(s["netns"], s["argv"], timeout=10)
        if rc != 0:
            raise RuntimeError(f"iperf3 server in {s['netns']} failed: {out.strip()[:200]}")
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


def fabric_links(lab: Lab) -> list:
    """The links above the rail NICs (switch-to-switch: kind ``fabric``), each a LabLink."""
    return [lk for lk in lab.links if lk.kind == "fabric"]


def unshape_fabric(lab: Lab, rt: Runtime) -> int:
    """Remove the rate limit of every switch-to-switch link, both ends (the lab's tiers
    above the rail NICs become non-blocking: an ideal any-to-any fabric at the rail NICs'
    rate, which the NIC and HB shaping still bound). Undone only by a redeploy. Returns
    the number of ends changed."""
    n = 0
    for lk in fabric_links(lab):
        for end in (lk.a, lk.b):
            rc, out = rt.exec(lab.netns(end.node), ["tc", "qdisc", "del", "dev", end.port, "root"], timeout=10)
            if rc != 0 and "No such file" not in out and "Cannot delete qdisc with handle of zero" not in out:
                raise RuntimeError(f"tc qdisc del on {end.node}:{end.port} failed: {out.strip()[:200]}")
            n += rc == 0
    return n


def port_bytes(lab: Lab, rt: Runtime, ports: dict[str, set[str]]) -> dict[tuple[str, str], tuple[int, int]]:
    """{(node, port): (tx bytes, rx bytes)} of the given ports (``ip -s -j link`` in each node's namespace)."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for node, want in sorted(ports.items()):
        rc, text = rt.exec(lab.netns(node), ["ip", "-s", "-j", "link"], timeout=10)
        try:
            for l in json.loads(text) if rc == 0 else []:
                if l.get("ifname") in want:
                    st = l["stats64"]
                    out[(node, l["ifname"])] = (int(st["tx"]["bytes"]), int(st["rx"]["bytes"]))
        except (ValueError, KeyError, TypeError):
            pass
    return out


def port_counters(lab: Lab, rt: Runtime, ports: dict[str, set[str]]) -> dict[tuple[str, str], int]:
    """{(node, port): tx bytes} of the given ports."""
    return {k: tx for k, (tx, _rx) in port_bytes(lab, rt, ports).items()}


def fabric_counters(lab: Lab, rt: Runtime) -> dict[tuple[str, str], int]:
    """{(switch, port): tx bytes} on every end of every switch-to-switch link."""
    want: dict[str, set[str]] = {}
    for lk in fabric_links(lab):
        for end in (lk.a, lk.b):
            want.setdefault(end.node, set()).add(end.port)
    return port_counters(lab, rt, want)


def gpu_counters(lab: Lab, rt: Runtime, cp) -> dict[tuple[str, str], int]:
    """{(gpu, 'nic'|'hb'): tx bytes} of every GPU's rail NIC and HB port."""
    names = {}
    for g in cp.gpus.values():
        names[(g.name, g.port)] = (g.name, "nic")
        if g.hb_port:
            names[(g.name, g.hb_port)] = (g.name, "hb")
    want: dict[str, set[str]] = {}
    for node, port in names:
        want.setdefault(node, set()).add(port)
    return {names[k]: v for k, v in port_counters(lab, rt, want).items()}


def parse_iperf3(out: str, rc: int, planned_bytes: int) -> dict:
    """The fields of one flow's result from an iperf3 client's ``-J`` output (pure):
    bytes, seconds, mbps, seconds_at_rate, bytes_written, retransmits, rtt_ms; or error."""
    r: dict = {}
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
        # the planned bytes at the receiver's rate: the flow's time without the unread tail
        r["seconds_at_rate"] = round(planned_bytes * r["seconds"] / r["bytes"], 4) if r["bytes"] else None
        if sent.get("retransmits") is not None:
            r["retransmits"] = int(sent["retransmits"])
        snd = ((doc["end"].get("streams") or [{}])[0].get("sender") or {})
        if snd.get("mean_rtt") is not None:  # TCP's smoothed RTT, us -> ms
            r["rtt_ms"] = round(snd["mean_rtt"] / 1000, 2)
    except KeyError as exc:
        r["error"] = str(exc.args[0] if exc.args else exc)[:300]
    except (ValueError, TypeError):
        r["error"] = (out or f"iperf3 exited {rc}").strip()[-300:]
    return r


@dataclass
class StepsRun:
    flows: list[dict]  # one result per flow, in the order of the steps' flows
    steps: list[dict]  # per step: step, flows, seconds (its slowest flow at rate), wall_s
    completion_s: float  # wall time from the first client's start to the last one's end


def run_steps(lab: Lab, rt: Runtime, cp, steps: list[list[Flow]], *, window: str = "128K", nic_mbps: float,
              progress: Callable[[str], None] = lambda s: None) -> StepsRun:
    """Run steps of flows one after another: an iperf3 server per flow (ports unique in the
    run), then per step every flow's client at once; a step's time is its slowest flow's
    seconds_at_rate. Servers are stopped by pid in a finally. ``progress`` gets a line per flow."""
    flows = [f for st in steps for f in st]
    results: dict[int, dict] = {}
    index = {f.port: i for i, f in enumerate(flows)}
    if len(index) != len(flows):
        raise ValueError("run_steps: two flows of a run share an iperf3 port")
    lock = threading.Lock()
    step_rep: list[dict] = []
    completion = 0.0
    try:
        _start_servers(lab, rt, cp, flows)
        t0 = time.monotonic()

        def one(f: Flow) -> None:
            i = index[f.port]
            argv = ["iperf3", "-c", _dst_ip(cp, f), "-p", str(f.port), "-n", str(f.bytes), "-J",
                    "--connect-timeout", "3000", "-w", window]
            start = time.monotonic()
            for _attempt in range(3):
                rc, out = rt.exec(lab.netns(f.src), argv, timeout=120 + f.bytes * 8 / (nic_mbps * 1e6) * 4)
                if rc == 0 or "unable to connect" not in out:
                    break
                time.sleep(0.2)
            end = time.monotonic()
            r = {"src": f.src, "dst": f.dst, "via": f.via, "bytes": 0, "seconds": None, "step": f.step,
                 "start_s": round(start - t0, 3), "end_s": round(end - t0, 3)}
            if f.hb:
                r["over"] = "hb"
            r.update(parse_iperf3(out, rc, f.bytes))
            with lock:
                results[i] = r
                progress(f"[{len(results)}/{len(flows)}] step {f.step} {f.src}->{f.dst}"
                         + (f" via {f.via}" if f.via else "") + (" over HB" if f.hb else "")
                         + (f": {r['bytes']:,} B in {r['seconds']} s" if r.get("seconds") else f": FAILED {r.get('error', '')[:80]}"))

        with ThreadPoolExecutor(max_workers=min(max(len(st) for st in steps) if steps else 1, 512)) as ex:
            for st in steps:
                list(ex.map(one, st))
                rs = [results[index[f.port]] for f in st]
                secs = [r["seconds_at_rate"] for r in rs if r.get("seconds_at_rate")]
                step_rep.append({"step": st[0].step, "flows": len(st),
                                 "seconds": round(max(secs), 4) if secs else None,
                                 "wall_s": round(max(r["end_s"] for r in rs) - min(r["start_s"] for r in rs), 3)})
        completion = max((r["end_s"] for r in results.values()), default=0.0)
    finally:
        stop_servers(lab)
    return StepsRun([results[i] for i in range(len(flows))], step_rep, completion)


def run(lab: Lab, rt: Runtime, pattern: str, nbytes: int | None = None, *, schedule: str = "phased",
        converge: bool = True, window: str = "128K", progress: Callable[[str], None] = lambda s: None) -> dict:
    """Run a pattern. ``converge=False`` skips the bgp/reachability wait (a caller that
    has just waited for it, e.g. between repetitions)."""
    deployed_status(rt, lab)

    cp = checks_plan.load(lab)
    nic_plan, hb_plan = link_rates(lab)
    nic_tc, hb_tc = shaped_rates(rt, lab, cp)
    nic = nic_tc or nic_plan
    hb = hb_tc or hb_plan
    nbytes = nbytes or default_bytes(cp, pattern, nic)
    if pattern != "all-to-all":
        schedule = "concurrent"
    flows = plan_flows(cp, pattern, nbytes, schedule)
    steps = steps_of(flows)
    m = model(cp, flows, nic, hb)
    progress(f"{pattern} ({schedule}): {len(flows)} flows of {nbytes:,} bytes in {len(steps)} step(s);"
             f" NIC {nic:g} Mbit/s, HB {hb:g} Mbit/s; model {m['pipelined']:.2f} s")
    if converge:
        # converged first (bounded poll): BGP sessions up, subnets installed, every rail pair answers
        from ..checks import run as checks_run

        pre = checks_run.run(lab, rt, timeout=60.0, checks=("bgp", "reachability"))
        if pre.failed:
            progress(f"warning: {pre.failed} reachability/bgp checks fail before traffic starts")
    stop_servers(lab)  # leftovers of an interrupted run
    ran = run_steps(lab, rt, cp, steps, window=window, nic_mbps=nic, progress=progress)
    step_rep = ran.steps
    for i, sr in enumerate(step_rep):
        sr["model_s"] = round(m["steps"][i]["pipelined"], 4)
        sr["model_store_forward_s"] = round(m["steps"][i]["store_forward"], 4)
    completion = ran.completion_s
    fl = ran.flows
    return {
        "lab": lab.name, "pattern": pattern, "topology": cp.topology, "schedule": schedule,
        "completion_s": round(completion, 3),
        "steps_completion_s": round(sum(s["seconds"] or 0.0 for s in step_rep), 4),
        "model_completion_s": round(m["pipelined"], 3),
        "model_store_forward_s": round(m["store_forward"], 3),
        "model": "per step, max over shaped links (per-GPU NIC and HB, each direction) of bytes/rate,"
                 " summed over steps; store_forward adds each step's HB time before its rail time"
                 " (PXN store-and-forward, the paper's convention)",
        "nic_gbps_emulated": round(nic / 1000, 6), "hb_gbps_emulated": round(hb / 1000, 6),
        "nic_hb_ratio": round(nic / hb, 4) if hb else None,
        "bytes_per_flow": nbytes,
        "failed_flows": sum(1 for r in fl if r.get("error") or not r.get("seconds")),
        "steps": step_rep,
        "flows": fl,
    }


def format_report(rep: dict) -> str:
    fl = rep["flows"]
    ok = [f for f in fl if f.get("seconds")]
    total = sum(f["bytes"] for f in fl)
    lines = [f"lab {rep['lab']} {rep['pattern']} ({rep['topology']}, {rep.get('schedule', 'concurrent')},"
             f" {len(rep.get('steps') or [1])} step(s)): {len(fl)} flows, {total:,} bytes received",
             f"  completion {rep['completion_s']:.2f} s wall, {rep.get('steps_completion_s', 0):.2f} s"
             f" summed over steps (slowest flow of each); model {rep['model_completion_s']:.2f} s pipelined,"
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
