"""The management plane (docs/management.md): both vendors' forms, YANG-valid and
`validate` clean; secrets only as hashes or keys; hostile values never reach a line;
`validate` accepts exactly the management forms railonly writes and EOS prints."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from cases import CASES, MGMT  # noqa: E402

from railonly.cli import main  # noqa: E402
from railonly.fabric.devices.readback.eos import parse_startup_config  # noqa: E402
from railonly.fabric.outdir.reader import check_eos  # noqa: E402

HASH = "$6$railonlysalt0001$XpJUZ2GBYrUOtLdsK/BO3aghgmYCL9Y/c1iP2TPprCjp5kg2NKrnBzw7OXIyH8c3sMx14sME9FIBpnflRZnDq0"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f ops@example"


@pytest.fixture(scope="module")
def outdir(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("mgmt")
    (base / "d.yml").write_text(CASES["mixed-mgmt-2tier"])
    assert main(["compile", str(base / "d.yml"), "-o", str(base / "out"), "-q"]) == 0
    return base / "out"


def compile_text(tmp_path: Path, text: str, capsys) -> tuple[int, str]:
    (tmp_path / "d.yml").write_text(text)
    rc = main(["compile", str(tmp_path / "d.yml"), "-o", str(tmp_path / "out"), "-q"])
    return rc, capsys.readouterr().err


def test_both_vendors_validate_clean_with_yang(outdir, capsys):
    assert main(["validate", str(outdir)]) == 0, capsys.readouterr().out


def test_sonic_tables_in_their_yang_forms(outdir):
    doc = json.loads((outdir / "configs/mm2-rail0-leaf0/config_db.json").read_text())
    fabric = json.loads((outdir / "fabric.json").read_text())
    ip = next(n["mgmt_ip"] for n in fabric["nodes"] if n["name"] == "mm2-rail0-leaf0")
    assert doc["MGMT_INTERFACE"] == {f"eth0|{ip}": {"gwaddr": "192.168.100.1"}}
    assert doc["MGMT_PORT"]["eth0"]["admin_status"] == "up"
    assert doc["MGMT_VRF_CONFIG"] == {"vrf_global": {"mgmtVrfEnabled": "true"}}
    assert set(doc["NTP_SERVER"]) == {"192.0.2.1", "192.0.2.2"} and doc["NTP"]["global"]["vrf"] == "mgmt"
    assert doc["SYSLOG_SERVER"] == {"192.0.2.3": {"vrf": "mgmt", "port": "514"}}
    assert doc["DNS_NAMESERVER"] == {"192.0.2.53": {}}


def test_one_distinct_management_address_per_switch(outdir):
    fabric = json.loads((outdir / "fabric.json").read_text())
    ips = [n["mgmt_ip"] for n in fabric["nodes"] if n["role"] == "switch"]
    assert len(ips) == len(set(ips)) == 10 and "192.168.100.1/24" not in ips


def test_eos_lines(outdir):
    text = (outdir / "configs/mm2-rail0-spine0/startup-config").read_text()
    for line in (f"username netops privilege 15 role network-admin secret sha512 {HASH}",
                 "username viewer privilege 1 role network-operator nopassword", f"username viewer ssh-key {KEY}",
                 "logging vrf mgmt host 192.0.2.3", "ip name-server vrf mgmt 192.0.2.53", "vrf instance mgmt",
                 "interface Management1\n   description management\n   vrf mgmt\n   ip address 192.168.100.",
                 "no ip routing vrf mgmt", "ip route vrf mgmt 0.0.0.0/0 192.168.100.1",
                 "ntp server vrf mgmt 192.0.2.1 iburst local-interface Management1",
                 "tacacs-server host 192.0.2.49 vrf mgmt", "management api gnmi\n   transport grpc default\n      vrf mgmt"):
        assert line in text, line


SSH_IN_VRF = "\nmanagement ssh\n   vrf {vrf}\n      no shutdown\n!\nend\n"


def test_eos_ssh_server_answers_in_the_management_vrf(outdir, tmp_path, capsys):
    """Management1 sits in the management VRF, and EOS runs its SSH server in the default VRF
    unless `management ssh` enables it in another: without the block, push and operators find
    no SSH on the management address. Every EOS switch gets it (last, as AVD's
    eos_cli_config_gen orders it), in the design's VRF, and validate takes the OUTDIR."""
    eos = sorted(outdir.glob("configs/*/startup-config"))
    assert len(eos) == 4
    for path in eos:
        assert path.read_text().endswith(SSH_IN_VRF.format(vrf="mgmt")), path
        assert check_eos(path.read_text(), str(path)) == []
    eos_only = CASES["eos-routed-2tier"] + MGMT.replace("gateway:", "vrf: MGMT\n  gateway:")
    rc, err = compile_text(tmp_path, eos_only, capsys)
    assert rc == 0, err
    text = (tmp_path / "out/configs/er2-rail0-leaf0/startup-config").read_text()
    assert text.endswith(SSH_IN_VRF.format(vrf="MGMT")) and text.count("management ssh") == 1
    for shown in (text, text.replace("management ssh\n", "management ssh\n   !\n")):  # as EOS prints it too
        read = parse_startup_config(shown)
        assert not read.facts.problems and not read.errors and not read.intent().warnings
    assert main(["validate", str(tmp_path / "out")]) == 0, capsys.readouterr().out


