"""The completion-time model of a traffic pattern (pure).

The model (stated here and in docs/lab/check.md). Links are the shaped per-GPU NIC
(rate N, each direction) and per-GPU HB port (rate H, each direction); rail
switches and the tiers above them are non-blocking. A flow loads every link
it crosses: same rail: src NIC out, dst NIC in; forwarded: src HB out, via HB
in, via NIC out, dst NIC in; baseline cross-rail: src NIC out, dst NIC in;
``hb`` flow: src HB out, dst HB in. Each step is modelled alone and the steps
add up:

- ``model_completion_s`` (pipelined, fluid): per step, max over links of
  load / rate. On these patterns the NIC is the bottleneck, so kernel
  forwarding (per packet, pipelined) costs nothing: rail-only and baseline
  predict the same time.
- ``model_store_forward_s`` (the paper's convention, PXN-like): per step, the
  HB forwarding completes before the rail step (max HB load / H) plus (max
  NIC load / N); its overhead over the pipelined time is (K-1)/K * N/H (the
  share of cross-rail bytes times NIC/HB), the paper's figures are about N/H
  (8.2% A100, 11.2% H100). The two-phase schedule is this model run for real.
"""

from __future__ import annotations

from ..checks.check_plan import CheckPlan
from .patterns import Flow, plan_flows, steps_of


def link_loads(flows: list[Flow]) -> dict[tuple[str, str, str], int]:
    """{(gpu, 'nic'|'hb', 'out'|'in'): bytes} (pure)."""
    load: dict[tuple[str, str, str], int] = {}

    def add(k, n):
        load[k] = load.get(k, 0) + n

    for f in flows:
        if f.hb:
            add((f.src, "hb", "out"), f.bytes)
            add((f.dst, "hb", "in"), f.bytes)
        elif f.via and f.via != f.src:
            add((f.src, "hb", "out"), f.bytes)
            add((f.via, "hb", "in"), f.bytes)
            if f.via != f.dst:
                add((f.via, "nic", "out"), f.bytes)
                add((f.dst, "nic", "in"), f.bytes)
        else:
            add((f.src, "nic", "out"), f.bytes)
            add((f.dst, "nic", "in"), f.bytes)
    return load


def step_model(flows: list[Flow], rate: dict[str, float]) -> dict[str, float]:
    load = link_loads(flows)
    t_nic = max([v / rate["nic"] for k, v in load.items() if k[1] == "nic"] or [0.0])
    t_hb = max([v / rate["hb"] for k, v in load.items() if k[1] == "hb"] or [0.0])
    return {"pipelined": max(t_nic, t_hb), "store_forward": t_nic + t_hb, "nic": t_nic, "hb": t_hb}


def model(cp: CheckPlan, flows: list[Flow], nic_mbps: float, hb_mbps: float) -> dict:
    """Predicted completion times in seconds, summed over the steps (pure; see the module docstring).

    ``steps`` holds each step's own prediction."""
    rate = {"nic": nic_mbps * 1e6 / 8, "hb": hb_mbps * 1e6 / 8}
    per = [step_model(st, rate) for st in steps_of(flows)]
    out: dict = {k: sum(p[k] for p in per) for k in ("pipelined", "store_forward", "nic", "hb")}
    out["steps"] = per
    return out


MIN_STEP_S = 0.5  # default bytes: a step lasts at least this (TCP's ramp is then a small share of it)


def default_bytes(cp: CheckPlan, pattern: str, nic_mbps: float, seconds: float = 2.0, schedule: str = "concurrent") -> int:
    """Bytes per flow so that the busiest NIC needs about `seconds` in all, and each step
    of the schedule at least MIN_STEP_S."""
    probe = plan_flows(cp, pattern, 1, "concurrent")
    busiest = max(v for k, v in link_loads(probe).items() if k[1] == "nic") if probe else 1
    steps = len(steps_of(plan_flows(cp, pattern, 1, schedule))) if probe else 1
    return max(256 * 1024, int(nic_mbps * 1e6 / 8 * max(seconds, MIN_STEP_S * steps) / busiest))


