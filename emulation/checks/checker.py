"""Running the lab checks: plan (pure) -> collect evidence (effects) -> judge (pure).

Evidence comes from two places: the probe agent (sockets in the lab's
namespaces: neighbour frames, RoCEv2-like UDP 4791 probes, TTL-limited path
probes, isolation frames) and the switches' own tables read through
``Runtime.exec`` (``vtysh -c 'show bgp summary json'``, ``ip -j route``,
``bridge -j fdb``). Every wait is a poll with a bounded timeout: BGP until all
planned sessions are Established and the subnets installed; probes are re-sent
in rounds to whatever has not answered yet, until all have or time is up.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from ..lab import Lab, run_dir
from ..runtime.protocol import Runtime, RuntimeProblem, deployed_status
from . import judge, probe
from . import check_plan as checks_plan
from .check_plan import CHECKS, CheckPlan


@dataclass
class CheckRun:
    lab: str
    results: list[judge.Result] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def failed(self) -> int:
        return sum(not r.passed for r in self.results)


# --- switch tables: the daemons' vty sockets and the kernel's routes ---------------------------


def vtysh_argv(rt: Runtime, lab: Lab, switch: str) -> list[str]:
    return rt.daemon_argv(lab, switch, "vtysh")


def _show_json(rt: Runtime, lab: Lab, switch: str, daemon: str, command: str):
    rc, out = rt.daemon_show(lab, switch, daemon, command, timeout=15)
    if rc != 0:
        return None
    try:
        return json.loads(out or "null")
    except ValueError:
        return None


def bgp_peers(rt: Runtime, lab: Lab, switch: str) -> dict | None:
    """{peer: summary entry} of a switch's bgpd; None when it does not answer."""
    data = _show_json(rt, lab, switch, "bgpd", "show bgp summary json")
    if not isinstance(data, dict):
        return None
    peers: dict[str, dict] = {}
    for af in data.values():
        if isinstance(af, dict):
            peers.update(af.get("peers", {}))
    return peers


def bfd_peers(rt: Runtime, lab: Lab, switch: str) -> list | None:
    """``show bfd peers json`` of a switch; None when bfdd does not answer."""
    data = _show_json(rt, lab, switch, "bfdd", "show bfd peers json")
    return data if isinstance(data, list) else None


def _kept_routes(rows) -> list[dict]:
    return [r for r in rows if r.get("type") in (None, "unicast", "blackhole", "unreachable")]


def kernel_routes(rt: Runtime, lab: Lab, switch: str) -> list[dict] | None:
    """A switch's IPv4 routes of every table (``ip -j route show table all``); None if unreadable."""
    rc, out = rt.exec(lab.netns(switch), ["ip", "-4", "-j", "route", "show", "table", "all"], timeout=15)
    if rc != 0:
        return None
    try:
        return _kept_routes(json.loads(out or "[]"))
    except ValueError:
        return None


def kernel_routes_many(rt: Runtime, lab: Lab, switches: list[str]) -> dict[str, list[dict] | None]:
    """The routes of many switches: one netlink dump per switch from a few threads that
    enter its namespace (no process per switch), else ``ip`` through exec."""
    door = rt.door()
    try:
        res = door.call_many([(lab.netns(s), door.ipv4_routes) for s in switches], 2)
    except RuntimeProblem:  # a runtime whose namespaces this process cannot enter
        return {s: kernel_routes(rt, lab, s) for s in switches}
    return {s: None if isinstance(r, BaseException) else _kept_routes(r) for s, r in zip(switches, res)}


def fdb_table(rt: Runtime, lab: Lab, switch: str) -> dict[str, str] | None:
    rc, out = rt.exec(lab.netns(switch), ["bridge", "-j", "fdb", "show"], timeout=15)
    if rc != 0:
        return None
    try:
        rows = json.loads(out or "[]")
    except ValueError:
        return None
    return {r["mac"]: r.get("ifname", "") for r in rows if "mac" in r and r.get("master") and "permanent" not in (r.get("state") or "")}


