"""The probe agent: pre-built probe frames sent and sniffed inside lab namespaces.

One process probes the whole lab. Sockets are opened inside each node's
namespace from a short-lived thread that has entered it with setns
(the runtime's :class:`~railonly.emulation.runtime.protocol.NodeDoor`): a socket belongs to the
namespace it was opened in, so after that the main thread sends and receives
on thousands of them with one selector, without a process per namespace and
without scapy's per-packet build cost (docs/lab/index.md: ~1,100 packets/s built,
~600k/s sent pre-built). scapy is used once, for the RoCEv2 BTH header every
probe carries (UDP 4791, ``scapy.contrib.roce.BTH``); the rest are patched
bytes. Probes go only to addresses of the lab's own namespaces.

Per GPU namespace: a UDP socket on 4791 (receives probes), an IPPROTO_RAW
socket (sends probes with a chosen TTL and IP id, routed by the kernel), a
raw ICMP socket (time-exceeded answers for the path check). Per cabled port
(GPU rail NICs and switch ports): an AF_PACKET socket (neighbour frames,
isolation frames sent on and seen at the wire).

Evidence comes back as plain sets and dicts; judging is in checks.judge.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import ipaddress
import selectors
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

from ..runtime.protocol import NodeDoor

ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
ETH_P_LLDP = 0x88CC
LLDP_MAC = bytes.fromhex("0180c200000e")  # nearest-bridge group: bridges never forward it
PACKET_OUTGOING = 4
MAGIC = b"ROLP"
ROCE_PORT = 4791
SPORT = 49152
RCVBUF = 4 << 20

# probe kinds (one byte in the tag)
K_REACH, K_PATH, K_ISO_ROUTED, K_ISO_BCAST, K_ISO_UNKNOWN = 1, 2, 3, 4, 5

_BTH: bytes | None = None


def bth() -> bytes:
    """A RoCEv2 Base Transport Header (RC SEND-only), built once with scapy."""
    global _BTH
    if _BTH is None:
        from scapy.contrib.roce import BTH  # slow import: only when probing

        _BTH = bytes(BTH(opcode=0x04, dqpn=0x000001, psn=0, icrc=0))[:12]  # header; ICRC goes last
    return _BTH


@functools.lru_cache(maxsize=64)
def lab_tag(lab: str) -> bytes:
    return hashlib.sha256(lab.encode()).digest()[:4]  # cached: parse_payload runs per received probe


# --- pure frame building ---------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _head(lab: str) -> bytes:
    # what every probe of a lab starts with; built once (payload runs per probe: 130k at 1,024 GPUs)
    return bth() + MAGIC + lab_tag(lab)


_TAG = struct.Struct("!BIB4x")  # kind, idx, ttl, then the ICRC (not computed)


def payload(lab: str, kind: int, idx: int, ttl: int = 0) -> bytes:
    return _head(lab) + _TAG.pack(kind, idx, ttl)


def parse_payload(data: bytes, lab: str) -> tuple[int, int, int] | None:
    """(kind, idx, ttl) of a probe payload of this lab, else None."""
    head = _head(lab)
    off = len(head)
    if len(data) < off + 6 or data[off - 8 : off] != head[-8:]:  # MAGIC + the lab's tag
        return None
    return struct.unpack_from("!BIB", data, off)


def _csum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


_IP_UDP = struct.Struct("!BBHHHBBH4s4sHHHH")
_aton = functools.lru_cache(maxsize=1 << 16)(socket.inet_aton)  # each GPU's address meets 127 peers


def ip_udp(src: str, dst: str, body: bytes, *, ttl: int = 64, ident: int = 1, checksum: bool = False) -> bytes:
    """IPv4 + UDP (dport 4791) bytes; the kernel fills the IP checksum on raw sends."""
    n = 8 + len(body)
    pkt = _IP_UDP.pack(0x45, 0, 20 + n, ident & 0xFFFF, 0x4000, ttl, 17, 0, _aton(src), _aton(dst),
                       SPORT, ROCE_PORT, n, 0) + body
    if checksum:
        pkt = pkt[:10] + struct.pack("!H", _csum(pkt[:20])) + pkt[12:]
    return pkt


def ether(dst: bytes, src: bytes, ethertype: int, body: bytes) -> bytes:
    return dst + src + struct.pack("!H", ethertype) + body


def lldp_frame(src_mac: bytes, lab: str, node: str, port: str) -> bytes:
    """An LLDP frame: chassis = node, port = port, system name = the lab's tag."""

    def tlv(t: int, v: bytes) -> bytes:
        return struct.pack("!H", (t << 9) | len(v)) + v

    body = (tlv(1, b"\x07" + node.encode()) + tlv(2, b"\x07" + port.encode()) + tlv(3, struct.pack("!H", 120))
            + tlv(5, b"railonly:" + lab_tag(lab).hex().encode()) + tlv(0, b""))
    return ether(LLDP_MAC, src_mac, ETH_P_LLDP, body)


