"""Synthetic collective traffic on a deployed lab, sent by persistent agents and judged against the model.

Traffic agents are persistent (agents.py): through the runtime's door one thread per GPU
namespace opens, before the first timed step, a listener per (destination, address, port)
and ``streams`` TCP connections per transfer, reused by every step; a step starts no
process. A flow's port is its destination's slot in its step (``slot_ports``). Each
transfer runs as NCCL sends it: ``streams`` parallel connections (default NCCL's channels
per network peer, see :func:`nccl_streams`), each its own 5-tuple for ECMP to hash. A
runtime without a door keeps iperf3: one server per (destination, address, port) started
once per run (``-D --pidfile``, recorded in the lab's state directory
(``/run/railonly/<lab>/state/traffic.json``) before it starts, stopped by pid in a
``finally``) and a client per flow and step (``-P streams``).

A step's measured network time (``steps[].seconds``, summed in ``network_s``) is its
slowest flow: with the agents, the step's start to the flow's last byte read; with iperf3,
the planned bytes at the rate its receiver measured. What is not network time is measured
apart (``overhead_s``): opening the agents, each step's barrier (its wall time minus its
network time), the counter reads between steps and the host-capacity probe. Around every
step the tx counters of every switch-to-switch link end are read (the flows' actual
placement, for the placement-aware model) and the host's CPU is sampled (host.py).
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Callable

from ..checks import check_plan as checks_plan
from ..lab import Lab, LabError, link_rates, run_dir
from ..runtime import rundir
from ..runtime.protocol import Runtime, RuntimeProblem, deployed_status
from . import host
from .agents import SocketAgents, window_bytes
from .completion_time import default_bytes, hb_bytes, host_step, model, nic_bytes, placed_step
from .patterns import BASE_PORT, Flow, plan_flows, steps_of

# --- running ----------------------------------------------------------------------------------


TRAFFIC = "traffic.json"  # in the lab's state directory


def _run_dir(lab: Lab) -> str:
    return f"{run_dir(lab.name)}/iperf3"


def stop_servers(lab: Lab, rt: Runtime | None = None) -> int:
    """Stop every recorded iperf3 server by pid (checked against its command line).

    The record is root's (the lab's state directory), still checked: an entry is used only when it is
    one this module writes (an iperf3 server argv, a pid file in the lab's
    iperf3 run dir, a lab namespace), and a process is signalled only when it
    runs in that namespace; anything else is exit 2 naming the file."""
    rel = TRAFFIC
    sd = rundir.open_state(lab.name, create=False)
    rec = sd.read_json(rel, limit=16 * 1024 * 1024) if sd else None
    if rec is None:
        return 0
    servers = rec.get("servers") if isinstance(rec, dict) and rec.get("lab") == lab.name else None
    nss = {n.netns for n in lab.nodes.values()}
    ok = isinstance(servers, list) and all(
        isinstance(s, dict) and s.get("netns") in nss and isinstance(s.get("pidfile"), str)
        and os.path.dirname(s["pidfile"]) == _run_dir(lab) and os.path.basename(s["pidfile"]).endswith(".pid")
        and "/" not in os.path.basename(s["pidfile"]) and ".." not in s["pidfile"]
        and isinstance(s.get("argv"), list) and s["argv"][:2] == ["iperf3", "-s"]
        and all(isinstance(a, str) for a in s["argv"]) for s in servers)
    if not ok:
        raise LabError(str(lab.traffic_state_file), "is not a record of the lab's iperf3 servers (refused: nothing"
                       " was stopped or removed)", "remove the file; railonly lab destroy stops every process of the lab")
    from ..runtime.registry import get_runtime

    stopped = (rt or get_runtime()).stop_recorded(servers, 3.0)
    for s in servers:
        try:
            os.unlink(s["pidfile"])
        except OSError:
            pass
    sd.unlink(rel)
    for d in (_run_dir(lab), os.path.dirname(_run_dir(lab))):  # only when empty (FRR's run dir is the parent)
        try:
            os.rmdir(d)
        except OSError:
            break
    return stopped


# NCCL: channels per network peer (src/graph/paths.cc, ncclTopoGetNchannels, NVIDIA/nccl commit
# 04cdb808a1072d24b1b87b1f712d072aff2e9bf2): unless NCCL_NCHANNELS_PER_NET_PEER is set, at least one
# channel per local NIC and enough to meet the NIC's bandwidth at P2P_PER_CHANNEL_NET_BW (14 GB/s
# each), rounded up to a power of two (ncclTopoComputeP2pChannels). Releases 2.12-2.28 used a fixed
# default of 2. Each channel is its own connection (its own QP on RoCE, own UDP source port), so
# ECMP hashes channels, not transfers.
NCCL_P2P_PER_CHANNEL_NET_GBYTES = 14


def nccl_streams(nic_gbps: float, nics_per_gpu: int = 1) -> int:
    """NCCL's default channels per network peer for a GPU with ``nics_per_gpu`` NICs of
    ``nic_gbps`` (pure): 4 for one 400G NIC, 2 for 200G, 1 for 100G."""
    n = max(nics_per_gpu, math.ceil(nic_gbps / 8 / NCCL_P2P_PER_CHANNEL_NET_GBYTES))
    return 1 << (n - 1).bit_length()


def stream_window(streams: int) -> str:
    """iperf3 -w per stream (pure): 128K for one or two streams, less for more, so a flow's
    buffered bytes stay about the same. iperf3 3.12 ends a -n test once the sender has
    *written* its bytes: what sits in socket buffers then is never timed, so a flow's buffers
    must stay a small share of it (the step time extrapolates the receiver's rate)."""
    return f"{max(32, 256 // max(2, streams))}K"


def _dst_ip(cp, f: Flow) -> str:
    ip = cp.gpus[f.dst].hb_ip if f.hb else cp.gpus[f.dst].ip
    if not ip:
        raise ValueError(f"{f.dst} has no HB address for an HB flow")
    return ip


def _port_base(f: Flow) -> int:
    """The first port of a flow's range: its pair class's (job replay counters split bytes
    by it) or the patterns' base."""
    from .job_plan import CLASS_PORTS

    return CLASS_PORTS[f.pair_class] if f.pair_class else BASE_PORT


def slot_ports(steps: list[list[Flow]]) -> list[list[Flow]]:
    """The steps with each flow's port set to its destination's slot in its step, counted in
    the flow's port range (pure): servers are reused across steps, and a GPU needs as many
    as it receives flows at once."""
    out = []
    for st in steps:
        used: dict[tuple[str, int], int] = {}
        row = []
        for f in st:
            base = _port_base(f)
            slot = used.get((f.dst, base), 0)
            used[(f.dst, base)] = slot + 1
            row.append(replace(f, port=base + slot))
        out.append(row)
    return out


class Agents:
    """The persistent iperf3 servers of one lab run: started once (``ensure``), reused by
    every step, stopped by pid (``stop``)."""

    def __init__(self, lab: Lab, rt: Runtime, cp):
        self.lab, self.rt, self.cp = lab, rt, cp
        self.servers: dict[tuple[str, str, int], dict] = {}
        self.start_s = 0.0  # seconds spent starting servers
        self.stop_s = 0.0  # ... and stopping them
        self.failed_wait_s = 0.0  # servers start without connecting: nothing waits on a dead pair here
        self.failed_pairs: dict[tuple[str, str], str] = {}

    def ensure(self, flows: list[Flow]) -> None:
        t0 = time.monotonic()
        piddir = _run_dir(self.lab)
        os.makedirs(piddir, exist_ok=True)
        new = []
        for f in flows:
            key = (f.dst, _dst_ip(self.cp, f), f.port)
            if key in self.servers:
                continue
            pidfile = f"{piddir}/{f.dst}-{key[1]}-{f.port}.pid"
            argv = ["iperf3", "-s", "-D", "-p", str(f.port), "-B", key[1], "--pidfile", pidfile]
            self.servers[key] = {"netns": self.lab.netns(f.dst), "argv": argv, "pidfile": pidfile}
            new.append(self.servers[key])
        if not new:
            return
        # intent first: the record exists before any server does
        rundir.state(self.lab.name).write_text(TRAFFIC, json.dumps({"lab": self.lab.name,
                                                                    "servers": list(self.servers.values())}, indent=1),
                                               mode=0o600)

        def start(s: dict) -> None:  # -D: each forks away and writes its pid file
            rc, out = self.rt.exec(s["netns"], s["argv"], timeout=10)
            if rc != 0:
                raise RuntimeError(f"iperf3 server in {s['netns']} failed: {out.strip()[:200]}")

        with ThreadPoolExecutor(max_workers=min(len(new), 16)) as ex:
            list(ex.map(start, new))
        deadline = time.monotonic() + 10
        while any(self.rt.pid_of(s["pidfile"]) is None for s in new) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.start_s += time.monotonic() - t0

    def stop(self) -> None:
        t0 = time.monotonic()
        stop_servers(self.lab, self.rt)
        self.servers.clear()
        self.stop_s += time.monotonic() - t0


class FlowAgents:
    """The persistent socket agents (agents.py) driven by Flows: connections opened once per
    (source, destination address, port), a step sent without starting a process."""

    def __init__(self, lab: Lab, cp, door, streams: int, window: str | None):
        self.cp = cp
        # the same per-stream buffers as iperf3 -w: autotuned buffers grow queues in the shaped
        # links until they drop, and retransmitted bytes then miss the replay's byte counts
        self.sockets = SocketAgents(door, {g: lab.netns(g) for g in cp.gpus}, streams=streams,
                                    window=window_bytes(window or stream_window(streams)))
        self.streams = self.sockets.streams

    @property
    def start_s(self) -> float:
        return self.sockets.start_s

    @property
    def stop_s(self) -> float:
        return self.sockets.stop_s

    @property
    def failed_wait_s(self) -> float:
        return self.sockets.failed_wait_s

    @property
    def failed_pairs(self) -> dict[tuple[str, str], str]:
        return self.sockets.failed_pairs

    def _key(self, f: Flow) -> tuple[str, str, str, int]:
        return f.src, f.dst, _dst_ip(self.cp, f), f.port

    def ensure(self, flows: list[Flow]) -> None:
        try:
            self.sockets.ensure([self._key(f) for f in flows])
        except OSError as exc:
            raise RuntimeProblem(f"traffic agents: {exc} (lab check shows which pairs do not reach each other)") from exc

    def run_step(self, st: list[Flow], nic_mbps: float, t_run: float) -> tuple[list[dict], float]:
        """(one result per flow, the step's wall seconds); start_s/end_s relative to ``t_run``."""
        deadline = 120 + max(f.bytes for f in st) * 8 / (nic_mbps * 1e6) * 4
        rs, t0, wall = self.sockets.run_step([self._key(f) + (f.bytes,) for f in st], deadline)
        out = []
        for f, res in zip(st, rs):
            r = {"src": f.src, "dst": f.dst, "via": f.via, "bytes": 0, "seconds": None, "step": f.step,
                 "start_s": round(t0 - t_run, 3), "streams": self.streams}
            if f.hb:
                r["over"] = "hb"
            r.update(res)
            r["end_s"] = round(t0 - t_run + (r["seconds"] or wall), 3)
            out.append(r)
        return out, wall

    def stop(self) -> None:
        self.sockets.stop()


def agents_waited(agents, dead: dict[str, str]) -> dict | None:
    """Where the agents' start-up time went on connections that failed (pure; None when none
    failed): the seconds, the GPUs to blame (a dead NIC of ``dead``, {GPU: its recorded fault},
    among the failed pairs' ends; else the GPU in most failed pairs) and why, the pairs and errors."""
    pairs = dict(sorted(getattr(agents, "failed_pairs", {}).items()))
    if not pairs:
        return None
    ends: dict[str, int] = {}
    for src, dst in pairs:
        for g in (src, dst):
            ends[g] = ends.get(g, 0) + 1
    blamed = sorted(g for g in ends if g in dead)
    if blamed:
        why = (f"whose NIC{' is' if len(blamed) == 1 else 's are'} down"
               f" (lab fault --link {', '.join(sorted({dead[g] for g in blamed}))})")
    else:
        top = max(ends.values())
        blamed = sorted(g for g, n in ends.items() if n == top)
        why = "which could not be reached"
    return {"seconds": round(getattr(agents, "failed_wait_s", 0.0), 3), "gpus": blamed, "why": why,
            "pairs": [{"src": s_, "dst": d, "error": e} for (s_, d), e in pairs.items()]}


def waited_line(w: dict | None) -> list[str]:
    """The report's line for agents_waited (pure; none when nothing waited)."""
    if not w:
        return []
    errors = sorted({p["error"] for p in w["pairs"]})
    return [f"  agents: {w['seconds']:.1f} s of their start waiting for {', '.join(w['gpus'])}, {w['why']}:"
            f" {len(w['pairs'])} pair(s) could not connect ({'; '.join(errors)[:120]}), retried before each step"]


def overhead_parts(overhead: dict, overhead_s: float) -> dict:
    """``overhead`` with ``other_s``, what the named parts leave of ``overhead_s`` (pure), so they add up."""
    other = round(overhead_s - sum(v for k, v in overhead.items() if k != "other_s"), 3)
    return {**overhead, "other_s": max(0.0, other)}


def agents_kind(agents) -> str:
    """How the run sent (reported as ``agents``): "sockets" (persistent, no process per flow) or "iperf3"."""
    return "sockets" if isinstance(agents, FlowAgents) else "iperf3"


def traffic_agents(lab: Lab, rt: Runtime, cp, streams: int, window: str | None = None) -> "FlowAgents | Agents":
    """The run's traffic agents: persistent sockets through the runtime's door, or, for a
    runtime whose nodes this process cannot enter, iperf3 (servers once, a client per flow)."""
    door = rt.door()
    try:
        first = min(cp.gpus) if cp.gpus else None
        if first is not None:
            door.call_in(lab.netns(first), lambda: None)
    except (RuntimeProblem, OSError):
        return Agents(lab, rt, cp)
    return FlowAgents(lab, cp, door, streams, window)


def shaped_rates(rt: Runtime, lab: Lab, cp) -> tuple[float | None, float | None]:
    """(NIC, HB) Mbit/s read back from tc in one GPU namespace (None if unreadable)."""
    g = next(iter(sorted(cp.gpus.values(), key=lambda g: g.name)), None)
    if g is None:
        return None, None
    rc, text = rt.exec(lab.netns(g.name), ["tc", "-j", "qdisc", "show", "dev", g.port or "lo"], timeout=10)
    nic = None
    try:
        for q in json.loads(text or "[]") if rc == 0 else []:
            r = (q.get("options") or {}).get("rate")
            if r:
                nic = r * 8 / 1e6  # tc -j reports bytes/s
    except (ValueError, AttributeError):
        nic = None
    hb = _htb_rate(lab, rt, g.name, g.hb_port) if g.hb_port else None
    return nic, (hb * 8 / 1e6 if hb else None)


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
    """{(node, port): (tx bytes, rx bytes)} of the given ports: one rtnetlink dump per node
    through the runtime's door, else ``ip -s -j link`` in each node's namespace."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    nodes = sorted(ports)
    door = rt.door()
    try:
        got = door.call_many([(lab.netns(n), door.link_counters) for n in nodes], workers=4) if nodes else []
    except RuntimeProblem:
        got = None
    if got is not None and not any(isinstance(c, BaseException) for c in got):
        for n, c in zip(nodes, got):
            out.update({(n, p): c[p] for p in ports[n] if p in c})
        return out
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


@dataclass(frozen=True)
class DirectedLink:
    """One direction of a shaped link: counted by the tx counter of its ``end``."""

    end: tuple[str, str]  # (node, port) whose tx bytes are this direction's
    name: str  # "rail0-leaf0:Ethernet2->rail0-spine0", "hb1-gpu0:eth1->rail0-leaf1"
    bytes_per_s: float  # its shaped rate
    group: tuple | None  # the links one ECMP choice spreads over: a switch's uplinks, or the links into a switch
    # from above; None for a GPU's rail NIC and HB links (no choice: a flow's path through them is its plan's)


MEASURED_KINDS = ("fabric", "rail", "hb")  # switch-to-switch, GPU NIC to leaf, GPU HB port to its domain


def directed_links(lab: Lab, nic_mbps: float) -> list[DirectedLink]:
    """Both directions of every shaped link the flows cross, switch-to-switch links first:
    every switch-to-switch link, every GPU's rail NIC link and HB link, rated as the lab
    shapes them (gbps x emulated NIC Mbit/s / design NIC gbps)."""
    nic_gbps = float(lab.fabric.design.nic_gbps or 0) or None
    out = []
    for kind in MEASURED_KINDS:
        for lk in (lk for lk in lab.links if lk.kind == kind):
            mbps = lk.gbps * nic_mbps / nic_gbps if nic_gbps and lk.gbps else nic_mbps
            for a, b in ((lk.a, lk.b), (lk.b, lk.a)):
                group = None
                if kind == "fabric":
                    ta, tb = (lab.nodes[n].fabric_node.tier or 0 if n in lab.nodes else 0 for n in (a.node, b.node))
                    group = ("up", a.node) if ta < tb else ("down", b.node)
                out.append(DirectedLink((a.node, a.port), f"{a.node}:{a.port}->{b.node}", mbps * 1e6 / 8, group))
    return out


class LinkCounters:
    """Reads the tx counters of every directed link's end: what crossed each link between
    two reads. Through the runtime's door (one rtnetlink dump per node, no process) where it
    has one, else ``ip -s -j link`` in each node, in parallel."""

    def __init__(self, lab: Lab, rt: Runtime, links: list[DirectedLink]):
        self.lab, self.rt, self.links = lab, rt, links
        self.want: dict[str, set[str]] = {}
        for dl in links:
            self.want.setdefault(dl.end[0], set()).add(dl.end[1])
        self.read_s = 0.0
        self.door = rt.door()
        try:
            if self.want:
                self.door.call_in(lab.netns(min(self.want)), self.door.link_counters)
        except (RuntimeProblem, OSError):
            self.door = None

    def read(self) -> dict[tuple[str, str], int]:
        t0 = time.monotonic()
        out: dict[tuple[str, str], int] = {}
        nodes = sorted(self.want)
        if self.door is not None and nodes:
            got = self.door.call_many([(self.lab.netns(n), self.door.link_counters) for n in nodes], workers=4)
            for n, c in zip(nodes, got):
                if isinstance(c, dict):
                    out.update({(n, p): c[p][0] for p in self.want[n] if p in c})
        elif nodes:
            with ThreadPoolExecutor(max_workers=min(len(nodes), 8)) as ex:
                for part in ex.map(lambda n: port_counters(self.lab, self.rt, {n: self.want[n]}), nodes):
                    out.update(part)
        self.read_s += time.monotonic() - t0
        return out

    def delta(self, after: dict, before: dict) -> dict[str, int]:
        """{directed link name: bytes} between two reads."""
        return {dl.name: after.get(dl.end, 0) - before.get(dl.end, 0) for dl in self.links if dl.end in after}


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
    steps: list[dict]  # per step: step, flows, seconds (its slowest flow at rate), wall_s, overhead_s, link_bytes
    completion_s: float  # the steps' wall time, summed (each: hand-out to its last flow's end)
    network_s: float = 0.0  # the steps' network time, summed
    overhead: dict = field(default_factory=dict)  # seconds that are not network time, by cause


def run_steps(lab: Lab, rt: Runtime, cp, steps: list[list[Flow]], *, window: str | None = None, nic_mbps: float,
              streams: int = 1, agents: "Agents | FlowAgents | None" = None, links: LinkCounters | None = None,
              cpu: host.CpuMeter | None = None, progress: Callable[[str], None] = lambda s: None) -> StepsRun:
    """Run steps of flows one after another, every flow of a step at once (``streams``
    parallel TCP streams each); a step's time is its slowest flow's seconds_at_rate. The
    flows' ports are re-numbered by slot (slot_ports; results keep the steps' order).
    ``agents``: the run's agents (traffic_agents; else started here and stopped in a finally); ``links``:
    link counters read after each step (``steps[].link_bytes``); ``cpu``: sampled around
    each step. ``progress`` gets a line per flow."""
    steps = slot_ports(steps)
    flows = [f for st in steps for f in st]
    win = window or stream_window(streams)
    results: dict[int, dict] = {}
    step_rep: list[dict] = []
    own = agents is None
    agents = agents or traffic_agents(lab, rt, cp, streams, window)
    agents_before = agents.start_s
    completion = 0.0
    try:
        agents.ensure(flows)
        t0 = time.monotonic()
        last = links.read() if links else None
        if isinstance(agents, FlowAgents):
            for st in steps:
                if cpu:
                    cpu.start()
                rs, wall = agents.run_step(st, nic_mbps, t0)
                if cpu:
                    cpu.stop()
                for f, r in zip(st, rs):
                    results[len(results)] = r
                    progress(_flow_line(len(results), len(flows), f, r))
                step_rep.append(_step_rep(st, rs, wall))
                if links:
                    now = links.read()
                    step_rep[-1]["link_bytes"] = links.delta(now, last)
                    last = now
        else:
            step_rep += _iperf3_steps(lab, rt, cp, steps, flows, win, streams, nic_mbps, t0, results, links, last,
                                      cpu, progress)
        # the steps' own wall time (hand-out to the last report), summed: network plus barriers; the
        # set-up between steps (a reconnection to a pair that failed) is agents_start_s, not this
        completion = sum(s["wall_s"] for s in step_rep)
    finally:
        if own:
            agents.stop()
    network = round(sum(s["seconds"] or 0.0 for s in step_rep), 4)
    overhead = {"agents_start_s": round(agents.start_s - agents_before, 3),
                "agents_stop_s": round(agents.stop_s, 3) if own else 0.0,
                "client_start_and_barrier_s": round(sum(s["overhead_s"] for s in step_rep), 3),
                "counter_reads_s": round(links.read_s, 3) if links else 0.0}
    return StepsRun([results[i] for i in range(len(flows))], step_rep, completion, network, overhead)


def _flow_line(n: int, total: int, f: Flow, r: dict) -> str:
    return (f"[{n}/{total}] step {f.step} {f.src}->{f.dst}" + (f" via {f.via}" if f.via else "")
            + (" over HB" if f.hb else "")
            + (f": {r['bytes']:,} B in {r['seconds']} s" if r.get("seconds") else f": FAILED {r.get('error', '')[:80]}"))


def _step_rep(st: list[Flow], rs: list[dict], wall: float) -> dict:
    """A step's figures: its network time (slowest flow at rate), its wall time and the rest (overhead)."""
    secs = [r["seconds_at_rate"] for r in rs if r.get("seconds_at_rate")]
    return {"step": st[0].step, "flows": len(st), "seconds": round(max(secs), 4) if secs else None,
            "wall_s": round(wall, 3), "overhead_s": round(max(0.0, wall - (max(secs) if secs else 0.0)), 3)}


