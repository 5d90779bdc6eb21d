"""Persistent traffic agents: one thread per GPU namespace, sockets opened once, no process per flow.

Through the runtime's door (a thread that has entered a namespace opens a socket
that lives there, as the probe agent does) this process opens, before the first
timed step, one listening socket per (destination, address, port) and one TCP
connection per stream of every transfer: ``streams`` connections per (source,
destination address, port), each its own 5-tuple for ECMP to hash, kept open and
reused by every step (NCCL also keeps its connections for the job's life).

Each GPU has an agent thread with a selector over its sockets. A step hands each
agent the bytes its connections send and receive; once every agent has
registered its share (the barrier) the step starts at one instant ``t0`` and
every agent sends and reads with plain non-blocking sockets. A flow's time is
``t0`` to the last of its bytes *read* by the receiver (every planned byte is
read: nothing is extrapolated). The step's wall time (hand-out to the last agent's
report) minus its slowest flow is the barrier overhead, reported apart.

A runtime whose nodes this process cannot enter (no door) keeps the iperf3 clients.
"""

from __future__ import annotations

import errno
import queue
import re
import selectors
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

from ..runtime.protocol import NodeDoor

CHUNK = 256 * 1024  # bytes per send/recv call: large enough that Python's per-call cost is noise
BACKLOG = 1024  # a listener's accept queue: every stream of every flow to it is connected before one accept
CONNECT_TIMEOUT_S = 5.0
TCP_INFO_LEN = 104  # up to tcpi_total_retrans (linux/tcp.h)


def window_bytes(window: str) -> int:
    """iperf3's -w form ("64K", "1M", "131072") in bytes (pure); ValueError otherwise."""
    m = re.fullmatch(r"(\d+)([KkMm]?)", window.strip())
    if not m:
        raise ValueError(f"window {window!r} is not a number of bytes with an optional K or M")
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]


def tcp_stats(sock: socket.socket) -> tuple[float | None, int | None]:
    """(smoothed RTT in ms, retransmitted segments in all) from TCP_INFO, (None, None) if unreadable."""
    try:
        raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN)
    except OSError:
        return None, None
    if len(raw) < TCP_INFO_LEN:
        return None, None
    rtt_us = struct.unpack_from("I", raw, 8 + 15 * 4)[0]  # tcpi_rtt: 8 bytes of u8 fields, then u32s
    total_retrans = struct.unpack_from("I", raw, 8 + 23 * 4)[0]  # tcpi_total_retrans
    return rtt_us / 1000, total_retrans


@dataclass
class Conn:
    """One stream of a transfer: the sender's socket (in the source's namespace) and the
    receiver's accepted socket (in the destination's)."""

    src: str
    dst: str
    tx: socket.socket
    rx: socket.socket
    retrans: int = 0  # TCP_INFO total_retrans when last read


@dataclass
class _Task:
    """What one agent does in a step: sockets to send on, sockets to read from."""

    sends: list = field(default_factory=list)  # [sock, bytes left, flow index]
    recvs: list = field(default_factory=list)  # [sock, bytes left, flow index]


class _Agent:
    """The thread of one GPU: waits for a step, then moves its bytes with one selector."""

    def __init__(self, node: str, pool: "SocketAgents"):
        self.node, self.pool = node, pool
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name=f"traffic-agent:{node}", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        zeros = memoryview(bytes(CHUNK))
        buf = bytearray(CHUNK)
        view = memoryview(buf)
        while True:
            item = self.inbox.get()
            if item is None:
                return
            task, go, deadline_s = item
            self.pool._report(self.node, self._run(task, go, deadline_s, zeros, view))

    def _run(self, task: _Task, go: threading.Event, deadline_s: float, zeros, view) -> dict:
        """{flow index: {"sent", "read", "end", "error"}} of this agent's side of the step."""
        out: dict[int, dict] = {}
        sel = selectors.DefaultSelector()
        try:
            for kind, items in (("send", task.sends), ("recv", task.recvs)):
                for it in items:
                    rec = out.setdefault(it[2], {"sent": 0, "read": 0, "end": None, "error": None})
                    try:
                        if it[1] > 0:
                            sel.register(it[0], selectors.EVENT_WRITE if kind == "send" else selectors.EVENT_READ,
                                         (kind, it))
                    except (OSError, ValueError) as exc:  # a socket closed under it: that flow fails, not the step
                        rec["error"] = f"{kind} on {self.node}: {exc}"
            self.pool._ready()
            go.wait()
            deadline = time.monotonic() + deadline_s
            open_ = len(sel.get_map())
            while open_:
                left = deadline - time.monotonic()
                if left <= 0:
                    for key in list(sel.get_map().values()):
                        kind, it = key.data
                        out[it[2]]["error"] = (f"timed out after {deadline_s:.0f} s with {it[1]:,} bytes"
                                               f" {'unsent' if kind == 'send' else 'not received'}")
                    break
                for key, _ev in sel.select(timeout=min(left, 1.0)):
                    kind, it = key.data
                    rec = out[it[2]]
                    try:
                        if kind == "send":
                            n = it[0].send(zeros[:min(it[1], CHUNK)])
                            rec["sent"] += n
                        else:
                            n = it[0].recv_into(view, min(it[1], CHUNK))
                            if n == 0:
                                raise ConnectionResetError(errno.ECONNRESET, "the sender closed the connection")
                            rec["read"] += n
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError as exc:
                        rec["error"] = f"{kind} on {self.node}: {exc.strerror or exc}"
                        sel.unregister(it[0])
                        open_ -= 1
                        continue
                    it[1] -= n
                    if it[1] <= 0:
                        sel.unregister(it[0])
                        open_ -= 1
                        if kind == "recv":
                            t = time.monotonic()
                            rec["end"] = t if rec["end"] is None else max(rec["end"], t)
        finally:
            sel.close()
        return out