@dataclass
class SwitchState:
    """The switches' tables, read together in each polling round."""

    peers: dict = field(default_factory=dict)  # switch -> {peer: bgp summary entry} | None
    routes: dict = field(default_factory=dict)  # switch -> kernel routes | None
    bfd: dict = field(default_factory=dict)  # switch -> bfd peers | None
    seconds: dict = field(default_factory=dict)  # "bgp" / "bfd" -> seconds until done (or gave up)
    stable_failing: bool = False  # faults set: stopped when what fails stayed the same (collect_switches)


# With faults set (`lab fault`) some sessions cannot come up: the poll ends once what fails has
# not changed for this long, not at the timeout (a faulted lab's traffic run waited the whole
# 60 s). Longer than the 10 s connect retry of FRR's datacenter defaults, which railonly's
# frr.conf uses, so a session on its way back is waited for.
FAULTED_STABLE_S = 12.0


def collect_switches(rt: Runtime, lab: Lab, cp: CheckPlan, timeout: float, *, bgp: bool, bfd: bool,
                     faulted: bool = False) -> SwitchState:
    """Poll the switches until every planned BGP session is Established, every planned
    subnet installed and (``bfd``) every planned BFD session up, or until timeout: each
    round reads every switch's bgpd and kernel routes once, and bfdd until BFD is up
    (it comes up after BGP, within a few detection intervals). ``faulted``: also stop once
    the failing sessions and subnets have stayed the same for FAULTED_STABLE_S. The last
    readings either way."""
    bgp_sws = sorted({s.switch for s in cp.bgp} | set(cp.prefixes) | set(cp.foreign)) if bgp else []
    bfd_sws = sorted({s.switch for s in cp.bgp if s.bfd}) if bfd else []
    st = SwitchState()
    t0 = time.monotonic()
    deadline = t0 + timeout
    bgp_done, bfd_done = not bgp_sws, not bfd_sws
    failing: tuple = ()
    same_since = t0
    with ThreadPoolExecutor(max_workers=4) as pool:  # socket round trips: the daemons do the work
        while True:
            peer_jobs = {s: pool.submit(bgp_peers, rt, lab, s) for s in bgp_sws if s in cp.prefixes} if not bgp_done else {}
            # BFD is read again while BGP is polled: both verdicts come from the last round (BFD
            # read up once, before its detect time ran out after a fault, passed beside a BGP
            # session that failed for the whole run)
            bfd_jobs = {s: pool.submit(bfd_peers, rt, lab, s) for s in bfd_sws} if not (bfd_done and bgp_done) else {}
            if not bgp_done:
                st.routes = kernel_routes_many(rt, lab, bgp_sws)
                st.peers = {s: j.result() for s, j in peer_jobs.items()}
                bgp_done = _bgp_done(cp, st.peers, st.routes)
                if bgp_done:
                    st.seconds["bgp"] = time.monotonic() - t0
            if bfd_jobs:
                st.bfd = {s: j.result() for s, j in bfd_jobs.items()}
                bfd_done = all(r.passed for r in judge.bfd(cp, st.bfd))
                if bfd_done:
                    st.seconds.setdefault("bfd", time.monotonic() - t0)
            stable = False
            if faulted:
                now = (tuple(r.id for r in judge.bgp(cp, st.peers, st.routes) if not r.passed) if bgp_sws else (),
                       tuple(r.id for r in judge.bfd(cp, st.bfd) if not r.passed) if bfd_sws else ())
                if now != failing:
                    failing, same_since = now, time.monotonic()
                stable = time.monotonic() - same_since >= FAULTED_STABLE_S
                if stable:
                    st.stable_failing = True
            if (bgp_done and bfd_done) or stable or time.monotonic() > deadline:
                for k, sws in (("bgp", bgp_sws), ("bfd", bfd_sws)):
                    if sws:
                        st.seconds.setdefault(k, time.monotonic() - t0)
                return st
            time.sleep(0.5)


def _bgp_done(cp: CheckPlan, peers: dict, routes: dict) -> bool:
    return all(r.passed for r in judge.bgp(cp, peers, routes))


def collect_bgp(rt: Runtime, lab: Lab, cp: CheckPlan, timeout: float) -> tuple[dict, dict]:
    """BGP sessions and routes only (:func:`collect_switches`): (peers, routes)."""
    st = collect_switches(rt, lab, cp, timeout, bgp=True, bfd=False)
    return st.peers, st.routes


