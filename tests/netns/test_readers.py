"""Unit tests (no root): SONiC and EOS config readers, EOS router bgp -> FRR."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from railonly.fabric.devices.readback import eos, sonic
from railonly.fabric.devices.readback.intent import ConfigReadError

from ..conftest import compile_to, design_text
from .conftest import EOS_ROUTED


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    base = tmp_path_factory.mktemp("readers")
    return {
        "sonic-routed": compile_to(design_text("labs/mini-routed.yml", "rdsr"), base / "sr"),
        "eos-l2": compile_to(design_text("labs/mini-l2.yml", "rdel"), base / "el"),
        "eos-routed": compile_to(EOS_ROUTED.format(name="rder"), base / "er"),
    }


def test_sonic_routed_leaf(compiled):
    i = sonic.read_dir(str(compiled["sonic-routed"] / "configs" / "rdsr-rail0-leaf0"))
    assert i.hostname == "rdsr-rail0-leaf0" and i.platform == "sonic" and i.routing
    assert {p.name for p in i.ports} == {"Ethernet0", "Ethernet8", "Ethernet16", "Ethernet24"}
    assert i.port("Ethernet16").addresses == ("10.128.0.1/31",) and i.port("Ethernet16").mtu == 9100
    (vlan,) = i.vlans
    assert (vlan.name, vlan.vid, vlan.members, vlan.addresses) == ("Vlan1000", 1000, ("Ethernet0", "Ethernet8"), ("10.0.0.1/29",))
    assert i.loopbacks == ("10.255.0.1/32",)
    assert "router bgp 4200000001" in i.frr_conf and "hostname rdsr-rail0-leaf0" in i.frr_conf


def _db(**tables):
    base = {"DEVICE_METADATA": {"localhost": {"hostname": "sw1"}}}
    return json.dumps({**base, **tables})


def test_sonic_port_defaults_down_and_tagged_warns():
    i = sonic.read_config_db(_db(
        PORT={"Ethernet0": {}, "Ethernet4": {"admin_status": "up"}},
        VLAN={"Vlan10": {"vlanid": "10"}}, VLAN_MEMBER={"Vlan10|Ethernet4": {"tagging_mode": "tagged"}},
    ))
    assert not i.port("Ethernet0").admin_up and i.port("Ethernet4").admin_up
    assert i.vlans[0].members == ("Ethernet4",) and any("tagged" in w for w in i.warnings)
    assert i.frr_conf is None


@pytest.mark.parametrize("tables, words", [
    ({"PORT": {}, "INTERFACE": {"Ethernet9|10.0.0.1/31": {}}}, "not in PORT"),
    ({"PORT": {}, "VLAN": {"Vlan10": {}}, "VLAN_MEMBER": {"Vlan10|Ethernet0": {}}}, "Ethernet0 is not in PORT"),
    ({"PORT": {"Ethernet0": {}}, "VLAN_MEMBER": {"Vlan20|Ethernet0": {}}}, "not in VLAN"),
    ({"PORT": {"Ethernet0": {}}, "INTERFACE": {"Ethernet0|10.0.0.300/31": {}}}, "not an address"),
])
def test_sonic_template_bugs_are_errors(tables, words):
    with pytest.raises(ConfigReadError, match=words):
        sonic.read_config_db(_db(**tables))


def test_sonic_split_mode_files_joined(tmp_path):
    (tmp_path / "config_db.json").write_text(_db(PORT={}))
    (tmp_path / "zebra.conf").write_text("hostname sw1\n")
    (tmp_path / "bgpd.conf").write_text("router bgp 65001\n")
    i = sonic.read_dir(str(tmp_path))
    assert "hostname sw1" in i.frr_conf and "router bgp 65001" in i.frr_conf


def test_sonic_frr_without_hostname_gets_one():
    i = sonic.read_config_db(_db(PORT={}), "router bgp 65001\n")
    assert i.frr_conf.startswith("hostname sw1\n")


def test_eos_l2_leaf(compiled):
    i = eos.read_file(str(compiled["eos-l2"] / "configs" / "rdel-rail0-leaf0" / "startup-config"))
    assert i.platform == "eos" and not i.routing and i.frr_conf is None and i.loopbacks == ()
    vl = {v.name: v for v in i.vlans}
    assert vl["Vlan1000"].members == ("Ethernet1", "Ethernet2", "Ethernet3", "Ethernet4")
    assert not i.port("Ethernet5").admin_up and i.port("Ethernet1").admin_up and i.port("Ethernet1").mtu == 9100


def test_eos_routed_leaf(compiled):
    i = eos.read_file(str(compiled["eos-routed"] / "configs" / "rder-rail0-leaf0" / "startup-config"))
    assert i.routing and i.loopbacks == ("10.255.0.1/32",)
    assert i.port("Ethernet3").addresses == ("10.128.0.1/31",)
    assert i.port("Ethernet3").name not in i.vlans[0].members  # routed ports join no VLAN
    vl = {v.name: v for v in i.vlans}
    assert vl["Vlan1000"].addresses == ("10.0.0.1/29",) and vl["Vlan1000"].mtu == 9100
    assert not i.warnings, i.warnings


EOS_BGP = """\
hostname sw1
ip routing
ip prefix-list PL seq 10 permit 10.0.0.0/8 le 32
route-map RM permit 10
   match ip address prefix-list PL