class SocketAgents:
    """The run's traffic agents (see the module docstring): ``ensure`` opens what the flows
    need (untimed, ``start_s``), ``run_step`` times one step, ``stop`` closes everything."""

    kind = "sockets"

    def __init__(self, door: NodeDoor, netns: dict[str, str], *, streams: int, window: int | None = None):
        self.door, self.netns = door, netns  # GPU name -> its namespace
        self.streams, self.window = max(1, streams), window
        self.listeners: dict[tuple[str, str, int], socket.socket] = {}  # (dst, address, port)
        self.conns: dict[tuple[str, str, str, int], list[Conn]] = {}  # (src, dst, address, port) -> one per stream
        self.agents: dict[str, _Agent] = {}
        self.start_s = 0.0  # seconds spent opening listeners and connections
        self.stop_s = 0.0
        self._cv = threading.Condition()
        self._ready_n = 0
        self._reports: dict[str, dict] = {}
        self.unreachable: dict[tuple[str, str, str, int], str] = {}  # of the last ensure: why not connected
        # start-up time lost to connections that failed (each ensure whose connects had a failure: the
        # healthy ones take milliseconds, the phase waited for the failed ones' timeouts), and the pairs
        self.failed_wait_s = 0.0
        self.failed_pairs: dict[tuple[str, str], str] = {}  # (src, dst) -> the error, last seen

    # -- set-up, untimed ------------------------------------------------------------------

    def _buffers(self, s: socket.socket) -> None:
        """Fixed send and receive buffers (iperf3's -w); None: the kernel autotunes them."""
        if self.window is None:
            return
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.window)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.window)

    def ensure(self, wants: list[tuple[str, str, str, int]]) -> None:
        """Open a listener per (dst, address, port) and ``streams`` connections per
        (src, dst, address, port) of ``wants`` not open yet; raise OSError naming the pair
        that cannot connect."""
        wants = sorted(set(w for w in wants if w not in self.conns))
        if not wants:
            return
        t0 = time.monotonic()
        for src, dst, _a, _p in wants:
            for n in (src, dst):
                if n not in self.agents:
                    self.agents[n] = _Agent(n, self)
        new_l = sorted({(d, a, p) for _s, d, a, p in wants} - set(self.listeners))

        def listen(addr: str, port: int):
            def fn() -> socket.socket:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                self._buffers(s)  # accepted sockets inherit the receive buffer, so the window scale
                s.bind((addr, port))
                s.listen(BACKLOG)
                return s
            return fn

        got = self.door.call_many([(self.netns[d], listen(a, p)) for d, a, p in new_l], workers=8)
        for key, s in zip(new_l, got):
            if isinstance(s, BaseException):
                raise OSError(f"listening on {key[1]}:{key[2]} in {key[0]} failed: {s}")
            self.listeners[key] = s

        def connect(addr: str, port: int):
            def fn() -> list[socket.socket]:
                out = []
                for _ in range(self.streams):
                    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    self._buffers(s)
                    s.settimeout(CONNECT_TIMEOUT_S)
                    try:
                        s.connect((addr, port))
                    except OSError:
                        s.close()
                        for o in out:
                            o.close()
                        raise
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    out.append(s)
                return out
            return fn

        t_conn = time.monotonic()
        got = self.door.call_many([(self.netns[s], connect(a, p)) for s, _d, a, p in wants], workers=8)
        self.unreachable = {}
        for want, socks in zip(wants, got):
            if isinstance(socks, BaseException):  # the flows on it fail (a fault, a route missing); retried next step
                self.unreachable[want] = f"{want[0]} cannot connect to {want[1]} at {want[2]}:{want[3]}: {socks}"
                self.failed_pairs[(want[0], want[1])] = getattr(socks, "strerror", None) or str(socks)
        if self.unreachable:
            self.failed_wait_s += time.monotonic() - t_conn
        wants, got = zip(*[(w, g) for w, g in zip(wants, got) if w not in self.unreachable]) if len(
            self.unreachable) < len(wants) else ((), ())
        # several sources share a listener: accept all its connections, then pair them by address
        expect: dict[tuple[str, str, int], int] = {}
        for (_s, d, a, p), socks in zip(wants, got):
            expect[(d, a, p)] = expect.get((d, a, p), 0) + len(socks)
        accepted: dict[tuple, socket.socket] = {}
        for key, n in sorted(expect.items()):
            lst = self.listeners[key]
            lst.settimeout(CONNECT_TIMEOUT_S)
            for _ in range(n):
                try:
                    r, peer = lst.accept()
                except OSError as exc:
                    raise OSError(f"{key[0]} accepted {_} of {n} connections on {key[1]}:{key[2]}: {exc}") from exc
                accepted[(key, peer)] = r
        for (src, dst, a, p), socks in zip(wants, got):
            conns = []
            for s in socks:
                r = accepted.pop(((dst, a, p), s.getsockname()), None)
                if r is None:
                    raise OSError(f"{dst} did not accept the connection of {src} to {a}:{p}")
                conns.append(Conn(src, dst, s, r))
            for c in conns:
                c.tx.setblocking(False)
                c.rx.setblocking(False)
                c.retrans = tcp_stats(c.tx)[1] or 0
            self.conns[(src, dst, a, p)] = conns
        self.start_s += time.monotonic() - t0

    # -- one timed step -------------------------------------------------------------------

    def _ready(self) -> None:
        with self._cv:
            self._ready_n += 1
            self._cv.notify_all()

    def _report(self, node: str, rec: dict) -> None:
        with self._cv:
            self._reports[node] = rec
            self._cv.notify_all()

    def run_step(self, flows: list[tuple[str, str, str, int, int]], deadline_s: float) -> tuple[list[dict], float, float]:
        """Move each flow's bytes ((src, dst, address, port, bytes); split over its streams).
        Returns (one result per flow, t0, wall seconds from hand-out to the last report);
        a result: seconds (t0 to its last byte read), bytes (read), bytes_written, and
        rtt_ms / retransmits of its streams, or error."""
        self.ensure([f[:4] for f in flows])  # (re)connections count in start_s, not in the step
        t_hand = time.monotonic()
        tasks: dict[str, _Task] = {}
        for i, (src, dst, a, p, nbytes) in enumerate(flows):
            conns = self.conns.get((src, dst, a, p), [])
            if not conns:  # unreachable: the flow fails below
                continue
            share, extra = divmod(nbytes, len(conns))
            for k, c in enumerate(conns):
                b = share + (k < extra)
                if not b:
                    continue
                tasks.setdefault(src, _Task()).sends.append([c.tx, b, i])
                tasks.setdefault(dst, _Task()).recvs.append([c.rx, b, i])
        go = threading.Event()
        with self._cv:
            self._ready_n, self._reports = 0, {}
        for node, task in tasks.items():
            self.agents[node].inbox.put((task, go, deadline_s))
        with self._cv:  # the barrier: every agent has its sockets registered
            self._cv.wait_for(lambda: self._ready_n == len(tasks), timeout=deadline_s)
        t0 = time.monotonic()
        go.set()
        with self._cv:
            self._cv.wait_for(lambda: len(self._reports) == len(tasks), timeout=deadline_s + 10)
            reports = dict(self._reports)
        wall = time.monotonic() - t_hand
        results = []
        for i, (src, dst, a, p, nbytes) in enumerate(flows):
            s, r = (reports.get(src) or {}).get(i, {}), (reports.get(dst) or {}).get(i, {})
            res: dict = {"bytes_written": s.get("sent", 0), "bytes": r.get("read", 0)}
            err = self.unreachable.get((src, dst, a, p)) or s.get("error") or r.get("error") or (None if src in reports and dst in reports
                                                        else "the agent did not report (stuck past the deadline)")
            if nbytes == 0 and not self.unreachable.get((src, dst, a, p)):
                r, err = {"end": t0}, None
            if err is None and (r.get("end") is None or res["bytes"] != nbytes):
                err = f"received {res['bytes']:,} of {nbytes:,} bytes"
            if err:
                res["error"] = err
                self._drop((src, dst, a, p))  # its streams hold unread bytes: reconnect before reuse
            else:
                sec = r["end"] - t0
                res["seconds"] = round(sec, 4)
                res["seconds_at_rate"] = res["seconds"]  # every planned byte was read: nothing extrapolated
                res["mbps"] = round(nbytes * 8 / sec / 1e6, 3) if sec > 0 else None
                rtts, retrans = [], 0
                for c in self.conns.get((src, dst, a, p), []):
                    rtt, tot = tcp_stats(c.tx)
                    if rtt is not None:
                        rtts.append(rtt)
                        retrans += tot - c.retrans
                        c.retrans = tot
                if rtts:
                    res["rtt_ms"] = round(sum(rtts) / len(rtts), 2)
                    res["retransmits"] = retrans
            results.append(res)
        return results, t0, wall

    def _drop(self, key) -> None:
        for c in self.conns.pop(key, []):
            c.tx.close()
            c.rx.close()

    def stop(self) -> None:
        t0 = time.monotonic()
        for a in self.agents.values():
            a.inbox.put(None)
        for a in self.agents.values():
            a.thread.join(timeout=5)
        self.agents.clear()
        for key in list(self.conns):
            self._drop(key)
        for s in self.listeners.values():
            s.close()
        self.listeners.clear()
        self.stop_s += time.monotonic() - t0
