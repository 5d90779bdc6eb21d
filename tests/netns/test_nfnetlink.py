"""The replay's nftables counters read by netlink (emulation/runtime/netns/nfnetlink.py) equal
what ``nft -j list counters`` prints, in a namespace of this test's own."""

from __future__ import annotations

import json
import subprocess

import pytest

from railonly.emulation.runtime.netns import nfnetlink, setns
from railonly.emulation.traffic import replay

from ..conftest import skip_reason, unique

pytestmark = pytest.mark.netns


@pytest.fixture
def ns():
    why = skip_reason("ip", "nft")
    if why:
        pytest.skip(why)
    name = unique("nfnl", prefix="ntnf")
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def _nft(ns: str, *argv: str) -> str:
    return subprocess.run(["ip", "netns", "exec", ns, "nft", *argv], check=True, capture_output=True, text=True).stdout


def test_the_netlink_dump_reads_what_nft_lists(ns):
    assert setns.call_in(ns, lambda: setns.nft_counters(replay.TABLE)) == {}  # no table yet: nothing, no error
    _nft(ns, replay.ruleset(True))
    # bytes on one class's range: a TCP connection to port 20000 on lo (refused, but the SYN is counted)
    subprocess.run(["ip", "netns", "exec", ns, "python3", "-c",
                    "import socket\nfor _ in range(3):\n    s = socket.socket()\n    s.settimeout(1)\n"
                    "    try: s.connect(('127.0.0.1', 20000))\n    except OSError: pass\n    s.close()"], check=True)
    by_nft = {c["counter"]["name"]: c["counter"]["bytes"]
              for c in json.loads(_nft(ns, "-j", "list", "counters", "table", "inet", replay.TABLE))["nftables"]
              if "counter" in c}
    by_netlink = setns.call_in(ns, lambda: setns.nft_counters(replay.TABLE))
    assert by_netlink == by_nft
    assert by_netlink["tx_hb"] > 0 and by_netlink["tx_rail"] == 0 and len(by_netlink) == 9  # tx and routed per class, rx_staged


def test_a_dump_parses_split_messages_and_stops_at_done():
    msg = nfnetlink._attr(nfnetlink.NFTA_OBJ_TABLE, b"t\0") + nfnetlink._attr(nfnetlink.NFTA_OBJ_NAME, b"c\0") \
        + nfnetlink._attr(nfnetlink.NFTA_OBJ_DATA | 0x8000, nfnetlink._attr(nfnetlink.NFTA_COUNTER_BYTES, (7).to_bytes(8, "big")))
    body = b"\x01\x00\x00\x00" + msg
    new = (16 + len(body)).to_bytes(4, "little") + ((10 << 8) | 18).to_bytes(2, "little") + b"\0" * 10 + body
    done = (20).to_bytes(4, "little") + (3).to_bytes(2, "little") + b"\0" * 14
    assert nfnetlink.parse([new], "t") == ({"c": 7}, False)
    assert nfnetlink.parse([new, done], "t") == ({"c": 7}, True)
    assert nfnetlink.parse([new], "other") == ({}, False)  # another table's counter is not ours
