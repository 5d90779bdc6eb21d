"""Failures on the fabric graph: which GPUs lose their rail, and what a job pays for it (docs/failures.md).

A failure is a set of graph elements (GPU NICs, cables, switches, HB domains).
Its blast radius is read off the surviving graph: a GPU is off its rail when
its NIC no longer reaches the part of its rail's network that holds most of
the rail's GPUs (rail-only: the rail's own switches; the baseline: the one
Clos, the rail's GPUs still define "most"). Bandwidth lost per rail is the
share of that rail's cables of each upper tier that are down.

A GPU whose own NIC or NIC cable failed is detoured as NCCL's PXN does: its
bytes cross NVLink to a sibling of its HB domain and share that sibling's NIC
(rail-only: the far end also stages over NVLink, the destination rail being
unreachable on the sibling's rail). A GPU behind a failed switch is not: the
paper's rail switch has no path around it, and forwarding a whole leaf's GPUs
through their siblings is out of the model; the job cannot run there and
moves the touched HB domains to spare ones.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field

import numpy as np

from ..graph.model import Fabric, Link
from ..input.problems import InputError, Problem
from .network import Rates
from .timing import Result, assemble
from .traffic import collectives

SPEC_FORMS = ("nic:GPU", "cable:CABLE_ID", "switch:NAME", "domain:NAME")
DETOURED = ("nic", "cable1")  # per-GPU faults NCCL works around through a sibling


@dataclass(frozen=True)
class Fault:
    kind: str  # nic | cable | switch | domain
    name: str  # graph name on this network (GPU, cable id, switch, HB node)
    asked: str  # the SPEC as given


@dataclass
class Impact:
    """What a set of faults does to one network."""

    network: str
    faults: list[Fault]
    gpus_off_rail: list[str] = field(default_factory=list)  # GPU node names, sorted as in the fabric
    gpus_detoured: list[str] = field(default_factory=list)  # of those, reached through an HB sibling
    gpus_lost: list[str] = field(default_factory=list)  # off, no detour (switch or domain down)
    uplinks_lost: dict = field(default_factory=dict)  # rail -> {tier: [down, total]}

    def bandwidth_left(self) -> float:
        """The worst rail's share of upper-tier capacity still up (1.0: nothing lost)."""
        left = 1.0
        for tiers in self.uplinks_lost.values():
            for down, total in tiers.values():
                if total:
                    left = min(left, (total - down) / total)
        return left


def _bad_spec(spec: str, message: str, names: list[str]) -> InputError:
    near = difflib.get_close_matches(spec.split(":", 1)[-1], names, n=3, cutoff=0.5)
    fix = f"valid forms: {', '.join(SPEC_FORMS)}" + (f"; near names: {', '.join(near)}" if near else "")
    return InputError([Problem("--fail", f"{spec!r}: {message}", fix, None, "command line")])


def parse_spec(spec: str, fab: Fabric) -> Fault:
    """A `--fail` SPEC on `fab` (raises InputError naming it, the valid forms and near names)."""
    kind, sep, name = spec.partition(":")
    kind = kind.strip().lower()
    name = name.strip()
    if not sep or kind not in ("nic", "cable", "switch", "domain") or not name:
        raise _bad_spec(spec, "not a failure SPEC", [n.name for n in fab.nodes])
    if kind == "nic":
        names = [g.name for g in fab.gpus]
    elif kind == "cable":
        names = [lk.cable_id for lk in fab.cables() if lk.cable_id]
    elif kind == "switch":
        names = [s.name for s in fab.switches]
    else:
        names = [h.name for h in fab.hbs]
    if name not in names:
        raise _bad_spec(spec, f"no {kind} named {name!r} in the fabric", names)
    return Fault(kind, name, spec)


def _nic_link(fab: Fabric, gpu: str) -> Link:
    return next(lk for lk in fab.links if lk.kind != "hb" and lk.a.node == gpu)


