"""`railonly lab status|exec|vtysh` on a real deployed mini lab, and exit 3 when it is not deployed."""

from __future__ import annotations

import json

import pytest

from railonly import cli

from ..conftest import compile_to, design_text, unique

pytestmark = pytest.mark.netns


@pytest.fixture(scope="module")
def routed(deployer, outdirs):
    out = compile_to(design_text("labs/mini-routed.yml", unique("i")), outdirs / "inspect")
    lab, res = deployer.deploy(out)
    assert res.bgp_converged, res.bgp
    return out, lab


def test_status_json_lists_every_node_with_its_state(routed, capsys):
    out, lab = routed
    assert cli.main(["lab", "status", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["state"] == "running" and doc["lab"] == lab.name
    rows = {r["name"]: r for r in doc["nodes"]}
    assert set(rows) == set(lab.nodes)
    assert all(r["state"] == "running" and r["namespace"] == lab.netns(n) for n, r in rows.items())
    gpu = rows["hb0-gpu0"]
    assert gpu["role"] == "gpu" and any(a.startswith("eth1 ") for a in gpu["addresses"])
    for sw in lab.switches:
        row = rows[sw.name]
        assert row["bgp"]["total"] > 0 and row["bgp"]["up"] == row["bgp"]["total"], row
        assert {"zebra", "bgpd"} <= {p["name"] for p in row["processes"]} and all(p["pid"] for p in row["processes"])


def test_status_table_has_a_row_per_node(routed, capsys):
    out, lab = routed
    assert cli.main(["lab", "status", str(out), "--no-color"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:4] == ["NAME", "ROLE", "NAMESPACE", "STATE"]
    assert len(lines) == 2 + len(lab.nodes)


def test_exec_runs_ip_addr_in_a_gpu_and_returns_its_code(routed, capsys):
    out, lab = routed
    assert cli.main(["lab", "exec", str(out), "hb0-gpu0", "--", "ip", "-j", "addr"]) == 0
    links = json.loads(capsys.readouterr().out)
    nic = next(link for link in links if link["ifname"] == "eth1")
    want = next(p.ip for p in lab.ports("hb0-gpu0") if p.port == "eth1")
    assert f"{nic['addr_info'][0]['local']}/{nic['addr_info'][0]['prefixlen']}" == want
    assert cli.main(["lab", "exec", str(out), "hb0-gpu0", "--", "false"]) == 1
    assert cli.main(["lab", "exec", str(out), "hb0-gpu0", "--", "sh", "-c", "exit 7"]) == 7
    # a program that does not exist is 127, as a shell says it (ip netns exec said 1, the program's own code)
    assert cli.main(["lab", "exec", str(out), "hb0-gpu0", "--", "no-such-program-here"]) == 127
    assert "no-such-program-here: no such program here" in capsys.readouterr().out


def test_exec_returns_when_the_command_exits_not_its_background_child(routed, capsys):
    """Finding: `sh -c 'sleep 100 &'` waited the whole --timeout (the sleep holds stdout open).
    exec is done when the command exits, with what it wrote; the child runs on in the node's
    namespace (the lab's destroy stops it: the module's teardown checks nothing is left)."""
    import time

    from railonly.emulation.runtime.netns import pids, setns

    out, lab = routed
    t = time.monotonic()
    rc = cli.main(["lab", "exec", str(out), "hb0-gpu0", "--timeout", "30", "--", "sh", "-c", "echo started; sleep 97 &"])
    assert rc == 0 and time.monotonic() - t < 10, time.monotonic() - t
    assert capsys.readouterr().out == "started\n"
    inode = setns.inode(lab.netns("hb0-gpu0"))
    assert any(p.cmdline == ("sleep", "97") for p in pids.in_netns({inode}))


def test_vtysh_shows_a_bgp_summary(routed, capsys):
    out, lab = routed
    sw = lab.switches[0].name
    assert cli.main(["lab", "vtysh", str(out), sw]) == 0
    text = capsys.readouterr().out
    assert "BGP router identifier" in text and "Neighbor" in text
    assert cli.main(["lab", "vtysh", str(out), sw, "-c", "show bgp summary json"]) == 0
    assert json.loads(capsys.readouterr().out)["ipv4Unicast"]["peerCount"] > 0


def _on_a_terminal(argv: list[str], typed: bytes, timeout: float = 30.0) -> tuple[int, str]:
    """(exit code, what the terminal showed) of argv run on a pseudo-terminal, as an engineer's
    shell runs it, with `typed` typed into it."""
    import os
    import pty
    import select
    import subprocess
    import time

    ours, theirs = pty.openpty()
    p = subprocess.Popen(argv, stdin=theirs, stdout=theirs, stderr=theirs, close_fds=True)
    os.close(theirs)
    os.write(ours, typed)
    shown, deadline = b"", time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([ours], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(ours, 65536)
                except OSError:  # EIO: the terminal's last user is gone
                    break
                if not chunk:
                    break
                shown += chunk
            elif p.poll() is not None:
                break
        return p.wait(timeout=5), shown.decode(errors="replace")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(ours)


def test_vtysh_on_a_terminal_is_the_switchs_vtysh_shell(routed):
    """No -c, on a terminal: vtysh's own shell against that switch's FRR (what `docker exec -it
    <node> vtysh` gives on containerlab); the commands typed are answered there."""
    import sys

    out, lab = routed
    sw = lab.switches[0].name
    rc, shown = _on_a_terminal([sys.executable, "-m", "railonly", "lab", "vtysh", str(out), sw],
                               b"show running-config\nexit\n")
    assert rc == 0, shown
    assert f"hostname {sw}" in shown and "router bgp" in shown
    assert "BGP router identifier" not in shown  # not the non-terminal default, show bgp summary


def test_unknown_node_is_input_error(routed, capsys):
    out, _ = routed
    assert cli.main(["lab", "exec", str(out), "hb0-gpu99", "--", "true"]) == 2
    assert "did you mean" in capsys.readouterr().err
