"""Push pieces that need no root: inventory validation, diffs, redaction, the CLI's input errors."""

from __future__ import annotations

import pytest

from railonly.cli import main
from railonly.emulation.push import pusher as push
from railonly.emulation.push.targets import load_inventory
from railonly.fabric.input.problems import InputError





def _compiled(tmp_path, platform: str = "sonic"):
    from railonly.fabric.compiler import compile_design
    from railonly.fabric.design.design import parse_design
    from railonly.fabric.outdir.writer import write_outdir

    text = ("name: unitpush\ntopology: rail-only\nhb_domain: {size: 2, count: 6, gbps: 3600}\n"
            f"nic: {{gbps: 400}}\nswitch: {{radix: 4, platform: {platform}}}\nrail: {{mode: routed}}\n")
    d = parse_design(text, "u.yml")
    _, files = compile_design(d)
    write_outdir(str(tmp_path / "out"), files, d.sha256)
    return tmp_path / "out"


def test_inventory_ok_with_defaults(tmp_path):
    out = _compiled(tmp_path)
    inv = tmp_path / "inv.yml"
    inv.write_text("known_hosts: kh\ndefaults: {platform: sonic}\ndevices:\n"
                   "  unitpush-rail0-leaf0: {host: 192.0.2.1}\n  unitpush-rail0-spine0: {host: 192.0.2.2, port: 2222}\n")
    devs = load_inventory(inv, out / "configs")
    assert [(d.name, d.host, d.port, d.platform) for d in devs] == [
        ("unitpush-rail0-leaf0", "192.0.2.1", 22, "sonic"), ("unitpush-rail0-spine0", "192.0.2.2", 2222, "sonic")]
    assert devs[0].known_hosts == str(tmp_path / "kh")


def _inventory_problems(tmp_path, text: str) -> list:
    """The problems load_inventory raises for an inventory `text` of the compiled unit OUTDIR."""
    out = _compiled(tmp_path)
    inv = tmp_path / "inv.yml"
    inv.write_text(text)
    with pytest.raises(InputError) as ei:
        load_inventory(inv, out / "configs")
    return ei.value.problems


def test_inventory_errors_name_the_key(tmp_path):
    problems = _inventory_problems(
        tmp_path, "devices:\n  unitpush-rail0-leaf0: {host: 192.0.2.1, prot: 22, platform: sonic}\n"
                  "  unitpush-rail0-leaf1: {port: 99999, platform: junos}\n  rail0-leafX: {host: h, platform: sonic}\n")
    text = "\n".join(p.format() for p in problems)
    assert "devices.unitpush-rail0-leaf0.prot: unknown key 'prot'" in text and "did you mean 'port'" in text
    assert "devices.unitpush-rail0-leaf1.port: must be from 1 to 65,535" in text
    assert "devices.unitpush-rail0-leaf1.platform: must be one of sonic, eos" in text
    assert ":3:" in text  # line numbers


def test_inventory_unknown_device_and_missing_host(tmp_path):
    problems = _inventory_problems(
        tmp_path, "devices:\n  rail0-leafX: {host: h, platform: sonic}\n  unitpush-rail0-leaf1: {platform: sonic}\n")
    text = "\n".join(p.format() for p in problems)
    assert "no generated configs for 'rail0-leafX'" in text and "did you mean" in text
    assert "devices.unitpush-rail0-leaf1.host: is required but missing" in text


@pytest.mark.parametrize("os_, inventory, line, key", [
    ("sonic", "devices:\n  unitpush-rail0-leaf0:\n    host: 192.0.2.1\n    platform: eos\n", 4,
     "devices.unitpush-rail0-leaf0.platform"),
    ("eos", "defaults: {platform: sonic}\ndevices:\n  unitpush-rail0-leaf0: {host: 192.0.2.1}\n", 1, "defaults.platform"),
])
def test_cli_inventory_platform_that_contradicts_fabric_json_exit_2(os_, inventory, line, key, tmp_path, capsys):
    """platform: eos for a SONiC switch of fabric.json was rc=1 at run time (its startup-config missing)."""
    out = _compiled(tmp_path, os_)
    inv = tmp_path / "inv.yml"
    inv.write_text(inventory)
    assert main(["push", str(out), "--inventory", str(inv), "--dry-run"]) == 2
    err = capsys.readouterr().err
    other = "eos" if os_ == "sonic" else "sonic"
    assert f"{inv}:{line}: {key}: platform {other} contradicts {out / 'fabric.json'}, where unitpush-rail0-leaf0 is a " \
           f"{os_} switch" in err and f"fix: set platform: {os_} for unitpush-rail0-leaf0" in err, err
    assert "FAILED" not in err


def _edit_sonic_hostname(path, name):
    import json

    doc = json.loads(path.read_text())
    if name is None:
        del doc["DEVICE_METADATA"]["localhost"]["hostname"]
    else:
        doc["DEVICE_METADATA"]["localhost"]["hostname"] = name
    path.write_text(json.dumps(doc, indent=4))