def translate(fault: Fault, src: Fabric, dst: Fabric) -> Fault:
    """The same physical fault on the other network's graph: GPUs, HB domains and NIC cables
    by their GPU; a leaf as the leaf of its first GPU; other switches and cables by tier and position."""
    if fault.kind in ("nic", "domain"):
        return fault
    if fault.kind == "cable":
        lk = next(lk for lk in src.cables() if lk.cable_id == fault.name)
        if lk.tier == 1:
            return Fault("cable", _nic_link(dst, lk.a.node).cable_id, fault.asked)
        same = [x for x in dst.cables() if x.tier == lk.tier]
        pos = [x for x in src.cables() if x.tier == lk.tier].index(lk)
        return Fault("cable", same[pos % len(same)].cable_id, fault.asked) if same else Fault("none", "", fault.asked)
    sw = src.node(fault.name)
    if sw.tier == 1:
        gpu = next((lk.a.node for lk in src.links if lk.tier == 1 and lk.b.node == sw.name), None)
        if gpu is not None:
            return Fault("switch", _nic_link(dst, gpu).b.node, fault.asked)
    same = [s for s in dst.switches if s.tier == sw.tier]
    pos = [s for s in src.switches if s.tier == sw.tier].index(sw)
    return Fault("switch", same[pos % len(same)].name, fault.asked) if same else Fault("none", "", fault.asked)


def impact(fab: Fabric, faults: list[Fault], network: str | None = None) -> Impact:
    """Blast radius of `faults` on `fab`: union-find over the surviving non-HB graph."""
    dead_nodes = {f.name for f in faults if f.kind == "switch"}
    dead_cables = {f.name for f in faults if f.kind == "cable"}
    dead_nics = {f.name for f in faults if f.kind == "nic"}
    dead_domains = {f.name for f in faults if f.kind == "domain"}
    gone = {g.name for g in fab.gpus if f"hb{g.hb_domain}" in dead_domains} | dead_nics
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    up: dict = {}
    for lk in fab.links:
        if lk.kind == "hb":
            continue
        if lk.tier > 1:
            per = up.setdefault("all" if lk.rail is None else lk.rail, {}).setdefault(lk.tier, [0, 0])
            per[1] += 1
        down = (lk.cable_id in dead_cables or lk.a.node in dead_nodes or lk.b.node in dead_nodes
                or lk.a.node in gone)
        if down:
            if lk.tier > 1 and lk.a.node not in dead_nodes:  # a dead leaf's own uplinks serve no survivor
                per[0] += 1
            continue
        ra, rb = find(lk.a.node), find(lk.b.node)
        if ra != rb:
            parent[ra] = rb
    # the rail's network is the component holding most of its GPUs, among those with a live
    # switch (a GPU alone behind its dead leaf is a component too); with spines, one holding a
    # live spine or core (a leaf cut off from every spine only joins its own GPUs)
    top = 2 if any(s.tier >= 2 for s in fab.switches) else 1
    switched = {find(s.name) for s in fab.switches if s.name not in dead_nodes and s.tier >= top}
    by_rail: dict = {}
    for g in fab.gpus:
        if g.name not in gone and find(g.name) in switched:
            by_rail.setdefault(g.rail, {}).setdefault(find(g.name), []).append(g.name)
    main = {r: max(comps.values(), key=len)[0] for r, comps in by_rail.items()}
    off = [g.name for g in fab.gpus if g.name in gone or g.rail not in main or find(g.name) != find(main[g.rail])]
    off_set = set(off)
    per_gpu = dead_nics | {lk.a.node for lk in fab.links if lk.tier == 1 and lk.cable_id in dead_cables}
    behind_switch = {g for g in off_set if g not in per_gpu} | {g.name for g in fab.gpus if f"hb{g.hb_domain}" in dead_domains}
    detoured = []
    for g in fab.gpus:
        if g.name in off_set and g.name not in behind_switch:
            siblings = [s for s in fab.gpus if s.hb_domain == g.hb_domain and s.name not in off_set]
            if siblings:
                detoured.append(g.name)
    lost = [n for n in off if n not in set(detoured)]
    return Impact(network or fab.design.topology, faults, off, detoured, lost,
                  {str(r): {str(t): v for t, v in sorted(ts.items())} for r, ts in sorted(up.items(), key=lambda kv: str(kv[0]))})


