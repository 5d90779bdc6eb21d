"""nftables named counters read with one netlink dump, without an ``nft`` process.

``nft -j list counters table inet T`` is one process per namespace and read; the
replay reads every GPU namespace's counters twice a phase. A NETLINK_NETFILTER
socket belongs to the namespace of the thread that opens it (setns.call_many), so
one NFT_MSG_GETOBJ dump of the table's counter objects answers the same question.
Checked against ``nft -j list counters`` by tests/netns/test_nfnetlink.py.
"""

from __future__ import annotations

import errno
import socket
import struct

NETLINK_NETFILTER = 12
NFNL_SUBSYS_NFTABLES = 10
NFT_MSG_GETOBJ, NFT_MSG_NEWOBJ = 19, 18
NFPROTO_INET = 1
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
NFTA_OBJ_TABLE, NFTA_OBJ_NAME, NFTA_OBJ_TYPE, NFTA_OBJ_DATA = 1, 2, 3, 4
NFT_OBJECT_COUNTER = 1
NFTA_COUNTER_BYTES = 1
NLA_TYPE_MASK = 0x3FFF  # without NLA_F_NESTED and NLA_F_NET_BYTEORDER


def _attr(typ: int, data: bytes) -> bytes:
    return struct.pack("=HH", 4 + len(data), typ) + data + b"\0" * (-len(data) % 4)


def _attrs(data: bytes, a: int, end: int):
    while a + 4 <= end:
        alen, atyp = struct.unpack_from("=HH", data, a)
        if alen < 4:
            return
        yield atyp & NLA_TYPE_MASK, data[a + 4 : a + alen]
        a += (alen + 3) & ~3


def request(table: str, seq: int = 1) -> bytes:
    """The dump request: counter objects of ``table`` (inet family)."""
    body = struct.pack("=BBH", NFPROTO_INET, 0, 0)  # nfgenmsg: family, version, res_id
    body += _attr(NFTA_OBJ_TABLE, table.encode() + b"\0") + _attr(NFTA_OBJ_TYPE, struct.pack(">I", NFT_OBJECT_COUNTER))
    typ = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETOBJ
    return struct.pack("=IHHII", 16 + len(body), typ, NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + body


def parse(chunks, table: str) -> tuple[dict[str, int], bool]:
    """({counter name: bytes} of ``table`` in the dump's messages, whether NLMSG_DONE was seen)."""
    out: dict[str, int] = {}
    for data in chunks:
        off = 0
        while off + 16 <= len(data):
            ln, typ, _, _, _ = struct.unpack_from("=IHHII", data, off)
            if ln < 16:
                break
            if typ == NLMSG_DONE:
                return out, True
            if typ == NLMSG_ERROR:
                err = -struct.unpack_from("=i", data, off + 16)[0]
                raise OSError(err, f"nftables counter dump of table {table} failed")
            if typ == (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWOBJ:
                got = dict(_attrs(data, off + 20, off + ln))  # past nlmsghdr (16) and nfgenmsg (4)
                if got.get(NFTA_OBJ_TABLE, b"").rstrip(b"\0") == table.encode() and NFTA_OBJ_DATA in got:
                    counter = dict(_attrs(got[NFTA_OBJ_DATA], 0, len(got[NFTA_OBJ_DATA])))
                    if len(counter.get(NFTA_COUNTER_BYTES, b"")) >= 8:
                        name = got.get(NFTA_OBJ_NAME, b"").rstrip(b"\0").decode(errors="replace")
                        out[name] = struct.unpack(">Q", counter[NFTA_COUNTER_BYTES][:8])[0]
            off += (ln + 3) & ~3
    return out, False


def counters(table: str) -> dict[str, int]:
    """{counter name: bytes} of the inet table ``table`` in the current thread's namespace
    (empty when the table does not exist)."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER) as s:
        s.settimeout(5.0)
        s.send(request(table))
        out: dict[str, int] = {}
        while True:
            try:
                part, done = parse([s.recv(1 << 16)], table)
            except OSError as exc:
                if exc.errno == errno.ENOENT:  # no such table
                    return {}
                raise
            out.update(part)
            if done:
                return out
