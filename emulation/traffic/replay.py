"""A training job's iteration replayed on a deployed lab, measured beside the model.

The plan (job_plan.py, pure) gives each phase: idle time (compute and the bubble)
or steps of flows, each flow of one pair class on its class's iperf3 port range.
This module runs it with the traffic room's step runner (iperf3.run_steps) and
counts what really crossed the lab with nftables counters in every GPU namespace
(table ``railonly_replay``, inet family; installed before, removed in a finally):

- output hook, per destination-port range: the bytes each GPU sent, by class
  (``hb``, ``rail``, ``cross_rail`` = the NIC leg of a cross-rail pair, ``staged`` =
  its HB leg to the forwarding GPU on rail-only);
- input hook, the ``staged`` range: the forwarded bytes arriving on the HB ports of
  the forwarding GPUs;
- forward hook, per range: bytes the kernel forwarded (a cross-rail ring hop of a
  badly placed job on rail-only);
- on the baseline, forward hooks in the switches that join rails (fabric.json
  switch nodes with no rail): cross-rail path evidence.

Raw ``ip -s -j link`` counters of every GPU's NIC and HB port go beside them, and
the tx counters of every shaped link after each step (GPU NICs and HB ports, switch
links: the flows' actual paths and ECMP placement). Each phase carries three figures:
``model_ideal_s`` (the analysis model at the lab's rates: perfect balance),
``model_placed_s`` (per step, the busiest shaped link's counted bytes / its shaped rate,
at least the step's planned bytes on the NIC and HB links; summed: a sibling that
forwards a cross-rail hop carries it on its HB port and its NIC, beside its own) and
``measured_s`` (steps' slowest flows at rate, summed; idle: the sleep).
A phase fails when a flow failed or the counted bytes miss the plan by class; it
is slow (noted) beyond the tolerance of its placed model. The run's verdict judges
communication only (the phases with flows, summed: ``communication_measured_s``
against ``communication_model_placed_s``), not an iteration diluted by compute;
a saturated host makes it inconclusive (host.py).
"""

from __future__ import annotations

import json
import statistics
import time
from functools import partial
from typing import Callable

from railonly.fabric.analysis import Cluster, Job
from railonly.fabric.analysis.traffic import all_to_all_overhead, collectives

from ..checks import check_plan as checks_plan
from ..lab import Lab, link_rates
from ..runtime.protocol import NoDoor, Runtime, RuntimeProblem, deployed_status
from . import host, job_plan
from .iperf3 import ABS_SLACK_S as SLACK_S  # the verdict's (judge): once, on the summed communication time
from .iperf3 import (LinkCounters, agents_kind, agents_waited, overhead_parts, waited_line, bound_finding, ecmp_finding, host_capacity, host_lines, judge, why, nccl_streams, placement,
                     port_bytes, preflight, preflight_lines, run_steps, shaped_rates, slot_ports, stop_servers, traffic_agents)
from .completion_time import hb_bytes, host_step, nic_bytes, placed_step

TABLE = "railonly_replay"
BYTE_SLACK_REL = 0.10  # counted bytes include TCP/IP headers (a few %) and iperf3's control messages
BYTE_SLACK_PER_FLOW = 256 * 1024  # iperf3 -n may overshoot by one 128 KiB block
ABS_SLACK_S = 0.05  # a phase's slow note: on top of its relative tolerance (timer and scheduling noise)


def _range(cls: str) -> str:
    lo = job_plan.CLASS_PORTS[cls]
    return f"{lo}-{lo + job_plan.PORTS_PER_CLASS - 1}"


def ruleset(gpu: bool) -> str:
    """The nft script (one argv) of a GPU (output, input, forward) or a rail-joining switch (forward)."""
    t = f"inet {TABLE}"
    cmds = [f"add table {t}"]
    hooks = (("tx", "output"), ("rx", "input"), ("routed", "forward")) if gpu else (("routed", "forward"),)
    for chain, hook in hooks:
        cmds.append(f"add chain {t} {chain} {{ type filter hook {hook} priority 0 ; policy accept ; }}")
    for cls in job_plan.CLASSES:
        for chain, _ in hooks:
            if chain == "rx" and cls != "staged":
                continue
            cmds.append(f"add counter {t} {chain}_{cls}")
            cmds.append(f"add rule {t} {chain} tcp dport {_range(cls)} counter name {chain}_{cls}")
    return "; ".join(cmds)