def collect_bfd(rt: Runtime, lab: Lab, cp: CheckPlan, timeout: float) -> dict[str, list | None]:
    """BFD sessions only (:func:`collect_switches`)."""
    return collect_switches(rt, lab, cp, timeout, bgp=False, bfd=True).bfd


# --- probes -------------------------------------------------------------------------------------------


MIN_RETRIES = 3  # a lost probe is re-sent at least this often before its pair fails, deadline or not


def _rounds(agent: probe.Agent, send: Callable[[], int], timeout: float, settle: float = 0.3,
            min_retries: int = MIN_RETRIES) -> int:
    """Send what is missing, listen, repeat until nothing is missing, or time is up and
    whatever is still missing has been re-sent ``min_retries`` times (on a large lab the
    first round alone can outlast the deadline: one lost packet of it must not fail a
    pair). Returns the rounds sent."""
    deadline = time.monotonic() + timeout
    rounds = 0
    while True:
        if send() == 0:
            return rounds
        rounds += 1
        agent.pump(settle)
        if time.monotonic() > deadline and rounds > min_retries:
            return rounds
        settle = min(settle * 1.5, 1.0)


def run(lab: Lab, rt: Runtime, *, timeout: float = 30.0, checks=CHECKS,
        progress: Callable[[str], None] = lambda s: None, faulted: bool = False) -> CheckRun:
    """Run ``checks`` on a deployed lab: the switches' tables, then one probe agent
    for cabling, reachability, isolation and paths. NotDeployed when nothing runs.
    ``faulted``: faults are set (see :func:`collect_switches`)."""
    st = deployed_status(rt, lab)
    cp = checks_plan.load(lab)
    out = CheckRun(lab.name)
    if st.state != "running":
        out.notes.append(f"lab state {st.state}: {st.detail}")
    t0 = time.perf_counter()

    sw = SwitchState()
    want_bgp = cp.mode == "routed" and bool({"bgp", "isolation"} & set(checks)) and bool(cp.bgp or cp.foreign)
    want_bfd = "bfd" in checks and cp.mode == "routed" and any(s.bfd for s in cp.bgp)
    if want_bgp or want_bfd:
        progress(f"bgp: waiting up to {timeout:g} s for {len(cp.bgp)} sessions"
                 + (f" and {sum(s.bfd for s in cp.bgp)} BFD sessions" if want_bfd else "")
                 + (f" (faults set: until what fails stays the same for {FAULTED_STABLE_S:g} s)" if faulted else ""))
        sw = collect_switches(rt, lab, cp, timeout, bgp=want_bgp, bfd=want_bfd, faulted=faulted)
        out.timings.update(sw.seconds)
        if sw.stable_failing:
            out.notes.append(f"faults set: stopped waiting for BGP/BFD after {max(sw.seconds.values()):.1f} s, "
                             f"what fails unchanged for {FAULTED_STABLE_S:g} s")
    peers, routes = sw.peers, sw.routes
    out.notes += _neighbour_table_notes(cp, rt)

    netns = {n.name: n.netns for n in lab.nodes.values()}
    with probe.Agent(lab.name, netns, rt.door()) as ag:
        t = time.perf_counter()
        late = rt.settle_links(lab)
        if late:
            out.notes.append(f"links still settling in {len(late)} namespaces, e.g. {late[0]}")
        absent = _open_sockets(ag, lab, cp)
        out.timings["open"] = time.perf_counter() - t
        if "cabling" in checks:
            t = time.perf_counter()
            out.results += _cabling(ag, lab, cp, absent, timeout, progress)
            out.timings["cabling"] = time.perf_counter() - t
        # the probes after cabling are seen only at GPU rail NICs: the switch ports' taps go
        ag.release_ports([k for k in ag.pkt if k[0] not in cp.gpus])
        if {"reachability", "path", "isolation"} & set(checks):
            t = time.perf_counter()
            _reach(ag, lab, cp, timeout, progress)
            if "reachability" in checks:
                out.results += judge.reachability(cp, ag.ev.reach)
            out.timings["reachability"] = time.perf_counter() - t
        if "isolation" in checks and cp.isolation_applies:
            t = time.perf_counter()
            probes, frames, unsent = _isolation(ag, cp, lab)
            progress(f"isolation: {len(frames)} frames")
            for _ in range(2):  # the same frames twice: one lost frame must not pass isolation
                for node, port, frame in frames:
                    why = ag.send_frame(node, port, frame)
                    if why:
                        unsent.setdefault(node, why)
                ag.pump(0.5)
            out.results += judge.isolation_probes(cp, ag.ev.iso_seen, probes, unsent)
            if cp.mode == "routed":
                out.results += judge.isolation_routes(cp, routes)
            out.timings["isolation"] = time.perf_counter() - t
        if "path" in checks:
            t = time.perf_counter()
            _trace_paths(ag, lab, cp, timeout, progress)
            fdb = None
            if cp.mode == "l2":
                fdb = {sw: fdb_table(rt, lab, sw) or {} for sw in sorted({s for ps in cp.paths for s in ps.l2_switches})}
            out.results += judge.path(cp, ag.ev.path_hops, ag.ev.path_arrived, fdb, ag.ev.macs)
            out.timings["path"] = time.perf_counter() - t
        out.notes += counted_notes(ag.ev.errors)

    if "bgp" in checks and cp.mode == "routed":
        out.results += judge.bgp(cp, peers, routes)
    if want_bfd:
        out.results += judge.bfd(cp, sw.bfd)
    out.timings["total"] = time.perf_counter() - t0
    dup = judge.unique(out.results)
    if dup:
        raise AssertionError(f"duplicate result ids: {dup[:5]}")
    return out