@pytest.mark.parametrize("os_, file, edit, said", [
    ("eos", "startup-config", lambda p: p.write_text(""), "is empty (no command): pushing it would wipe"),
    ("eos", "startup-config", lambda p: p.write_text("!\n\nend\n"), "is empty (no command)"),
    ("eos", "startup-config", lambda p: p.write_text(p.read_text().replace("hostname unitpush-rail0-leaf0\n", "")),
     "names no hostname (its 'hostname' line is missing)"),
    ("eos", "startup-config", lambda p: p.write_text(p.read_text().replace("hostname unitpush-rail0-leaf0",
                                                                             "hostname unitpush-rail1-leaf0")),
     "is the config of 'unitpush-rail1-leaf0' (its 'hostname' line), not of unitpush-rail0-leaf0"),
    ("eos", "startup-config", lambda p: p.write_text(p.read_text().rstrip("\n").rpartition("\n")[0] + "\n"),
     "last line: the config must end with 'end'"),  # cut short
    ("sonic", "config_db.json", lambda p: p.write_text("{}"), "is empty (no table)"),
    ("sonic", "config_db.json", lambda p: _edit_sonic_hostname(p, None),
     "names no hostname (its DEVICE_METADATA.localhost.hostname is missing)"),
    ("sonic", "config_db.json", lambda p: _edit_sonic_hostname(p, "unitpush-rail1-leaf0"),
     "is the config of 'unitpush-rail1-leaf0'"),
    ("sonic", "frr.conf", lambda p: p.write_text("! nothing\n"), "is empty (no command): pushing it would remove its routing"),
])
def test_cli_push_refuses_an_empty_or_another_switchs_config_before_connecting(os_, file, edit, said, tmp_path, capsys,
                                                                                 monkeypatch):
    """An empty EOS startup-config passed push --dry-run's checks and went on to connect (push
    sends `rollback clean-config` and the file: it would wipe the switch); validate failed it."""
    out = _compiled(tmp_path, os_)
    edit(out / "configs" / "unitpush-rail0-leaf0" / file)
    inv = tmp_path / "inv.yml"
    inv.write_text(f"devices:\n  unitpush-rail0-leaf0: {{host: 127.0.0.1, port: 1, platform: {os_}}}\n")
    monkeypatch.setattr(push, "connect", lambda *a, **k: pytest.fail("connected"))
    assert main(["push", str(out), "--inventory", str(inv), "--dry-run"]) == 2
    cap = capsys.readouterr()
    assert f"error: {out / 'configs' / 'unitpush-rail0-leaf0' / file}: {said}" in cap.err, cap.err
    assert "Traceback" not in cap.err and "FAILED" not in cap.out + cap.err


def test_cli_push_of_compiled_configs_goes_on_to_connect(tmp_path, capsys):
    for os_ in ("eos", "sonic"):
        out = _compiled(tmp_path / os_, os_)
        inv = tmp_path / os_ / "inv.yml"
        inv.write_text(f"devices:\n  unitpush-rail0-leaf0: {{host: 127.0.0.1, port: 1, platform: {os_}}}\n")
        assert main(["push", str(out), "--inventory", str(inv), "--dry-run"]) == 1
        assert "connection refused" in capsys.readouterr().out


def test_inventory_device_name_that_is_not_text_is_named_as_written(tmp_path):
    """`null:` as a device name was "devices.None: device name None"."""
    (p,) = _inventory_problems(
        tmp_path, "devices:\n  unitpush-rail0-leaf0: {host: h, platform: sonic}\n  null: {host: h, platform: sonic}\n")
    assert (p.path, p.line, p.message) == ("devices.null", 3, "device name 'null' is not a valid switch name") and p.hint


def test_cli_bad_inventory_exit_2(tmp_path, capsys):
    out = _compiled(tmp_path)
    inv = tmp_path / "inv.yml"
    inv.write_text("devices: [a, b]\n")
    assert main(["push", str(out), "--inventory", str(inv)]) == 2
    assert "devices: must be a mapping" in capsys.readouterr().err


def test_cli_unknown_device_exit_2(tmp_path, capsys):
    out = _compiled(tmp_path)
    inv = tmp_path / "inv.yml"
    inv.write_text("devices:\n  unitpush-rail0-leaf0: {host: 127.0.0.1, platform: sonic}\n")
    assert main(["push", str(out), "--inventory", str(inv), "--device", "unitpush-rail0-leaf9"]) == 2
    assert "no device 'unitpush-rail0-leaf9'" in capsys.readouterr().err


def test_cli_no_deployed_lab_exit_3(tmp_path, capsys):
    out = _compiled(tmp_path)
    assert main(["push", str(out)]) == 3
    assert "deploy it first" in capsys.readouterr().err


def test_cli_eos_lab_says_there_is_no_eos_cli_to_push_to(tmp_path, capsys):
    out = _compiled(tmp_path, "eos")
    assert main(["push", str(out)]) == 3
    err = capsys.readouterr().err
    assert "runs no EOS CLI" in err and "--inventory" in err and "deploy it first" not in err