def _iperf3_steps(lab, rt, cp, steps, flows, win, streams, nic_mbps, t0, results, links, last, cpu, progress) -> list[dict]:
    """The steps with an iperf3 client per flow (a runtime without a door): a step's wall time
    runs from its first client's start to its last one's end."""
    lock = threading.Lock()
    step_rep = []

    def one(i: int, f: Flow) -> None:
        argv = ["iperf3", "-c", _dst_ip(cp, f), "-p", str(f.port), "-n", str(f.bytes), "-J",
                "--connect-timeout", "3000", "-w", win] + (["-P", str(streams)] if streams > 1 else [])
        start = time.monotonic()
        for attempt in range(8):  # a reused server may still be closing its previous test
            rc, out = rt.exec(lab.netns(f.src), argv, timeout=120 + f.bytes * 8 / (nic_mbps * 1e6) * 4)
            if rc == 0 or not ("unable to connect" in out or "server is busy" in out):
                break
            time.sleep(0.05 * (attempt + 1))
        end = time.monotonic()
        r = {"src": f.src, "dst": f.dst, "via": f.via, "bytes": 0, "seconds": None, "step": f.step,
             "start_s": round(start - t0, 3), "end_s": round(end - t0, 3), "streams": streams}
        if f.hb:
            r["over"] = "hb"
        r.update(parse_iperf3(out, rc, f.bytes))
        with lock:
            results[i] = r
            progress(_flow_line(len(results), len(flows), f, r))

    first = 0
    with ThreadPoolExecutor(max_workers=min(max(len(st) for st in steps) if steps else 1, 512)) as ex:
        for st in steps:
            idx = range(first, first + len(st))
            first += len(st)
            if cpu:
                cpu.start()
            list(ex.map(one, idx, st))
            if cpu:
                cpu.stop()
            rs = [results[i] for i in idx]
            rep = _step_rep(st, rs, max(r["end_s"] for r in rs) - min(r["start_s"] for r in rs))
            if links:
                now = links.read()
                rep["link_bytes"] = links.delta(now, last)
                last = now
            step_rep.append(rep)
    return step_rep