def counted_notes(errors: list[str], limit: int = 10) -> list[str]:
    """One note per distinct send error, first seen first, with how often it happened (pure): a
    downed link made every round's send fail alike, and the note came five times."""
    counts: dict[str, int] = {}
    for e in errors:
        counts[e] = counts.get(e, 0) + 1
    notes = [e if n == 1 else f"{e} ({n} times)" for e, n in counts.items()]
    if len(notes) > limit:
        rest = notes[limit:]
        notes = notes[:limit] + [f"... and {len(rest)} more distinct send errors"
                                 f" ({sum(counts[e] for e in list(counts)[limit:])} in all)"]
    return notes


def _neighbour_table_notes(cp: CheckPlan, rt: Runtime) -> list[str]:
    """A note when an L2 lab needs more ARP entries than the shared neighbour table holds."""
    need = sum(len(m) - 1 for m in cp.rails.values() for _ in m) if cp.mode == "l2" else 0
    gc3 = rt.neighbour_table_size()
    if gc3 is None:
        return []
    if need > gc3:
        return [f"{need} ARP entries are needed for all L2 pairs but the shared neighbour table holds"
                f" {gc3} (net.ipv4.neigh.default.gc_thresh3): expect lost probes"]
    return []


def _open_sockets(ag: probe.Agent, lab: Lab, cp: CheckPlan) -> set[tuple[str, str]]:
    """Every socket of a node opened by one job inside its namespace, on a few threads
    (one setns per node instead of one thread per socket). Returns the cabled
    (node, port) that have no device."""
    iface_of = {(e.node, e.port): e.iface for lk in lab.links for e in (lk.a, lk.b)}
    wants: dict[str, tuple[bool, list]] = {g.name: (True, []) for g in cp.gpus.values()}
    cabled: set[tuple[str, str]] = set()
    for c in cp.cables:
        for n, p in ((c.a_node, c.a_port), (c.b_node, c.b_port)):
            if (n, p) not in cabled:
                cabled.add((n, p))
                wants.setdefault(n, (False, []))[1].append((p, iface_of.get((n, p))))
    for g in cp.gpus.values():  # rail NICs that are not in cabling.csv (sliced labs)
        if (g.name, g.port) not in cabled:
            wants[g.name][1].append((g.port, g.port))
    return ag.open_many(wants) & cabled


