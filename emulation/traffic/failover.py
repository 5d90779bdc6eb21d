"""Failover time of a switch fault, measured with the reachability probes (docs/bgp.md).

`railonly lab check OUTDIR --failover SWITCH`: every same-rail pair must pass
first; then the switch goes down exactly as `railonly lab fault --node` takes
it down (recorded in the OUTDIR, so `lab fault --restore` undoes it too), and
every pair is probed in numbered rounds of :data:`ROUND_S` until one whole
round arrives. The failover time is from the fault to the start of that
round, so it is exact to one round. The fault is restored at the end (in a
finally that holds the take-down too: an interrupt while the ports go down or
FRR stops restores the switch) and the result says how long the fabric took to
converge back. A lab with faults
already recorded (`lab fault`) fails the result untouched: restore undoes
every recorded fault, and a degraded fabric (SWITCH already down) would
measure nothing. Before the fault the fabric must be whole (:func:`fabric_whole`):
every pair passing is not enough, the other switches carry them all while a
switch restored moments ago is still bringing its sessions up.
"""

from __future__ import annotations

import time
from typing import Callable

from ..lab import Lab, LabError
from ..checks import judge, probe
from ..checks import check_plan as checks_plan
from ..checks.checker import CheckRun, _open_sockets, _reach, collect_switches
from ..runtime.protocol import Runtime
from . import faults

ROUND_S = 0.1  # one probe round: the resolution of the failover time
MAX_ROUNDS = 255  # round numbers ride in one byte of the probe
WHOLE_POLL_S = 0.5  # between two readings of the routes each session received


def fabric_whole(rt: Runtime, lab: Lab, cp: checks_plan.CheckPlan, timeout: float,
                 progress: Callable[[str], None] = lambda s: None) -> tuple[list[str], float]:
    """Wait until the fabric is whole: every planned BGP session Established with routes received
    (every switch originates its loopback: a whole fabric has no session that received none), the
    same counts in two readings in a row, every BFD session up, every subnet installed.
    `lab fault --restore` returns once FRR is started, while every pair already passes through the
    other switches: the restored switch's sessions come up about 5 s later and carry routes about
    1 s after that (the first counts partial for a few ms). A failover of the other spine measured
    then was the rest of that comeback, 5.5 s instead of 0.1 s. Returns (what is not whole yet,
    empty when it is; the seconds waited)."""
    t0 = time.monotonic()
    if not cp.bgp:
        return [], 0.0
    progress("failover: waiting for every BGP session to carry its routes and BFD to be up")
    last: dict | None = None
    while True:
        st = collect_switches(rt, lab, cp, max(0.0, timeout - (time.monotonic() - t0)), bgp=True, bfd=True)
        missing = [r.detail for r in judge.bgp(cp, st.peers, st.routes) + judge.bfd(cp, st.bfd) if not r.passed]
        got = {(s.switch, s.peer): ((st.peers.get(s.switch) or {}).get(s.peer) or {}).get("pfxRcd") or 0 for s in cp.bgp}
        missing = missing or [f"{sw} -> {peer}: Established, no routes received yet" for (sw, peer), n in got.items() if not n]
        if not missing and got == last:
            return [], time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            return missing or ["the routes the sessions received were still changing"], time.monotonic() - t0
        last = None if missing else got
        time.sleep(WHOLE_POLL_S)


def _round_sender(ag: probe.Agent, lab: Lab, cp: checks_plan.CheckPlan) -> Callable[[int], None]:
    pairs = cp.reach_pairs()
    for i, (a, _) in enumerate(pairs):
        ag.reach_src[i] = a

    def send(rnd: int) -> None:
        groups: dict[int, list] = {}
        for i, (a, b) in enumerate(pairs):
            pkt = probe.ip_udp(cp.gpus[a].ip, cp.gpus[b].ip, probe.payload(lab.name, probe.K_REACH, i, rnd), ident=i)
            groups.setdefault(cp.gpus[a].rail, []).append((a, pkt, cp.gpus[b].ip))
        ag.send_ip_groups(list(groups.values()), threads=2)

    return send