def _shaped(lab: Lab, rt: Runtime, node: str) -> dict[str, float] | None:
    """{device: bytes/s} of the root qdiscs in one node: a tbf's rate, an htb's from its
    classes (the lab's one class 1:1); 0 when the device is unshaped; an htb whose class
    cannot be read is left out (the plan's rate applies). None when tc cannot be read."""
    rc, text = rt.exec(lab.netns(node), ["tc", "-j", "qdisc", "show"], timeout=10)
    try:
        rows = json.loads(text) if rc == 0 else None
    except ValueError:
        rows = None
    if not isinstance(rows, list):
        return None
    out: dict[str, float] = {}
    for q in rows:
        if isinstance(q, dict) and q.get("root") and isinstance(q.get("dev"), str):
            rate = (q.get("options") or {}).get("rate") if q.get("kind") == "tbf" else None
            if q.get("kind") == "htb":
                rate = _htb_rate(lab, rt, node, q["dev"])
                if rate is None:
                    continue
            out[q["dev"]] = float(rate) if isinstance(rate, (int, float)) else 0.0
    return out


TC_RATE = re.compile(r"\brate (\d+(?:\.\d+)?)([KMGT]?)bit\b")
TC_UNITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _htb_rate(lab: Lab, rt: Runtime, node: str, dev: str) -> float | None:
    """The highest class rate (bytes/s) of an htb qdisc on ``dev``, None when unreadable.
    ``tc -j class show`` prints JSON for some iproute2 releases and plain text for others
    (6.1: ``class htb 1:1 root prio 0 rate 900Mbit ...``): both are read."""
    rc, text = rt.exec(lab.netns(node), ["tc", "-j", "class", "show", "dev", dev], timeout=10)
    if rc != 0:
        return None
    try:
        rows = json.loads(text)
        rates = [c["options"]["rate"] for c in rows if isinstance(c, dict)
                 and isinstance((c.get("options") or {}).get("rate"), (int, float))]
    except (ValueError, TypeError, KeyError):
        rates = [float(v) * TC_UNITS[u] / 8 for v, u in TC_RATE.findall(text)]
    return max(rates) if rates else None