def _cabling(ag: probe.Agent, lab: Lab, cp: CheckPlan, absent: set, timeout: float,
             progress: Callable[[str], None]) -> list[judge.Result]:
    """Neighbour frames over every cable, re-sent until each end has heard its peer."""
    frames = {k: probe.lldp_frame(bytes.fromhex(ag.ev.macs[k].replace(":", "")), lab.name, *k) for k in ag.pkt}
    ends = [(n, p) for c in cp.cables for n, p in ((c.a_node, c.a_port), (c.b_node, c.b_port))]
    pairs = {(c.b_node, c.b_port): (c.a_node, c.a_port) for c in cp.cables}
    pairs.update({(c.a_node, c.a_port): (c.b_node, c.b_port) for c in cp.cables})

    def send_lldp() -> int:
        missing = [e for e in ends if e in ag.pkt and pairs[e] not in ag.ev.lldp.get(e, set())
                   and pairs[e] in ag.pkt]
        for e in missing:
            ag.send_frame(*pairs[e], frames[pairs[e]])
        return len(missing)

    progress(f"cabling: neighbour frames on {len(ag.pkt)} ports")
    _rounds(ag, send_lldp, min(timeout, 5.0))
    ag.pump(0.1)
    return judge.cabling(cp, ag.ev.lldp, absent)


def _reach(ag: probe.Agent, lab: Lab, cp: CheckPlan, timeout: float, progress: Callable[[str], None]) -> None:
    """One pre-built packet per ordered same-rail pair, re-sent until answered (ag.ev.reach)."""
    pairs_r = cp.reach_pairs()
    pkts = []
    for i, (a, b) in enumerate(pairs_r):
        ag.reach_src[i] = a
        pkts.append((a, probe.ip_udp(cp.gpus[a].ip, cp.gpus[b].ip, probe.payload(lab.name, probe.K_REACH, i), ident=i), cp.gpus[b].ip))
    rail_of = [cp.gpus[a].rail for a, _ in pairs_r]

    def send_reach() -> int:
        # one group per rail, in pair order (a GPU that got a peer's ARP
        # request answers that peer without flooding its own), rails on
        # two threads: the kernel's work inside sendto uses both cores
        groups: dict = {}
        for i, ab in enumerate(pairs_r):
            if ab not in ag.ev.reach:
                groups.setdefault(rail_of[i], []).append(pkts[i])
        ag.send_ip_groups(list(groups.values()), threads=2)
        return sum(len(g) for g in groups.values())

    progress(f"reachability: {len(pairs_r)} same-rail pairs")
    _rounds(ag, send_reach, min(timeout, 10.0 + len(pairs_r) / 5000), settle=0.2)


def _trace_paths(ag: probe.Agent, lab: Lab, cp: CheckPlan, timeout: float, progress: Callable[[str], None]) -> None:
    """TTL-limited probes along every planned path, re-sent until each hop has answered
    (ag.ev.path_hops, ag.ev.path_arrived)."""
    sends = []
    local: dict[str, int] = {}
    for i, ps in enumerate(cp.paths):
        k = local.get(ps.src, 0)
        local[ps.src] = k + 1
        for ttl in range(1, len(ps.layers) + 3):
            ident = 0x8000 | ((k & 0x7FF) << 4) | ttl
            ag.path_index[(ps.src, ident)] = i
            ag.path_ttl[(ps.src, ident)] = ttl
            sends.append((i, ttl, ps.src, probe.ip_udp(cp.gpus[ps.src].ip, cp.gpus[ps.dst].ip,
                                                   probe.payload(lab.name, probe.K_PATH, i, ttl), ttl=ttl, ident=ident),
                          cp.gpus[ps.dst].ip))

    def done(i: int, ttl: int) -> bool:
        ps = cp.paths[i]
        if ttl <= len(ps.layers):
            return ttl in ag.ev.path_hops.get(i, {}) or not ps.layers[ttl - 1]
        arr = ag.ev.path_arrived.get(i)
        return arr is not None and arr <= ttl or ttl > len(ps.layers) + 1

    def send_path() -> int:
        n = 0
        for i, ttl, src, pkt, dst in sends:
            if not done(i, ttl):
                ag.send_ip(src, pkt, dst)
                n += 1
        return n

    progress(f"path: {len(cp.paths)} traced pairs")
    # one full send (the TTL above the expected length shows a path that is too long)
    for i, ttl, src, pkt, dst in sends:
        ag.send_ip(src, pkt, dst)
    ag.pump(0.3)
    _rounds(ag, send_path, min(timeout, 10.0))


