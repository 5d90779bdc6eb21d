"""One parser per vendor: validate's facts and the lab's intent come from one walk of a file.

The two views are read from the same lines, so they cannot disagree on what a line means:
a line validate counts is a line the lab programs, and the other way round.
"""

from __future__ import annotations

import json

import pytest

from railonly.fabric.devices.readback.eos import parse_startup_config
from railonly.fabric.devices.readback.intent import ConfigReadError
from railonly.fabric.devices.readback.sonic import parse_config_db

from ..conftest import REPO

GOLDEN = REPO / "tests" / "golden" / "configs"


def _eos(body: str) -> str:
    return "hostname s1\n" + body + "end\n"


@pytest.mark.parametrize("folder", sorted(p.parent for p in GOLDEN.glob("*/configs/*/startup-config")),
                         ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_eos_views_agree_on_every_golden_switch(folder):
    cfg = parse_startup_config((folder / "startup-config").read_text(), "startup-config", folder.name)
    f, i = cfg.facts, cfg.intent()
    assert f.hostname == i.hostname == folder.name and not f.problems
    for p in i.ports:
        assert f.ports[p.name].admin_up == p.admin_up and f.ports[p.name].mtu == p.mtu
        assert set(p.addresses) <= set(f.ports[p.name].ips)
    assert list(i.loopbacks) == f.loopbacks
    assert {v.vid: list(v.addresses) for v in i.vlans if v.addresses} == f.svis
    for peer, asn in f.neighbors.items():  # every neighbor validate checks is one FRR runs
        assert f"neighbor {peer} remote-as {asn}" in i.frr_conf


@pytest.mark.parametrize("folder", sorted(p.parent for p in GOLDEN.glob("*/configs/*/config_db.json")),
                         ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_sonic_views_agree_on_every_golden_switch(folder):
    frr = folder / "frr.conf"
    cfg = parse_config_db(json.loads((folder / "config_db.json").read_text()),
                          frr.read_text() if frr.is_file() else None, "config_db.json", "frr.conf", folder.name)
    f, i = cfg.facts, cfg.intent()
    assert f.hostname == i.hostname == folder.name and not f.problems
    assert {p.name for p in i.ports} == set(f.ports)
    for p in i.ports:
        assert (f.ports[p.name].admin_up, f.ports[p.name].mtu, sorted(f.ports[p.name].ips)) == (p.admin_up, p.mtu, list(p.addresses))
    assert sorted(i.loopbacks) == sorted(f.loopbacks)


def test_a_deeper_line_is_its_sub_modes_or_else_the_sections_own():
    # EOS reads a config by mode, not by indentation: under tx-queue a line is the queue's;
    # after any other line a deeper line is the interface's own, for both views
    text = _eos("interface Ethernet1\n   tx-queue 3\n      shutdown\n   mtu 9100\n"
                "interface Ethernet2\n   mtu 9100\n      shutdown\n")
    cfg = parse_startup_config(text)
    assert cfg.facts.ports["Ethernet1"].admin_up and cfg.intent().port("Ethernet1").admin_up
    assert not cfg.facts.ports["Ethernet2"].admin_up and not cfg.intent().port("Ethernet2").admin_up


def test_a_comment_does_not_end_a_section():
    # `!` is a comment to EOS: the lines after it stay in the interface's mode, for both views
    cfg = parse_startup_config(_eos("interface Ethernet1\n   no switchport\n!\n   ip address 10.0.0.1/31\n"))
    assert cfg.facts.ports["Ethernet1"].ips == ["10.0.0.1/31"]
    assert cfg.intent().port("Ethernet1").addresses == ("10.0.0.1/31",)


def test_a_problem_for_the_lab_leaves_validates_facts_whole():
    # an address the lab cannot program stops the lab's view; validate still reads the file
    cfg = parse_startup_config(_eos("interface Ethernet1\n   no switchport\n   ip address 10.0.0.300/31\n   mtu 9100\n"))
    assert cfg.facts.ports["Ethernet1"].mtu == 9100 and cfg.facts.ports["Ethernet1"].ips == ["10.0.0.300/31"]
    with pytest.raises(ConfigReadError, match="not an address"):
        cfg.intent()


@pytest.mark.parametrize("doc, where", [
    ({"DEVICE_METADATA": {"localhost": {"hostname": "s"}}, "PORT": {"Ethernet0": "up"}}, "PORT|Ethernet0"),
    ({"DEVICE_METADATA": {"localhost": {"hostname": "s"}}, "VLAN": ["Vlan10"]}, "VLAN"),
    ({"DEVICE_METADATA": "s"}, "DEVICE_METADATA"),
])
def test_sonic_non_objects_are_problems_of_both_views_not_tracebacks(doc, where):
    cfg = parse_config_db(doc, None, "config_db.json", None, "s")
    assert f"{where}: is not an object" in cfg.facts.problems
    with pytest.raises(ConfigReadError):
        cfg.intent()


def test_the_bgp_facts_of_an_frr_conf_are_read_from_router_bgp_only():
    frr = ("hostname s1\nneighbor 10.9.9.9 remote-as 1\nrouter bgp 65001\n bgp router-id 10.255.0.1\n"
           " neighbor G peer-group\n neighbor 10.0.0.1 remote-as 65002\n neighbor 10.0.0.1 peer-group G\n"
           " neighbor 10.0.0.3 peer group G\n neighbor 10.0.0.5 remote-as external\n"
           " neighbor 10.0.0.1 description x:Ethernet0\n address-family ipv4 unicast\n  network 10.1.0.0/24 \n"
           " exit-address-family\nexit\nrouter-id 10.0.0.9\n")
    doc = {"DEVICE_METADATA": {"localhost": {"hostname": "s1", "bgp_asn": "65001"}}}
    f = parse_config_db(doc, frr, "config_db.json", "frr.conf", "s1").facts
    assert (f.asn, f.router_id, f.networks) == (65001, "10.255.0.1", ["10.1.0.0/24"])
    assert f.neighbors == {"10.0.0.1": 65002, "10.0.0.3": None, "10.0.0.5": None}