def placement(lab: Lab, rt: Runtime, nic_mbps: float) -> tuple[list[DirectedLink], dict]:
    """The lab's directed links (directed_links) and, by name, (bytes/s, ECMP group) for
    placed_step: the rate tc shapes each link end to as deployed (0, left out of the model,
    when a link is unshaped: ideal tiers), else the plan's."""
    dls = directed_links(lab, nic_mbps)
    nodes = sorted({dl.end[0] for dl in dls})
    with ThreadPoolExecutor(max_workers=max(1, min(len(nodes), 8))) as ex:
        tc = dict(zip(nodes, ex.map(lambda n: _shaped(lab, rt, n), nodes)))
    rated = {}
    for dl in dls:
        seen = tc.get(dl.end[0])
        rate = seen.get(dl.end[1], dl.bytes_per_s) if seen is not None else dl.bytes_per_s
        rated[dl.name] = (rate, dl.group)
    return dls, rated


def judge(network_s: float | None, placed_s: float, tolerance: float, failed: bool, cpu: dict,
          host_s: float | None = None) -> str:
    """pass | fail | inconclusive (pure): a failed flow fails; otherwise a saturated host is
    inconclusive (timing judges the host then, not the fabric), and so is a host that cannot
    deliver the model (``host_s``, the model under the host's measured HB capacity, beyond the
    tolerance of the placed model); otherwise measured network time within ``tolerance`` of the
    placement-aware model passes."""
    if failed:
        return "fail"
    if cpu.get("saturated") or host_bound(placed_s, host_s, tolerance):
        return "inconclusive"
    if network_s is None or placed_s <= 0:
        return "fail"
    return "pass" if abs(network_s - placed_s) <= tolerance * placed_s + ABS_SLACK_S else "fail"


