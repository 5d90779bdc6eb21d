"""The lab's management network (docs/management.md): every switch's management port
has its address on one out-of-band bridge, the fabric never routes through it, and
`railonly push` reaches the switches at their management addresses."""

from __future__ import annotations

import json
import subprocess

import pytest

from railonly.cli import main
from railonly.emulation.lab import management_network
from railonly.emulation.runtime.netns import setns
from railonly.emulation.push import targets as push_inventory

pytestmark = pytest.mark.netns

MGMT = {"management": {"pool": "192.168.77.0/24", "gateway": "192.168.77.1", "ntp": ["192.0.2.1"]}}


@pytest.fixture
def mgmtlab(tmp_path):
    from .conftest import _deploy

    yield from _deploy(tmp_path, "mini-routed", "m", MGMT)


def addrs(ns: str, dev: str) -> list[str]:
    out = subprocess.run(["ip", "-n", ns, "-j", "addr", "show", "dev", dev], capture_output=True, text=True, check=True)
    return [f"{a['local']}/{a['prefixlen']}" for a in json.loads(out.stdout)[0]["addr_info"] if a["family"] == "inet"]


def test_switches_sit_on_the_management_network_and_push_reaches_them(mgmtlab, tmp_path, capsys):
    d = mgmtlab
    net = management_network(d.lab)
    assert net is not None and net.netns.endswith("-oob") and net.gateway == "192.168.77.1/24"
    fabric = {n.name: n for n in d.lab.fabric.switches}
    assert set(net.switches) == set(fabric) and len(set(net.switches.values())) == 10
    for sw, cidr in net.switches.items():
        assert addrs(d.ns(sw), "eth0") == [cidr] == [fabric[sw].mgmt_ip]
        ping = subprocess.run(["ip", "netns", "exec", net.netns, "ping", "-c1", "-W2", cidr.split("/")[0]],
                              capture_output=True, timeout=10)
        assert ping.returncode == 0, sw
    # the fabric is untouched: every check still passes, no route leaves through eth0
    out = tmp_path / "c.json"
    assert main(["lab", "check", str(d.outdir), "--json", str(out), "--timeout", "30"]) == 0, \
        [r for r in json.loads(out.read_text())["results"] if not r["passed"]][:5]
    # push connects from the management network to each management address
    devices = push_inventory.lab_devices(d.outdir)
    assert {(x.host + "/24", x.netns) for x in devices} == {(ip, net.netns) for ip in net.switches.values()}
    pytest.importorskip("netmiko")
    capsys.readouterr()
    assert main(["push", str(d.outdir), "--dry-run", "--device", d.sw("rail0-leaf0")]) == 0
    assert "in sync" in capsys.readouterr().out


def test_destroy_removes_the_management_namespace(tmp_path):
    from .conftest import _deploy

    gen = _deploy(tmp_path, "mini-routed", "n", MGMT)
    d = next(gen)
    oob = management_network(d.lab).netns
    assert setns.exists(oob)
    with pytest.raises(StopIteration):
        next(gen)  # the fixture's destroy
    assert not setns.exists(oob)
