"""lab status/exec/vtysh over the Runtime protocol, without root (FakeRuntime), in
addition to the real netns tests in tests/netns/test_lab_inspect.py."""

from __future__ import annotations

import json

import pytest

from railonly import cli
from railonly.emulation.runtime import registry

from ..conftest import FakeRuntime, compile_to, design_text

BGP = {"ipv4Unicast": {"peers": {"10.0.0.1": {"state": "Established"}, "10.0.0.3": {"state": "Active"}}}}
ADDR = [{"ifname": "lo", "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8, "scope": "host"}]},
        {"ifname": "eth1", "addr_info": [{"family": "inet", "local": "10.0.0.2", "prefixlen": 29, "scope": "global"}]}]


@pytest.fixture
def fake(monkeypatch, tmp_path):
    rt = FakeRuntime()
    rt.on(("ip", "-j", "addr"), (0, json.dumps(ADDR)))
    rt.on(("ps",), (0, "    1 sleep\n   42 bgpd\n"))
    rt.on(("vtysh",), lambda ns, argv: (0, json.dumps(BGP)) if argv[-1].endswith("json") else (0, "BGP router identifier x\n"))
    monkeypatch.setitem(registry.RUNTIMES, "fake", lambda: rt)
    out = compile_to(design_text("labs/mini-routed.yml", "fakeinspect"), tmp_path / "o")
    return rt, str(out)


def test_status_rows_come_through_exec(fake, capsys):
    rt, out = fake
    assert cli.main(["lab", "status", out, "--runtime", "fake", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = {r["name"]: r for r in doc["nodes"]}
    gpu, leaf = rows["hb0-gpu0"], rows["fakeinspect-rail0-leaf0"]
    assert gpu["addresses"] == ["eth1 10.0.0.2/29"] and gpu["bgp"] is None and gpu["state"] == "running"
    assert {"name": "bgpd", "pid": 42} in leaf["processes"]  # a container runtime: its own ps
    assert leaf["bgp"] == {"up": 1, "total": 2}
    assert rt.ran("vtysh", "-d", "bgpd", "-c", "show bgp summary json")


def test_status_names_the_faults_set(fake, capsys, monkeypatch):
    """A link set down with lab fault left every row "running": status said nothing of it."""
    from railonly.emulation.traffic import faults

    rt, out = fake
    monkeypatch.setattr(faults, "_load", lambda lab, rt: [{"kind": "link", "what": "hb0:rail0"}])
    assert cli.main(["lab", "status", out, "--runtime", "fake"]) == 0
    assert "faults set: link hb0:rail0 (undo: railonly lab fault OUTDIR --restore)" in capsys.readouterr().out
    assert cli.main(["lab", "status", out, "--runtime", "fake", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["faults"] == ["link hb0:rail0"]


def test_exec_passes_argv_and_returns_the_code(fake, capsys):
    rt, out = fake
    rt.on(("sh",), (5, "boom\n"))
    assert cli.main(["lab", "exec", out, "hb0-gpu1", "--runtime", "fake", "--", "sh", "-c", "exit 5"]) == 5
    assert rt.calls[-1] == ("clab-fakeinspect-hb0-gpu1", ("sh", "-c", "exit 5"))
    assert capsys.readouterr().out == "boom\n"


def test_vtysh_defaults_to_the_bgp_summary(fake, capsys):
    rt, out = fake
    assert cli.main(["lab", "vtysh", out, "fakeinspect-rail0-leaf0", "--runtime", "fake"]) == 0
    assert rt.calls[-1][1] == ("vtysh", "-c", "show bgp summary")
    assert cli.main(["lab", "vtysh", out, "hb0-gpu0", "--runtime", "fake"]) == 2  # not a switch
    assert "no switch 'hb0-gpu0'" in capsys.readouterr().err


def test_not_deployed_is_exit_3_for_every_inspect_command(fake, capsys):
    rt, out = fake
    rt.state = "absent"
    fake_rt = ["--runtime", "fake"]
    for argv in (["lab", "status", out, *fake_rt], ["lab", "exec", out, "hb0-gpu0", *fake_rt, "--", "true"],
                 ["lab", "vtysh", out, "fakeinspect-rail0-leaf0", *fake_rt], ["lab", "fault", out, "--restore", *fake_rt]):
        assert cli.main(argv) == 3, argv
    assert capsys.readouterr().err.count("is not deployed") == 3  # status says so on stdout
    assert not rt.calls  # nothing ran in a lab that is not there


def test_an_unknown_node_names_nodes_the_first_ones_only(fake, capsys):
    """It said "known keys:" and would list every node name of the lab (2,000 at 1,024 GPUs)."""
    from railonly.fabric.input.problems import MAX_CHOICES_SHOWN, did_you_mean

    rt, out = fake
    assert cli.main(["lab", "exec", out, "zzzz", "--runtime", "fake", "--", "true"]) == 2
    err = capsys.readouterr().err
    assert "known nodes: " in err and "known keys" not in err and " in all)" in err
    names = [f"n{i}" for i in range(100)]
    assert did_you_mean("zzzz", names, "nodes").count(",") == MAX_CHOICES_SHOWN - 1