ABS_SLACK_S = 0.05  # on top of the relative tolerance: timer and scheduling noise of a step


def host_bound(placed_s: float, host_s: float | None, tolerance: float) -> bool:
    """The host could not deliver the placed model (pure): its HB capacity alone takes longer."""
    return host_s is not None and host_s > placed_s * (1 + tolerance) + ABS_SLACK_S


HOST_PROBE_S = 0.25  # the capacity probe: each HB flow carries this long at its shaped rate


def _probe(agents: "FlowAgents", flows: list[Flow], mbps: float) -> tuple[float, float, float] | None:
    """(aggregate bytes/s, shaped bytes/s, seconds) of one probe step, None if a flow failed."""
    flows = slot_ports([flows])[0]
    agents.ensure(flows)
    rs, _wall = agents.run_step(flows, mbps, time.monotonic())
    secs = [r["seconds"] for r in rs if r.get("seconds")]
    if len(secs) < len(flows) or not max(secs):
        return None
    return sum(f.bytes for f in flows) / max(secs), len(flows) * mbps * 1e6 / 8, max(secs)


def host_capacity(agents, cp, hb_mbps: float, nic_mbps: float | None = None) -> dict | None:
    """What this host forwards at once, measured in the run (None: no HB links, or a runtime
    without persistent agents), before the timed steps, each probe HOST_PROBE_S worth of bytes
    at the shaped rate: over HB, every GPU to the next GPU of its HB domain; over the rails,
    every GPU to the GPU of its rail in the next HB domain. Aggregate bytes / the slowest
    flow's seconds, beside what the shaping allows (``share``, ``nic_share``)."""
    if not isinstance(agents, FlowAgents) or not hb_mbps:
        return None
    doms: dict[int, list[str]] = {}
    for g in sorted(cp.gpus.values(), key=lambda g: (g.hb, g.name)):
        if g.hb_ip:
            doms.setdefault(g.hb, []).append(g.name)
    nbytes = max(256 * 1024, int(hb_mbps * 1e6 / 8 * HOST_PROBE_S))
    hb = _probe(agents, [Flow(d[i], d[(i + 1) % len(d)], None, nbytes, BASE_PORT, 0, True)
                         for d in doms.values() if len(d) > 1 for i in range(len(d))], hb_mbps)
    if hb is None:
        return None
    out = {"hb_bytes_per_s": round(hb[0]), "hb_shaped_bytes_per_s": round(hb[1]), "share": round(hb[0] / hb[1], 3),
           "flows": sum(len(d) for d in doms.values() if len(d) > 1), "bytes_per_flow": nbytes, "seconds": round(hb[2], 4),
           "how": "over HB every GPU to the next GPU of its HB domain, over the rails every GPU to its rail's GPU in"
                  " the next HB domain, each probe all at once before the timed steps; aggregate bytes / the"
                  " slowest flow's seconds"}
    rails: dict[int, list[str]] = {}
    for g in sorted(cp.gpus.values(), key=lambda g: (g.rail, g.hb, g.name)):
        rails.setdefault(g.rail, []).append(g.name)
    if nic_mbps:
        nb = max(256 * 1024, int(nic_mbps * 1e6 / 8 * HOST_PROBE_S))
        nic = _probe(agents, [Flow(r[i], r[(i + 1) % len(r)], None, nb, BASE_PORT, 0)
                              for r in rails.values() if len(r) > 1 for i in range(len(r))], nic_mbps)
        if nic is not None:
            out.update({"nic_bytes_per_s": round(nic[0]), "nic_shaped_bytes_per_s": round(nic[1]),
                        "nic_share": round(nic[0] / nic[1], 3), "nic_bytes_per_flow": nb})
            out["seconds"] = round(out["seconds"] + nic[2], 4)
    return out