@pytest.mark.parametrize("case", ["eos-routed-2tier", "mixed-routed-2tier"])
def test_no_management_section_no_ssh_block(case):
    from cases import compiled

    eos = {p: b.decode() for p, b in compiled(case).items() if p.endswith("/startup-config")}
    assert eos and not any("management ssh" in t or "vrf instance" in t for t in eos.values())


def test_a_plaintext_password_is_exit_2_naming_the_key(tmp_path, capsys):
    text = CASES["sonic-routed-2tier"] + MGMT.replace(f'sha512: "{HASH}"', 'password: "hunter2"')
    rc, err = compile_text(tmp_path, text, capsys)
    assert rc == 2
    assert "management.users[0].password" in err and "plaintext password is refused" in err and "openssl passwd -6" in err
    assert "hunter2" not in err  # the secret is not echoed back
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("old, new, key", [
    ("name: netops", 'name: "netops\\nusername evil privilege 15 nopassword"', "users[0].name"),
    (f'sha512: "{HASH}"', f'sha512: "{HASH}\\nbash rm -rf /"', "users[0].sha512"),
    (f'sha512: "{HASH}"', 'sha512: "$1$md5salt$notsha512"', "users[0].sha512"),
    (f'ssh_key: "{KEY}"', f'ssh_key: "{KEY}\\nusername evil nopassword"', "users[1].ssh_key"),
    (f'ssh_key: "{KEY}"', 'ssh_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f"'
                          .replace("AAAAC3NzaC1lZDI1NTE5", "AAAAB3NzaC1yc2EAAAAD"), "users[1].ssh_key"),
    ("ntp: [192.0.2.1, 192.0.2.2]", 'ntp: ["192.0.2.1 prefer\\nbash id"]', "ntp[0]"),
    ("syslog: [192.0.2.3]", "syslog: [300.1.1.1]", "syslog[0]"),
    ("gateway: 192.168.100.1", "gateway: 10.9.9.9", "gateway"),
    # a pool's network or broadcast address, or no host at all (findings: all compiled)
    ("gateway: 192.168.100.1", "gateway: 192.168.100.0", "network address of management.pool"),
    ("gateway: 192.168.100.1", "gateway: 192.168.100.255", "broadcast address of management.pool"),
    ("syslog: [192.0.2.3]", "syslog: [255.255.255.255]", "syslog[0]: 255.255.255.255 is reserved"),
    ("ntp: [192.0.2.1, 192.0.2.2]", "ntp: [0.0.0.0]", "ntp[0]: 0.0.0.0 is unspecified"),
    ("syslog: [192.0.2.3]", "syslog: [127.0.0.1]", "a loopback address"),
    ("syslog: [192.0.2.3]", "syslog: [224.0.0.5]", "a multicast address"),
    ("pool: 192.168.100.0/24", "pool: 192.168.100.0/29", "management.pool"),
    # more servers than the switch takes (SONiC's YANG max-elements; EOS: three name servers)
    ("dns: [192.0.2.53]", "dns: [192.0.2.53, 192.0.2.54, 192.0.2.55, 192.0.2.56]", "management.dns: lists 4 servers"),
    ("ntp: [192.0.2.1, 192.0.2.2]", f"ntp: [{', '.join(f'192.0.2.{i}' for i in range(1, 12))}]", "management.ntp: lists 11 servers"),
    ("tacacs: [192.0.2.49]", f"tacacs: [{', '.join(f'192.0.2.{i}' for i in range(40, 49))}]", "management.tacacs: lists 9 servers"),
])
def test_hostile_or_wrong_values_are_exit_2_naming_the_key(tmp_path, capsys, old, new, key):
    text = CASES["mixed-mgmt-2tier"]
    assert old in text
    rc, err = compile_text(tmp_path, text.replace(old, new), capsys)
    assert rc == 2 and key in err, err
    assert not (tmp_path / "out").exists()


def test_sonic_needs_the_vrf_named_mgmt(tmp_path, capsys):
    rc, err = compile_text(tmp_path, CASES["mixed-mgmt-2tier"].replace("gateway:", "vrf: oob\n  gateway:"), capsys)
    assert rc == 2 and "management.vrf" in err and "'mgmt'" in err
    eos_only = CASES["eos-routed-2tier"] + MGMT.replace("gateway:", "vrf: MGMT\n  gateway:")
    rc, err = compile_text(tmp_path, eos_only, capsys)
    assert rc == 0, err
    assert "vrf instance MGMT" in (tmp_path / "out/configs/er2-rail0-leaf0/startup-config").read_text()