def parse_lldp(frame: bytes, lab: str) -> tuple[str, str] | None:
    """(chassis, port) of an LLDP frame of this lab, else None."""
    if len(frame) < 16 or frame[12:14] != b"\x88\xcc":
        return None
    off, out = 14, {}
    while off + 2 <= len(frame):
        h = struct.unpack_from("!H", frame, off)[0]
        t, ln = h >> 9, h & 0x1FF
        v = frame[off + 2 : off + 2 + ln]
        if t == 0:
            break
        out[t] = v
        off += 2 + ln
    if out.get(5) != b"railonly:" + lab_tag(lab).hex().encode() or 1 not in out or 2 not in out:
        return None
    return out[1][1:].decode(errors="replace"), out[2][1:].decode(errors="replace")


def parse_icmp(pkt: bytes) -> tuple[str, int, str, int] | None:
    """(responder, icmp type, original dst, original IP id) of an ICMP error about a 4791 probe."""
    if len(pkt) < 20:
        return None
    ihl = (pkt[0] & 0x0F) * 4
    if len(pkt) < ihl + 8 + 28:
        return None
    typ = pkt[ihl]
    if typ not in (3, 11):
        return None
    inner = pkt[ihl + 8 :]
    iihl = (inner[0] & 0x0F) * 4
    if inner[9] != 17 or len(inner) < iihl + 4 or struct.unpack_from("!H", inner, iihl + 2)[0] != ROCE_PORT:
        return None
    ident = struct.unpack_from("!H", inner, 4)[0]
    return socket.inet_ntoa(pkt[12:16]), typ, socket.inet_ntoa(inner[16:20]), ident


# --- sockets inside namespaces ------------------------------------------------------


def _gpu_socks() -> tuple[socket.socket, socket.socket, socket.socket]:
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    udp.setsockopt(socket.SOL_SOCKET, 33, RCVBUF)  # SO_RCVBUFFORCE
    udp.bind(("0.0.0.0", ROCE_PORT))
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    raw.setsockopt(socket.SOL_SOCKET, 32, RCVBUF)  # SO_SNDBUFFORCE
    icmp = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    icmp.setsockopt(socket.SOL_SOCKET, 33, RCVBUF)
    for s in (udp, raw, icmp):
        s.setblocking(False)
    return udp, raw, icmp


# classic BPF: keep incoming LLDP and incoming IPv4/UDP-4791 (IHL 5) isolation
# probes, drop the rest in the kernel: an L2 rail's ARP storm and the 130k
# reachability probes crossing a switch would otherwise reach every socket
# (measured: 2M useless reads at 1,024 GPUs), and outgoing copies are never evidence
_KIND_OFF = 14 + 20 + 8 + 12 + 8  # eth, ip, udp, BTH, MAGIC + lab tag: the kind byte
_BPF = [
    (0x20, 0, 0, 0xFFFFF004),           # 0 A = pkttype (SKF_AD_OFF + SKF_AD_PKTTYPE)
    (0x15, 10, 0, PACKET_OUTGOING),     # 1 outgoing: drop
    (0x28, 0, 0, 12),                   # 2 A = ethertype
    (0x15, 7, 0, ETH_P_LLDP),           # 3 LLDP: accept
    (0x15, 0, 7, ETH_P_IP),             # 4 not IPv4: drop
    (0x30, 0, 0, 23),                   # 5 A = IP protocol
    (0x15, 0, 5, 17),                   # 6 not UDP: drop
    (0x28, 0, 0, 36),                   # 7 A = UDP dport
    (0x15, 0, 3, ROCE_PORT),            # 8 not 4791: drop
    (0x30, 0, 0, _KIND_OFF),            # 9 A = probe kind
    (0x35, 0, 1, K_ISO_ROUTED),         # 10 kind < K_ISO_ROUTED (reach, path): drop
    (0x06, 0, 0, 0x40000),              # 11 accept
    (0x06, 0, 0, 0),                    # 12 drop
]


