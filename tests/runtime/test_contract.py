"""The contract every registered Runtime passes (napalm-style shared suite).

Run against each name in RUNTIMES; a runtime that cannot run here skips and
says why (containerlab cannot be installed on this machine kind; the netns
runtime needs root).
"""

from __future__ import annotations

import importlib
import ipaddress
import json
import os
import shutil

import pytest

from railonly import proc
from railonly.emulation.runtime.registry import RUNTIMES, get_runtime


def _skip_reason(name: str) -> str | None:
    if name == "containerlab":
        if shutil.which("containerlab") is None:
            return "containerlab is not installed (see docs/lab/index.md: it cannot be installed on this machine kind)"
        if shutil.which("docker") is None:
            return "containerlab is installed but docker is not"
    if name == "netns":
        try:
            importlib.import_module("railonly.emulation.runtime.netns.runtime")
        except ImportError as exc:
            return f"railonly.emulation.runtime.netns.runtime is not importable yet ({exc})"
    if os.geteuid() != 0:
        return f"the {name} runtime needs root to create namespaces or containers"
    return None


pytestmark = pytest.mark.netns  # every test here deploys a real lab (run under the lock)


@pytest.fixture(scope="module", params=sorted(RUNTIMES))
def deployed(request, tiny_lab):
    reason = _skip_reason(request.param)
    if reason:
        pytest.skip(reason)
    rt = get_runtime(request.param)
    try:
        rt.deploy(tiny_lab)
        yield rt, tiny_lab
    finally:
        try:
            rt.destroy(tiny_lab)
        except Exception:  # the destroy test reports failures; never leave a lab behind silently
            pass


def test_status_running(deployed):
    rt, lab = deployed
    st = rt.status(lab)
    assert st.running, f"{st.state}: {st.detail} {st.nodes}"
    assert set(st.nodes) == set(lab.nodes)


def test_gpu_has_its_fabric_address(deployed):
    rt, lab = deployed
    for gpu in lab.gpus:
        rc, out = rt.exec(gpu.netns, ["ip", "-j", "addr", "show"], timeout=20)
        assert rc == 0, out
        have = {(i["ifname"], f"{a['local']}/{a['prefixlen']}") for i in json.loads(out) for a in i.get("addr_info", [])}
        for p in lab.ports(gpu.name):
            if p.ip:
                assert (p.iface, p.ip) in have, f"{gpu.name}: {p.ip} missing on {p.iface}; has {sorted(have)}"


def test_switch_shows_its_ports(deployed):
    rt, lab = deployed
    for sw in lab.switches:
        rc, out = rt.exec(sw, ["ip", "-j", "link", "show"], timeout=20)
        assert rc == 0, out
        names = {i["ifname"] for i in json.loads(out)}
        for p in lab.ports(sw.name):
            # netns: fabric.json port names; containerlab: its ethN wires (sonic-vs adds Ethernet taps)
            assert p.port in names or p.iface in names, f"{sw.name}: neither {p.port} nor {p.iface} in {sorted(names)}"


def test_exec_of_false_returns_1(deployed):
    rt, lab = deployed
    rc, _ = rt.exec(lab.gpus[0], ["false"], timeout=20)
    assert rc == 1


def test_exec_on_an_unknown_node_fails_without_raising(deployed):
    rt, lab = deployed
    rc, out = rt.exec(f"clab-{lab.name}-no-such-node", ["true"], timeout=20)
    assert rc != 0 and out


def test_gpu_reaches_same_rail_peer(deployed):
    rt, lab = deployed
    a, b = [g for g in lab.gpus if g.fabric_node.rail == 0][:2]
    dst = str(ipaddress.ip_interface(next(p.ip for p in lab.ports(b.name) if p.port == "eth1")).ip)
    rc, out = rt.exec(a, ["ping", "-c", "1", "-W", "2", dst], timeout=30)
    assert rc == 0, out


def test_destroy_leaves_nothing(deployed):
    rt, lab = deployed
    rt.destroy(lab)
    st = rt.status(lab)
    assert st.state == "absent", f"{st.state}: {st.nodes}"
    res = proc.run(["ip", "netns", "list"], timeout=10)
    left = [line.split()[0] for line in res.stdout.splitlines() if line.startswith(f"clab-{lab.name}-")]
    assert not left, f"namespaces left after destroy: {left}"


def test_destroy_twice_is_a_noop(deployed):
    rt, lab = deployed
    rt.destroy(lab)  # already destroyed above: nothing left, nothing raised
    assert rt.status(lab).state == "absent"