def test_unreachable_inventory_device_exit_1_and_password_redacted(tmp_path, capsys, monkeypatch):
    out = _compiled(tmp_path)
    inv = tmp_path / "inv.yml"
    # port 1 on loopback: nothing listens, refused at once
    inv.write_text("devices:\n  unitpush-rail0-leaf0: {host: 127.0.0.1, port: 1, platform: sonic}\n")
    monkeypatch.setenv("RAILONLY_SSH_PASSWORD", "hunter2-xyz")
    assert main(["push", str(out), "--inventory", str(inv)]) == 1
    cap = capsys.readouterr()
    assert "unitpush-rail0-leaf0" in cap.out and "connection refused" in cap.out
    assert "hunter2-xyz" not in cap.out + cap.err and "Traceback" not in cap.err


def test_credentials_never_printed():
    c = push.Credentials("admin", "pw-123", None)
    assert "pw-123" not in repr(c) and "pw-123" not in str(c)
    assert c.redact("login pw-123 failed") == "login *** failed"


FRR_FILE = """\
frr version 8.4
frr defaults datacenter
hostname leaf
!
router bgp 65001
 bgp log-neighbor-changes
 neighbor 10.0.0.1 remote-as 65002
 !
 address-family ipv4 unicast
  network 10.1.0.0/24
 exit-address-family
exit
!
"""
FRR_RUNNING = """\
Building configuration...

Current configuration:
!
frr version 8.4.4
frr defaults datacenter
hostname leaf
hostname vm
service integrated-vtysh-config
!
router bgp 65001
 neighbor 10.0.0.1 remote-as 65002
 !
 address-family ipv4 unicast
  network 10.1.0.0/24
 exit-address-family
exit
!
end
"""


def test_frr_statements_compare_by_meaning():
    """FRR elides defaults, reorders, adds its own lines; the comparison must not see drift there."""
    cand, run = push.frr_statements(FRR_FILE), push.frr_statements(FRR_RUNNING)
    assert set(cand) - set(run) == set()
    assert "router bgp 65001 > address-family ipv4 unicast > network 10.1.0.0/24" in cand
    changed = push.frr_statements(FRR_FILE.replace("65002", "65003"))
    assert set(changed) - set(run) == {"router bgp 65001 > neighbor 10.0.0.1 remote-as 65003"}


def test_missing_db_fields():
    pushed = {"PORT": {"Ethernet0": {"mtu": "9100"}}, "LOOPBACK_INTERFACE": {"Loopback0|10.0.0.1/32": {}}}
    running = {"PORT": {"Ethernet0": {"mtu": "1500", "speed": "400000"}}, "EXTRA": {}}
    assert push._missing_db(pushed, running) == ["PORT|Ethernet0|mtu", "LOOPBACK_INTERFACE"]


def test_summary_table_and_failures_do_not_stop_others():
    from railonly.emulation.push.targets import Device

    devs = [Device("a", "h", 22, "sonic"), Device("b", "h", 22, "eos")]

    def fake(d, *_):
        if d.name == "a":
            raise RuntimeError("boom")
        return push.DeviceResult(d.name, d.platform, True, False, message="in sync")

    res = push.push_all(devs, None, push.Credentials(), push_one=fake)
    assert [r.ok for r in res] == [False, True]
    table = push.summary_table(res, False)
    assert "internal error: boom" in table and "1 ok, 1 failed" in table


@pytest.mark.parametrize("flag, value", [
    ("--workers", "0"), ("--max-per-group", "0"), ("--verify-timeout", "nan"), ("--drain-wait", "-1"),
    ("--timeout", "nan"), ("--timeout", "0"), ("--timeout", "-5"),
    ("--commit-timer", "\u0660\u0665:00:00"),  # Arabic-Indic 05: EOS takes ASCII digits only
    ("--inventory", ""),  # was taken as no inventory: the lab's switches instead of the file's
    ("--only-changed", ""),  # was taken as not given: every device instead of the changed ones
    ("--key", ""),  # was taken as not given: RAILONLY_SSH_KEY's key instead
])
def test_a_bad_option_is_refused_by_name_before_the_outdir_is_read(flag, value, tmp_path, capsys):
    try:
        rc = main(["push", str(tmp_path / "absent"), flag, value])
    except SystemExit as exc:  # argparse: not a finite number written in ASCII digits (nan)
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err
    assert flag in err and "Traceback" not in err, err