def joining_switches(lab: Lab) -> list[str]:
    """Switches of fabric.json that belong to no rail: on the baseline they join rails."""
    return sorted(sw.name for sw in lab.fabric.switches if not sw.rails)


class Counters:
    """The replay's nftables table in the GPU namespaces (and rail-joining switches)."""

    def __init__(self, lab: Lab, rt: Runtime, gpus: list[str], switches: list[str]):
        self.lab, self.rt, self.gpus, self.switches = lab, rt, gpus, switches
        self.installed: list[str] = []
        door = rt.door()
        self.door = None if isinstance(door, NoDoor) else door  # nftables counters by netlink, no nft process

    def install(self) -> None:
        for node in self.gpus + self.switches:
            ns = self.lab.netns(node)
            self.rt.exec(ns, ["nft", f"delete table inet {TABLE}"], timeout=10)  # ours, from an interrupted run
            self.installed.append(node)
            rc, out = self.rt.exec(ns, ["nft", ruleset(node in self.gpus)], timeout=10)
            if rc != 0:
                raise RuntimeProblem(f"nft in {ns} failed: {out.strip()[:200]} (the replay counts bytes with nftables)")

    def remove(self) -> None:
        for node in self.installed:
            self.rt.exec(self.lab.netns(node), ["nft", f"delete table inet {TABLE}"], timeout=10)
        self.installed = []

    def read(self) -> dict[str, dict[str, int]]:
        """{node: {counter name: bytes}}: one nftables netlink dump per node through the runtime's
        door (no process), else ``nft -j list counters`` in each node."""
        nodes = self.gpus + self.switches
        if self.door is not None:
            got = self.door.call_many([(self.lab.netns(n), partial(self.door.nft_counters, TABLE)) for n in nodes],
                                      workers=4)
            if not any(isinstance(c, BaseException) for c in got):
                return dict(zip(nodes, got))
            self.door = None  # a node the door could not read: every later read takes nft
        out: dict[str, dict[str, int]] = {}
        for node in nodes:
            rc, text = self.rt.exec(self.lab.netns(node), ["nft", "-j", "list", "counters", "table", "inet", TABLE],
                                    timeout=10)
            vals: dict[str, int] = {}
            try:
                for item in json.loads(text).get("nftables", []) if rc == 0 else []:
                    c = item.get("counter")
                    if c and c.get("table") == TABLE:
                        vals[c["name"]] = int(c["bytes"])
            except (ValueError, TypeError, AttributeError, KeyError):
                pass
            out[node] = vals
        return out


def _delta(after: dict, before: dict) -> dict:
    return {n: {k: v - before.get(n, {}).get(k, 0) for k, v in c.items()} for n, c in after.items()}


def _sum(d: dict, nodes, name: str) -> int:
    return sum(d.get(n, {}).get(name, 0) for n in nodes)


def _ports(cp) -> dict[str, dict[str, str]]:
    out = {}
    for g in cp.gpus.values():
        out[g.name] = {"nic": g.port}
        if g.hb_port:
            out[g.name]["hb"] = g.hb_port
    return out


def _port_delta(after: dict, before: dict, ports: dict) -> dict:
    out = {}
    for gpu, p in sorted(ports.items()):
        row = {}
        for what, port in p.items():
            a, b = after.get((gpu, port), (0, 0)), before.get((gpu, port), (0, 0))
            row[f"{what}_tx"], row[f"{what}_rx"] = a[0] - b[0], a[1] - b[1]
        out[gpu] = row
    return out


def overhead_model(job: Job, pl, rates) -> dict:
    """The analysis model's all-to-all overhead of rail-only over rail-optimized at the lab's
    rates, in both forms (None without EP traffic): "store_forward" is the form the replay
    runs (PXN stages only the bytes bound for another rail), "paper" the paper's convention."""
    colls = collectives(job, pl)
    return {form.replace("-", "_"): (None if (v := all_to_all_overhead(colls, rates, form)) is None else round(v, 4))
            for form in ("store-forward", "paper")}


