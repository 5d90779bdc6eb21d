"""What the configs must say, beyond matching goldens."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from cases import compiled  # noqa: E402

from railonly.fabric.devices import sonic_render as sonic  # noqa: E402


def _doc(files, sw):
    return json.loads(files[f"configs/{sw}/config_db.json"])


def test_dump_config_db_is_json_dumps_indent4_sorted():
    files = compiled("sonic-routed-2tier")
    for path, data in files.items():
        if path.endswith("config_db.json"):
            doc = json.loads(data)
            assert sonic.dump_config_db(doc) == json.dumps(doc, indent=4, sort_keys=True) + "\n"


def test_sonic_l2_has_vlan_members_and_no_bgp():
    files = compiled("sonic-l2-1tier")
    doc = _doc(files, "sl1-rail0-leaf0")
    assert doc["VLAN"]["Vlan1000"]["vlanid"] == "1000"
    assert doc["VLAN_MEMBER"]["Vlan1000|Ethernet0"] == {"tagging_mode": "untagged"}
    assert "INTERFACE" not in doc and "VLAN_INTERFACE" not in doc and "LOOPBACK_INTERFACE" not in doc
    assert "bgp_asn" not in doc["DEVICE_METADATA"]["localhost"]
    assert doc["FEATURE"]["bgp"]["state"] == "disabled"
    assert "configs/sl1-rail0-leaf0/frr.conf" not in files


def test_sonic_ports_cover_the_radix_and_unused_are_down():
    files = compiled("sonic-l2-1tier")  # 3 GPUs on a radix-4 switch: one port free
    ports = _doc(files, "sl1-rail0-leaf0")["PORT"]
    assert sorted(ports, key=lambda p: int(p[8:])) == ["Ethernet0", "Ethernet8", "Ethernet16", "Ethernet24"]
    assert ports["Ethernet24"]["admin_status"] == "down"
    assert ports["Ethernet0"]["admin_status"] == "up" and ports["Ethernet0"]["alias"] == "etp1"
    assert "description" not in ports["Ethernet24"]  # a free port names no peer
    assert ports["Ethernet0"]["description"] == "hb0:rail0 R0-T1-00001 30m"  # far end as on the floor, cable, length
    assert ports["Ethernet0"]["lanes"] == "0,1,2,3,4,5,6,7" and ports["Ethernet0"]["speed"] == "400000"
    assert ports["Ethernet0"]["fec"] == "rs" and ports["Ethernet0"]["mtu"] == "9100"


def test_sonic_routed_leaf_bgp_and_qos():
    files = compiled("sonic-routed-2tier")
    doc = _doc(files, "sr2-rail0-leaf0")
    meta = doc["DEVICE_METADATA"]["localhost"]
    assert meta["docker_routing_config_mode"] == "split-unified"
    assert meta["hostname"] == "sr2-rail0-leaf0" and meta["bgp_asn"] == "4200000001"
    # frr.conf has `neighbor GROUP bfd`: SONiC's bgp container runs bfdd only with this flag
    # (sonic-buildimage dockers/docker-fpm-frr/frr/supervisord/supervisord.conf.common.j2)
    assert " bfd\n" in files["configs/sr2-rail0-leaf0/frr.conf"].decode()
    assert meta["frr_mgmt_framework_config"] == "true"
    l2 = _doc(compiled("sonic-l2-1tier"), "sl1-rail0-leaf0")["DEVICE_METADATA"]["localhost"]
    assert "frr_mgmt_framework_config" not in l2  # no BGP, no frr.conf, bgp feature disabled
    assert "Vlan1000|10.0.0.1/29" in doc["VLAN_INTERFACE"]
    assert doc["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] == "3"
    assert doc["DSCP_TO_TC_MAP"]["AZURE"]["26"] == "3" and doc["DSCP_TO_TC_MAP"]["AZURE"]["48"] == "6"
    assert doc["WRED_PROFILE"]["AZURE_LOSSLESS"]["green_min_threshold"] == str(150 * 1024)
    frr = files["configs/sr2-rail0-leaf0/frr.conf"].decode()
    assert "router bgp 4200000001" in frr and "maximum-paths 2" in frr
    assert "bgp bestpath as-path multipath-relax" in frr
    assert " network 10.0.0.0/29" in frr and " network 10.255.0.1/32" in frr


def test_qos_values_follow_the_design():
    from railonly.fabric.compiler import compile_design
    from railonly.fabric.design.design import parse_design

    sys.path.insert(0, str(Path(__file__).parent))
    from cases import CASES

    text = CASES["sonic-routed-1tier"] + "qos: {roce_dscp: 24, roce_priority: 4, ecn_min_kbytes: 100, ecn_max_kbytes: 400}\n"
    _, files = compile_design(parse_design(text))
    doc = json.loads(files["configs/sr1-rail0-leaf0/config_db.json"])
    assert doc["DSCP_TO_TC_MAP"]["AZURE"]["24"] == "4"
    assert doc["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] == "4"
    assert doc["WRED_PROFILE"]["AZURE_LOSSLESS"]["green_max_threshold"] == str(400 * 1024)
    text = text.replace("platform: sonic", "platform: eos")
    _, files = compile_design(parse_design(text))
    eos = files["configs/sr1-rail0-leaf0/startup-config"].decode()
    assert "qos map dscp 24 to traffic-class 4" in eos
    assert "priority-flow-control priority 4 no-drop" in eos
    assert "random-detect ecn minimum-threshold 100 kbytes maximum-threshold 400 kbytes" in eos


def test_eos_sections_and_indentation():
    files = compiled("eos-routed-2tier")
    text = files["configs/er2-rail0-leaf0/startup-config"].decode()
    lines = text.splitlines()
    assert lines[-1] == "end"
    for line in lines:
        assert (len(line) - len(line.lstrip(" "))) % 3 == 0, line
    # the order `show running-config` prints (AVD's eos_cli_config_gen order)
    order = [text.index(s) for s in ("hostname er2-rail0-leaf0", "spanning-tree mode mstp", "vlan 1000",
                                      "interface Ethernet1", "interface Loopback0", "interface Vlan1000", "ip routing",
                                      "ip prefix-list RAIL_ROUTES\n   seq 10 ", "qos map dscp", "route-map RAIL_EXPORT",
                                      "router bgp")]
    assert order == sorted(order)
    assert "   description hb0:rail0 R0-T1-00001 30m\n" in text and "   speed 400g-8\n" in text
    assert "   switchport access vlan 1000\n   qos trust dscp\n" in text
    assert "   no switchport\n   qos trust dscp\n   ip address 10.128.0.1/31\n" in text
    gpu = text[text.index("interface Ethernet1\n"):text.index("interface Ethernet2\n")]
    assert "   spanning-tree portfast\n   spanning-tree bpduguard enable\n   !\n   tx-queue 0\n" in gpu
    uplink = text[text.index("interface Ethernet3\n"):text.index("interface Ethernet4\n")]
    assert "spanning-tree" not in uplink  # routed fabric links run no STP
    assert "   maximum-paths 2 ecmp 2\n" in text
    assert "   neighbor 10.128.0.0 peer group FABRIC_UP\n   neighbor 10.128.0.0 remote-as 4200032769\n" in text


def test_hosts_rail_only_routes_stay_on_their_nic():
    files = compiled("sonic-routed-2tier")
    sh = files["hosts/hb0/rails.sh"].decode()
    assert "ip rule add from 10.0.0.2 lookup 100 priority 100" in sh
    assert "ip route replace 10.0.0.0/10 via 10.0.0.1 dev rail0 table 100" in sh
    assert "default" not in sh  # rail-only: no path between rails in the network
    import yaml

    plan = yaml.safe_load(files["hosts/hb0/netplan.yaml"])
    rail1 = plan["network"]["ethernets"]["rail1"]
    assert rail1["routing-policy"] == [{"from": "10.64.0.2/32", "table": 101, "priority": 101}]
    env = files["hosts/hb0/nccl.env"].decode()
    assert "NCCL_CROSS_NIC=0" in env and "NCCL_P2P_PXN_LEVEL=2" in env


def test_hosts_baseline_has_default_via_leaf_and_l2_has_no_gateway():
    sh = compiled("sonic-baseline-2tier")["hosts/hb0/rails.sh"].decode()
    assert "ip route replace default via 10.0.0.1 dev rail0 table 100" in sh
    l2 = compiled("sonic-l2-1tier")["hosts/hb0/rails.sh"].decode()
    assert " via " not in l2 and "scope link" in l2