def placed_step(ideal_s: float, link_bytes: dict[str, int], rated: dict[str, tuple[float, tuple | None]]) -> dict:
    """The model of one step under the flows' actual placement (pure).

    ``link_bytes``: what each directed link carried in the step (its tx counter), ``rated``:
    each link's (bytes/s as shaped, ECMP group or None). Every shaped link counts: a GPU's
    rail NIC and HB port each way (a sibling that forwards a cross-rail hop carries it on
    both: in on HB, out on its NIC beside its own hop), and every switch-to-switch link. A
    group is the links one ECMP choice spreads over (a switch's uplinks; the links into a
    switch from above); a GPU's links have none. Forwarding is per packet (pipelined), so
    the step lasts at least its busiest link's bytes / rate, and at least its ideal (the
    plan's bytes on the NIC and HB links): ``placed_s`` is the larger. ``bound``: that
    busiest link, its bytes, seconds and ``kind`` (``gpu``: a GPU's NIC or HB link, ``switch``: a
    switch-to-switch link; None when nothing was counted). ``ecmp`` (None when
    no switch link carried a share of the step): the busiest switch link, its bytes and
    seconds, and ``imbalance``, its bytes against the mean of its group."""
    times = {n: b / rated[n][0] for n, b in link_bytes.items() if n in rated and rated[n][0] > 0 and b > 0}
    if not times:
        return {"placed_s": ideal_s, "ecmp": None, "bound": None}
    top = max(sorted(times), key=times.__getitem__)
    bound = {"link": top, "bytes": link_bytes[top], "seconds": round(times[top], 4),
             "kind": "gpu" if rated[top][1] is None else "switch"}
    ecmp = None
    switched = [n for n in times if rated[n][1] is not None]
    if switched:
        name = max(sorted(switched), key=times.__getitem__)
        group = rated[name][1]
        members = [link_bytes.get(n, 0) for n, (_, g) in rated.items() if g == group]
        mean = sum(members) / len(members)
        if times[name] >= 0.05 * ideal_s:  # ACKs and control traffic alone say nothing about placement
            ecmp = {"busiest": name, "busiest_bytes": link_bytes[name], "busiest_s": round(times[name], 4),
                    "imbalance": round(link_bytes[name] / mean, 3) if mean > 0 else 1.0, "links": len(members)}
    return {"placed_s": max(ideal_s, times[top]), "ecmp": ecmp, "bound": bound}


def hb_bytes(flows: list[Flow]) -> int:
    """Bytes of a step that cross an HB domain (an HB flow, or a flow forwarded by a sibling) (pure)."""
    return sum(f.bytes for f in flows if f.hb or (f.via and f.via != f.src))


def nic_bytes(flows: list[Flow]) -> int:
    """Bytes of a step that cross a rail NIC (every flow but an HB one) (pure)."""
    return sum(f.bytes for f in flows if not f.hb)


HOST_LIMITED = 0.9  # a probe below this share of its shaped rate: the host, not the shaping, set its rate


def host_step(placed_s: float, hb_step_bytes: int, capacity: dict | None, nic_step_bytes: int = 0) -> float:
    """The step's model under what the host delivered (pure): at least the placed model, and at
    least its bytes at the aggregate rates the host was measured to forward in the same run
    (``capacity``: HB ``hb_bytes_per_s``, rails ``nic_bytes_per_s``). Veths and qdiscs forward
    with the host's CPU: HB links shaped at 9x the NIC rate ask more of a small host than it
    has. Only a kind the host limited (its probe below HOST_LIMITED of the shaped rate) counts,
    and the limited kinds add up: they share the one CPU."""
    c = capacity or {}
    t = 0.0
    for nbytes, rate, share in ((hb_step_bytes, c.get("hb_bytes_per_s"), c.get("share")),
                                (nic_step_bytes, c.get("nic_bytes_per_s"), c.get("nic_share"))):
        if nbytes and rate and share is not None and share < HOST_LIMITED:
            t += nbytes / rate
    return max(placed_s, t)