class _Counters:
    """A fake netmiko connection to a leaf whose own GPUs keep sending through it after the
    drain: every second its kernel forwards `gpu` packets (in on Vlan1000, out of an uplink)
    and `transit` packets between uplinks."""

    def __init__(self, gpu: int, transit: int):
        self.gpu, self.transit, self.reads, self.sent = gpu, transit, 0, []

    def send_command(self, command, **_):
        self.sent.append(command)
        if command.startswith("cat /proc/net/snmp"):
            n = self.reads
            self.reads += 1
            fwd = n * (self.gpu + self.transit)
            out = ("Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams\n"
                   f"Ip: 1 64 0 0 0 {fwd}\n")
            if "/proc/net/dev" in command:
                out += ("Inter-|   Receive |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|"
                        "bytes packets errs drop fifo colls carrier compressed\n"
                        f"Vlan1000: 0 {n * self.gpu} 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
                        f"Ethernet16: 0 {n * self.transit} 0 0 0 0 0 0 0 {n * (self.gpu + self.transit)} 0 0 0 0 0 0\n")
            return out + "RAILONLY_RC=0"
        return "RAILONLY_RC=0"


@pytest.mark.parametrize("transit, drained", [(0, True), (40, False)])
def test_a_leaf_drain_is_confirmed_though_its_own_gpus_keep_sending(transit, drained, monkeypatch):
    # a leaf's GPUs are single-homed on it: their traffic goes on through the drained leaf, so
    # the drain's confirmation counts only what its VLAN interfaces do not carry (it failed
    # every disruptive leaf push under traffic: "drain did not move traffic away")
    monkeypatch.setattr(push.time, "sleep", lambda s: None)
    conn = _Counters(gpu=100, transit=transit)
    dev = push.Device("l-rail0-leaf0", "192.0.2.1", 22, "sonic")
    res = push.DeviceResult(dev.name, "sonic", True)
    frr = "router bgp 65001\n neighbor 10.0.0.1 remote-as 65002\n neighbor 10.0.0.1 route-map OUT out\n"
    opts = push.Options(drain_wait=0, drain_confirm=0.0)
    db = {"VLAN_INTERFACE": {"Vlan1000": {}, "Vlan1000|10.0.0.1/29": {}}, "INTERFACE": {"Ethernet16": {}}}
    local = push._local_interfaces(db)
    assert local == ("Vlan1000",)
    if drained:
        push._drain(conn, dev, frr, True, res, opts, local)
        assert any(s.startswith("drain: confirmed") and "Vlan1000" in s for s in res.steps)
    else:  # transit between uplinks still flows: not drained, undrained again
        with pytest.raises(push.PushFailed, match="40 packets forwarded"):
            push._drain(conn, dev, frr, True, res, opts, local)


class _RefusingSonic:
    """A fake SONiC switch over netmiko whose `config apply-patch` refuses every patch (as a
    real switch's, or the lab's, does for a port with no device): nothing is applied."""

    base_prompt = "admin@sw"

    def __init__(self, db: dict, frr: str):
        self.db, self.frr, self.sent, self.files = db, frr, [], {}

    def write_channel(self, text):  # a here-doc upload: base64 -d > FILE <<'TAG'
        import base64
        import re as re_

        m = re_.match(r"base64 -d > (\S+) <<'(\S+)'\n(.*)\2\n", text, re_.S)
        self.files[m.group(1)] = base64.b64decode(m.group(3))

    def read_until_pattern(self, **_):
        return ""

    def send_command(self, command, **_):
        import hashlib
        import json as json_

        self.sent.append(command)
        cmd = command.split("; echo RAILONLY_RC=")[0]
        out, rc = "", 0
        if cmd == "show runningconfiguration all":
            out = json_.dumps(self.db)
        elif cmd == "vtysh -c 'show running-config'" or cmd.startswith("cat /etc/sonic/frr/"):
            out = self.frr
        elif cmd == "vtysh -c 'show bgp summary json'":
            out = "{}"
        elif cmd == "vtysh -c 'show bfd peers json'":
            out = "[]"
        elif cmd.startswith("sha256sum "):
            path = cmd.split()[1]
            out = f"{hashlib.sha256(self.files.get(path, b'')).hexdigest()}  {path}"
        elif cmd.startswith("sudo config apply-patch"):
            out, rc = 'Error: ip addr add 10.128.0.8/31 dev Ethernet16: Cannot find device "Ethernet16"', 1
        return out if "RAILONLY_RC=" not in command else f"{out}\nRAILONLY_RC={rc}"


def _push_rolled_back(conn, files: dict) -> push.DeviceResult:
    """Push `files` to the fake switch u-rail0-spine0; the apply must fail and the roll back
    leave it healthy on its previous config (not "ROLL BACK FAILED")."""
    dev = push.Device("u-rail0-spine0", "192.0.2.1", 22, "sonic")
    res = push.DeviceResult(dev.name, "sonic", True)
    with pytest.raises(push.PushFailed) as ei:
        push.push_sonic(conn, dev, files, False, res, push.Options(drain_wait=0, drain_confirm=0.0, verify_timeout=0.0))
    assert "back on its previous config, healthy" in str(ei.value) and "ROLL BACK FAILED" not in str(ei.value)
    return res


