"""`validate` and the lab's EOS reader accept what a device prints for the same intent.

fixtures/*.running-config: two switches of the golden case eos-routed-2tier as
`show running-config` prints them (written by hand in EOS's form): header
comments, management and VRF sections railonly does not write, `no shutdown`,
a default `switchport`, another lane split (`speed 400g-4`), lines and sections
in other orders, the older `peer-group` keyword, `network` under
`address-family ipv4`.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from corpus import designs
from railonly.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
PRINTED = ("er2-rail0-leaf0", "er2-rail0-spine0")


@pytest.fixture(scope="module")
def outdir(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("eosr2")
    (base / "d.yml").write_text(designs()["case/eos-routed-2tier"])
    assert main(["compile", str(base / "d.yml"), "-o", str(base / "out"), "-q"]) == 0
    return base / "out"


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "out"
    shutil.copytree(src, dst)
    return dst


def _printed(out: Path) -> None:
    for sw in PRINTED:
        shutil.copyfile(FIXTURES / f"{sw}.running-config", out / "configs" / sw / "startup-config")


def _validate(out: Path, capsys) -> tuple[int, str]:
    # configs taken back from a device: the same intent in other bytes than MANIFEST.json hashes
    rc = main(["validate", "--no-manifest", str(out)])
    return rc, capsys.readouterr().out


def test_running_config_of_the_same_intent_validates_clean(outdir, tmp_path, capsys):
    out = _copy(outdir, tmp_path)
    _printed(out)
    rc, text = _validate(out, capsys)
    assert rc == 0, text


def test_running_config_without_portfast_on_a_gpu_port_fails(outdir, tmp_path, capsys):
    out = _copy(outdir, tmp_path)
    _printed(out)
    cfg = out / "configs" / "er2-rail0-leaf0" / "startup-config"
    text = cfg.read_text()
    cfg.write_text(text.replace("   spanning-tree portfast\n", "", 1))
    rc, printed = _validate(out, capsys)
    assert rc == 1 and "Ethernet1 (GPU hb0-gpu0) has no 'spanning-tree portfast'" in printed, printed


@pytest.mark.parametrize("form", ["400g-8", "400g-4"])
def test_validate_passes_speed_rewritten_to_a_400g_form(outdir, tmp_path, capsys, form):
    out = _copy(outdir, tmp_path)
    for cfg in (out / "configs").glob("*/startup-config"):
        cfg.write_text(re.sub(r"^   speed \S+$", f"   speed {form}", cfg.read_text(), flags=re.M))
    rc, text = _validate(out, capsys)
    assert rc == 0, text


def test_validate_fails_100g_on_a_400g_cable(outdir, tmp_path, capsys):
    out = _copy(outdir, tmp_path)
    for cfg in (out / "configs").glob("*/startup-config"):
        cfg.write_text(re.sub(r"^   speed \S+$", "   speed 100g-4", cfg.read_text(), flags=re.M))
    rc, text = _validate(out, capsys)
    assert rc == 1
    assert "interface Ethernet1.speed is 100 Gbit/s, cable" in text and "is 400 Gbit/s" in text, text


def test_validate_names_a_speed_without_lanes(outdir, tmp_path, capsys):
    out = _copy(outdir, tmp_path)
    cfg = out / "configs" / "er2-rail0-leaf0" / "startup-config"
    cfg.write_text(cfg.read_text().replace("   speed 400g-8\n", "   speed 400g\n", 1))
    rc, text = _validate(out, capsys)
    assert rc == 1 and "unknown speed '400g'" in text and "400g-8" in text, text


def test_lab_reader_reads_the_printed_config_as_the_generated_one(outdir):
    from railonly.fabric.devices.readback import eos as eos_reader

    for sw in PRINTED:
        gen = eos_reader.read_file(str(outdir / "configs" / sw / "startup-config"))
        got = eos_reader.read_file(str(FIXTURES / f"{sw}.running-config"))
        assert got.hostname == gen.hostname and got.routing == gen.routing
        assert sorted(got.ports, key=lambda p: p.name) == sorted(gen.ports, key=lambda p: p.name)
        assert got.vlans == gen.vlans and got.loopbacks == gen.loopbacks
        assert not gen.warnings, gen.warnings  # speed, spanning-tree, qos lines are understood
        for conf in (gen.frr_conf, got.frr_conf):
            assert "ip prefix-list RAIL_ROUTES seq 10 permit 10.0.0.0/9 le 32" in conf, conf
        nb = lambda conf: sorted(ln.strip() for ln in conf.splitlines() if ln.strip().startswith(("neighbor", "network")))
        assert nb(got.frr_conf) == nb(gen.frr_conf)


def test_portfast_ports_are_bridge_ports_that_forward_at_link_up(outdir):
    # the lab has no spanning tree: a VLAN is a Linux bridge with STP off, so its ports
    # forward as soon as they are up, which is what `spanning-tree portfast` asks of EOS
    from railonly.emulation.runtime.netns import ns_plan as nsplan, switch_plan
    from railonly.fabric.devices.readback import eos as eos_reader

    intent = eos_reader.read_file(str(FIXTURES / "er2-rail0-leaf0.running-config"))
    items = switch_plan.switch_items(intent, "ns", ["Ethernet1", "Ethernet2", "Ethernet3", "Ethernet4"],
                                     str(outdir / ".frr"), "er2-rail0-leaf0").items
    bridges = [i for i in items if isinstance(i, nsplan.Bridge)]
    assert [(b.name, b.ports, b.stp) for b in bridges] == [("Vlan1000", ("Ethernet1", "Ethernet2"), False)]


def test_lab_reader_takes_the_one_line_prefix_list_too():
    from railonly.fabric.devices.readback import eos as eos_reader

    conf, _ = eos_reader.bgp_to_frr("hostname a\nip prefix-list P seq 5 permit 10.0.0.0/8 le 32\n"
                                    "router bgp 1\n   router-id 1.1.1.1\nend\n")
    assert "ip prefix-list P seq 5 permit 10.0.0.0/8 le 32" in conf.splitlines()


def test_fixtures_hold_only_known_forms_or_lines_railonly_does_not_write():
    # the printed configs are not railonly output: they may hold other lines, but every
    # line railonly itself writes in them must be a corpus form (a sanity check of the fixture)
    from corpus import eos_unmatched

    for sw in PRINTED:
        text = (FIXTURES / f"{sw}.running-config").read_text()
        extra = {ln.split(": ", 1)[1] for ln in eos_unmatched(text)}
        allowed = re.compile(r"^'(! (Command|boot).*|no aaa root|management api .*|   no shutdown|   vrf MGMT|"
                             r"      no shutdown|transceiver .*|vrf instance MGMT|interface Management1|"
                             r"   ip address 192\.0\.2\.\d+/24|no ip routing vrf MGMT|ip route vrf MGMT .*|"
                             r"   switchport|   speed 400g-4|   address-family ipv4|      neighbor FABRIC activate|"
                             r"      network .*|      neighbor FABRIC_(UP|DOWN) activate|   neighbor [\d.]+ peer-group FABRIC_(UP|DOWN))'$")
        assert all(allowed.match(x) for x in extra), sorted(x for x in extra if not allowed.match(x))


@pytest.mark.parametrize("words, gbps", [
    (["400g-8"], 400), (["400g-4"], 400), (["800g-8"], 800), (["200g-4"], 200), (["100g-2"], 100),
    (["auto", "400g-8"], 400), (["forced", "100gfull"], 100),
    (["400g"], None), (["400g-2"], None), (["400"], None), (["forced", "400g-8"], None), ([], None),
    (["forced", "\u0664\u0660\u0660gfull"], None),  # Arabic-Indic 400: int() reads it, EOS does not
])
def test_speed_forms(words, gbps):
    from railonly.fabric.platforms.eos_speeds import parse_speed, speed_form

    assert parse_speed(words) == gbps
    for g in (100, 200, 400, 800):
        assert parse_speed([speed_form(g)]) == g


def test_validate_reader_survives_truncated_lines():
    # hostile input: a hand-edited config with half-written lines gives problems, not a traceback
    from railonly.fabric.devices.readback.eos import parse_startup_config

    text = ("hostname x\ninterface Ethernet1\n   speed\n   ip address\n   switchport access vlan\n   mtu\n"
            "interface Ethernet1.5\n   ip address 10.0.0.1/31\nrouter bgp\n   neighbor\n   neighbor 10.0.0.1\n"
            "   router-id\n   network\nend\n")
    cfg = parse_startup_config(text, "x", "x")
    f = cfg.facts
    assert any("unknown speed ''" in p for p in f.problems) and list(f.ports) == ["Ethernet1"]
    # the lab's view of the same parse: programmable (no BGP without an AS number), no traceback
    assert cfg.intent().frr_conf is None and [p.name for p in cfg.intent().ports] == ["Ethernet1"]


@pytest.mark.parametrize("digit", ["²", "\u0663"])  # int() refuses the first and reads the second as 3
def test_readers_take_numbers_in_ascii_digits_only(digit):
    from railonly.fabric.devices.readback.eos import parse_startup_config
    from railonly.fabric.devices.readback.intent import ConfigReadError
    from railonly.fabric.devices.readback.sonic import parse_config_db

    eos = parse_startup_config(f"hostname x\ninterface Ethernet1\n   mtu {digit}\n   switchport access vlan {digit}\n"
                               f"vlan {digit}\ninterface Vlan{digit}\n   ip address 10.0.0.1/24\nend\n", "x", "x")
    assert eos.facts.ports["Ethernet1"].mtu is None and eos.facts.ports["Ethernet1"].vlan is None
    with pytest.raises(ConfigReadError, match="not a VLAN list"):
        eos.intent()
    db = {"DEVICE_METADATA": {"localhost": {"hostname": "x"}}, "VLAN": {"Vlan2": {"vlanid": digit}},
          "PORT": {"Ethernet0": {"mtu": digit}}}
    sonic = parse_config_db(db, None, "x")
    assert any("not numbers" in p for p in sonic.facts.problems)
    with pytest.raises(ConfigReadError, match="not a number"):
        sonic.intent()


@pytest.mark.parametrize("text, says", [("[" * 100_000 + "]" * 100_000, "nested too deep"),
                                        ('{"PORT": ' + "9" * 5000 + "}", "digits"), ('{"PORT": [}', "config_db.json:1")])
def test_config_db_that_json_cannot_read_is_a_read_error(text, says):
    from railonly.fabric.devices.readback.intent import ConfigReadError
    from railonly.fabric.devices.readback.sonic import read_config_db

    with pytest.raises(ConfigReadError, match=says):
        read_config_db(text)