def preflight(lab: Lab, rt: Runtime, converge: bool, progress: Callable[[str], None], what: str) -> dict:
    """The lab as the run found it, for the report (``preflight``): the faults recorded by `lab fault`
    and, with ``converge``, the bgp/reachability checks still failing after the bounded wait for
    convergence (first ten named). It was a progress line only: a run on a faulted lab reported
    its verdict without a word of it, in the text and in the JSON."""
    from . import faults

    out = {"faults": faults.active(lab, rt), "checks_failed": None, "failures": []}
    if converge:
        # converged first (bounded poll): BGP sessions up, subnets installed, every rail pair answers;
        # with faults set, until what fails stops changing (checker.collect_switches)
        from ..checks import checker as checks_run

        t = time.monotonic()
        pre = checks_run.run(lab, rt, timeout=60.0, checks=("bgp", "reachability"), faulted=bool(out["faults"]))
        out["seconds"] = round(time.monotonic() - t, 2)
        out["checks_failed"] = pre.failed
        out["failures"] = [f"{r.id}: {r.detail}"[:200] for r in pre.results if not r.passed][:10]
        if pre.failed:
            progress(f"warning: {pre.failed} reachability/bgp checks fail before {what}")
    return out


def preflight_lines(rep: dict) -> list[str]:
    """The report's line for a lab that was not healthy when the run started (pure; none when it was)."""
    pf = rep.get("preflight") or {}
    parts = []
    if pf.get("faults"):
        parts.append(f"faults set: {', '.join(pf['faults'])}")
    if pf.get("checks_failed"):
        waited = f" {pf['seconds']:g} s" if pf.get("seconds") is not None else ""
        parts.append(f"{pf['checks_failed']} reachability/bgp checks failed after waiting{waited} for convergence"
                     + (f" (first: {pf['failures'][0]})" if pf.get("failures") else ""))
    return [f"  warning: the lab was not healthy when the run started: {'; '.join(parts)}"] if parts else []