def test_a_refused_patch_is_rolled_back_from_what_runs_not_from_the_candidate(monkeypatch):
    # config apply-patch refused: nothing changed, so nothing is to undo; the roll back was the
    # candidate's inverse (remove DEVICE_NEIGHBOR|Ethernet16, never added), was refused in turn,
    # and left the switch drained ("ROLL BACK FAILED, left drained")
    import json as json_

    monkeypatch.setattr(push.time, "sleep", lambda s: None)
    db = {"DEVICE_METADATA": {"localhost": {"hostname": "u-rail0-spine0", "bgp_asn": "65001"}},
          "INTERFACE": {"Ethernet0": {}, "Ethernet0|10.128.0.0/31": {}},
          "DEVICE_NEIGHBOR": {"Ethernet0": {"name": "u-rail0-leaf0", "port": "Ethernet16"}}}
    frr = "router bgp 65001\n neighbor 10.128.0.1 remote-as 65002\n neighbor 10.128.0.1 route-map OUT out\n"
    new = json_.loads(json_.dumps(db))
    new["INTERFACE"].update({"Ethernet16": {}, "Ethernet16|10.128.0.8/31": {}})
    new["DEVICE_NEIGHBOR"]["Ethernet16"] = {"name": "u-rail0-leaf2", "port": "Ethernet16"}
    conn = _RefusingSonic(db, frr)
    res = _push_rolled_back(conn, {"config_db.json": json_.dumps(new), "frr.conf": frr})
    assert sum(c.startswith("sudo config apply-patch") for c in conn.sent) == 1  # nothing to undo
    assert res.steps[-1].startswith("undrain")  # the switch is back in service


def test_probes_go_between_gpus_the_deployed_lab_runs(tmp_path):
    # a grown design pushed to its lab: the OUTDIR names GPUs (hb4, hb5 on a new leaf2) the
    # lab was not deployed with; the probe to the rail's last GPU went to one of them, no
    # probe was ever answered or counted, and every wave said "probes lost 0 of 0"
    from railonly.emulation.lab import load_lab
    from railonly.emulation.push import rollout

    lab = load_lab(_compiled(tmp_path))
    assert [(s, d) for s, _, d, _ in rollout.lab_streams(lab)] == [("hb0-gpu0", "hb5-gpu0"), ("hb0-gpu1", "hb5-gpu1")]
    running = {n for n in lab.nodes if not n.startswith(("hb4", "hb5")) and "leaf2" not in n}
    assert [(s, d) for s, _, d, _ in rollout.lab_streams(lab, running)] == [("hb0-gpu0", "hb3-gpu0"),
                                                                             ("hb0-gpu1", "hb3-gpu1")]


def test_a_lab_is_pushed_to_where_it_was_deployed_not_where_the_new_outdir_says(tmp_path):
    """An OUTDIR that gained a management network since the deploy: its switches are reached as
    deployed (their own namespaces), not in the management namespace that does not run yet."""
    from railonly.emulation.lab import load_lab
    from railonly.emulation.push.targets import lab_devices
    from railonly.emulation.runtime.netns import sshd

    from ..conftest import compile_to, design_text

    plain = design_text("labs/mini-routed.yml", "mgmtlater")
    mgmt = plain + "management:\n  pool: 192.0.2.0/24\n  gateway: 192.0.2.1\n"
    deployed, new = load_lab(compile_to(plain, tmp_path / "old")), load_lab(compile_to(mgmt, tmp_path / "new"))

    class Runtime:
        """The runtime's answers about a lab deployed from `deployed` (sshd on every switch)."""

        def running_lab(self, outdir):
            return deployed

        def ssh_endpoints(self, lab):
            return {"user": sshd.USER, "client_key": "k", "known_hosts": "h",
                    "switches": {sw.name: sshd.endpoint(lab, sw.name) for sw in sshd.sonic_switches(lab)}}

        def door(self):
            return None

    devices = lab_devices(new, Runtime())
    assert devices and all(d.netns == deployed.netns(d.name) and d.host == sshd.ADDRESS for d in devices), devices


class _FrrSonic(_RefusingSonic):
    """A fake SONiC switch whose FRR holds statements as vtysh leaves them and refuses what
    FRR 8 refuses (seen in tests/push/test_rollout_lab.py): a statement listed in `refuse`, and
    a `no` for a setting of a neighbour it does not hold ("% Specify remote-as or peer-group
    commands first"; `no neighbor X remote-as` it takes). Patches apply."""

    def __init__(self, db: dict, frr: str, refuse: set[str]):
        from railonly.fabric.outdir import rollout_rules as ro

        super().__init__(db, frr)
        self.refuse, self.vtysh = refuse, []
        self.state = set(ro.frr_statements(frr))

    def send_command(self, command, **kw):
        import shlex

        from railonly.fabric.outdir.rollout_rules import SEP

        cmd = command.split("; echo RAILONLY_RC=")[0]
        if cmd.startswith("sudo config apply-patch"):
            self.sent.append(command)
            return "RAILONLY_RC=0"
        words = shlex.split(cmd) if cmd.startswith("vtysh -c 'configure terminal'") else []
        if not words:
            return super().send_command(command, **kw)
        self.sent.append(command)
        *context, last = words[4::2]  # vtysh -c 'configure terminal' -c CONTEXT ... -c LAST
        self.vtysh.append(SEP.join([*context, last]))
        if last.startswith("no "):
            s = SEP.join([*context, last[3:]])
            if s not in self.state and " remote-as " not in s:
                return "% Specify remote-as or peer-group commands first\nRAILONLY_RC=1"
            self.state -= {t for t in self.state if t == s or t.startswith(s + SEP)}
        else:
            s = SEP.join([*context, last])
            if s in self.refuse:
                return "% Can not configure the local system as neighbor\nRAILONLY_RC=1"
            self.state |= {SEP.join([*context[:i], c]) for i, c in enumerate(context)} | {s}
        return "RAILONLY_RC=0"


