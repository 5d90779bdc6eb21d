"""A small rtnetlink encoder: what ``ip -batch`` and ``tc -batch`` do for a plan, without a process.

A NETLINK_ROUTE socket belongs to the namespace of the thread that opened it,
so a thread that has entered a lab namespace with setns configures it with
plain socket writes: all of a namespace's requests go out in a few
``send()`` calls (the kernel handles each message in turn, as ``ip -batch``
does line by line) and the acks are read back afterwards. This replaces one
``ip`` and one ``tc`` process per namespace (measured: the spawns were most
of a 1,024-GPU deploy; see bench/bench_lab_deploy.py).

Messages carry the same fields iproute2 6.1 sends for the plan's commands
(``link set``, ``addr add``, ``route add``, ``rule add``, ``qdisc replace
... tbf``, htb qdisc and class), so the kernel state is the same: checked by
tests/netns/test_rtnl.py against ``ip``/``tc`` output.
"""

from __future__ import annotations

import errno as _errno
import ipaddress
import os
import socket
import struct

from . import ns_plan as nsplan

NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE, NLM_F_REPLACE = 0x1, 0x4, 0x200, 0x400, 0x100
NLM_F_DUMP = 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
RTM_NEWLINK, RTM_GETLINK, RTM_NEWADDR, RTM_NEWROUTE, RTM_NEWRULE = 16, 18, 20, 24, 32
RTM_NEWQDISC, RTM_NEWTCLASS = 36, 40
IFF_UP = 0x1
IFLA_IFNAME, IFLA_MTU, IFLA_MASTER, IFLA_OPERSTATE, IFLA_STATS64 = 3, 4, 10, 16, 23
IFA_ADDRESS, IFA_LOCAL = 1, 2
IFA_F_NODAD = 0x02
RTA_DST, RTA_OIF, RTA_GATEWAY, RTA_PRIORITY, RTA_PREFSRC, RTA_MULTIPATH, RTA_TABLE, RTA_VIA = 1, 4, 5, 6, 7, 9, 15, 18
RTPROT_BOOT, RTN_UNICAST, RT_SCOPE_UNIVERSE, RT_SCOPE_LINK, RT_SCOPE_HOST = 3, 1, 0, 253, 254
RTNH_F_ONLINK = 4
RT_TABLE_MAIN = 254
FRA_DST, FRA_SRC, FRA_IIFNAME, FRA_PRIORITY, FRA_FWMARK, FRA_TABLE, FRA_OIFNAME = 1, 2, 3, 6, 10, 15, 17
FR_ACT_TO_TBL = 1
TCA_KIND, TCA_OPTIONS = 1, 2
TCA_TBF_PARMS, TCA_TBF_RATE64, TCA_TBF_BURST = 1, 4, 6
TCA_HTB_PARMS, TCA_HTB_INIT, TCA_HTB_RATE64, TCA_HTB_CEIL64 = 1, 2, 6, 7
TC_H_ROOT = 0xFFFFFFFF
TC_LINKLAYER_ETHERNET = 1  # tc sends it; the kernel then ignores the (omitted) rate tables
NETLINK_EXT_ACK, NETLINK_CAP_ACK = 11, 10
SOL_NETLINK = 270
CHUNK = 32 * 1024  # bytes of requests per send()
CHUNK_MSGS = 128  # and messages: each ack costs ~1 KiB of receive buffer (skb truesize), not its 36 bytes
RCVBUF = 1 << 20


def dump_links(sock: socket.socket, seq: int = 1):
    """Yield (ifindex, ifi_flags, name, operstate) for every link of the
    socket's namespace, from one RTM_GETLINK dump."""
    for idx, flags, name, oper, _stats in dump_links_stats(sock, seq):
        yield idx, flags, name, oper