def run(lab: Lab, rt: Runtime, pattern: str, nbytes: int | None = None, *, schedule: str = "phased",
        converge: bool = True, window: str | None = None, streams: int | None = None, tolerance: float = 0.10,
        cpu_sampler: host.Sampler | None = None, progress: Callable[[str], None] = lambda s: None) -> dict:
    """Run a pattern. ``converge=False`` skips the bgp/reachability wait (a caller that
    has just waited for it, e.g. between repetitions)."""
    deployed_status(rt, lab)

    cp = checks_plan.load(lab)
    nic_plan, hb_plan = link_rates(lab)
    nic_tc, hb_tc = shaped_rates(rt, lab, cp)
    nic = nic_tc or nic_plan
    hb = hb_tc or hb_plan
    streams = streams or nccl_streams(float(lab.fabric.design.nic_gbps or 400))
    if pattern != "all-to-all":
        schedule = "concurrent"
    nbytes = nbytes or default_bytes(cp, pattern, nic, schedule=schedule)
    flows = plan_flows(cp, pattern, nbytes, schedule)
    steps = steps_of(flows)
    m = model(cp, flows, nic, hb)
    progress(f"{pattern} ({schedule}): {len(flows)} flows of {nbytes:,} bytes in {len(steps)} step(s),"
             f" {streams} streams each; NIC {nic:g} Mbit/s, HB {hb:g} Mbit/s; model {m['pipelined']:.2f} s")
    before = preflight(lab, rt, converge, progress, "traffic starts")
    stop_servers(lab, rt)  # leftovers of an interrupted run
    dls, rated = placement(lab, rt, nic)
    cpu = host.CpuMeter(cpu_sampler or host.proc_stat_sample)
    t_run = time.monotonic()
    agents = traffic_agents(lab, rt, cp, streams, window)
    try:
        capacity = host_capacity(agents, cp, hb, nic)
        ran = run_steps(lab, rt, cp, steps, window=window, nic_mbps=nic, streams=streams, agents=agents,
                        links=LinkCounters(lab, rt, dls), cpu=cpu, progress=progress)
    finally:
        agents.stop()
    ran.overhead["agents_start_s"] = round(agents.start_s, 3)
    ran.overhead["agents_stop_s"] = round(agents.stop_s, 3)
    total_s = time.monotonic() - t_run
    if capacity:
        ran.overhead["host_capacity_probe_s"] = capacity["seconds"]
    step_rep = ran.steps
    for i, sr in enumerate(step_rep):
        ideal = m["steps"][i]["pipelined"]
        pl = placed_step(ideal, sr.get("link_bytes") or {}, rated)
        sr["measured_s"] = sr["seconds"]
        sr["model_ideal_s"] = round(ideal, 4)
        sr["model_placed_s"] = round(pl["placed_s"], 4)
        sr["model_host_s"] = round(host_step(pl["placed_s"], hb_bytes(steps[i]), capacity, nic_bytes(steps[i])), 4)
        sr["model_s"] = sr["model_ideal_s"]
        sr["model_store_forward_s"] = round(m["steps"][i]["store_forward"], 4)
        sr["ecmp"], sr["bound"] = pl["ecmp"], pl["bound"]
        sr["link_bytes"] = {k: v for k, v in sorted((sr.get("link_bytes") or {}).items()) if v}
    fl = ran.flows
    failed = sum(1 for r in fl if r.get("error") or not r.get("seconds"))
    placed = round(sum(s["model_placed_s"] for s in step_rep), 4)
    host_s = round(sum(s["model_host_s"] for s in step_rep), 4)
    cpu_rep = cpu.report()
    verdict = judge(ran.network_s if step_rep else None, placed, tolerance, bool(failed), cpu_rep, host_s)
    from . import faults

    waited = agents_waited(agents, faults.dead_nics(lab, rt, {g.name: g.port for g in cp.gpus.values()})
                           if getattr(agents, "failed_pairs", None) else {})
    overhead_s = round(max(0.0, total_s - ran.network_s), 3)
    return {
        "lab": lab.name, "pattern": pattern, "topology": cp.topology, "schedule": schedule,
        "verdict": verdict, "tolerance": tolerance, "preflight": before,
        "network_s": ran.network_s,
        "overhead_s": overhead_s,
        "overhead": overhead_parts(ran.overhead, overhead_s),
        "agents_waited": waited,
        "wall_s": round(total_s, 3),
        "model_ideal_s": round(m["pipelined"], 4),
        "model_placed_s": placed,
        "model_host_s": host_s,
        "host_capacity": capacity,
        "agents": agents_kind(agents),
        "ecmp_imbalance": ecmp_finding(step_rep),
        "placement_bound": bound_finding(step_rep),
        "why": why(ran.network_s, m["pipelined"], placed, ecmp_finding(step_rep), cpu_rep, failed, host_s, capacity,
                   tolerance, bound_finding(step_rep)),
        "host_cpu": cpu_rep,
        "streams": streams,
        "completion_s": round(ran.completion_s, 3),
        "steps_completion_s": ran.network_s,
        "model_completion_s": round(m["pipelined"], 3),
        "model_store_forward_s": round(m["store_forward"], 3),
        "model": "ideal: per step, max over shaped links (per-GPU NIC and HB, each direction) of bytes/rate,"
                 " summed over steps (perfect balance above the NICs); placed: per step the larger of the ideal"
                 " and the busiest shaped link's counted bytes / its rate (GPU NICs and HB ports, a forwarding"
                 " sibling's included, and switch-to-switch links: the flows' actual paths and ECMP placement);"
                 " store_forward adds each step's HB time before its rail time (PXN, the paper's convention)",
        "nic_gbps_emulated": round(nic / 1000, 6), "hb_gbps_emulated": round(hb / 1000, 6),
        "nic_hb_ratio": round(nic / hb, 4) if hb else None,
        "bytes_per_flow": nbytes,
        "failed_flows": failed,
        "steps": step_rep,
        "flows": fl,
    }


def ecmp_finding(steps: list[dict]) -> dict | None:
    """The run's ECMP imbalance (pure): the step whose busiest switch-to-switch link carried the
    most against the mean of its ECMP set (the switch's uplinks it was hashed among, or the
    links into its lower switch from above), None without such links."""
    rated = [s for s in steps if s.get("ecmp")]
    if not rated:
        return None
    worst = max(rated, key=lambda s: s["ecmp"]["imbalance"])
    mean = sum(s["ecmp"]["imbalance"] for s in rated) / len(rated)
    return {"max": worst["ecmp"]["imbalance"], "mean": round(mean, 3), "step": worst["step"],
            "busiest_link": worst["ecmp"]["busiest"], "steps_over_1_25": sum(1 for s in rated if s["ecmp"]["imbalance"] > 1.25)}


def bound_finding(steps: list[dict]) -> dict | None:
    """The link that bounds the run's longest step under the placement (pure): that step's
    busiest link (``bound`` of placed_step), with the step; None when nothing was counted."""
    counted = [s for s in steps if s.get("bound")]
    if not counted:
        return None
    worst = max(counted, key=lambda s: s.get("model_placed_s") or 0.0)
    return {**worst["bound"], "step": worst["step"]}