def test_a_vtysh_failure_midway_undoes_only_the_statements_frr_took(monkeypatch):
    # the candidate changes a timer, drops a network and adds a neighbour FRR refuses (its own
    # address: `vtysh -C` passes it, the running bgpd does not): the roll back puts back the
    # timer and the network and says no `no` for what was never set (it undid the whole
    # candidate: FRR refused `no neighbor 10.128.0.0 description self` -> ROLL BACK FAILED)
    import json as json_

    from railonly.fabric.outdir import rollout_rules as ro

    monkeypatch.setattr(push.time, "sleep", lambda s: None)
    db = {"DEVICE_METADATA": {"localhost": {"hostname": "u-rail0-spine0", "bgp_asn": "65001"}},
          "INTERFACE": {"Ethernet0": {}, "Ethernet0|10.128.0.0/31": {}}}
    frr = ("router bgp 65001\n neighbor 10.128.0.1 remote-as 65002\n neighbor 10.128.0.1 timers 3 9\n"
           " network 10.255.0.1/32\n")
    new = frr.replace(" network 10.255.0.1/32\n", " neighbor 10.128.0.0 remote-as 65009\n neighbor 10.128.0.0 description self\n"
                      ).replace("timers 3 9", "timers 1 3")
    conn = _FrrSonic(db, frr, refuse={"router bgp 65001 > neighbor 10.128.0.0 remote-as 65009"})
    res = _push_rolled_back(conn, {"config_db.json": json_.dumps(db), "frr.conf": new})
    assert conn.state == set(ro.frr_statements(frr))  # FRR runs its old config again
    assert conn.vtysh == ["router bgp 65001 > no neighbor 10.128.0.1 timers 3 9",  # applied
                          "router bgp 65001 > no network 10.255.0.1/32",  # applied
                          "router bgp 65001 > neighbor 10.128.0.0 remote-as 65009",  # refused; the roll back:
                          "router bgp 65001 > neighbor 10.128.0.1 timers 3 9",
                          "router bgp 65001 > network 10.255.0.1/32"]
    assert res.steps[-1].startswith("undrain")


@pytest.mark.parametrize("applied, back_add, back_remove", [
    # nothing taken: nothing to undo
    (0, [], []),
    # a removed context comes back with its children; a replaced remote-as brings the old one back
    (3, ["route-map OLD permit 10", "route-map OLD permit 10 > match ip address prefix-list P",
         "router bgp 1 > neighbor 10.0.0.1 remote-as 2"],
     ["router bgp 1 > neighbor 10.0.0.1 remote-as 3"]),
])
def test_undo_statements_reverse_what_frr_took(applied, back_add, back_remove):
    from railonly.fabric.outdir import rollout_rules as ro

    add = ["router bgp 1 > neighbor 10.0.0.1 remote-as 3", "router bgp 1 > neighbor 10.0.0.9 remote-as 4"]
    remove = ["route-map OLD permit 10", "route-map OLD permit 10 > match ip address prefix-list P",
              "router bgp 1 > neighbor 10.0.0.1 remote-as 2"]
    cmds = ro.vtysh_commands(add, remove)
    assert [c[-1] for c in cmds] == ["no route-map OLD permit 10", "neighbor 10.0.0.1 remote-as 3",
                                     "neighbor 10.0.0.9 remote-as 4"]
    assert ro.undo_statements(add, remove, cmds[:applied][:2]) == (back_add, back_remove)


def test_undo_of_a_removed_neighbour_brings_back_its_other_statements():
    # `no neighbor X remote-as` makes FRR drop the neighbour with every setting of it
    from railonly.fabric.outdir import rollout_rules as ro

    remove = ["router bgp 1 > neighbor 10.0.0.5 description leaf2", "router bgp 1 > neighbor 10.0.0.5 remote-as 7",
              "router bgp 1 > neighbor 10.0.0.50 remote-as 8"]
    taken = [["configure terminal", "router bgp 1", "no neighbor 10.0.0.5 remote-as 7"]]
    assert ro.undo_statements([], remove, taken) == (remove[:2], [])