def prepare(lab: Lab, cp, job: Job, nic: float, hb: float, time_scale: float | None = None,
            dead: set[str] | frozenset = frozenset()):
    """(scaled, placement, phases) of the job on the lab (pure). ``dead``: GPUs whose rail NIC
    is down; their flows are rerouted through HB siblings (job_plan.reroute) after the time
    scale is set as for a healthy run, so the two runs compare."""
    cluster = Cluster.from_fabric(lab.fabric, str(lab.fabric_file))
    names = job_plan.index_names({(g.hb, g.rail): g.name for g in cp.gpus.values()}, cluster.hb_size)
    rates = job_plan.lab_rates(nic, hb)
    if time_scale is None:
        sc = job_plan.scale_job(job, cluster, nic, 1.0)
        _, phases = job_plan.plan(sc, names, cp.topology, rates)
        time_scale = job_plan.auto_time_scale(phases, nic, hb)
    sc = job_plan.scale_job(job, cluster, nic, time_scale)
    pl, phases = job_plan.plan(sc, names, cp.topology, rates)
    if dead:
        detour = job_plan.detour_model(sc, pl, set(dead), names, cp.topology, rates)
        phases = job_plan.reroute(phases, set(dead), names, cluster.hb_size, cp.topology, detour)
    return sc, pl, phases


def predicted(sc, pl, topology: str, dead: set[str], names: dict[int, str]) -> dict:
    """What `analyze --fail nic:GPU` predicts for the lab's job (docs/failures.md): the
    iteration at the design's rates, healthy and with each dead GPU detoured."""
    from railonly.fabric.analysis import Rates
    from railonly.fabric.analysis.failure import Fault, Impact, job_under
    from railonly.fabric.analysis.timing import assemble, call_times, stage_compute_s

    K = sc.cluster.hb_size
    real = Rates.of(sc.cluster)
    healthy = assemble(sc.job, call_times(collectives(sc.job, pl), topology, real), topology, stage_compute_s(sc.job))
    # the analysis names GPUs hbD-gpuR by index; the lab's own names may differ
    as_model = {n: f"hb{i // K}-gpu{i % K}" for i, n in names.items()}
    gone = sorted((as_model[g] for g in dead), key=lambda n: tuple(int(x) for x in n[2:].split("-gpu")))
    im = Impact(topology, [Fault("nic", g, f"nic:{g}") for g in gone], gone, gone, [])
    jf = job_under(sc.job, pl, real, topology, im, healthy)
    return {"specs": [f"nic:{g}" for g in gone], "healthy_iteration_s": round(healthy.iteration_s, 6),
            "iteration_s": None if jf.iteration_s is None else round(jf.iteration_s, 6),
            "slowdown": None if jf.iteration_s is None else round(jf.iteration_s / healthy.iteration_s, 4)}