ip route 10.9.0.0/16 10.0.0.1
interface Loopback0
   ip address 10.255.0.9/32
router bgp 65001
   router-id 10.255.0.9
   maximum-paths 4 ecmp 4
   neighbor G peer group
   neighbor G route-map RM in
   neighbor G send-community
   neighbor 10.0.0.1 peer group G
   neighbor 10.0.0.1 remote-as 65002
   neighbor 10.0.0.1 description spine one
   neighbor 10.0.0.3 remote-as 65003
   neighbor 10.0.0.3 update-source Loopback0
   neighbor 10.0.0.3 bfd
   network 10.255.0.9/32
   address-family ipv4
      neighbor 10.0.0.3 next-hop-self
end
"""


def test_eos_bgp_to_frr_translation():
    conf, warn = eos.bgp_to_frr(EOS_BGP)
    lines = [ln.strip() for ln in conf.splitlines()]
    for want in ("hostname sw1", "router bgp 65001", "bgp router-id 10.255.0.9", "no bgp ebgp-requires-policy",
                 "neighbor G peer-group", "neighbor 10.0.0.1 remote-as 65002", "neighbor 10.0.0.1 peer-group G",
                 "neighbor 10.0.0.1 description spine one", "neighbor 10.0.0.3 update-source lo",
                 "neighbor G route-map RM in", "neighbor G send-community", "network 10.255.0.9/32",
                 "neighbor 10.0.0.3 next-hop-self", "maximum-paths 4", "neighbor G activate",
                 "neighbor 10.0.0.3 activate", "ip prefix-list PL seq 10 permit 10.0.0.0/8 le 32",
                 "route-map RM permit 10", "match ip address prefix-list PL", "ip route 10.9.0.0/16 10.0.0.1"):
        assert want in lines, (want, conf)
    # FRR wants a member's remote-as before its peer-group line, groups first
    assert lines.index("neighbor G peer-group") < lines.index("neighbor 10.0.0.1 remote-as 65002") \
        < lines.index("neighbor 10.0.0.1 peer-group G")
    assert "neighbor 10.0.0.1 activate" not in lines  # activated through its group
    assert "neighbor 10.0.0.3 bfd" in lines and not any("bfd" in w for w in warn)  # the lab runs bfdd


def test_eos_community_list_becomes_frrs_standard_list():
    conf, warn = eos.bgp_to_frr("hostname s\nip community-list FROM_ABOVE permit 64512:1\n"
                                "route-map X deny 10\n   match community FROM_ABOVE\n"
                                "router bgp 1\n   neighbor G peer group\n   neighbor G maximum-routes 100\nend\n")
    lines = [ln.strip() for ln in conf.splitlines()]
    assert "bgp community-list standard FROM_ABOVE permit 64512:1" in lines
    assert "match community FROM_ABOVE" in lines and "neighbor G maximum-prefix 100" in lines and not warn


def test_eos_no_default_activation_is_kept():
    conf, _ = eos.bgp_to_frr(
        "hostname s\nrouter bgp 1\n   no bgp default ipv4-unicast\n   neighbor 10.0.0.1 remote-as 2\n"
        "   neighbor 10.0.0.2 remote-as 3\n   address-family ipv4\n      neighbor 10.0.0.2 activate\n")
    assert "  neighbor 10.0.0.2 activate" in conf and "neighbor 10.0.0.1 activate" not in conf


def test_eos_without_bgp_has_no_frr():
    assert eos.bgp_to_frr("hostname s\nno ip routing\n") == (None, [])


def test_eos_missing_hostname_and_bad_address():
    with pytest.raises(ConfigReadError, match="hostname"):
        eos.read_startup_config("interface Ethernet1\n   shutdown\n")
    with pytest.raises(ConfigReadError, match="not an address"):
        eos.read_startup_config("hostname s\ninterface Ethernet1\n   no switchport\n   ip address 10.0.0.1/99\n")


def test_eos_undeclared_vlan_warns():
    i = eos.read_startup_config("hostname s\ninterface Ethernet1\n   switchport access vlan 7\n")
    assert any("VLAN 7" in w for w in i.warnings)


@pytest.mark.skipif(shutil.which("vtysh") is None, reason="FRR (vtysh) is not installed")
def test_translated_frr_parses_in_vtysh(compiled, tmp_path):
    from railonly.fabric.validate.frr_syntax import check_frr_text

    for sw in ("rder-rail0-leaf0", "rder-rail0-spine0"):
        i = eos.read_file(str(compiled["eos-routed"] / "configs" / sw / "startup-config"))
        assert not check_frr_text(i.frr_conf, f"{sw}.frr"), i.frr_conf
    conf, _ = eos.bgp_to_frr(EOS_BGP)
    assert not check_frr_text(conf, "sample.frr"), conf