# A real SONiC switch after `config reload`: init_cfg.json's defaults under railonly's file
# (sonic-buildimage files/build_templates/init_cfg.json.j2) and db_migrator's PORT_QOS_MAP|global.
_IMAGE_DEFAULTS = {
    "DEVICE_METADATA": {"localhost": {"buffer_model": "traditional", "default_bgp_status": "up",
                                      "default_pfcwd_status": "disable", "timezone": "UTC"}},
    "FEATURE": {f: {"state": "enabled", "delayed": "False", "has_global_scope": "True", "has_per_asic_scope": "False",
                    "auto_restart": "enabled", "support_syslog_rate_limit": "true", "high_mem_alert": "disabled"}
                for f in ("bgp", "database", "lldp", "swss", "syncd")},
    "NTP": {"global": {"authentication": "disabled", "dhcp": "enabled", "server_role": "disabled", "src_intf": "eth0",
                       "admin_state": "enabled", "vrf": "default"}},
    "PORT_QOS_MAP": {"global": {"dscp_to_tc_map": "AZURE"}},
    "CRM": {"Config": {"polling_interval": "300"}},
}
_RAILONLY_DB = {
    "DEVICE_METADATA": {"localhost": {"hostname": "u-rail0-spine0", "bgp_asn": "65001", "hwsku": "x", "type": "SpineRouter"}},
    "FEATURE": {"bgp": {"state": "enabled", "auto_restart": "enabled"}},
    "NTP": {"global": {"vrf": "mgmt"}},
    "PORT": {"Ethernet0": {"mtu": "9100", "admin_status": "up"}},
    "PORT_QOS_MAP": {"Ethernet0": {"dscp_to_tc_map": "AZURE"}},
}


def _after_reload(db: dict) -> dict:
    """What `show runningconfiguration all` prints once `config reload` loaded `db` (as sonic-cfggen
    -j init_cfg.json -j FILE merges them: the file's fields over the defaults', key by key)."""
    import copy

    out = copy.deepcopy(_IMAGE_DEFAULTS)
    for table, keys in db.items():
        for key, fields in keys.items():
            out.setdefault(table, {}).setdefault(key, {}).update(fields)
    return out


def test_what_the_image_keeps_in_config_db_is_no_drift_and_is_not_patched_away(monkeypatch):
    # every push to a real switch saw init_cfg.json's fields and keys as drift: it drained the
    # switch and patched FEATURE|swss, FEATURE|syncd, PORT_QOS_MAP|global and
    # DEVICE_METADATA|localhost|buffer_model away (the lab, loading only railonly's file, had none)
    import json as json_

    monkeypatch.setattr(push.time, "sleep", lambda s: None)
    frr = "router bgp 65001\n neighbor 10.128.0.1 remote-as 65002\n"
    dev = push.Device("u-rail0-spine0", "192.0.2.1", 22, "sonic")
    opts = push.Options(drain_wait=0, drain_confirm=0.0, verify_timeout=0.0)
    conn = _FrrSonic(_after_reload(_RAILONLY_DB), frr, refuse=set())
    res = push.DeviceResult(dev.name, "sonic", True)
    push.push_sonic(conn, dev, {"config_db.json": json_.dumps(_RAILONLY_DB), "frr.conf": frr}, False, res, opts)
    assert res.diff == "" and not any("apply-patch" in c for c in conn.sent)  # in sync
    # a real change: only it is patched, whole keys carrying the image's fields along
    new = json_.loads(json_.dumps(_RAILONLY_DB))
    new["PORT"]["Ethernet0"]["mtu"] = "4200"
    new["FEATURE"]["bgp"]["auto_restart"] = "disabled"
    conn = _FrrSonic(_after_reload(_RAILONLY_DB), frr, refuse=set())
    res = push.DeviceResult(dev.name, "sonic", True)
    push.push_sonic(conn, dev, {"config_db.json": json_.dumps(new), "frr.conf": frr}, False, res, opts)
    patch = json_.loads(conn.files[f"{push.STAGE}/patch.json"])
    assert [(op["op"], op["path"]) for op in patch] == [("replace", "/FEATURE/bgp"), ("replace", "/PORT/Ethernet0")]
    assert patch[0]["value"] == {**_IMAGE_DEFAULTS["FEATURE"]["bgp"], "auto_restart": "disabled"}
    assert '+            "auto_restart": "disabled",' in res.diff
    assert "swss" not in res.diff and "buffer_model" not in res.diff and "CRM" not in res.diff


def test_image_aligned_leaves_the_images_keys_and_fields_but_not_railonlys_stale_ones():
    from railonly.fabric.outdir import rollout_rules as ro

    running = _after_reload(_RAILONLY_DB)
    running["PORT_QOS_MAP"]["Ethernet8"] = {"dscp_to_tc_map": "AZURE"}  # railonly's once, gone from the design
    old, new = ro.image_aligned(running, _RAILONLY_DB)
    assert set(old) == set(new) == set(_RAILONLY_DB)  # CRM: not a table railonly writes
    assert set(old["PORT_QOS_MAP"]) == {"Ethernet0", "Ethernet8"}  # global: the image's; Ethernet8: stale, removed
    assert set(old["FEATURE"]) == {"bgp"}
    assert ro.db_patch(old, new) == [{"op": "remove", "path": "/PORT_QOS_MAP/Ethernet8"}]
    assert new["DEVICE_METADATA"]["localhost"]["buffer_model"] == "traditional"
    assert new["NTP"]["global"]["vrf"] == "mgmt"  # railonly's field wins over the default