def run(lab: Lab, rt: Runtime, job: Job, *, iterations: int = 1, time_scale: float | None = None,
        tolerance: float = 0.10, converge: bool = True, window: str | None = None, streams: int | None = None,
        cpu_sampler: host.Sampler | None = None, reroute: bool = False, progress: Callable[[str], None] = lambda s: None, detail: Callable[[str], None] = lambda s: None) -> dict:
    """Replay ``iterations`` iterations of ``job`` (see the module docstring); the report is
    The replay report of docs/reference/outdir.md (the traffic report with ``pattern: job``)."""
    deployed_status(rt, lab)
    nic_plan, hb_plan = link_rates(lab)
    cp = checks_plan.load(lab)
    nic_tc, hb_tc = shaped_rates(rt, lab, cp)
    nic, hb = nic_tc or nic_plan, hb_tc or hb_plan
    dead: dict[str, str] = {}
    if reroute:
        from . import faults

        dead = faults.dead_nics(lab, rt, {g.name: g.port for g in cp.gpus.values()})
        progress("rerouting through HB siblings: " + (", ".join(f"{g} ({w})" for g, w in sorted(dead.items()))
                                                     or "no GPU NIC is down in the lab's fault record"))
    sc, pl, phases = prepare(lab, cp, job, nic, hb, time_scale, set(dead))
    rates = job_plan.lab_rates(nic, hb)
    model_iter = job_plan.model_iteration(phases)
    job_plan.check_duration(model_iter, iterations, sc.time_scale, sc.job.parallel.micro_batches, time_scale is not None)
    detour = None
    if reroute:
        names = job_plan.index_names({(g.hb, g.rail): g.name for g in cp.gpus.values()}, sc.cluster.hb_size)
        healthy_phases = job_plan.plan(sc, names, cp.topology, rates)[1]
        detour = {"gpus": sorted(dead), "faults": sorted(set(dead.values())),
                  "healthy_model_iteration_s": round(job_plan.model_iteration(healthy_phases), 4),
                  "prediction": predicted(sc, pl, cp.topology, set(dead), names)}
    streams = streams or nccl_streams(float(lab.fabric.design.nic_gbps or 400))
    progress(f"job {job.name} on {lab.name} ({cp.topology}): tp {sc.job.parallel.tp} pp {sc.job.parallel.pp}"
             f" dp {sc.job.parallel.dp} ep {sc.job.parallel.ep}, {sc.job.parallel.micro_batches} micro-batches"
             + (f" ({'; '.join(sc.changes)})" if sc.changes else "")
             + f"; time x{sc.time_scale:g}, bytes x{sc.byte_scale:.3g}; {streams} streams a transfer;"
               f" NIC {nic:g} Mbit/s, HB {hb:g} Mbit/s;"
               f" model {model_iter:.2f} s an iteration")
    before = preflight(lab, rt, converge, progress, "the replay starts")
    gpus = sorted(cp.gpus)
    switches = joining_switches(lab) if cp.topology != "rail-only" else []
    counters = Counters(lab, rt, gpus, switches)
    ports = _ports(cp)
    want = {g: set(p.values()) for g, p in ports.items()}
    per_phase: list[list[dict]] = [[] for _ in phases]
    stop_servers(lab, rt)  # leftovers of an interrupted run
    dls, rated = placement(lab, rt, nic)
    run_ctx = {"agents": traffic_agents(lab, rt, cp, streams, window), "links": LinkCounters(lab, rt, dls), "rated": rated,
               "cpu": host.CpuMeter(cpu_sampler or host.proc_stat_sample), "streams": streams}
    t_run = time.monotonic()
    try:
        run_ctx["capacity"] = host_capacity(run_ctx["agents"], cp, hb, nic)  # before the counters: not the job's bytes
        counters.install()
        # every server of every phase once, before the first timed step
        run_ctx["agents"].ensure([f for ph in phases for st in slot_ports([list(s) for s in ph.steps]) for f in st])
        for it in range(iterations):
            for i, ph in enumerate(phases):
                per_phase[i].append(_run_phase(lab, rt, cp, ph, counters, want, ports, it, iterations,
                                               tolerance, window, nic, hb, run_ctx, progress, detail))
    finally:
        counters.remove()
        run_ctx["agents"].stop()
    total_s = time.monotonic() - t_run
    if getattr(run_ctx["agents"], "failed_pairs", None):
        from . import faults

        run_ctx["waited"] = agents_waited(run_ctx["agents"],
                                          faults.dead_nics(lab, rt, {g.name: g.port for g in cp.gpus.values()}))
    rep = _report(lab, cp, job, sc, pl, phases, per_phase, iterations, nic, hb, rates, model_iter, tolerance, switches,
                  run_ctx, total_s)
    rep["preflight"] = before
    if detour is not None:
        m, h = rep["measured_iteration_s"], detour["healthy_model_iteration_s"]
        detour["model_slowdown"] = round(model_iter / h, 4) if h else None
        detour["measured_slowdown_vs_healthy_model"] = round(m / h, 4) if h and m else None
        rep["reroute"] = detour
    return rep