def detour_rates(rates: Rates, network: str) -> Rates:
    """The NIC rate a detoured GPU's rail bytes see: NVLink to the sibling, then the sibling's
    NIC shared with its own bytes (x2); rail-only stages over NVLink again at the far end.
    Serial stages, as the time model's PXN (network.py)."""
    nvlink_stages = 2 if network == "rail-only" else 1
    return dataclasses.replace(rates, nic=1 / (2 / rates.nic + nvlink_stages / rates.hb))


def gpu_index(name: str, K: int) -> int:
    dom, gpu = name[2:].split("-gpu")
    return int(dom) * K + int(gpu)


@dataclass
class JobFailure:
    network: str
    impact: Impact
    runs: bool
    iteration_s: float | None
    healthy_s: float
    touched: dict  # parallelism -> groups touched
    remedy: str | None = None
    spares: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        im = self.impact
        return {
            "faults": [{"kind": f.kind, "name": f.name, "spec": f.asked} for f in im.faults],
            "gpus_off_rail": im.gpus_off_rail, "gpus_detoured": im.gpus_detoured, "gpus_lost": im.gpus_lost,
            "uplinks_lost": im.uplinks_lost, "bandwidth_left": round(im.bandwidth_left(), 6),
            "groups_touched": self.touched, "runs": self.runs,
            "iteration_s": self.iteration_s, "healthy_iteration_s": self.healthy_s,
            "slowdown": None if self.iteration_s is None else self.iteration_s / self.healthy_s,
            "remedy": self.remedy, "spare_domains": self.spares,
        }


def job_under(job, pl, rates: Rates, network: str, im: Impact, healthy: Result) -> JobFailure:
    """The job's iteration with `im` on `network`: detoured collectives at the detour's rate,
    the rest paced by the worst rail's surviving uplinks; or why it cannot run."""
    K = pl.cluster.hb_size
    used = pl.gpus
    off = {gpu_index(n, K) for n in im.gpus_off_rail}
    det = {gpu_index(n, K) for n in im.gpus_detoured}
    lost = {i for i in off - det if i < used}
    colls = collectives(job, pl)
    touched: dict = {}
    for name, g in pl.groups.items():
        rows = g.reshape(len(g), -1) if g.size else g
        if name not in ("tp", "cp", "pp", "dp", "ep") or rows.ndim < 2 or rows.shape[1] < 2:
            continue  # a group of one GPU exchanges nothing
        hit = int(np.isin(rows, list(off)).any(axis=1).sum()) if off and rows.size else 0
        if hit:
            touched[name] = hit
    if lost:
        doms = sorted({i // K for i in lost})
        failed_doms = {int(f.name[2:]) for f in im.faults if f.kind == "domain"}
        job_doms = set(range(-(-used // K)))
        spare = [d for d in range(pl.cluster.hb_count) if d not in job_doms and d not in failed_doms
                 and not any(gpu_index(n, K) // K == d for n in im.gpus_off_rail)]
        spares = [f"hb{d}" for d in spare[:len(doms)]]
        moved = ", ".join(f"hb{d}" for d in doms[:8]) + (f" and {len(doms) - 8} more HB domains" if len(doms) > 8 else "")
        if len(spares) >= len(doms):
            shown = ", ".join(spares[:8]) + (f" and {len(spares) - 8} more" if len(spares) > 8 else "")
            remedy = f"migrate {moved} to spare HB domain{'s' if len(spares) > 1 else ''} {shown}"
        else:
            remedy = (f"migrate {moved} to a spare HB domain: {len(doms) - len(spares)} more needed "
                      f"(add HB domains or run the job on fewer GPUs)")
        return JobFailure(network, im, False, None, healthy.iteration_s, touched, remedy, spares)
    slow = dataclasses.replace(rates, nic=rates.nic * im.bandwidth_left())
    slow_det = detour_rates(slow, network)
    times = []
    for c in colls:
        rows = c.groups.reshape(len(c.groups), -1) if c.groups.size else c.groups
        hit = bool(det) and rows.size and bool(np.isin(rows, list(det)).any())
        times.append((c.parallelism, c.op, c.exposed, c.time(network, slow_det if hit else slow)))
    res = assemble(job, times, network)
    return JobFailure(network, im, True, res.iteration_s, healthy.iteration_s, touched)
