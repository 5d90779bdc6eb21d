"""`railonly push` against a deployed netns lab: every switch namespace has a real
sshd whose shell applies pushed files with the deploy code (apply_switch_config)."""

from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest

from railonly.cli import main
from railonly import proc
from railonly.emulation.lab import run_dir
from railonly.emulation.runtime.netns import frr
from railonly.emulation.push import targets as push_inventory
from railonly.emulation.push import pusher as push

pytestmark = pytest.mark.netns


def edit_db(outdir, sw, fn):
    p = outdir / "configs" / sw / "config_db.json"
    db = json.loads(p.read_text())
    fn(db)
    p.write_text(json.dumps(db, indent=4, sort_keys=True) + "\n")


def mtu(ns, dev):
    return json.loads(proc.run(["ip", "-n", ns, "-j", "link", "show", dev]).stdout)[0]["mtu"]


def lo_addrs(ns):
    info = json.loads(proc.run(["ip", "-n", ns, "-j", "addr", "show", "lo"]).stdout)[0]
    return {f"{a['local']}/{a['prefixlen']}" for a in info["addr_info"]}


def bgp_peers(lab, sw):
    return set(frr.peer_info(frr.instance(run_dir(lab.name), sw, lab.netns(sw))))


def test_push_changes_switch(pushlab, capsys):
    outdir, lab = pushlab
    sw, ns = f"{lab.name}-rail0-leaf0", lab.netns(f"{lab.name}-rail0-leaf0")
    assert mtu(ns, "Ethernet16") == 9100
    assert "10.255.9.9/32" not in lo_addrs(ns)

    def change(db):
        db["PORT"]["Ethernet16"]["mtu"] = "4200"
        db["LOOPBACK_INTERFACE"]["Loopback0|10.255.9.9/32"] = {}

    edit_db(outdir, sw, change)
    conf = outdir / "configs" / sw / "frr.conf"
    conf.write_text(conf.read_text().replace(
        " neighbor FABRIC_UP timers 3 9\n",
        " neighbor FABRIC_UP timers 3 9\n neighbor 10.128.99.1 remote-as 4200000099\n neighbor 10.128.99.1 peer-group FABRIC_UP\n"))
    t = time.perf_counter()
    rc = main(["push", str(outdir), "--device", sw])
    took = time.perf_counter() - t
    out = capsys.readouterr()
    assert rc == 0, out
    # a loopback address and a BGP neighbour: disruptive, so drained first; applied as a
    # patch of the changed tables and vtysh statements, no reload (docs/push.md)
    assert "applied (disruptive); running state confirmed" in out.out
    assert f"{lab.name}-rail0-leaf0 [disruptive]: ok" in out.out
    for step in ("drain: AS-path prepend x3 + GRACEFUL_SHUTDOWN on 1 outbound route-map(s)",
                 "apply: config apply-patch (2 operation(s))", "apply: vtysh, 2 statement(s)", "verify: ", "undrain: "):
        assert f"    - {step}" in out.out, (step, out.out)
    assert "config reload" not in out.out
    # seen in the switch's namespace, not in railonly's own bookkeeping
    assert mtu(ns, "Ethernet16") == 4200
    assert "10.255.9.9/32" in lo_addrs(ns)
    assert "10.128.99.1" in bgp_peers(lab, sw)
    # and now in sync: a dry run finds nothing, and -q says nothing about it
    assert main(["push", str(outdir), "--device", sw, "--dry-run", "-q"]) == 0
    assert capsys.readouterr().out == ""
    print(f"push to 1 switch: {took:.2f}s")


def test_dry_run_shows_diff_and_changes_nothing(pushlab, capsys):
    outdir, lab = pushlab
    sw, ns = f"{lab.name}-rail1-leaf0", lab.netns(f"{lab.name}-rail1-leaf0")
    before = mtu(ns, "Ethernet16")
    edit_db(outdir, sw, lambda db: db["PORT"]["Ethernet16"].__setitem__("mtu", "4321"))
    for _ in range(2):  # the second run sees the same: the first changed nothing
        rc = main(["push", str(outdir), "--device", sw, "--dry-run"])
        out = capsys.readouterr()
        assert rc == 1, out  # drift found (docs/commands/index.md)
        assert '-            "mtu": "9100",' in out.out
        assert '+            "mtu": "4321",' in out.out
        assert f"--- {sw}:config_db.json (running)" in out.out
        assert "nothing was changed" in out.out
        assert mtu(ns, "Ethernet16") == before


def test_push_all_switches_in_parallel(pushlab, capsys):
    outdir, lab = pushlab
    for sw in lab.switches:
        edit_db(outdir, sw.name, lambda db: db["PORT"]["Ethernet0"].__setitem__("mtu", "8000"))
    t = time.perf_counter()
    rc = main(["push", str(outdir), "--workers", "8"])
    took = time.perf_counter() - t
    out = capsys.readouterr()
    assert rc == 0, out.out
    assert out.err.count("push: [") == len(lab.switches)  # progress line per device
    for sw in lab.switches:
        assert mtu(sw.netns, "Ethernet0") == 8000, sw.name
    print(f"push to {len(lab.switches)} switches: {took:.2f}s")