def _run_phase(lab, rt, cp, ph, counters, want, ports, it, iterations, tolerance, window, nic, hb, ctx,
               progress, detail) -> dict:
    c0, p0 = counters.read(), port_bytes(lab, rt, want)
    if not ph.steps:  # compute and the bubble: idle time
        t = time.monotonic()
        time.sleep(ph.idle_s)
        rec = {"measured_s": round(time.monotonic() - t, 4), "model_ideal_s": round(ph.idle_s, 4),
               "model_placed_s": round(ph.idle_s, 4), "model_host_s": round(ph.idle_s, 4), "steps": [], "flows": []}
    else:
        ran = run_steps(lab, rt, cp, [list(st) for st in ph.steps], window=window, nic_mbps=nic, streams=ctx["streams"],
                        agents=ctx["agents"], links=ctx["links"], cpu=ctx["cpu"], progress=detail)
        for f, r in zip(ph.flows, ran.flows):
            r["class"], r["group"], r["planned_bytes"], r["port"] = f.pair_class, f.group, f.bytes, f.port
        # the placed model: each step's busiest shaped link (a forwarding sibling's NIC, an HB port,
        # a switch link) by its counted bytes, summed; the ideal is the analysis model's perfect balance
        placed_sum = host_sum = 0.0
        for st, sr in zip(ph.steps, ran.steps):
            ideal = job_plan.step_model_s(st, nic, hb)
            placed = placed_step(ideal, sr.get("link_bytes") or {}, ctx["rated"])
            on_host = host_step(placed["placed_s"], hb_bytes(list(st)), ctx.get("capacity"), nic_bytes(list(st)))
            sr["measured_s"], sr["model_ideal_s"] = sr["seconds"], round(ideal, 4)
            sr["model_placed_s"], sr["ecmp"], sr["bound"] = round(placed["placed_s"], 4), placed["ecmp"], placed["bound"]
            sr["model_host_s"] = round(on_host, 4)
            sr["link_bytes"] = {k: v for k, v in sorted((sr.get("link_bytes") or {}).items()) if v}
            placed_sum += placed["placed_s"]
            host_sum += on_host
        rec = {"measured_s": ran.network_s, "model_ideal_s": round(ph.model_s, 4),
               "model_placed_s": round(placed_sum, 4), "model_host_s": round(host_sum, 4),
               "wall_s": round(ran.completion_s, 3),
               "overhead": ran.overhead, "steps": ran.steps, "flows": ran.flows}
    d = _delta(counters.read(), c0)
    gpus = counters.gpus
    rec["bytes_by_class"] = {c: _sum(d, gpus, f"tx_{c}") for c in job_plan.CLASSES}
    rec["kernel_forwarded"] = {c: _sum(d, gpus, f"routed_{c}") for c in job_plan.CLASSES}
    rec["staged_in"] = {g: v["rx_staged"] for g, v in sorted(d.items()) if g in gpus and v.get("rx_staged")}
    if counters.switches:
        rec["joining_switches"] = {c: _sum(d, counters.switches, f"routed_{c}") for c in job_plan.CLASSES}
    rec["ports"] = _port_delta(port_bytes(lab, rt, want), p0, ports)
    rec["problems"] = _problems(ph, rec, tolerance)
    rec["slow"] = _slow(ph, rec, tolerance)
    rec["verdict"] = "fail" if rec["problems"] else ("slow" if rec["slow"] else "pass")
    label = f"[{it + 1}/{iterations}] " if iterations > 1 else ""
    moved = sum(rec["bytes_by_class"].values())
    progress(f"{label}{ph.name:<24} {rec['measured_s']:7.2f} s (model {rec['model_placed_s']:6.2f} s placed,"
             f" {ph.model_s:6.2f} s ideal)"
             + (f" {moved / 1e6:8.1f} MB" if ph.steps else " idle" + " " * 7)
             + f"  {rec['verdict']}" + (f": {rec['problems'][0]}" if rec["problems"] else "")
             + (f": {rec['slow']}" if rec["slow"] and not rec["problems"] else ""))
    return rec


def _problems(ph, rec: dict, tolerance: float) -> list[str]:
    out = []
    failed = [r for r in rec["flows"] if r.get("error") or not r.get("seconds")]
    if failed:
        by_group: dict[int, list[dict]] = {}
        for r in failed:
            by_group.setdefault(r["group"], []).append(r)
        for gi, rs in sorted(by_group.items()):
            members = ", ".join(ph.groups[gi]) if 0 <= gi < len(ph.groups) else "?"
            first = rs[0]
            what = "pipeline" if ph.parallelism == "pp" else f"{ph.parallelism} group"
            out.append(f"{what} {gi} ({members}): {len(rs)} flow(s) failed, e.g. {first['src']}->{first['dst']}"
                       f" ({first['class']}): {(first.get('error') or 'no result')[:100]}")
        return out
    n_flows = {c: sum(1 for f in ph.flows if f.pair_class == c) for c in job_plan.CLASSES}
    for c in job_plan.CLASSES:
        want, got = ph.planned.get(c, 0), rec["bytes_by_class"][c]
        slack = want * BYTE_SLACK_REL + n_flows[c] * BYTE_SLACK_PER_FLOW
        if abs(got - want) > slack:
            out.append(f"{c} bytes counted {got:,}, planned {want:,}")
    return out