def why(network_s: float, ideal_s: float, placed_s: float, ecmp: dict | None, cpu: dict, failed: int,
        host_s: float | None = None, capacity: dict | None = None, tolerance: float = 0.10,
        bound: dict | None = None) -> str:
    """One line: why the measured figure differs from the model (pure). ``bound``: bound_finding."""
    if failed:
        return f"{failed} flow(s) failed"
    parts = []
    if cpu.get("saturated"):
        parts.append(f"host CPU {100 * cpu['busy_share']:.0f}% busy: timing judges the host, not the fabric")
    if capacity and host_bound(placed_s, host_s, tolerance):
        parts.append(f"the host forwarded HB at {100 * capacity['share']:.0f}% of the shaped rate"
                     f" ({capacity['hb_bytes_per_s'] * 8 / 1e9:.2f} of {capacity['hb_shaped_bytes_per_s'] * 8 / 1e9:.2f}"
                     f" Gbit/s)" + (f", the rails at {100 * capacity['nic_share']:.0f}%" if "nic_share" in capacity else "")
                     + f": {host_s:.2f} s at what it delivers ({100 * (network_s / host_s - 1):+.0f}% measured)")
    over = f"+{100 * (placed_s / ideal_s - 1):.0f}% over perfect balance" if ideal_s else "beyond perfect balance"
    if bound and bound["kind"] == "gpu" and placed_s > ideal_s * 1.02:
        parts.append(f"the busiest link is a GPU's: {bound['link']} carried {bound['bytes'] / 1e6:.1f} MB in step"
                     f" {bound['step']} ({bound['seconds']:.2f} s at its shaped rate; {over})")
    elif ecmp and placed_s > ideal_s * 1.02:
        parts.append(f"ECMP put up to {ecmp['max']:.2f}x its set's mean on one switch link ({over})")
    rest = network_s / placed_s - 1 if placed_s else 0.0
    parts.append(f"{100 * rest:+.0f}% beyond the placement"
                 + ("" if cpu.get("saturated") else f" (TCP ramp and pacing; host CPU {100 * (cpu.get('busy_share') or 0):.0f}%)"))
    return "; ".join(parts)


def host_lines(rep: dict) -> list[str]:
    """The host-capacity line of a report (pure; none when it was not measured)."""
    c = rep.get("host_capacity")
    if not c:
        return []
    key = "communication_model_host_s" if "communication_model_host_s" in rep else "model_host_s"
    nic = (f"; rails {c['nic_bytes_per_s'] * 8 / 1e9:.2f} Gbit/s, {100 * c['nic_share']:.0f}% of the shaped"
           f" {c['nic_shaped_bytes_per_s'] * 8 / 1e9:.2f}" if "nic_share" in c else "")
    return [f"  host capacity: HB forwarded at {c['hb_bytes_per_s'] * 8 / 1e9:.2f} Gbit/s by {c['flows']} flows at once,"
            f" {100 * c['share']:.0f}% of the shaped {c['hb_shaped_bytes_per_s'] * 8 / 1e9:.2f} Gbit/s{nic};"
            f" model at what the host delivers {rep[key]:.2f} s"]


def format_report(rep: dict) -> str:
    fl = rep["flows"]
    ok = [f for f in fl if f.get("seconds")]
    total = sum(f["bytes"] for f in fl)
    cpu = rep.get("host_cpu") or {}
    lines = [f"lab {rep['lab']} {rep['pattern']} ({rep['topology']}, {rep.get('schedule', 'concurrent')},"
             f" {len(rep.get('steps') or [1])} step(s), {rep.get('streams', 1)} streams a flow): {len(fl)} flows,"
             f" {total:,} bytes received",
             f"  network {rep['network_s']:.2f} s measured (slowest flow of each step, summed); model"
             f" {rep['model_placed_s']:.2f} s under the flows' placement, {rep['model_ideal_s']:.2f} s perfectly"
             f" balanced ({rep['model_store_forward_s']:.2f} s store-and-forward); NIC {rep['nic_gbps_emulated'] * 1000:g}"
             f" Mbit/s, HB {rep['hb_gbps_emulated'] * 1000:g} Mbit/s",
             f"  overhead {rep['overhead_s']:.2f} s apart from it ("
             + ", ".join(f"{k.removesuffix('_s').replace('_', ' ')} {v:.2f} s" for k, v in rep.get("overhead", {}).items())
             + f"); wall: run {rep.get('wall_s', 0.0):.2f} s, its steps {rep['completion_s']:.2f} s (network and barriers)"]
    lines += waited_line(rep.get("agents_waited"))
    lines += preflight_lines(rep)
    lines += host_lines(rep)
    e = rep.get("ecmp_imbalance")
    if e:
        lines.append(f"  ECMP imbalance: busiest switch link {e['max']:.2f}x the mean of its ECMP set (step {e['step']},"
                     f" {e['busiest_link']}); mean over steps {e['mean']:.2f}x; {e['steps_over_1_25']} step(s) above 1.25x")
    if cpu.get("busy_share") is not None:
        lines.append(f"  host CPU {100 * cpu['busy_share']:.0f}% busy during the timed steps (busiest step"
                     f" {100 * cpu['busiest_window']:.0f}%; inconclusive at {100 * cpu['limit']:.0f}%)")
    if ok:
        secs = sorted(f["seconds"] for f in ok)
        lines.append(f"  flow seconds: min {secs[0]:.2f}, median {secs[len(secs) // 2]:.2f}, max {secs[-1]:.2f};"
                     f" forwarded through an HB domain: {sum(1 for f in fl if f['via'])}")
    for f in fl:
        if f.get("error") or not f.get("seconds"):
            lines.append(f"  FAILED {f['src']}->{f['dst']}: {f.get('error', 'no result')[:120]}")
    # the rule as the verdict applies it: the absolute slack passes a short run the percentage alone would not
    lines.append(f"  verdict: {rep['verdict']} (pass: measured within {100 * rep['tolerance']:g}% of the placement-aware"
                 f" model, plus {ABS_SLACK_S * 1000:g} ms): {rep['why']}")
    return "\n".join(lines)