def _attach_filter(s: socket.socket) -> None:
    import ctypes

    prog = b"".join(struct.pack("HBBI", *ins) for ins in _BPF)
    buf = ctypes.create_string_buffer(prog)
    fprog = struct.pack("HL", len(_BPF), ctypes.addressof(buf))
    s.setsockopt(socket.SOL_SOCKET, 26, fprog)  # SO_ATTACH_FILTER


def _packet_sock(dev: str) -> tuple[socket.socket, bytes]:
    # protocol 0 at creation, ETH_P_ALL at bind: a socket created with a
    # protocol is hooked at once and re-hooked by bind, and unhooking waits for
    # an RCU grace period (measured: 15 ms a socket, 30 s for 2,048 ports)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    _attach_filter(s)
    s.setsockopt(socket.SOL_SOCKET, 33, RCVBUF)
    s.bind((dev, ETH_P_ALL))
    s.setblocking(False)
    return s, s.getsockname()[4]


RTM_NEWNEIGH, RTM_GETNEIGH, NLMSG_ERROR, NDA_DST, NDA_LLADDR = 28, 30, 2, 1, 2
NUD_VALID = 0x02 | 0x04 | 0x08 | 0x10 | 0x40 | 0x80  # reachable, stale, delay, probe, noarp, permanent


def _neigh_get(dev: str, addr: str) -> str | None:
    """The MAC this namespace's neighbour table holds for ``addr`` on ``dev``, asked
    by one netlink get (a hash lookup: reading /proc/net/arp walks the one neighbour
    table every namespace shares, 3 ms a GPU on the 1,024-GPU lab); None if none."""
    try:
        ifindex = socket.if_nametoindex(dev)
    except OSError:
        return None
    ndmsg = struct.pack("=BBHiHBB", socket.AF_INET, 0, 0, ifindex, 0, 0, 0)
    attr = struct.pack("=HH4s", 8, NDA_DST, socket.inet_aton(addr))
    msg = struct.pack("=IHHII", 16 + len(ndmsg) + len(attr), RTM_GETNEIGH, 1, 1, 0) + ndmsg + attr  # NLM_F_REQUEST
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as nl:
        nl.settimeout(5.0)
        nl.sendto(msg, (0, 0))
        data = nl.recv(65536)
    if len(data) < 28 or struct.unpack_from("=H", data, 4)[0] != RTM_NEWNEIGH:
        return None  # NLMSG_ERROR: no entry
    state = struct.unpack_from("=H", data, 24)[0]
    off, end = 28, min(len(data), struct.unpack_from("=I", data, 0)[0])
    while off + 4 <= end:
        ln, typ = struct.unpack_from("=HH", data, off)
        if ln < 4:
            break
        if typ == NDA_LLADDR and state & NUD_VALID and ln == 10 and data[off + 4 : off + 10] != b"\0" * 6:
            return data[off + 4 : off + 10].hex(":")
        off += (ln + 3) & ~3
    return None


@dataclass
class Evidence:
    """What the probes showed (plain data, judged by checks.judge)."""

    reach: set[tuple[str, str]] = field(default_factory=set)  # (src, dst) probe arrived
    reach_rounds: dict[int, set[int]] = field(default_factory=dict)  # failover round -> pair indexes that arrived
    path_arrived: dict[int, int] = field(default_factory=dict)  # path idx -> smallest TTL that arrived
    path_hops: dict[int, dict[int, str]] = field(default_factory=dict)  # path idx -> {ttl: responder ip}
    iso_seen: dict[int, set[tuple[str, str]]] = field(default_factory=dict)  # iso idx -> {(node, dev)}
    lldp: dict[tuple[str, str], set[tuple[str, str]]] = field(default_factory=dict)  # (node, port) -> {(node, port)}
    macs: dict[tuple[str, str], str] = field(default_factory=dict)  # (node, port) -> mac
    devices: dict[str, list[str]] = field(default_factory=dict)  # node -> device names
    errors: list[str] = field(default_factory=list)