def dump_links_stats(sock: socket.socket, seq: int = 1):
    """Yield (ifindex, ifi_flags, name, operstate, (tx bytes, rx bytes) or None) for every link,
    from one RTM_GETLINK dump (IFLA_STATS64: the counters ``ip -s link`` prints)."""
    body = struct.pack("=BxHiII", socket.AF_UNSPEC, 0, 0, 0, 0)
    sock.send(struct.pack("=IHHII", 16 + len(body), RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + body)
    while True:
        data = sock.recv(1 << 16)
        off = 0
        while off + 16 <= len(data):
            ln, typ, _, _, _ = struct.unpack_from("=IHHII", data, off)
            if typ == NLMSG_DONE:
                return
            if typ == NLMSG_ERROR:
                raise RtnlError(-struct.unpack_from("=i", data, off + 16)[0], "link dump failed")
            if typ == RTM_NEWLINK:
                _, _, idx, flags, _ = struct.unpack_from("=BxHiII", data, off + 16)
                name, oper, stats = "", 0, None
                a = off + 32
                while a + 4 <= off + ln:
                    alen, atyp = struct.unpack_from("=HH", data, a)
                    if alen < 4:
                        break
                    if atyp == IFLA_IFNAME:
                        name = data[a + 4 : a + alen].split(b"\0")[0].decode()
                    elif atyp == IFLA_OPERSTATE:
                        oper = data[a + 4]
                    elif atyp == IFLA_STATS64 and alen >= 4 + 32:  # rx/tx packets, then rx_bytes, tx_bytes
                        rx, tx = struct.unpack_from("=QQ", data, a + 4 + 16)
                        stats = (tx, rx)
                    a += (alen + 3) & ~3
                yield idx, flags, name, oper, stats
            off += (ln + 3) & ~3


RTM_GETROUTE = 26
RTN_NAMES = {2: "local", 3: "broadcast", 4: "anycast", 5: "multicast", 6: "blackhole", 7: "unreachable",
             8: "prohibit", 9: "throw", 10: "nat"}  # RTN_UNICAST (1) is unnamed, as in `ip -j route`


def _route_attrs(data: bytes, a: int, end: int):
    while a + 4 <= end:
        alen, atyp = struct.unpack_from("=HH", data, a)
        if alen < 4:
            return
        yield atyp, data[a + 4 : a + alen]
        a += (alen + 3) & ~3


def dump_routes(sock: socket.socket, seq: int = 1) -> list[dict]:
    """The IPv4 routes of every table of the socket's namespace, from one RTM_GETROUTE
    dump, shaped as ``ip -4 -j route show table all`` prints them (dst "default" or
    a.b.c.d[/len], "type" only when not unicast, "gateway", "dev", "table" when not
    main, "nexthops" of a multipath route): what ``lab check`` reads, without an
    ``ip`` process per switch."""
    names = {idx: name for idx, _flags, name, _oper in dump_links(sock, seq)}
    body = struct.pack("=BBBBBBBBI", socket.AF_INET, 0, 0, 0, 0, 0, 0, 0, 0)
    sock.send(struct.pack("=IHHII", 16 + len(body), RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, seq + 1, 0) + body)
    out: list[dict] = []
    while True:
        data = sock.recv(1 << 20)
        off = 0
        while off + 16 <= len(data):
            ln, typ, _, _, _ = struct.unpack_from("=IHHII", data, off)
            if ln < 16:
                return out
            if typ == NLMSG_DONE:
                return out
            if typ == NLMSG_ERROR:
                raise RtnlError(-struct.unpack_from("=i", data, off + 16)[0], "route dump failed")
            if typ == RTM_NEWROUTE:
                _fam, dst_len, _src_len, _tos, table, _proto, _scope, rtype, _flags = struct.unpack_from("=BBBBBBBBI", data, off + 16)
                r: dict = {}
                dst = None
                for atyp, v in _route_attrs(data, off + 28, off + ln):
                    if atyp == RTA_DST:
                        dst = socket.inet_ntoa(v[:4])
                    elif atyp == RTA_GATEWAY:
                        r["gateway"] = socket.inet_ntoa(v[:4])
                    elif atyp == RTA_OIF:
                        r["dev"] = names.get(struct.unpack("=i", v[:4])[0], "?")
                    elif atyp == RTA_TABLE:
                        table = struct.unpack("=I", v[:4])[0]
                    elif atyp == RTA_MULTIPATH:
                        r["nexthops"] = _nexthops(v, names)
                if rtype in RTN_NAMES:
                    r["type"] = RTN_NAMES[rtype]
                r["dst"] = "default" if dst_len == 0 else dst if dst_len == 32 else f"{dst}/{dst_len}"
                if table != RT_TABLE_MAIN:
                    r["table"] = {255: "local", 253: "default"}.get(table, str(table))
                out.append(r)
            off += (ln + 3) & ~3


def _nexthops(v: bytes, names: dict[int, str]) -> list[dict]:
    hops, off = [], 0
    while off + 8 <= len(v):
        rlen, _flags, _hops, idx = struct.unpack_from("=HBBi", v, off)
        if rlen < 8:
            break
        hop = {"dev": names.get(idx, "?")}
        for atyp, a in _route_attrs(v, off + 8, off + rlen):
            if atyp == RTA_GATEWAY:
                hop["gateway"] = socket.inet_ntoa(a[:4])
        hops.append(hop)
        off += (rlen + 3) & ~3
    return hops


class RtnlError(OSError):
    pass


def _attr(typ: int, data: bytes) -> bytes:
    ln = 4 + len(data)
    return struct.pack("=HH", ln, typ) + data + b"\0" * (-ln & 3)


def _u32(typ: int, v: int) -> bytes:
    return _attr(typ, struct.pack("=I", v))


def _family(addr) -> int:
    return socket.AF_INET6 if addr.version == 6 else socket.AF_INET


def _ticks_per_usec() -> float:
    # tc's time2tick: /proc/net/psched gives t2us/us2t and the clock resolution
    try:
        with open("/proc/net/psched") as f:
            t2us, us2t, clock_res, _ = (int(x, 16) for x in f.read().split())
        return t2us / us2t * (clock_res / 1e6 if clock_res != 1000000000 else 1.0)
    except (OSError, ValueError, ZeroDivisionError):
        return 15.625  # 64 ns ticks, what every current kernel reports


_TICK = _ticks_per_usec()


def _xmittime(rate_bps: int, size: int) -> int:
    """tc_calc_xmittime: ticks to send ``size`` bytes at ``rate_bps`` bytes/s."""
    return min(0xFFFFFFFF, int(1e6 * size / rate_bps * _TICK))


def _ratespec(rate_bps: int, mtu: int) -> bytes:
    cell_log = 0
    while (mtu >> cell_log) > 255:
        cell_log += 1
    # cell_log, linklayer, overhead, cell_align, mpu, rate (u32; RATE64 beyond)
    return struct.pack("=BBHhHI", cell_log, TC_LINKLAYER_ETHERNET, 0, -1, 0, min(rate_bps, 0xFFFFFFFF))


def rate_bytes(mbit: float) -> int:
    # the plan renders "<kbit>kbit"; tc turns that into bytes/s
    return int(round(mbit * 1000)) * 1000 // 8


class Rtnl:
    """One rtnetlink socket in the calling thread's namespace, with queued requests."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        try:
            self.sock.setsockopt(SOL_NETLINK, NETLINK_CAP_ACK, 1)  # acks without the echoed request
            self.sock.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
        except OSError:
            pass
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, 33, RCVBUF)  # SO_RCVBUFFORCE (root)
        except OSError:
            pass
        self.sock.settimeout(30.0)
        self.sock.bind((0, 0))
        self.seq = 0
        self.queue: list[tuple[int, bytes, str]] = []
        self._index: dict[str, int] | None = None

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Rtnl:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- lookups
    def index(self, dev: str) -> int:
        if self._index is None or dev not in self._index:
            self._index = self._dump_links()
        try:
            return self._index[dev]
        except KeyError:
            raise RtnlError(_errno.ENODEV, f"Cannot find device \"{dev}\"") from None

    def _dump_links(self) -> dict[str, int]:
        self.seq += 1
        return {name: idx for idx, _flags, name, _oper in dump_links(self.sock, self.seq)}

    # --- queueing and sending
    def _queue(self, typ: int, flags: int, body: bytes, what: str) -> None:
        self.seq += 1
        hdr = struct.pack("=IHHII", 16 + len(body), typ, NLM_F_REQUEST | NLM_F_ACK | flags, self.seq, 0)
        self.queue.append((self.seq, hdr + body, what))

    def flush(self) -> None:
        """Send what is queued; raise RtnlError for the first request the kernel refused
        (the kernel goes on with the rest, like ``ip -batch -force``; the deploy fails anyway)."""
        queue, self.queue = self.queue, []
        first_err: RtnlError | None = None
        i = 0
        while i < len(queue):
            j, size = i, 0
            while j < len(queue) and (size == 0 or (size + len(queue[j][1]) <= CHUNK and j - i < CHUNK_MSGS)):
                size += len(queue[j][1])
                j += 1
            self.sock.send(b"".join(m for _, m, _ in queue[i:j]))
            pending = {s: w for s, _, w in queue[i:j]}
            while pending:
                data = self.sock.recv(1 << 16)
                off = 0
                while off + 16 <= len(data):
                    ln, typ, _, seq, _ = struct.unpack_from("=IHHII", data, off)
                    if typ == NLMSG_ERROR and seq in pending:
                        err = -struct.unpack_from("=i", data, off + 16)[0]
                        what = pending.pop(seq)
                        if err and first_err is None:
                            msg = _ext_ack_msg(data[off : off + ln])
                            first_err = RtnlError(err, f"{what}: {os.strerror(err)}" + (f" ({msg})" if msg else ""))
                    off += (ln + 3) & ~3
            i = j
        if first_err is not None:
            raise first_err

    # --- requests (iproute2's fields)
    def link_set(self, dev: str, *, up: bool | None = None, mtu: int | None = None, master: str | None = None) -> None:
        flags = change = 0
        if up is not None:
            flags, change = (IFF_UP if up else 0), IFF_UP
        attrs = b""
        if mtu is not None:
            attrs += _u32(IFLA_MTU, mtu)
        if master is not None:
            attrs += _u32(IFLA_MASTER, self.index(master))
        body = struct.pack("=BxHiII", socket.AF_UNSPEC, 0, self.index(dev), flags, change) + attrs
        what = f"link set dev {dev}" + (f" master {master}" if master else "") + (f" mtu {mtu}" if mtu else "") \
            + ("" if up is None else " up" if up else " down")
        self._queue(RTM_NEWLINK, 0, body, what)

    def addr_add(self, dev: str, cidr: str) -> None:
        iface = ipaddress.ip_interface(cidr)
        raw = iface.ip.packed
        fam = _family(iface.ip)
        flags = IFA_F_NODAD if fam == socket.AF_INET6 else 0  # as the plan's "nodad"
        scope = RT_SCOPE_HOST if fam == socket.AF_INET and raw[0] == 127 else RT_SCOPE_UNIVERSE
        body = struct.pack("=BBBBI", fam, iface.network.prefixlen, flags, scope, self.index(dev))
        body += _attr(IFA_LOCAL, raw) + _attr(IFA_ADDRESS, raw)
        self._queue(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, body, f"addr add {cidr} dev {dev}")

    def route_add(self, r: nsplan.Route) -> None:
        attrs = b""
        if r.dst == "default":
            dst_len, dst = 0, None
        else:
            net = ipaddress.ip_network(r.dst, strict=False)
            dst_len, dst = net.prefixlen, net.network_address
        gws = [ipaddress.ip_address(nh.via) for nh in r.nexthops if nh.via] if r.nexthops else (
            [ipaddress.ip_address(r.via)] if r.via else [])
        fam = _family(dst) if dst is not None else _family(gws[0]) if gws else socket.AF_INET
        if dst is not None:
            attrs += _attr(RTA_DST, dst.packed)
        table = RT_TABLE_MAIN if r.table is None else r.table
        if table >= 256:
            attrs += _u32(RTA_TABLE, table)
        if r.metric is not None:
            attrs += _u32(RTA_PRIORITY, r.metric)
        if r.src:
            attrs += _attr(RTA_PREFSRC, ipaddress.ip_address(r.src).packed)

        def gw_attr(via: str) -> bytes:
            a = ipaddress.ip_address(via)
            if _family(a) == fam:
                return _attr(RTA_GATEWAY, a.packed)
            return _attr(RTA_VIA, struct.pack("=H", _family(a)) + a.packed)  # RFC 5549

        flags = 0
        if r.nexthops:
            hops = b""
            for nh in r.nexthops:
                sub = gw_attr(nh.via) if nh.via else b""
                idx = self.index(nh.dev) if nh.dev else 0
                hops += struct.pack("=HBBi", 8 + len(sub), RTNH_F_ONLINK if nh.onlink else 0, nh.weight - 1, idx) + sub
            attrs += _attr(RTA_MULTIPATH, hops)
        else:
            if r.via:
                attrs += gw_attr(r.via)
            if r.dev:
                attrs += _u32(RTA_OIF, self.index(r.dev))
            if r.onlink:
                flags |= RTNH_F_ONLINK
        # ip's default scope: link for an IPv4 route without a gateway, else universe
        scope = RT_SCOPE_LINK if fam == socket.AF_INET and not gws and not r.nexthops else RT_SCOPE_UNIVERSE
        body = struct.pack("=BBBBBBBBI", fam, dst_len, 0, 0, table if table < 256 else 0,
                           RTPROT_BOOT, scope, RTN_UNICAST, flags) + attrs
        self._queue(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, body, nsplan._route_line(r))

    def rule_add(self, u: nsplan.Rule) -> None:
        attrs = b""
        fam, src_len, dst_len = socket.AF_INET, 0, 0
        for typ, val in ((FRA_SRC, u.src), (FRA_DST, u.dst)):
            if val:
                net = ipaddress.ip_network(val, strict=False)
                fam = _family(net.network_address)
                attrs += _attr(typ, net.network_address.packed)
                if typ == FRA_SRC:
                    src_len = net.prefixlen
                else:
                    dst_len = net.prefixlen
        if u.priority is not None:
            attrs += _u32(FRA_PRIORITY, u.priority)
        if u.iif:
            attrs += _attr(FRA_IIFNAME, u.iif.encode() + b"\0")
        if u.oif:
            attrs += _attr(FRA_OIFNAME, u.oif.encode() + b"\0")
        if u.fwmark is not None:
            attrs += _u32(FRA_FWMARK, u.fwmark)
        if u.table >= 256:
            attrs += _u32(FRA_TABLE, u.table)
        body = struct.pack("=BBBBBBBBI", fam, dst_len, src_len, 0, u.table if u.table < 256 else 0,
                           0, 0, FR_ACT_TO_TBL, 0) + attrs
        self._queue(RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL, body, nsplan._rule_line(u))

    def shape(self, s: nsplan.Shaping) -> None:
        """``qdisc replace ... root tbf rate R burst B latency 50ms``, or the htb qdisc + class."""
        idx = self.index(s.dev)
        rate, burst = rate_bytes(s.rate_mbit), nsplan._burst(s)
        rate64 = [] if rate < 1 << 32 else [struct.pack("=Q", rate)]
        if s.kind == "tbf":
            limit = int(rate * 0.05 + burst)  # tc: rate * latency + burst
            qopt = _ratespec(rate, 2047) + b"\0" * 12 + struct.pack("=III", limit, _xmittime(rate, burst), 0)
            opts = _attr(TCA_TBF_PARMS, qopt) + _u32(TCA_TBF_BURST, burst)
            if rate64:
                opts += _attr(TCA_TBF_RATE64, rate64[0])
            body = struct.pack("=BxHiIII", socket.AF_UNSPEC, 0, idx, 0, TC_H_ROOT, 0)
            body += _attr(TCA_KIND, b"tbf\0") + _attr(TCA_OPTIONS, opts)
            self._queue(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE, body, f"qdisc replace dev {s.dev} root tbf")
            return
        glob = struct.pack("=IIIII", 3, 10, 1, 0, 0)  # version 3, r2q 10, default class 1
        body = struct.pack("=BxHiIII", socket.AF_UNSPEC, 0, idx, 0x10000, TC_H_ROOT, 0)
        body += _attr(TCA_KIND, b"htb\0") + _attr(TCA_OPTIONS, _attr(TCA_HTB_INIT, glob))
        self._queue(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE, body, f"qdisc replace dev {s.dev} root htb")
        spec = _ratespec(rate, 1600)
        buf = _xmittime(rate, burst)
        hopt = spec + spec + struct.pack("=IIIII", buf, buf, 0, 0, 0)
        opts = _attr(TCA_HTB_PARMS, hopt)
        if rate64:
            opts += _attr(TCA_HTB_RATE64, rate64[0]) + _attr(TCA_HTB_CEIL64, rate64[0])
        body = struct.pack("=BxHiIII", socket.AF_UNSPEC, 0, idx, 0x10001, 0x10000, 0)
        body += _attr(TCA_KIND, b"htb\0") + _attr(TCA_OPTIONS, opts)
        self._queue(RTM_NEWTCLASS, NLM_F_CREATE | NLM_F_REPLACE, body, f"class replace dev {s.dev} classid 1:1 htb")


def _ext_ack_msg(msg: bytes) -> str:
    # NLMSGERR_ATTR_MSG (1) after the struct nlmsgerr (error + capped header)
    off = 16 + 4 + 16
    while off + 4 <= len(msg):
        alen, atyp = struct.unpack_from("=HH", msg, off)
        if alen < 4:
            break
        if atyp == 1:
            return msg[off + 4 : off + alen].split(b"\0")[0].decode(errors="replace")
        off += (alen + 3) & ~3
    return ""


def apply(ops: list[tuple]) -> None:
    """Apply a namespace's config ops (nsplan.config_ops / shaping) in the current thread's namespace."""
    with Rtnl() as nl:
        for op in ops:
            kind = op[0]
            if kind == "link":
                _, dev, mtu, up, master = op
                nl.link_set(dev, up=up, mtu=mtu, master=master)
            elif kind == "addr":
                nl.addr_add(op[1], op[2])
            elif kind == "route":
                nl.route_add(op[1])
            elif kind == "rule":
                nl.rule_add(op[1])
            elif kind == "shape":
                nl.shape(op[1])
            else:
                raise ValueError(f"unknown op {kind!r}")
        nl.flush()
