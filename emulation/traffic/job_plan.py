"""A training job's iteration as lab traffic: the job scaled to the lab, its phases as flows. Pure.

Scaling (docs/lab/replay.md): the lab keeps the design's K (GPUs per HB domain =
rails) and the job's rank order, so every group lands in the same class (HB, one
rail, cross-rail) as on the real fabric. What does not fit is shrunk: tp only when
it exceeds K, then pp (a divisor of the layers), dp (a multiple of ep) and ep, to
what the lab's HB domains hold, and the micro-batch count so the pipeline bubble
keeps its share. Bytes are multiplied by the lab NIC rate over the real NIC rate
(as the analysis model achieves it), so each phase keeps its modelled duration;
``time_scale`` then stretches every duration alike (bytes and compute), because a
small job's phases last milliseconds, shorter than a lab flow can be timed. Ratios
between phases, between compute and communication and between NIC and HB are
unchanged.

Phases become flows (``Flow`` of patterns.py), step by step; each flow carries one
pair class only (``hb``, ``rail``, ``cross_rail``, or ``staged``: cross-rail bytes
on their HB stage to the forwarding GPU) and takes its iperf3 port from that
class's range (CLASS_PORTS), so the lab's packet counters split bytes by class:

- ring collectives (tp, dp): one flow per member to its ring successor; a group
  that is a full grid of HB domains x rails reduces hierarchically (HB ring, rail
  ring, HB ring), as the model does;
- all-to-all (ep): every member sends 1/n of its payload to every peer. On
  rail-only a cross-rail byte goes as PXN does: first over the HB domain to the
  sender's domain-mate on the destination's rail (a ``staged`` flow), then over
  that GPU's NIC (store-and-forward: the model's convention). Bytes to peers in
  the same domain go over HB while the NICs work. On the baseline every peer is
  sent to directly, one domain offset a step (as rail-only's NIC steps), HB peers
  alongside the first step;
- pipeline sends (pp): forward activations stage to stage, then the backward
  gradients the other way (two steps);
- compute and the pipeline bubble: idle time of their modelled length.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import ROUND_DOWN, Context

from railonly.fabric.analysis import Cluster, Job, Placement, Rates, phase_list, place
from railonly.fabric.analysis.network import LINK_EFFICIENCY
from railonly.fabric.analysis.timing import assemble, call_times, stage_compute_s
from railonly.fabric.analysis.traffic import collectives

from .completion_time import step_model
from .patterns import Flow

MIN_PHASE_S = 0.5  # auto time_scale: the shortest communication phase lasts at least this in the lab
MIN_STEP_S = 0.1  # ... and its shortest step at least this (a transfer iperf3 can time)

# iperf3 destination ports by pair class: the lab's counters (nftables) split bytes by these
CLASSES = ("hb", "rail", "cross_rail", "staged")
CLASS_PORTS = {"hb": 20000, "rail": 21000, "cross_rail": 22000, "staged": 23000}
PORTS_PER_CLASS = 1000


@dataclass(frozen=True)
class Scaled:
    job: Job  # the job as the lab runs it
    original: Job
    cluster: Cluster  # the lab's K and HB domains, the design's real NIC and HB rates
    byte_scale: float  # lab bytes per modelled byte (rate ratio x time_scale)
    time_scale: float  # lab seconds per modelled second
    changes: tuple[str, ...]  # what was shrunk, in words


@dataclass(frozen=True)
class PhasePlan:
    name: str  # "compute", "tp.all-gather", "dp.all-reduce.dense", ...
    parallelism: str  # compute | tp | ep | pp | dp
    kind: str  # the worst class its groups use (hb, rail, hb+rail, cross-rail, none)
    steps: tuple[tuple[Flow, ...], ...] = ()
    idle_s: float = 0.0  # compute: seconds of idle time
    model_s: float = 0.0  # the analysis model's seconds at the lab's rates (x byte scale)
    groups: tuple[tuple[str, ...], ...] = ()  # member GPU names of every group (pp: pipelines)
    planned: dict = field(default_factory=dict)  # lab bytes by CLASSES, all GPUs (payload)

    @property
    def flows(self) -> list[Flow]:
        return [f for st in self.steps for f in st]


def _divisors_upto(n: int, cap: int) -> list[int]:
    return [d for d in range(1, min(n, cap) + 1) if n % d == 0]


class ScaleError(ValueError):
    """The job cannot be shrunk to the lab (a bad job for this lab: exit 2); ``fix`` says what to
    change (None: the command line's default advice for the message)."""

    def __init__(self, message: str, fix: str | None = None):
        super().__init__(message)
        self.fix = fix


MAX_REPLAY_S = 6 * 3600.0  # a replay planned longer than this is refused before anything runs


def check_duration(model_iteration_s: float, iterations: int, time_scale: float, micro_batches: int,
                   scale_given: bool) -> None:
    """ScaleError when the replay would run longer than MAX_REPLAY_S (pure): a job file of
    50,000,000 micro-batches planned a 117-day iteration and the replay started sleeping it."""
    planned = model_iteration_s * iterations
    if planned <= MAX_REPLAY_S * (1 + 1e-9):  # the float products of a scale at the limit
        return
    # the plan is linear in the time scale (bytes and idle alike); two significant digits, cut down:
    # rounded (:.2g) they could name a scale above the limit, refused again when given
    lower = float(Context(prec=2, rounding=ROUND_DOWN).create_decimal(repr(time_scale * MAX_REPLAY_S / planned)))
    fixes = [] if scale_given else [f"a smaller parallel.global_batch ({micro_batches:,} micro-batches an iteration)"]
    if lower >= 0.001:
        fixes.append(f"--time-scale {lower:g} or less")
    if iterations > 1:
        fixes.append("fewer --iterations")
    raise ScaleError(f"the replay would last {planned:,.0f} s ({iterations} x {model_iteration_s:,.0f} s an iteration"
                     f" at time scale x{time_scale:g}{'' if scale_given else ', the default'}), more than the"
                     f" {MAX_REPLAY_S:,.0f} s a replay may take; nothing was run", ", or ".join(fixes) or None)


def scale_job(job: Job, lab: Cluster, nic_mbps: float, time_scale: float = 1.0) -> Scaled:
    """The job shrunk to the lab (see the module docstring). ``lab`` carries the lab's K
    and HB-domain count with the design's real NIC and HB rates; ``nic_mbps`` is the
    lab's shaped NIC rate."""
    p = job.parallel
    changes = []
    tp = p.tp
    if tp > lab.hb_size:
        fit = [d for d in _divisors_upto(job.model.heads, lab.hb_size) if lab.hb_size % d == 0]
        tp = max(fit)
        changes.append(f"tp {p.tp} -> {tp} (an HB domain holds {lab.hb_size} GPUs)")
    room = lab.gpus // tp
    best = None
    # keep ep first (it decides the all-to-all's classes), then as many GPUs as fit, then dp
    experts = job.model.experts if job.model.is_moe else 1
    for ep in sorted({e for e in range(1, p.ep + 1) if experts % e == 0 and p.ep % e == 0}, reverse=True):
        for pp in _divisors_upto(job.model.layers, p.pp):
            dp_cap = min(p.dp, room // pp)
            dp = dp_cap - dp_cap % ep  # the most data-parallel ranks that fit, a multiple of ep
            if dp < ep:
                continue
            key = (dp * pp, dp, pp)
            if best is None or key > best[0]:
                best = (key, pp, dp)
        if best is not None:
            _, pp, dp = best
            break
    if best is None:
        raise ScaleError(f"the lab's {lab.gpus} GPUs cannot hold one tensor-parallel group of {tp}")
    for dim, old, new in (("pp", p.pp, pp), ("dp", p.dp, dp), ("ep", p.ep, ep)):
        if old != new:
            changes.append(f"{dim} {old} -> {new}")
    m = p.micro_batches
    if pp > 1 and p.pp > 1:
        m2 = max(pp, round(m * (pp - 1) / (p.pp - 1)))  # the bubble keeps its share: (pp - 1) / m
    else:
        m2 = min(m, 4)  # no pipeline: the micro-batch count only repeats the same phases
    m2 = min(m2, m)
    if m2 != m:
        changes.append(f"micro-batches {m} -> {m2}")
    vpp = p.vpp if (pp > 1 and (job.model.layers // pp) % p.vpp == 0 and m2 % pp == 0) else 1
    if vpp != p.vpp:
        changes.append(f"vpp {p.vpp} -> {vpp}")
    if p.cp > 1:  # the replay's phases have no context-parallel ring: the lab runs the job without it
        changes.append(f"cp {p.cp} -> 1")
    scaled = job.replace(tp=tp, pp=pp, dp=dp, ep=ep, global_batch=m2 * p.micro_batch * dp, vpp=vpp, cp=1)
    return Scaled(scaled, job, lab, rate_ratio(lab, nic_mbps) * time_scale, time_scale, tuple(changes))


def rate_ratio(lab: Cluster, nic_mbps: float) -> float:
    """Lab bytes per real byte at equal duration: the lab NIC over the real NIC as a collective achieves it."""
    return nic_mbps * 1e6 / (lab.nic_gbps * 1e9 * LINK_EFFICIENCY)


def lab_rates(nic_mbps: float, hb_mbps: float) -> Rates:
    """The lab's shaped rates as the model takes them (a shaped link runs at its rate: efficiency 1)."""
    return Rates.from_gbps(nic_mbps / 1000, hb_mbps / 1000, efficiency=1.0)


def _pair_class(K: int, a: int, b: int) -> str:
    if a // K == b // K:
        return "hb"
    return "rail" if a % K == b % K else "cross_rail"


class _Builder:
    """Flows of one phase: names, classes, ports, the kernel's forwarding GPU."""

    def __init__(self, K: int, names: dict[int, str], topology: str):
        self.K, self.names, self.topology = K, names, topology
        self.next_port = dict(CLASS_PORTS)

    def flow(self, a: int, b: int, nbytes: float, step: int, group: int, cls: str | None = None) -> Flow:
        pc = cls or _pair_class(self.K, a, b)
        port = self.next_port[pc]
        if port >= CLASS_PORTS[pc] + PORTS_PER_CLASS:
            raise ScaleError(f"a phase needs more than {PORTS_PER_CLASS} {pc} flows: the lab is too large for a replay",
                             "replay on a smaller lab (compile --lab-domains N)")
        self.next_port[pc] = port + 1
        over_hb = pc in ("hb", "staged")
        via = None  # the GPU whose kernel forwards a cross-rail flow (rail-only)
        if pc == "cross_rail" and self.topology == "rail-only" and a % self.K != b % self.K:
            via = self.names[(a // self.K) * self.K + b % self.K]
        return Flow(self.names[a], self.names[b], via, max(1, int(round(nbytes))), port, step, over_hb,
                    pair_class=pc, group=group)


def plan(scaled: Scaled, gpu_names: dict[int, str], topology: str, rates: Rates) -> tuple[Placement, list[PhasePlan]]:
    """The replay: compute idle time, then every communication phase as steps of flows.

    ``gpu_names`` maps a GPU index (domain x K + rail) to its lab name; ``rates``
    are the lab's shaped rates (lab_rates)."""
    job, K = scaled.job, scaled.cluster.hb_size
    pl = place(job, scaled.cluster)
    s = scaled.byte_scale

    # idle: compute and the bubble, as modelled at the real rates, stretched by time_scale
    real = Rates.of(scaled.cluster)
    res = assemble(job, call_times(collectives(job, pl), topology, real), topology, stage_compute_s(job))
    idle = (res.breakdown_s["compute"] + res.breakdown_s["bubble"]) * scaled.time_scale
    phases = [PhasePlan("compute", "compute", "none", idle_s=idle, model_s=idle)]

    for ph in phase_list(job, pl, rates, topology):
        b = _Builder(K, gpu_names, topology)
        groups = [list(g) for g in ph.groups]
        total = ph.payload_bytes * ph.calls * s  # lab bytes a member's input holds per iteration
        if ph.op in ("all-reduce", "all-gather", "reduce-scatter"):
            steps = _rings(b, groups, total, ph.op)
        elif ph.op == "all-to-all":
            n = len(groups[0])
            steps = _all_to_all(b, groups, (n - 1) / n * total / (n - 1) if n > 1 else 0.0)
        elif ph.op == "send-recv":
            steps = _pipeline(b, pl, ph.calls / 2 * ph.payload_bytes * s)
        else:
            raise ValueError(f"no replay for {ph.op}")
        steps = [st for st in steps if st]
        planned = dict.fromkeys(CLASSES, 0)
        for st in steps:
            for f in st:
                planned[f.pair_class] += f.bytes
        phases.append(PhasePlan(ph.name, ph.parallelism, ph.kind, tuple(tuple(st) for st in steps),
                                model_s=ph.model_s * s, groups=tuple(tuple(gpu_names[x] for x in g) for g in groups),
                                planned=planned))
    return pl, phases


def _rings(b: _Builder, groups: list[list[int]], total: float, op: str) -> list[list[Flow]]:
    K = b.K
    n = len(groups[0]) if groups else 0
    if n < 2 or total <= 0:
        return []
    factor = 2 * (n - 1) / n if op == "all-reduce" else (n - 1) / n
    steps: list[list[Flow]] = [[], [], []]

    def ring(members: list[int], nbytes: float, step: int, gi: int) -> None:
        if len(members) > 1:
            steps[step].extend(b.flow(members[i], members[(i + 1) % len(members)], nbytes, step, gi)
                               for i in range(len(members)))

    for gi, g in enumerate(groups):
        doms = sorted({x // K for x in g})
        rails = sorted({x % K for x in g})
        if not (len(doms) > 1 and len(rails) > 1 and len(doms) * len(rails) == n):
            ring(g, factor * total, 0, gi)  # flat ring in rank order
            continue
        per = n // len(doms)  # hierarchical, as the model: HB, rails, HB
        hb_part = (per - 1) / per * total
        rail_part = (2 if op == "all-reduce" else 1) * (len(doms) - 1) / len(doms) * total / per
        for d in doms:
            ring([x for x in g if x // K == d], hb_part, 0, gi)
        for r in rails:
            ring([x for x in g if x % K == r], rail_part, 1, gi)
        if op == "all-reduce":
            for d in doms:
                ring([x for x in g if x // K == d], hb_part, 2, gi)
    return steps


def _pipeline(b: _Builder, pl: Placement, per_pair: float) -> list[list[Flow]]:
    """Forward sends stage to stage (with vpp > 1 the last stage feeds the first), then backward."""
    if per_pair <= 0:
        return []
    pairs = []
    for gi, pipe in enumerate(pl.groups["pp"].tolist()):
        pairs += [(pipe[i], pipe[i + 1], gi) for i in range(len(pipe) - 1)]
        if pl.job.parallel.vpp > 1 and len(pipe) > 1:
            pairs.append((pipe[-1], pipe[0], gi))
    return [[b.flow(x, y, per_pair, 0, gi) for x, y, gi in pairs],
            [b.flow(y, x, per_pair, 1, gi) for x, y, gi in pairs]]


def _all_to_all(b: _Builder, groups: list[list[int]], per_peer: float) -> list[list[Flow]]:
    """Steps of an all-to-all where each member sends ``per_peer`` bytes to every peer."""
    if per_peer <= 0 or not groups or len(groups[0]) < 2:
        return []
    K = b.K
    cross = any(_pair_class(K, x, y) == "cross_rail" for g in groups for x in g for y in g)
    hb_flows = [(x, y, gi) for gi, g in enumerate(groups) for x in g for y in g if x != y and x // K == y // K]
    if b.topology == "rail-only" and cross:
        return _pxn(b, groups, per_peer, hb_flows)
    # phased by domain offset: in step k every member sends to the members of the group's k-th
    # next domain (each NIC sends and receives the same number of flows a step, as rail-only's
    # NIC steps, so the two differ only by the staging); HB peers alongside the first step
    by_key: dict[int, list[tuple[int, int, int]]] = {}
    for gi, g in enumerate(groups):
        doms = sorted({x // K for x in g})
        for x in g:
            for y in g:
                if x // K != y // K:
                    by_key.setdefault((doms.index(y // K) - doms.index(x // K)) % len(doms), []).append((x, y, gi))
    steps = [[b.flow(x, y, per_peer, i, gi) for x, y, gi in by_key[k]] for i, k in enumerate(sorted(by_key))]
    first = [b.flow(x, y, per_peer, 0, gi) for x, y, gi in hb_flows]
    return [first + steps[0], *steps[1:]] if steps else [first]


def _pxn(b: _Builder, groups, per_peer: float, hb_flows) -> list[list[Flow]]:
    """Rail-only: stage the cross-rail bytes on the domain-mate on the destination's rail
    (one step over HB), then NIC steps by domain offset: each GPU sends its own same-rail
    bytes and the bytes staged on it, as two flows; HB peers alongside the first NIC step."""
    K = b.K
    staged: dict[tuple[int, int], tuple[float, int]] = {}
    own: dict[tuple[int, int], tuple[float, int]] = {}
    fwd: dict[tuple[int, int], tuple[float, int]] = {}

    def add(d, key, gi):
        d[key] = (d.get(key, (0.0, gi))[0] + per_peer, gi)

    for gi, g in enumerate(groups):
        for x in g:
            for y in g:
                if x // K == y // K:
                    continue
                if x % K == y % K:
                    add(own, (x, y), gi)
                else:
                    m = (x // K) * K + y % K  # x's domain-mate on y's rail
                    add(staged, (x, m), gi)
                    add(fwd, (m, y), gi)
    group_doms = [sorted({x // K for x in g}) for g in groups]
    by_offset: dict[int, list[Flow]] = {}
    for (cls, table) in (("rail", own), ("cross_rail", fwd)):
        for (m, y), (v, gi) in sorted(table.items()):
            doms = group_doms[gi]  # the mate m sits in a domain of y's group (x's)
            off = (doms.index(y // K) - doms.index(m // K)) % len(doms)
            by_offset.setdefault(off, []).append(b.flow(m, y, v, off, gi, cls))
    stage1 = [b.flow(x, m, v, 0, gi, "staged") for (x, m), (v, gi) in sorted(staged.items())]
    nic_steps = [[replace(f, step=i + 1) for f in by_offset[k]] for i, k in enumerate(sorted(by_offset))]
    first_nic = nic_steps[0] if nic_steps else []
    hb = [b.flow(x, y, per_peer, 1, gi) for x, y, gi in hb_flows]
    return [stage1, hb + first_nic, *nic_steps[1:]]


def step_model_s(flows: list[Flow] | tuple[Flow, ...], nic_mbps: float, hb_mbps: float) -> float:
    """A step's time in the traffic model (the slowest shaped link; kernel forwarding pipelined)."""
    return step_model(list(flows), {"nic": nic_mbps * 1e6 / 8, "hb": hb_mbps * 1e6 / 8})["pipelined"]


def auto_time_scale(phases: list[PhasePlan], nic_mbps: float, hb_mbps: float) -> float:
    """The stretch (>= 1) that makes the shortest communication phase last MIN_PHASE_S and its
    shortest step MIN_STEP_S, for phases planned at time_scale 1; two significant digits."""
    need = 1.0
    for p in phases:
        if not p.steps:
            continue
        need = max(need, MIN_PHASE_S / p.model_s if p.model_s > 0 else 1.0)
        for st in p.steps:
            t = step_model_s(st, nic_mbps, hb_mbps)
            if t > 0:
                need = max(need, MIN_STEP_S / t)
    return float(f"{need:.2g}") if need > 1 else 1.0


def model_iteration(phases: list[PhasePlan]) -> float:
    return sum(p.model_s for p in phases)


def index_names(gpus: dict[tuple[int, int], str], K: int) -> dict[int, str]:
    """{GPU index: name} from {(HB domain, rail): name}."""
    return {d * K + r: n for (d, r), n in gpus.items()}


def reroute(phases: list[PhasePlan], dead: set[str], gpu_names: dict[int, str], K: int, topology: str,
            detour_model_s: dict[str, float] | None = None) -> list[PhasePlan]:
    """The phases with every flow that needs a dead NIC replaced by explicit legs, as NCCL's
    PXN does when a NIC fails (docs/failures.md): over HB to a sibling GPU whose NIC works,
    that sibling's NIC to the far domain's GPU on the same rail, and over HB again to the
    destination on rail-only (the baseline's spine delivers to the destination's own NIC
    when it works). The kernel cannot do it: a rail-r address routes only over rail r.

    Legs are store-and-forward, as the model's serial stages: a step with detoured flows
    becomes up to three (HB legs out, NIC legs beside the step's other flows, HB legs in).
    HB legs count as ``staged``; a NIC leg keeps its pair's class. ``detour_model_s``
    replaces the model seconds of the phases it names (the --fail model). Pure."""
    index = {n: i for i, n in gpu_names.items()}
    alive = lambda i: i in gpu_names and gpu_names[i] not in dead  # noqa: E731

    def nic_users(f: Flow) -> set[str]:
        if f.hb:
            return set()
        return {f.via if f.via and f.via != f.src else f.src, f.dst}

    def legs(f: Flow, step: int) -> tuple[list[Flow], Flow, list[Flow]]:
        a, b = index[f.src], index[f.dst]
        da, db = a // K, b // K
        first = f.via if f.via and f.via != f.src else f.src  # the GPU whose NIC sent it
        rails = sorted(range(K), key=lambda r: (r != index[first] % K, (r - b % K) % K))
        for r in rails:
            s, t = da * K + r, db * K + r
            if alive(s) and (alive(t) or (topology != "rail-only" and alive(b))):
                break
        else:
            raise ScaleError(f"no sibling of {f.src} and {f.dst} keeps a working NIC on one rail: no detour")
        if topology != "rail-only" and alive(b):
            t = b  # the baseline's spine reaches the destination's own NIC
        pre = [Flow(f.src, gpu_names[s], None, f.bytes, step=step, hb=True, pair_class="staged", group=f.group)] \
            if s != a else []
        nic = Flow(gpu_names[s], gpu_names[t], None, f.bytes, step=step, pair_class=f.pair_class, group=f.group)
        post = [Flow(gpu_names[t], f.dst, None, f.bytes, step=step, hb=True, pair_class="staged", group=f.group)] \
            if t != b else []
        return pre, nic, post

    out = []
    for ph in phases:
        if not ph.steps or not any(nic_users(f) & dead for f in ph.flows):
            out.append(ph)
            continue
        steps: list[list[Flow]] = []
        for st in ph.steps:
            pre, mid, post = [], [], []
            for f in st:
                if nic_users(f) & dead:
                    p, n, q = legs(f, 0)
                    pre += p
                    mid.append(n)
                    post += q
                else:
                    mid.append(f)
            steps += [x for x in (pre, mid, post) if x]
        steps = [[replace(f, step=i) for f in st] for i, st in enumerate(steps)]
        planned = dict.fromkeys(CLASSES, 0)
        for st in steps:
            for f in st:
                planned[f.pair_class] += f.bytes
        model = (detour_model_s or {}).get(ph.name, ph.model_s)
        out.append(replace(ph, steps=tuple(tuple(st) for st in steps), planned=planned, model_s=model))
    return out


def detour_model(scaled: Scaled, pl: Placement, dead: set[str], gpu_names: dict[int, str], topology: str,
                 rates: Rates) -> dict[str, float]:
    """{phase name: lab seconds} of the phases whose groups hold a dead GPU, at the detour's
    rate (failure.detour_rates, as `analyze --fail nic:GPU` models them). Pure."""
    from railonly.fabric.analysis.failure import detour_rates

    dead_idx = {i for i, n in gpu_names.items() if n in dead}
    out = {}
    slow = detour_rates(rates, topology)
    for ph in phase_list(scaled.job, pl, slow, topology):
        if any(x in dead_idx for g in ph.groups for x in g):
            out[ph.name] = ph.model_s * scaled.byte_scale
    return out