def measure(lab: Lab, rt: Runtime, switch: str, *, timeout: float = 30.0,
            progress: Callable[[str], None] = lambda s: None) -> CheckRun:
    cp = checks_plan.load(lab)
    node = lab.node(switch)  # LabError (exit 2) for an unknown node
    if node.role != "switch":
        raise LabError(switch, f"{switch} is a {node.role}, not a switch", "--failover takes a switch")
    out = CheckRun(lab.name)
    rid = f"failover/{switch}"
    # a fabric already degraded measures nothing of this fault (SWITCH already down: 0.00 s, passed),
    # and the restore at the end would undo those faults too: refuse, change nothing
    already = faults.active(lab, rt)
    if already:
        out.results.append(judge.Result(rid, "failover", False,
                                        f"faults already set: {', '.join(already)}; nothing was changed (the failover"
                                        " of a degraded fabric measures something else, and its restore would undo"
                                        " them): run 'railonly lab fault OUTDIR --restore' first"))
        return out
    netns = {n.name: n.netns for n in lab.nodes.values()}
    total = len(cp.reach_pairs())
    not_whole, waited = fabric_whole(rt, lab, cp, timeout, progress)
    if not_whole:
        out.results.append(judge.Result(rid, "failover", False,
                                        f"the fabric is not whole after {waited:.1f} s: {'; '.join(not_whole[:3])}"
                                        + (f" (and {len(not_whole) - 3} more)" if len(not_whole) > 3 else "")
                                        + "; nothing was changed: run 'railonly lab check' first"))
        return out
    if waited >= 2 * WHOLE_POLL_S + 0.5:  # more than the two readings a whole fabric takes
        out.notes.append(f"failover {switch}: waited {waited:.1f} s before the fault for BGP/BFD to carry every route")
    with probe.Agent(lab.name, netns, rt.door()) as ag:
        _open_sockets(ag, lab, cp)
        progress(f"failover: {total} same-rail pairs before the fault")
        _reach(ag, lab, cp, min(timeout, 10.0), progress)
        if len(ag.ev.reach) < total:
            out.results.append(judge.Result(rid, "failover", False,
                                            f"only {len(ag.ev.reach)} of {total} pairs pass before the fault: run 'railonly lab check' first"))
            return out
        send = _round_sender(ag, lab, cp)
        progress(f"failover: {switch} down")
        t0 = time.monotonic()
        started: dict[int, float] = {}
        try:  # the take-down too: an interrupt while FRR stops (Ctrl-C, SIGTERM) still restores the switch
            what = faults.node_down(lab, rt, switch)
            for rnd in range(1, MAX_ROUNDS + 1):
                started[rnd] = time.monotonic() - t0
                send(rnd)
                ag.pump(ROUND_S)
                if any(len(got) == total for got in ag.ev.reach_rounds.values()) or started[rnd] > timeout:
                    break
            ag.pump(ROUND_S)  # late answers of the last rounds
        finally:
            progress("failover: restoring")
            faults.restore(lab, rt)
    got = {r: len(ag.ev.reach_rounds.get(r, ())) for r in started}
    whole = [r for r in sorted(got) if got[r] == total]
    done_at = started[whole[0]] if whole else None
    worst = min([got[r] for r in got if not whole or r < whole[0]], default=total)
    if done_at is None:
        out.results.append(judge.Result(rid, "failover", False,
                                        f"{what}; not every pair passed again within {timeout:g} s"))
    else:
        detail = (f"{what}; every pair passes again {done_at:.2f} s after the fault "
                  f"(rounds of {ROUND_S:g} s; the worst round saw {worst} of {total} pairs)")
        out.results.append(judge.Result(rid, "failover", True, detail))
        out.timings["failover"] = done_at
        out.notes.append(f"failover {switch}: {done_at:.2f} s until all {total} pairs pass again")
    # back to where it started: sessions re-established with their routes, BFD up
    not_whole, waited = fabric_whole(rt, lab, cp, timeout)
    out.results.append(judge.Result(f"failover/{switch}/restored", "failover", not not_whole,
                                    f"after restore: BGP, BFD and routes whole after {waited:.1f} s" if not not_whole else
                                    f"after restore: not whole after {waited:.1f} s: {'; '.join(not_whole[:3])}"))
    return out