def _isolation(ag: probe.Agent, cp: CheckPlan, lab: Lab) -> tuple[list[tuple[int, str, str, str]], list[tuple[str, str, bytes]], dict[str, str]]:
    """The isolation frames of every GPU's rail NIC, built once: (idx, src, what, target)
    of each probe, the (node, port, frame) to send, and {GPU: why its frames cannot be
    sent} (a frame never sent proves nothing: that GPU fails). A routed GPU's frames go
    to its gateway's MAC, as the GPU's neighbour table holds it (one netlink get per GPU
    on a few pool threads, not a thread per GPU and send reading the whole shared table)."""
    probes = []
    frames: list[tuple[str, str, bytes]] = []
    unsent: dict[str, str] = {}
    gateways = probe.Gateways(a for a, n in cp.ip_owner.items() if n in cp.switches)
    gw_of = {n: gateways.of(g.prefixlen, g.ip) for n, g in cp.gpus.items()} if cp.mode != "l2" else {}
    gw_mac: dict[str, str | None] = {}
    if cp.mode != "l2":
        asks = {n: (g.port, gw_of[n]) for n, g in sorted(cp.gpus.items()) if (n, g.port) in ag.pkt and gw_of[n]}
        gw_mac = ag.neighbours(asks)
        # an entry can be gone by now (the shared table's garbage collection during a long
        # reachability round): a packet to the gateway itself makes the GPU resolve it again
        for attempt in range(3):
            missing = [n for n in asks if gw_mac.get(n) is None]
            if not missing:
                break
            for n in missing:
                g, gw = cp.gpus[n], asks[n][1]
                ag.send_ip(n, probe.ip_udp(g.ip, gw, probe.payload(lab.name, 0, 0)), gw)
            ag.pump(0.2 * (attempt + 1))
            gw_mac.update(ag.neighbours({n: asks[n] for n in missing}))
    for gi, name in enumerate(sorted(cp.gpus)):
        g = cp.gpus[name]
        key = (name, g.port)
        if key not in ag.pkt:
            unsent[name] = f"no socket on its rail NIC {g.port} (no such device in its namespace)"
            probes.append((gi * 256, name, "packet" if cp.mode != "l2" else "broadcast", "(none sent)"))
            continue
        src_mac = bytes.fromhex(ag.ev.macs[key].replace(":", ""))
        if cp.mode == "l2":
            body = probe.ip_udp(g.ip, "255.255.255.255", probe.payload(lab.name, probe.K_ISO_BCAST, gi * 256), ttl=1, checksum=True)
            frames.append((name, g.port, probe.ether(b"\xff" * 6, src_mac, probe.ETH_P_IP, body)))
            probes.append((gi * 256, name, "broadcast", "ff:ff:ff:ff:ff:ff"))
            unknown = bytes([0x02, 0x52, 0x4F, 0x4C, gi >> 8 & 0xFF, gi & 0xFF])
            body = probe.ip_udp(g.ip, g.ip, probe.payload(lab.name, probe.K_ISO_UNKNOWN, gi * 256 + 1), ttl=1, checksum=True)
            frames.append((name, g.port, probe.ether(unknown, src_mac, probe.ETH_P_IP, body)))
            probes.append((gi * 256 + 1, name, "unknown unicast", unknown.hex(":")))
        else:
            mac = gw_mac.get(name)
            if mac is None:
                unsent[name] = (f"no gateway address on its subnet {g.ip}/{g.prefixlen}" if not gw_of[name] else
                                f"its neighbour table holds no MAC for its gateway {gw_of[name]} on {g.port}")
            for j, other in enumerate(cp.isolation_targets(name)):
                o = cp.gpus[other]
                idx = gi * 256 + 2 + j
                probes.append((idx, name, "packet", f"to {other} {o.ip} (rail {o.rail})"))
                if mac is None:
                    continue
                body = probe.ip_udp(g.ip, o.ip, probe.payload(lab.name, probe.K_ISO_ROUTED, idx), checksum=True)
                frames.append((name, g.port, probe.ether(bytes.fromhex(mac.replace(":", "")), src_mac, probe.ETH_P_IP, body)))
    return probes, frames, unsent
