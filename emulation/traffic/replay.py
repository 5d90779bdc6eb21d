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

Raw ``ip -s -j link`` counters of every GPU's NIC and HB port go beside them. A
phase passes when every flow completed, the counted bytes match the plan by class,
and its measured time (steps' slowest flows at rate, summed; idle: the sleep) is
within the tolerance of the model's at the lab's rates.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Callable

from railonly.fabric.analysis import Cluster, Job
from railonly.fabric.analysis.traffic import all_to_all_overhead, collectives

from ..checks import plan as checks_plan
from ..lab import Lab, link_rates
from ..runtime.protocol import Runtime, RuntimeProblem, deployed_status
from . import job_plan
from .iperf3 import port_bytes, run_steps, shaped_rates, stop_servers

TABLE = "railonly_replay"
BYTE_SLACK_REL = 0.10  # counted bytes include TCP/IP headers (a few %) and iperf3's control messages
BYTE_SLACK_PER_FLOW = 256 * 1024  # iperf3 -n may overshoot by one 128 KiB block
ABS_SLACK_S = 0.05  # phase time tolerance on top of the relative one (timer and scheduling noise)


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
    return sorted(n["name"] for n in lab.fabric.get("nodes", []) if n.get("role") == "switch" and not n.get("rails"))


class Counters:
    """The replay's nftables table in the GPU namespaces (and rail-joining switches)."""

    def __init__(self, lab: Lab, rt: Runtime, gpus: list[str], switches: list[str]):
        self.lab, self.rt, self.gpus, self.switches = lab, rt, gpus, switches
        self.installed: list[str] = []

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
        """{node: {counter name: bytes}}."""
        out: dict[str, dict[str, int]] = {}
        for node in self.gpus + self.switches:
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


def prepare(lab: Lab, cp, job: Job, nic: float, hb: float, time_scale: float | None = None):
    """(scaled, placement, phases) of the job on the lab (pure)."""
    cluster = Cluster.from_fabric_json(lab.fabric, str(lab.fabric_file))
    names = job_plan.index_names({(g.hb, g.rail): g.name for g in cp.gpus.values()}, cluster.hb_size)
    rates = job_plan.lab_rates(nic, hb)
    if time_scale is None:
        sc = job_plan.scale_job(job, cluster, nic, 1.0)
        _, phases = job_plan.plan(sc, names, cp.topology, rates)
        time_scale = job_plan.auto_time_scale(phases, nic, hb)
    sc = job_plan.scale_job(job, cluster, nic, time_scale)
    pl, phases = job_plan.plan(sc, names, cp.topology, rates)
    return sc, pl, phases


def run(lab: Lab, rt: Runtime, job: Job, *, iterations: int = 1, time_scale: float | None = None,
        tolerance: float = 0.10, converge: bool = True, window: str = "128K",
        progress: Callable[[str], None] = lambda s: None, detail: Callable[[str], None] = lambda s: None) -> dict:
    """Replay ``iterations`` iterations of ``job`` (see the module docstring); the report is
    The replay report of docs/reference/outdir.md (the traffic report with ``pattern: job``)."""
    deployed_status(rt, lab)
    nic_plan, hb_plan = link_rates(lab)
    cp = checks_plan.load(lab)
    nic_tc, hb_tc = shaped_rates(rt, lab, cp)
    nic, hb = nic_tc or nic_plan, hb_tc or hb_plan
    sc, pl, phases = prepare(lab, cp, job, nic, hb, time_scale)
    rates = job_plan.lab_rates(nic, hb)
    model_iter = job_plan.model_iteration(phases)
    progress(f"job {job.name} on {lab.name} ({cp.topology}): tp {sc.job.parallel.tp} pp {sc.job.parallel.pp}"
             f" dp {sc.job.parallel.dp} ep {sc.job.parallel.ep}, {sc.job.parallel.micro_batches} micro-batches"
             + (f" ({'; '.join(sc.changes)})" if sc.changes else "")
             + f"; time x{sc.time_scale:g}, bytes x{sc.byte_scale:.3g}; NIC {nic:g} Mbit/s, HB {hb:g} Mbit/s;"
               f" model {model_iter:.2f} s an iteration")
    if converge:
        from ..checks import run as checks_run

        pre = checks_run.run(lab, rt, timeout=60.0, checks=("bgp", "reachability"))
        if pre.failed:
            progress(f"warning: {pre.failed} reachability/bgp checks fail before the replay starts")
    gpus = sorted(cp.gpus)
    switches = joining_switches(lab) if cp.topology != "rail-only" else []
    counters = Counters(lab, rt, gpus, switches)
    ports = _ports(cp)
    want = {g: set(p.values()) for g, p in ports.items()}
    per_phase: list[list[dict]] = [[] for _ in phases]
    stop_servers(lab)  # leftovers of an interrupted run
    try:
        counters.install()
        for it in range(iterations):
            for i, ph in enumerate(phases):
                per_phase[i].append(_run_phase(lab, rt, cp, ph, counters, want, ports, it, iterations,
                                               tolerance, window, nic, progress, detail))
    finally:
        counters.remove()
    return _report(lab, cp, job, sc, pl, phases, per_phase, iterations, nic, hb, rates, model_iter, tolerance, switches)


def _run_phase(lab, rt, cp, ph, counters, want, ports, it, iterations, tolerance, window, nic, progress, detail) -> dict:
    c0, p0 = counters.read(), port_bytes(lab, rt, want)
    if not ph.steps:  # compute and the bubble: idle time
        t = time.monotonic()
        time.sleep(ph.idle_s)
        rec = {"measured_s": round(time.monotonic() - t, 4), "steps": [], "flows": []}
    else:
        ran = run_steps(lab, rt, cp, [list(st) for st in ph.steps], window=window, nic_mbps=nic, progress=detail)
        for f, r in zip(ph.flows, ran.flows):
            r["class"], r["group"], r["planned_bytes"], r["port"] = f.pair_class, f.group, f.bytes, f.port
        rec = {"measured_s": round(sum(s["seconds"] or 0.0 for s in ran.steps), 4), "wall_s": round(ran.completion_s, 3),
               "steps": ran.steps, "flows": ran.flows}
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
    progress(f"{label}{ph.name:<24} {rec['measured_s']:7.2f} s (model {ph.model_s:6.2f} s)"
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
    if rec["measured_s"] > ph.model_s * (1 + tolerance) + ABS_SLACK_S:
        return f"{rec['measured_s']:.2f} s measured, model {ph.model_s:.2f} s (+{100 * tolerance:g}% allowed)"
    return None


def _median(xs):
    return round(statistics.median(xs), 4) if xs else None


def _report(lab, cp, job, sc, pl, phases, per_phase, iterations, nic, hb, rates, model_iter, tolerance, switches) -> dict:
    iters = [round(sum(per_phase[i][k]["measured_s"] for i in range(len(phases))), 4) for k in range(iterations)]
    measured = _median(iters)
    out_phases = []
    for ph, recs in zip(phases, per_phase):
        by_class = {c: int(statistics.median(r["bytes_by_class"][c] for r in recs)) for c in job_plan.CLASSES}
        out_phases.append({
            "name": ph.name, "parallelism": ph.parallelism, "kind": ph.kind,
            "measured_s": _median([r["measured_s"] for r in recs]), "model_s": round(ph.model_s, 4),
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
    p = sc.job.parallel
    return {
        "lab": lab.name, "pattern": "job", "job": job.name, "topology": cp.topology, "iterations": iterations,
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
        "verdict": "pass" if not failed and it_ok else "fail",
        "failed_phases": failed,
        "iteration_within_tolerance": it_ok,
        "tolerance": tolerance,
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
    lines = [f"lab {rep['lab']} job {rep['job']} ({rep['topology']}), {rep['iterations']} iteration(s):"
             f" measured {rep['measured_iteration_s']:.2f} s, model {rep['model_iteration_s']:.2f} s at lab rates"
             f" ({100 * (rep['measured_iteration_s'] / rep['model_iteration_s'] - 1):+.1f}%)",
             f"  bytes by class (counters): hb {b['hb']:,}, rail {b['rail']:,}, cross-rail {b['cross_rail']:,};"
             f" staged over HB for forwarding {rep['staged_bytes']:,}; kernel-forwarded {rep['kernel_forwarded_bytes']:,}"
             + (f"; through rail-joining switches: cross-rail {rep['joining_switch_bytes']['cross_rail']:,},"
                f" same-rail {rep['joining_switch_bytes']['rail']:,}" if rep["joining_switch_bytes"] is not None else "")]
    if rep["moe_all_to_all_overhead_model"] is not None:
        lines.append(f"  model all-to-all overhead of rail-only over rail-optimized: {100 * rep['moe_all_to_all_overhead_model']:.1f}%"
                     f" as replayed (PXN stages only cross-rail bytes); paper's convention"
                     f" {100 * rep['moe_all_to_all_overhead_model_paper']:.1f}%")
    lines.append(f"  {'phase':<24}{'measured s':>11}{'model s':>9}{'MB':>9}  verdict")
    for p in rep["phases"]:
        lines.append(f"  {p['name']:<24}{p['measured_s']:>11.2f}{p['model_s']:>9.2f}{p['bytes'] / 1e6:>9.1f}  {p['verdict']}")
        for r in p["iterations"]:
            lines += [f"      {x}" for x in r["problems"] + ([f"slow: {r['slow']}"] if r["slow"] else [])]
    lines.append(f"  verdict: {rep['verdict']}" + (f" (failed: {', '.join(rep['failed_phases'])})" if rep["failed_phases"] else "")
                 + ("" if rep["iteration_within_tolerance"] else f" (iteration outside {100 * rep['tolerance']:g}% of the model)"))
    return "\n".join(lines)