def test_a_candidate_without_the_switchs_static_management_address_is_refused(monkeypatch):
    # it is installed as the startup config: the next reload (or the one this push runs)
    # comes up without MGMT_INTERFACE, and the switch can no longer be reached
    import json as json_

    monkeypatch.setattr(push.time, "sleep", lambda s: None)
    frr = "router bgp 65001\n neighbor 10.128.0.1 remote-as 65002\n"
    running = _after_reload(_RAILONLY_DB)
    running["MGMT_INTERFACE"] = {"eth0|192.0.2.1/24": {"gwaddr": "192.0.2.254"}}
    new = json_.loads(json_.dumps(_RAILONLY_DB))
    new["PORT"]["Ethernet0"]["mtu"] = "4200"
    conn = _FrrSonic(running, frr, refuse=set())
    dev = push.Device("u-rail0-spine0", "192.0.2.1", 22, "sonic")
    res = push.DeviceResult(dev.name, "sonic", True)
    with pytest.raises(push.PushFailed, match=r"static management address \(MGMT_INTERFACE eth0\|192.0.2.1/24\)"):
        push.push_sonic(conn, dev, {"config_db.json": json_.dumps(new), "frr.conf": frr}, False, res,
                        push.Options(drain_wait=0, drain_confirm=0.0, verify_timeout=0.0))
    assert not any("apply-patch" in c or "config reload" in c for c in conn.sent)
    # with the table in the candidate the push goes on
    new["MGMT_INTERFACE"] = running["MGMT_INTERFACE"]
    conn = _FrrSonic(running, frr, refuse=set())
    push.push_sonic(conn, dev, {"config_db.json": json_.dumps(new), "frr.conf": frr}, False, res,
                    push.Options(drain_wait=0, drain_confirm=0.0, verify_timeout=0.0))
    assert any("apply-patch" in c for c in conn.sent)


def test_undo_of_a_neighbour_removed_from_its_peer_group_brings_it_all_back():
    # FRR 8.4 drops the whole neighbour on `no neighbor X peer-group G` (checked on bgpd 8.4.4:
    # nothing of 10.0.0.5 is left in its running config), which vtysh_commands sends before
    # `no neighbor X remote-as` (sorted). A roll back after it re-added only the description and
    # `neighbor X peer-group G`, which FRR refuses for a neighbour with no remote-as (the group
    # has none): ROLL BACK FAILED, left drained
    from railonly.fabric.outdir import rollout_rules as ro

    remove = ["router bgp 1 > neighbor 10.0.0.5 description leaf2", "router bgp 1 > neighbor 10.0.0.5 peer-group FABRIC",
              "router bgp 1 > neighbor 10.0.0.5 remote-as 7", "router bgp 1 > neighbor 10.0.0.50 remote-as 8"]
    cmds = ro.vtysh_commands([], remove)
    assert [c[-1] for c in cmds[:2]] == ["no neighbor 10.0.0.5 description leaf2", "no neighbor 10.0.0.5 peer-group FABRIC"]
    back_add, back_remove = ro.undo_statements([], remove, cmds[:2])
    assert back_add == remove[:3] and back_remove == []


def test_sigterm_during_a_push_waits_for_the_device_in_flight_and_exits_143(tmp_path):
    # push kept SIGTERM's default: killed mid-device, a switch stayed drained (no roll back) and
    # --probe's pings ran on. Now the device thread finishes (here: its connection times out)
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time

    out = _compiled(tmp_path)
    mute = socket.socket()  # accepts, never says a word: the SSH banner never comes
    mute.bind(("127.0.0.1", 0))
    mute.listen(4)
    inv = tmp_path / "inv.yml"
    inv.write_text(f"defaults: {{platform: sonic, port: {mute.getsockname()[1]}}}\n"
                   "devices:\n  unitpush-rail0-leaf0: {host: 127.0.0.1}\n")
    p = subprocess.Popen([sys.executable, "-m", "railonly", "push", str(out), "--inventory", str(inv),
                          "--device", "unitpush-rail0-leaf0", "--dry-run", "--timeout", "3",
                          "--insecure-no-host-key-check"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "RAILONLY_SSH_PASSWORD": "x"})
    conn = None
    try:
        mute.settimeout(30)
        conn, _ = mute.accept()  # push has connected: its device thread is in flight
        time.sleep(0.5)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
        for s in (conn, mute):
            if s is not None:
                s.close()
    assert p.returncode == 143 and "terminated" in err, (p.returncode, err[-400:])
    assert "Traceback" not in err