class Agent:
    """Sockets of one lab, opened once, probed in rounds, closed at the end."""

    def __init__(self, lab: str, netns: dict[str, str], door: NodeDoor):
        self.lab = lab
        self.door = door  # the runtime's way into a node's namespace
        self.netns = netns  # node -> namespace
        self.sel = selectors.DefaultSelector()
        self.socks: list[socket.socket] = []
        self.raw: dict[str, socket.socket] = {}
        self.pkt: dict[tuple[str, str], socket.socket] = {}  # (node, port) -> packet socket
        self.dev_of: dict[tuple[str, str], str] = {}
        self.ev = Evidence()
        self.path_index: dict[tuple[str, int], int] = {}  # (src, ip id) -> path idx
        self.ip_node: dict[str, str] = {}
        self.path_ttl: dict[tuple[str, int], int] = {}
        self.reach_src: dict[int, str] = {}  # reachability probe idx -> the GPU that sent it
        self._closers: list[threading.Thread] = []  # release_ports' closing threads

    # opening
    def open_gpu(self, node: str) -> None:
        udp, raw, icmp = self.door.call_in(self.netns[node], _gpu_socks)
        self.raw[node] = raw
        for s, what in ((udp, "udp"), (icmp, "icmp")):
            self.sel.register(s, selectors.EVENT_READ, (what, node, None))
        self.socks += [udp, raw, icmp]

    def open_many(self, wants: dict[str, tuple[bool, list[tuple[str, str | None]]]], workers: int = 4) -> set[tuple[str, str]]:
        """Open the sockets of many nodes, one setns per node on a few pool
        threads: ``wants[node] = (is_gpu, [(port, iface), ...])``. Returns the
        (node, port) pairs with no device (the others as :meth:`open_port`)."""

        def job(is_gpu: bool, ports: list[tuple[str, str | None]]):
            def run():
                gpu = _gpu_socks() if is_gpu else None
                devs = sorted(self.door.link_states())
                got = []
                for port, iface in ports:
                    dev = port if port in devs else iface if iface in devs else None
                    got.append((port, dev, _packet_sock(dev) if dev else None))
                return gpu, devs, got
            return run

        names = list(wants)
        res = self.door.call_many([(self.netns[n], job(*wants[n])) for n in names], workers)
        absent: set[tuple[str, str]] = set()
        first_error: BaseException | None = None
        for node, r in zip(names, res):
            if isinstance(r, BaseException):
                first_error = first_error or r
                continue
            gpu, devs, got = r
            self.ev.devices[node] = devs
            if gpu is not None:
                udp, raw, icmp = gpu
                self.raw[node] = raw
                for sk, what in ((udp, "udp"), (icmp, "icmp")):
                    self.sel.register(sk, selectors.EVENT_READ, (what, node, None))
                self.socks += [udp, raw, icmp]
            for port, dev, sm in got:
                if sm is None:
                    absent.add((node, port))
                    continue
                sk, mac = sm
                self.pkt[(node, port)] = sk
                self.dev_of[(node, port)] = dev
                self.ev.macs[(node, port)] = mac.hex(":")
                self.sel.register(sk, selectors.EVENT_READ, ("pkt", node, port))
                self.socks.append(sk)
        if first_error is not None:
            raise first_error
        return absent

    def devices(self, node: str) -> list[str]:
        if node not in self.ev.devices:
            self.ev.devices[node] = self.door.call_in(self.netns[node], lambda: sorted(self.door.link_states()))
        return self.ev.devices[node]

    def open_port(self, node: str, port: str, iface: str | None = None) -> bool:
        """A packet socket on a node's port (fabric name, else topology name). False if absent."""
        devs = self.devices(node)
        dev = port if port in devs else iface if iface in devs else None
        if dev is None:
            return False
        s, mac = self.door.call_in(self.netns[node], lambda: _packet_sock(dev))
        self.pkt[(node, port)] = s
        self.dev_of[(node, port)] = dev
        self.ev.macs[(node, port)] = mac.hex(":")
        self.sel.register(s, selectors.EVENT_READ, ("pkt", node, port))
        self.socks.append(s)
        return True

    def neighbours(self, asks: dict[str, tuple[str, str]], workers: int = 4) -> dict[str, str | None]:
        """``asks[node] = (port, address)``: the MAC each node's neighbour table holds for
        the address on that port's device, one netlink get per node on a few pool
        threads. Raises the first failure."""
        nodes = [n for n in asks if asks[n][0] is not None and (n, asks[n][0]) in self.dev_of]
        res = self.door.call_many([(self.netns[n], functools.partial(_neigh_get, self.dev_of[(n, asks[n][0])], asks[n][1]))
                                   for n in nodes], workers)
        for r in res:
            if isinstance(r, BaseException):
                raise r
        return dict(zip(nodes, res))

    def release_ports(self, keys, threads: int = 32) -> None:
        """Close the packet sockets of these (node, port) now, on background threads that
        :meth:`close` joins. A packet socket on a device taps every frame crossing it (a
        clone and a filter run per frame sent): switch ports serve only the neighbour
        frames, and 130k reachability probes cross three switch links each."""
        socks = []
        for k in keys:
            sk = self.pkt.pop(k, None)
            if sk is None:
                continue
            self.dev_of.pop(k, None)
            self.sel.unregister(sk)
            socks.append(sk)
        gone = set(map(id, socks))
        self.socks = [x for x in self.socks if id(x) not in gone]
        chunks = [socks[i::threads] for i in range(min(threads, len(socks)))]
        for c in chunks:
            w = threading.Thread(target=lambda c=c: [x.close() for x in c], name="probe-release")
            w.start()
            self._closers.append(w)

    def close(self, threads: int = 64) -> None:
        for w in self._closers:
            w.join()
        self._closers.clear()
        packet = []
        for s in self.socks:
            try:
                self.sel.unregister(s)
            except (KeyError, ValueError):
                pass
            if s.family == socket.AF_PACKET:
                packet.append(s)
            else:
                s.close()
        # closing a packet socket waits for an RCU grace period (~6 ms, 13 s for
        # 2,048 in a row); concurrent closers share grace periods
        chunks = [packet[i::threads] for i in range(min(threads, len(packet)))]
        workers = [threading.Thread(target=lambda c=c: [s.close() for s in c]) for c in chunks]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        self.socks.clear()
        self.sel.close()

    def __enter__(self) -> "Agent":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # sending
    def send_ip(self, node: str, pkt: bytes, dst: str) -> None:
        try:
            self.raw[node].sendto(pkt, (dst, 0))
        except BlockingIOError:
            self.pump(0.001)
            try:
                self.raw[node].sendto(pkt, (dst, 0))
            except OSError as exc:
                self.ev.errors.append(f"{node}: send to {dst}: {exc.strerror}")
        except OSError as exc:  # ENETUNREACH and friends are evidence too
            if exc.errno not in (errno.ENETUNREACH, errno.EHOSTUNREACH):
                self.ev.errors.append(f"{node}: send to {dst}: {exc.strerror}")

    def send_ip_groups(self, groups: list[list[tuple[str, bytes, str]]], threads: int = 2) -> None:
        """Send (node, packet, dst) probes from a few threads, each group in order
        by one thread. The kernel does the work of a send inside sendto (ARP,
        the bridge flooding it to every port of an L2 rail) with the GIL
        released, so threads use every core; nothing is read meanwhile (the
        packet filters keep reachability probes off the packet sockets, and a
        UDP socket's 4 MiB buffer holds what one GPU receives)."""
        todo = list(reversed(groups))
        lock = threading.Lock()
        errors = self.ev.errors

        def worker() -> None:
            while True:
                with lock:
                    if not todo:
                        return
                    group = todo.pop()
                for node, pkt, dst in group:
                    sock = self.raw[node]
                    for attempt in range(50):
                        try:
                            sock.sendto(pkt, (dst, 0))
                            break
                        except BlockingIOError:
                            time.sleep(0.001)  # send buffer full: let the queue drain
                        except OSError as exc:
                            if exc.errno not in (errno.ENETUNREACH, errno.EHOSTUNREACH):
                                errors.append(f"{node}: send to {dst}: {exc.strerror}")
                            break

        ws = [threading.Thread(target=worker, name=f"probe-send{k}") for k in range(max(1, threads))]
        for w in ws:
            w.start()
        for w in ws:
            w.join()

    def send_frame(self, node: str, port: str, frame: bytes) -> str | None:
        """Send a frame on a port; None when sent, else why not (also noted in ev.errors)."""
        try:
            self.pkt[(node, port)].send(frame)
        except OSError as exc:
            self.ev.errors.append(f"{node}:{port}: send: {exc.strerror}")
            return f"sending on {port} failed: {exc.strerror}"
        return None

    # receiving
    def pump(self, seconds: float) -> None:
        """Receive for up to `seconds` (drains what is queued, then waits)."""
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            for key, _ in self.sel.select(max(0.0, left)):
                self._drain(key.fileobj, *key.data)
            if left <= 0:
                return

    def _drain(self, s: socket.socket, what: str, node: str, port: str | None) -> None:
        lab = self.lab
        for _ in range(4096):
            try:
                data, addr = s.recvfrom(65535)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            if what == "udp":
                tag = parse_payload(data, lab)
                if tag is None:
                    continue
                kind, idx, ttl = tag
                if kind == K_REACH:
                    self.ev.reach.add((self.reach_src[idx], node))
                    if ttl:  # a failover round (checks/failover.py) numbers its probes 1-255
                        self.ev.reach_rounds.setdefault(ttl, set()).add(idx)
                elif kind == K_PATH:
                    old = self.ev.path_arrived.get(idx)
                    self.ev.path_arrived[idx] = ttl if old is None else min(old, ttl)
            elif what == "icmp":
                got = parse_icmp(data)
                if got is None:
                    continue
                responder, typ, _dst, ident = got
                idx = self.path_index.get((node, ident))
                if idx is not None and typ == 11:
                    self.ev.path_hops.setdefault(idx, {})[self.path_ttl[(node, ident)]] = responder
            else:
                if addr[2] == PACKET_OUTGOING:
                    continue
                et = data[12:14]
                if et == b"\x88\xcc":
                    nb = parse_lldp(data, lab)
                    if nb is not None:
                        self.ev.lldp.setdefault((node, port), set()).add(nb)
                elif et == b"\x08\x00" and len(data) >= 42 and data[23] == 17:
                    ihl = (data[14] & 0x0F) * 4
                    tag = parse_payload(data[14 + ihl + 8 :], lab)
                    if tag and tag[0] in (K_ISO_ROUTED, K_ISO_BCAST, K_ISO_UNKNOWN):
                        self.ev.iso_seen.setdefault(tag[1], set()).add((node, port))


class Gateways:
    """The first of the fabric's gateway addresses on a GPU's subnet, looked up in a
    table per prefix length (scanning every gateway per GPU parsed 2 million addresses
    on the 1,024-GPU lab)."""

    def __init__(self, gateways):
        self.addrs = []
        for g in gateways:
            try:
                a = ipaddress.ip_address(g)
            except ValueError:
                continue  # not an address: on no subnet
            self.addrs.append((g, a.version, int(a)))
        self.tables: dict[tuple[int, int], dict[int, str]] = {}

    def of(self, prefixlen: int, ip: str) -> str | None:
        net = ipaddress.ip_interface(f"{ip}/{prefixlen}").network
        key = (net.version, net.prefixlen)
        if key not in self.tables:
            mask, table = int(net.netmask), {}
            for g, version, n in self.addrs:
                if version == net.version:
                    table.setdefault(n & mask, g)
            self.tables[key] = table
        return self.tables[key].get(int(net.network_address))