@pytest.mark.parametrize("case", ["eos-routed-2tier", "mixed-routed-2tier"])
def test_the_default_vrf_is_never_the_management_vrf(tmp_path, capsys, case):
    # EOS has no `vrf instance default` nor `vrf default` on Management1 (AVD skips both for
    # 'default'), and `no ip routing vrf default` would stop the fabric routing: exit 2, one problem
    text = CASES[case] + MGMT.replace("gateway:", "vrf: default\n  gateway:")
    rc, err = compile_text(tmp_path, text, capsys)
    assert rc == 2 and "management.vrf: 'default' is the fabric's own VRF" in err, err
    assert ".yml:" in err and "fix: use vrf: mgmt" in err and "1 problem found" in err
    assert not (tmp_path / "out").exists()


def test_eos_takes_three_name_servers(tmp_path, capsys):
    # EOS manual ("Specifying DNS Addresses"): a maximum of three name servers
    text = CASES["eos-routed-2tier"] + MGMT.replace("dns: [192.0.2.53]", "dns: [192.0.2.53, 192.0.2.54, 192.0.2.55, 192.0.2.56]")
    rc, err = compile_text(tmp_path, text, capsys)
    assert rc == 2 and "management.dns: lists 4 servers; EOS takes at most 3" in err, err
    assert not (tmp_path / "out").exists()
    rc, err = compile_text(tmp_path, text.replace(", 192.0.2.56", ""), capsys)
    assert rc == 0, err


# --- validate: exactly the forms railonly writes and EOS prints ------------------------

def test_validate_accepts_the_forms_eos_prints():
    printed = ("hostname a\nno aaa root\n"
               f"username admin privilege 15 role network-admin secret sha512 {HASH}\n"
               f"username netops role network-admin secret sha512 {HASH}\n"
               "username viewer privilege 1 role network-operator nopassword\n"
               f"username viewer ssh-key {KEY}\n"
               "logging vrf MGMT host 192.0.2.3\nntp server vrf MGMT 192.0.2.1 iburst\n"
               "ntp server vrf MGMT 192.0.2.2\nmanagement api http-commands\n   no shutdown\n"
               "management api gnmi\n   transport grpc default\n      vrf MGMT\n"
               "tacacs-server host 192.0.2.49 vrf MGMT\n"
               "management ssh\n   !\n   vrf MGMT\n      no shutdown\n!\nend\n")
    assert check_eos(printed, "x") == []


@pytest.mark.parametrize("line, why", [
    ("username evil privilege 15 nopassword", "no password and no SSH key"),
    ("username evil privilege 15 role network-admin secret 0 hunter2", "not one railonly writes"),
    ("username evil privilege 15 role network-admin secret 5 $1$abc$def", "not one railonly writes"),
    ("username evil shell /bin/bash nopassword", "not one railonly writes"),
    ("username evil ssh-key ssh-ed25519 AAAA; rm -rf /", "not one railonly writes"),
    ("ntp server vrf MGMT evil.example.com", "not one railonly writes"),
    ("logging host 192.0.2.3 protocol tcp", "not one railonly writes"),
    ("management security", "not one railonly writes"),
    ("tacacs-server key 0 hunter2", "not one railonly writes"),
    ("aaa authentication login default none", "runs programs or changes access"),
    ("   username evil nopassword", "runs programs or changes access"),
])
def test_validate_refuses_dangerous_management_forms(line, why):
    probs = check_eos(f"hostname a\n{line}\nend\n", "x")
    assert probs and why in probs[0].message, [p.message for p in probs]


@pytest.mark.parametrize("body", [
    "",                                                       # the head alone
    "   vrf MGMT\n",                                          # the VRF, its server not enabled
    "   vrf MGMT\n      shutdown\n",
    "   authentication empty-passwords permit\n   vrf MGMT\n      no shutdown\n",
    "   vrf MGMT\n      no shutdown\n   authentication protocol none\n",
    "   vrf MGMT\n      no shutdown\n      ip access-group ANY in\n",
    "   vrf MGMT\n      no shutdown\n   vrf default\n      no shutdown\n",
    "   vrf MGMT ; bash id\n      no shutdown\n",
    "  vrf MGMT\n     no shutdown\n",                       # not EOS's indentation
])
def test_validate_takes_only_the_ssh_in_vrf_block(body):
    probs = check_eos(f"hostname a\nmanagement ssh\n{body}!\nend\n", "x")
    assert probs and "'management ssh'" in probs[0].message and "not one railonly writes" in probs[0].message, \
        [p.message for p in probs]
    assert probs[0].line == 2


@pytest.mark.parametrize("bad", ['sha512: "$1$md5salt$notsha512"', 'sha512: "not a hash"'])
def test_a_malformed_hash_is_one_problem_not_also_a_missing_one(tmp_path, capsys, bad):
    """The schema names the sha512 it refuses; the user gives one, so 'neither sha512 nor
    ssh_key' would be a second, wrong problem."""
    text = CASES["mixed-mgmt-2tier"].replace(f'sha512: "{HASH}"', bad)
    rc, err = compile_text(tmp_path, text, capsys)
    assert rc == 2 and "users[0].sha512" in err and "neither sha512 nor ssh_key" not in err, err
    assert "1 problem found" in err