def _slow(ph, rec: dict, tolerance: float) -> str | None:
    model = rec["model_placed_s"]
    if rec["measured_s"] > model * (1 + tolerance) + ABS_SLACK_S:
        return (f"{rec['measured_s']:.2f} s measured, model {model:.2f} s under the flows' placement"
                f" ({ph.model_s:.2f} s ideal; +{100 * tolerance:g}% allowed)")
    return None


def _median(xs):
    return round(statistics.median(xs), 4) if xs else None


def _report(lab, cp, job, sc, pl, phases, per_phase, iterations, nic, hb, rates, model_iter, tolerance, switches,
            ctx, total_s) -> dict:
    iters = [round(sum(per_phase[i][k]["measured_s"] for i in range(len(phases))), 4) for k in range(iterations)]
    measured = _median(iters)
    out_phases = []
    for ph, recs in zip(phases, per_phase):
        by_class = {c: int(statistics.median(r["bytes_by_class"][c] for r in recs)) for c in job_plan.CLASSES}
        out_phases.append({
            "name": ph.name, "parallelism": ph.parallelism, "kind": ph.kind,
            "measured_s": _median([r["measured_s"] for r in recs]), "model_s": round(ph.model_s, 4),
            "model_ideal_s": round(ph.model_s, 4) if ph.steps else round(ph.idle_s, 4),
            "model_placed_s": _median([r["model_placed_s"] for r in recs]),
            "model_host_s": _median([r["model_host_s"] for r in recs]),
            # the lab plan's own figure: each step's slowest shaped link, summed
            "plan_model_s": round(sum(job_plan.step_model_s(st, nic, hb) for st in ph.steps), 4) if ph.steps else round(ph.idle_s, 4),
            "bytes": sum(by_class.values()), "bytes_by_class": by_class, "planned_bytes": dict(ph.planned),
            "verdict": "fail" if any(r["verdict"] == "fail" for r in recs) else (
                "slow" if any(r["verdict"] == "slow" for r in recs) else "pass"),
            "groups": [list(g) for g in ph.groups],
            "iterations": recs,
        })
    # bytes by the class of the GPU pair that sent them: a staged byte is a cross-rail pair's
    # byte counted again on its HB leg, so it is evidence, not a class of its own
    total = {c: sum(p["bytes_by_class"][c] for p in out_phases) for c in ("hb", "rail", "cross_rail")}
    failed = [p["name"] for p in out_phases if p["verdict"] == "fail"]
    it_ok = measured is not None and abs(measured - model_iter) <= tolerance * model_iter + ABS_SLACK_S
    comm = [(ph, p) for ph, p in zip(phases, out_phases) if ph.steps]
    comm_measured = round(sum(p["measured_s"] or 0.0 for _, p in comm), 4) if comm else None
    comm_placed = round(sum(p["model_placed_s"] for _, p in comm), 4)
    comm_ideal = round(sum(p["model_ideal_s"] for _, p in comm), 4)
    comm_host = round(sum(p["model_host_s"] for _, p in comm), 4)
    cpu = ctx["cpu"].report()
    verdict = (judge(comm_measured, comm_placed, tolerance, bool(failed), cpu, comm_host) if comm
               else ("fail" if failed else "pass"))
    steps = [s for ph, p in comm for r in p["iterations"] for s in r["steps"]]
    ecmp = ecmp_finding(steps)
    bound = bound_finding(steps)
    network = sum(r["measured_s"] for _, p in comm for r in p["iterations"])
    idle = sum(r["measured_s"] for ph, p in zip(phases, out_phases) if not ph.steps for r in p["iterations"])
    overhead = {k: round(sum(r["overhead"][k] for _, p in comm for r in p["iterations"]), 3)
                for k in ("client_start_and_barrier_s", "counter_reads_s")}
    overhead["agents_start_s"] = round(ctx["agents"].start_s, 3)
    overhead["agents_stop_s"] = round(ctx["agents"].stop_s, 3)
    if ctx.get("capacity"):
        overhead["host_capacity_probe_s"] = ctx["capacity"]["seconds"]
    overhead_s = round(max(0.0, total_s - network - idle), 3)
    overhead = overhead_parts(overhead, overhead_s)
    p = sc.job.parallel
    return {
        "lab": lab.name, "pattern": "job", "job": job.name, "topology": cp.topology, "iterations": iterations,
        "verdict": verdict,
        "communication_measured_s": comm_measured,
        "communication_model_placed_s": comm_placed,
        "communication_model_ideal_s": comm_ideal,
        "communication_model_host_s": comm_host,
        "host_capacity": ctx.get("capacity"),
        "agents": agents_kind(ctx["agents"]),
        "ecmp_imbalance": ecmp,
        "placement_bound": bound,
        "why": why(comm_measured or 0.0, comm_ideal, comm_placed, ecmp, cpu, len(failed), comm_host, ctx.get("capacity"),
                   tolerance, bound) if comm else "",
        "host_cpu": cpu,
        "streams": ctx["streams"],
        "overhead_s": overhead_s,
        "overhead": overhead,
        "agents_waited": ctx.get("waited"),
        "wall_s": round(total_s, 3),
        "measured_iteration_s": measured, "model_iteration_s": round(model_iter, 4),
        "iteration_s": iters,
        "bytes": total,
        "staged_bytes": sum(p["bytes_by_class"]["staged"] for p in out_phases),
        "kernel_forwarded_bytes": sum(int(statistics.median(sum(r["kernel_forwarded"].values()) for r in p["iterations"]))
                                      for p in out_phases),
        # by class: the baseline's spines also carry same-rail bytes between leaves; cross_rail is the evidence
        "joining_switch_bytes": ({c: sum(int(statistics.median(r["joining_switches"][c] for r in p["iterations"]))
                                         for p in out_phases) for c in job_plan.CLASSES} if switches else None),
        "moe_all_to_all_overhead_model": (ovh := overhead_model(sc.job, pl, rates))["store_forward"],
        "moe_all_to_all_overhead_model_paper": ovh["paper"],
        "failed_phases": failed,
        "iteration_within_tolerance": it_ok,
        "tolerance": tolerance,
        # the verdict's absolute slack, applied once to the summed communication time (not per phase)
        "slack_s": SLACK_S,
        "verdict_rule": (f"pass: |communication_measured_s - communication_model_placed_s| <= tolerance x"
                         f" communication_model_placed_s + slack_s, once on the summed communication time;"
                         f" a phase is noted slow beyond its own placed model x (1 + tolerance) + {ABS_SLACK_S:g} s"),
        "nic_gbps_emulated": round(nic / 1000, 6), "hb_gbps_emulated": round(hb / 1000, 6),
        "scaling": {"time_scale": sc.time_scale, "byte_scale": sc.byte_scale, "changes": list(sc.changes),
                    "tp": p.tp, "pp": p.pp, "dp": p.dp, "ep": p.ep, "vpp": p.vpp, "micro_batches": p.micro_batches,
                    "gpus": p.gpus},
        "placement": {"problems": [f"{x.group}: {x.message}" for x in pl.problems], "notes": list(pl.notes)},
        "counters": f"nftables table inet {TABLE} in every GPU namespace (output hook by destination-port range"
                    " per class, input hook for staged bytes, forward hook)"
                    + (f" and forward hooks in {', '.join(switches)}" if switches else ""),
        "port_ranges": {c: _range(c) for c in job_plan.CLASSES},
        "phases": out_phases,
    }


