"""The persistent socket agents on loopback (no root): every planned byte is read and timed,
connections are opened once and reused by later steps, no process is started, and a
broken connection fails its flow, not the run. The netns lab tests run them for real."""

from __future__ import annotations

import subprocess
import threading

import pytest

from railonly.emulation.traffic import agents


class LocalDoor:
    """A door into this process's own namespace: every 'node' is loopback."""

    def call_in(self, node, fn):
        return fn()

    def call_many(self, jobs, workers):
        out = []
        for _node, fn in jobs:
            try:
                out.append(fn())
            except BaseException as exc:  # as setns.call_many: the exception is the job's value
                out.append(exc)
        return out

    def link_states(self):
        return {}


def _free_ports(n: int) -> list[int]:
    import socket

    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


@pytest.fixture
def pool():
    p = agents.SocketAgents(LocalDoor(), {"g0": "ns0", "g1": "ns1", "g2": "ns2"}, streams=3)
    yield p
    p.stop()


def test_steps_move_every_byte_over_reused_connections(pool, monkeypatch):
    started = []
    monkeypatch.setattr(subprocess.Popen, "__init__", lambda *a, **k: started.append(a) or (_ for _ in ()).throw(AssertionError))
    p1, p2 = _free_ports(2)
    flows = [("g0", "g1", "127.0.0.1", p1, 3_000_001), ("g1", "g2", "127.0.0.1", p2, 2_000_000),
             ("g2", "g1", "127.0.0.1", p1, 1_000_000)]
    pool.ensure([f[:4] for f in flows])
    assert len(pool.listeners) == 2 and sum(len(c) for c in pool.conns.values()) == 9  # 3 streams a transfer
    opened = {k: [c.tx.fileno() for c in v] for k, v in pool.conns.items()}
    start_s = pool.start_s
    for _ in range(2):
        res, t0, wall = pool.run_step(flows, deadline_s=30)
        for f, r in zip(flows, res):
            assert "error" not in r, r
            assert r["bytes"] == r["bytes_written"] == f[4]  # read to the last byte: nothing extrapolated
            assert 0 < r["seconds"] <= wall and r["seconds_at_rate"] == r["seconds"]
    assert {k: [c.tx.fileno() for c in v] for k, v in pool.conns.items()} == opened  # reused, not reopened
    assert pool.start_s == start_s and not started  # the steps opened nothing, started no process
    assert {t.name for t in threading.enumerate()} >= {"traffic-agent:g0", "traffic-agent:g1", "traffic-agent:g2"}


def test_a_step_with_a_broken_stream_fails_that_flow_and_reconnects_later(pool):
    p1, p2 = _free_ports(2)
    good, bad = ("g0", "g1", "127.0.0.1", p1), ("g2", "g1", "127.0.0.1", p2)
    pool.ensure([good, bad])
    pool.conns[bad][1].rx.close()  # the receiver's end of one stream is gone
    res, _t0, _wall = pool.run_step([good + (500_000,), bad + (500_000,)], deadline_s=5)
    assert "error" not in res[0] and res[0]["bytes"] == 500_000
    assert res[1]["error"] and bad not in pool.conns  # dropped: its streams hold unsent or unread bytes
    res, _t0, _wall = pool.run_step([bad + (400_000,)], deadline_s=30)
    assert "error" not in res[0] and res[0]["bytes"] == 400_000  # reconnected before the next step


def test_unreachable_destination_fails_its_flows_and_names_the_pair(pool):
    port, good = _free_ports(2)
    pool.netns["g9"] = "ns9"
    pool.listeners[("g9", "127.0.0.1", port)] = None  # pretend listening; nobody accepts on the port
    res, _t0, _wall = pool.run_step([("g0", "g9", "127.0.0.1", port, 1000), ("g1", "g2", "127.0.0.1", good, 1000)], 10)
    assert res[0]["error"].startswith("g0 cannot connect to g9 at 127.0.0.1") and res[0]["bytes"] == 0
    assert "error" not in res[1] and res[1]["bytes"] == 1000  # the others still run
    # the start-up time lost to it is kept, with the pair (the report says where the time went)
    assert pool.failed_pairs == {("g0", "g9"): "Connection refused"} and pool.failed_wait_s > 0
    del pool.listeners[("g9", "127.0.0.1", port)]


@pytest.mark.parametrize("text, want", [("64K", 65536), ("1M", 1 << 20), ("131072", 131072), ("2k", 2048)])
def test_window_bytes(text, want):
    assert agents.window_bytes(text) == want


@pytest.mark.parametrize("text", ["", "-1K", "1G", "1.5M", "K"])
def test_window_bytes_refuses(text):
    with pytest.raises(ValueError, match="window"):
        agents.window_bytes(text)