def test_wrong_key_is_a_clear_per_device_error(pushlab, tmp_path, capsys):
    outdir, lab = pushlab
    key = tmp_path / "wrong"
    assert proc.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)]).ok
    rc = main(["push", str(outdir), "--device", f"{lab.name}-rail0-spine0", "--key", str(key)])
    out = capsys.readouterr()
    assert rc == 1
    assert f"{lab.name}-rail0-spine0" in out.out and "authentication failed" in out.out
    assert "Traceback" not in out.out + out.err


def test_wrong_password_is_redacted(pushlab, tmp_path, capsys, monkeypatch):
    outdir, lab = pushlab
    key = tmp_path / "wrong"
    assert proc.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)]).ok
    monkeypatch.setenv("RAILONLY_SSH_PASSWORD", "s3cret-Pa55")
    monkeypatch.setenv("RAILONLY_SSH_KEY", str(key))
    rc = main(["push", str(outdir), "--device", f"{lab.name}-rail0-spine1"])
    out = capsys.readouterr()
    assert rc == 1
    assert f"{lab.name}-rail0-spine1" in out.out and "authentication failed" in out.out
    assert "s3cret-Pa55" not in out.out + out.err


def test_unreachable_device_does_not_stop_the_others(pushlab, capsys):
    outdir, lab = pushlab
    good = [d for d in push_inventory.lab_devices(outdir) if d.name == f"{lab.name}-rail1-spine0"][0]
    refused = replace(good, name=f"{lab.name}-rail1-spine1", port=2)  # nothing listens there
    gone = replace(good, name=f"{lab.name}-rail0-leaf1", netns="clab-rotest-no-such-ns")
    creds = push.Credentials.from_env()
    res = push.push_all([refused, good, gone], lab.configs_dir, creds, dry_run=True, workers=3)
    by = {r.device: r for r in res}
    assert by[f"{lab.name}-rail1-spine0"].ok
    assert not by[f"{lab.name}-rail1-spine1"].ok and "connection refused" in by[f"{lab.name}-rail1-spine1"].message
    assert not by[f"{lab.name}-rail0-leaf1"].ok and "does not exist" in by[f"{lab.name}-rail0-leaf1"].message
    table = push.summary_table(res, True)
    assert "2 failed" in table


def test_unknown_host_key_is_refused(pushlab, tmp_path):
    outdir, lab = pushlab
    dev = [d for d in push_inventory.lab_devices(outdir) if d.name == f"{lab.name}-rail0-leaf2"][0]
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    r = push.push_device(replace(dev, known_hosts=str(empty)), lab.configs_dir, push.Credentials(), True)
    assert not r.ok and "not in known_hosts" in r.message
    r = push.push_device(replace(dev, known_hosts=str(empty)), lab.configs_dir,
                         push.Credentials(insecure=True), True)
    assert r.ok, r.message


def test_cli_as_a_process(pushlab):
    """The real entry point, as a user runs it: no inventory, no flags."""
    outdir, lab = pushlab
    cp = proc.run([*proc_argv(), "push", str(outdir), "--dry-run", "--device", f"{lab.name}-rail0-spine0"], timeout=60)
    assert cp.returncode in (0, 1), cp.stderr
    assert f"{lab.name}-rail0-spine0" in cp.stdout and "Traceback" not in cp.stderr


def proc_argv():
    import sys

    return [sys.executable, "-m", "railonly"]


def test_a_patch_failing_partway_leaves_the_switch_as_it_was(pushlab, capsys):
    # a loopback address (applied first) and a port MTU the device refuses (60: below a veth's
    # minimum; nothing before the device checks it): the lab shell undoes the address it had
    # added, as its running DB stays the old one. It used to stay behind, unlisted, and the
    # push's roll back, which reads the running DB, saw nothing to undo.
    outdir, lab = pushlab
    sw, ns = f"{lab.name}-rail1-leaf1", lab.netns(f"{lab.name}-rail1-leaf1")
    path = outdir / "configs" / sw / "config_db.json"
    saved = path.read_text()
    before = lo_addrs(ns)

    def change(db):
        db["LOOPBACK_INTERFACE"]["Loopback0|10.255.9.8/32"] = {}
        db["PORT"]["Ethernet16"]["mtu"] = "60"

    edit_db(outdir, sw, change)
    try:
        rc = main(["push", str(outdir), "--device", sw])
    finally:
        path.write_text(saved)
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "'config apply-patch' failed" in out and "back on its previous config, healthy" in out, out
    assert lo_addrs(ns) == before and "10.255.9.8/32" not in lo_addrs(ns)
    assert mtu(ns, "Ethernet16") != 60
    assert "'config apply-patch' failed: 1 of 1 live change(s) before it undone" in out, out  # the shell's last word