def format_report(rep: dict) -> str:
    b = rep["bytes"]
    cm, cp_, ci = rep["communication_measured_s"], rep["communication_model_placed_s"], rep["communication_model_ideal_s"]
    lines = [f"lab {rep['lab']} job {rep['job']} ({rep['topology']}), {rep['iterations']} iteration(s),"
             f" {rep['streams']} streams a transfer"]
    if cm is not None:
        lines.append(f"  communication {cm:.2f} s measured; model {cp_:.2f} s under the flows' placement"
                     f" ({100 * (cm / cp_ - 1):+.1f}%), {ci:.2f} s perfectly balanced")
    lines += [f"  iteration {rep['measured_iteration_s']:.2f} s measured, model {rep['model_iteration_s']:.2f} s at lab rates"
              f" (compute included); overhead {rep['overhead_s']:.2f} s apart from it ("
              + ", ".join(f"{k.removesuffix('_s').replace('_', ' ')} {v:.2f} s" for k, v in rep["overhead"].items())
              + f"); wall: run {rep.get('wall_s', 0.0):.2f} s",
              f"  bytes by class (counters): hb {b['hb']:,}, rail {b['rail']:,}, cross-rail {b['cross_rail']:,};"
              f" staged over HB for forwarding {rep['staged_bytes']:,}; kernel-forwarded {rep['kernel_forwarded_bytes']:,}"
              + (f"; through rail-joining switches: cross-rail {rep['joining_switch_bytes']['cross_rail']:,},"
                 f" same-rail {rep['joining_switch_bytes']['rail']:,}" if rep["joining_switch_bytes"] is not None else "")]
    lines += waited_line(rep.get("agents_waited"))
    lines += preflight_lines(rep)
    lines += host_lines(rep)
    e = rep.get("ecmp_imbalance")
    if e:
        lines.append(f"  ECMP imbalance: busiest switch link {e['max']:.2f}x the mean of its ECMP set (step {e['step']},"
                     f" {e['busiest_link']}); mean over steps {e['mean']:.2f}x")
    cpu = rep["host_cpu"]
    if cpu.get("busy_share") is not None:
        lines.append(f"  host CPU {100 * cpu['busy_share']:.0f}% busy during the timed steps"
                     f" (inconclusive at {100 * cpu['limit']:.0f}%)")
    if rep["moe_all_to_all_overhead_model"] is not None:
        lines.append(f"  model all-to-all overhead of rail-only over rail-optimized: {100 * rep['moe_all_to_all_overhead_model']:.1f}%"
                     f" as replayed (PXN stages only cross-rail bytes); paper's convention"
                     f" {100 * rep['moe_all_to_all_overhead_model_paper']:.1f}%")
    r = rep.get("reroute")
    if r is not None:
        pr = r["prediction"]
        lines.append(f"  rerouted through HB siblings: {', '.join(r['gpus']) or 'none (no GPU NIC down)'}"
                     + (f" ({', '.join(r['faults'])})" if r["faults"] else ""))
        if r["gpus"]:
            lines.append(f"  slowdown: measured x{r['measured_slowdown_vs_healthy_model'] or 0:.3f} over the healthy model"
                         f" iteration ({r['healthy_model_iteration_s']:.2f} s); lab plan model x{r['model_slowdown']:.3f};"
                         f" analyze --fail {' --fail '.join(pr['specs'])} predicts "
                         + (f"x{pr['slowdown']:.3f}" if pr["slowdown"] else "that it cannot run"))
    lines.append(f"  {'phase':<24}{'measured s':>11}{'placed s':>9}{'ideal s':>9}{'host s':>8}{'MB':>9}  verdict")
    for p in rep["phases"]:
        lines.append(f"  {p['name']:<24}{p['measured_s']:>11.2f}{p['model_placed_s']:>9.2f}{p['model_ideal_s']:>9.2f}"
                     f"{p['model_host_s']:>8.2f}"
                     f"{p['bytes'] / 1e6:>9.1f}  {p['verdict']}")
        for r in p["iterations"]:
            lines += [f"      {x}" for x in r["problems"] + ([f"slow: {r['slow']}"] if r["slow"] else [])]
    lines.append(f"  verdict: {rep['verdict']}" + (f" (failed: {', '.join(rep['failed_phases'])})" if rep["failed_phases"] else "")
                 + f" (pass: communication, summed over its phases, within {100 * rep['tolerance']:g}% of the"
                   f" placement-aware model plus {rep.get('slack_s', SLACK_S) * 1000:g} ms once): {rep['why']}")
    return "\n".join(lines)
