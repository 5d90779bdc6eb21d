"""`railonly push` as a rollout on labs/mini-routed.yml (two tiers, eBGP in FRR), deployed as
root with the netns runtime, with a continuous ping across the spines of every rail.

Measured, not assumed: every probe sent during a wave is counted, and a hitless change
(descriptions, MTU) and a disruptive one (a BGP setting that resets the spine's sessions)
on every spine lose none of them, because the drain moves traffic off a spine before it
changes. A switch that fails verify stops the rollout and is back on its old config."""

from __future__ import annotations

import json
import re

import pytest

from railonly import proc
from railonly.cli import main
from railonly.emulation.lab import load_lab, run_dir
from railonly.emulation.runtime.netns import frr, setns
from railonly.emulation.runtime.netns.runtime import NetnsRuntime

from ..conftest import REPO, compile_to
from .conftest import root_skip_reason, settle_sessions, unique

pytestmark = pytest.mark.netns

SPINES = ["rail0-spine0", "rail0-spine1", "rail1-spine0", "rail1-spine1"]  # bare: the lab's name prefixes each


def spines(lab) -> list[str]:
    return [f"{lab.name}-{s}" for s in SPINES]


@pytest.fixture(scope="module")
def minilab(tmp_path_factory):
    reason = root_skip_reason()
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("rollout")
    name = unique("ro")[:20]
    text = (REPO / "labs" / "mini-routed.yml").read_text()
    assert "name: minir\n" in text
    outdir = compile_to(text.replace("name: minir\n", f"name: {name}\n"), tmp / "out", "mini-routed.yml")
    lab = load_lab(outdir)
    rt = NetnsRuntime(wait_bgp=60)
    try:
        res = rt.deploy(lab)
        assert res.bgp_converged, res.bgp
        yield outdir, lab
    finally:
        settle_sessions([n.netns for n in lab.switches])
        rt.destroy(lab)
        left = [n.netns for n in lab.nodes.values() if setns.exists(n.netns)]
        assert not left, f"namespaces left behind: {left}"


def edit_db(outdir, sw, fn):
    p = outdir / "configs" / sw / "config_db.json"
    db = json.loads(p.read_text())
    fn(db)
    p.write_text(json.dumps(db, indent=4, sort_keys=True) + "\n")


def edit_frr(outdir, sw, old, new):
    p = outdir / "configs" / sw / "frr.conf"
    text = p.read_text()
    assert old in text, (sw, old)
    p.write_text(text.replace(old, new))


def running_frr(lab, sw) -> str:
    inst = frr.instance(run_dir(lab.name), sw, lab.netns(sw))
    return proc.run(["vtysh", "--vty_socket", inst.rundir, "-c", "show running-config"], timeout=30).stdout


def established(lab, sw) -> int:
    inst = frr.instance(run_dir(lab.name), sw, lab.netns(sw))
    out = proc.run(["vtysh", "--vty_socket", inst.rundir, "-c", "show bgp summary json"], timeout=30).stdout
    peers = json.loads(out)["ipv4Unicast"]["peers"]
    return sum(1 for p in peers.values() if p["state"] == "Established")


def mtu(ns, dev):
    return json.loads(proc.run(["ip", "-n", ns, "-j", "link", "show", dev]).stdout)[0]["mtu"]


def waves_of(out: str) -> list[tuple[str, int, int]]:
    """(wave, lost, sent) of every wave the rollout ran."""
    return [(m.group(1), int(m.group(2)), int(m.group(3)))
            for m in re.finditer(r"^(canary|wave \d+): .*probes lost (\d+) of (\d+)$", out, re.M)]


def push(outdir, capsys, *extra) -> tuple[int, str]:
    rc = main(["push", str(outdir), "--probe", "--drain-wait", "2", *extra])
    out = capsys.readouterr()
    print(out.out)
    return rc, out.out


def test_dry_run_prints_the_plan_and_touches_nothing(minilab, capsys):
    outdir, lab = minilab
    for sw in spines(lab):
        edit_db(outdir, sw, lambda db: db["PORT"]["Ethernet0"].__setitem__("mtu", "9000"))
    rc = main(["push", str(outdir), "--dry-run"])
    out = capsys.readouterr().out
    assert rc == 1  # drift
    assert "rollout plan (dry run: nothing changed):" in out
    s00, s01, s10, s11 = spines(lab)
    assert f"canary: {s00}: planned" in out
    assert f"wave 1: {s01}, {s10}: planned" in out and f"wave 2: {s11}: planned" in out
    assert "would apply (hitless): config apply-patch (1 operation(s) on PORT)" in out
    assert mtu(lab.netns(f"{lab.name}-rail0-spine0"), "Ethernet0") == 9100


def test_hitless_change_on_every_spine_loses_no_probe(minilab, capsys):
    outdir, lab = minilab
    for sw in spines(lab):
        def change(db):
            for port in db["PORT"].values():
                port["mtu"] = "9000"
                port["description"] = port.get("description", "") + " (rollout test)"
        edit_db(outdir, sw, change)
    rc, out = push(outdir, capsys)
    assert rc == 0, out
    waves = waves_of(out)
    assert [w for w, _, _ in waves] == ["canary", "wave 1", "wave 2"], out
    assert all(sent > 100 for _, _, sent in waves), waves  # the stream ran through every wave
    assert [lost for _, lost, _ in waves] == [0, 0, 0], waves
    assert out.count("[hitless]: ok") == 4 and "drain:" not in out and "config reload" not in out
    assert all(mtu(lab.netns(sw), "Ethernet0") == 9000 for sw in spines(lab))


def test_disruptive_bgp_change_on_every_spine_loses_no_probe(minilab, capsys):
    outdir, lab = minilab
    for sw in spines(lab):
        edit_frr(outdir, sw, " neighbor FABRIC_DOWN timers 3 9\n", " neighbor FABRIC_DOWN timers 5 15\n")
    rc, out = push(outdir, capsys)
    assert rc == 0, out
    waves = waves_of(out)
    assert [w for w, _, _ in waves] == ["canary", "wave 1", "wave 2"], out
    assert all(sent > 100 for _, _, sent in waves), waves
    assert [lost for _, lost, _ in waves] == [0, 0, 0], waves  # the drain moved traffic first
    assert out.count("[disruptive]: ok") == 4
    assert out.count("- apply: clear bgp * (session settings changed)") == 4  # every spine's sessions did reset
    assert out.count("- drain: AS-path prepend x3 + GRACEFUL_SHUTDOWN") == 4 and out.count("- undrain:") == 4
    for sw in spines(lab):
        assert "neighbor FABRIC_DOWN timers 5 15" in running_frr(lab, sw)
        assert "railonly-drain" not in running_frr(lab, sw)  # undrained
        assert established(lab, sw) == 3


def test_a_switch_failing_verify_stops_the_rollout_and_is_back_on_its_old_config(minilab, capsys):
    outdir, lab = minilab
    for sw in spines(lab):
        edit_frr(outdir, sw, " neighbor FABRIC_DOWN timers 5 15\n", " neighbor FABRIC_DOWN timers 4 12\n")
    # rail0-spine1 (wave 1) gets a wrong ASN for a leaf: that session cannot come up
    bad = f"{lab.name}-rail0-spine1"
    m = re.search(r" neighbor (\S+) remote-as (\d+)\n", (outdir / "configs" / bad / "frr.conf").read_text())
    edit_frr(outdir, bad, m.group(0), f" neighbor {m.group(1)} remote-as {int(m.group(2)) + 1000}\n")
    rc, out = push(outdir, capsys, "--verify-timeout", "8")
    assert rc == 1, out
    assert re.search(rf"  {bad} \[disruptive\]: FAILED: verify failed: BGP {re.escape(m.group(1))} \S+; back on its previous config, healthy", out), out
    assert f"wave 2: {lab.name}-rail1-spine1: not started (the rollout stopped)" in out
    assert "rollout stopped at wave 1" in out
    # the failed switch runs its old config: the old ASN and timers, sessions up, undrained
    text = running_frr(lab, bad)
    assert f"neighbor {m.group(1)} remote-as {m.group(2)}" in text and "neighbor FABRIC_DOWN timers 5 15" in text
    assert "railonly-drain" not in text and established(lab, bad) == 3
    # the canary and wave 1's other switch changed; the switch after the stop did not
    assert "neighbor FABRIC_DOWN timers 4 12" in running_frr(lab, f"{lab.name}-rail0-spine0")
    assert "neighbor FABRIC_DOWN timers 5 15" in running_frr(lab, f"{lab.name}-rail1-spine1")
    assert all(lost == 0 for _, lost, _ in waves_of(out)), waves_of(out)


def test_a_change_that_needs_a_reload_says_why_and_starts_drained(minilab, capsys):
    """DEVICE_METADATA's mac is read at start-up: a full config reload, said with its reason;
    the switch reloads drained (the drain is in the FRR file it starts from), so no probe is lost."""
    outdir, lab = minilab
    sw = f"{lab.name}-rail0-spine0"
    edit_db(outdir, sw, lambda db: db["DEVICE_METADATA"]["localhost"].__setitem__("mac", "02:00:00:00:00:99"))
    rc, out = push(outdir, capsys, "--device", sw)
    assert rc == 0, out
    assert ("- apply: config reload -y, because DEVICE_METADATA|localhost|mac changes (read at start-up) "
            "(starting drained)") in out
    assert [lost for _, lost, _ in waves_of(out)] == [0], waves_of(out)
    text = running_frr(lab, sw)
    assert "railonly-drain" not in text and "neighbor FABRIC_DOWN timers 4 12" in text and established(lab, sw) == 3


def test_a_statement_frr_refuses_midway_is_undone_statement_by_statement(minilab, capsys):
    """The candidate changes a timer and adds a neighbour at the spine's own address, which
    `vtysh -C` passes and bgpd refuses. The roll back undoes only what FRR took (the timer's
    removal): it used to undo the whole candidate, FRR refused `no neighbor X description` for
    the neighbour it never added ("% Specify remote-as or peer-group commands first"), and the
    switch was left drained ("ROLL BACK FAILED")."""
    outdir, lab = minilab
    sw = f"{lab.name}-rail1-spine0"
    before = running_frr(lab, sw)
    timers = re.search(r" neighbor FABRIC_DOWN timers \d+ \d+\n", (outdir / "configs" / sw / "frr.conf").read_text()).group(0)
    db = json.loads((outdir / "configs" / sw / "config_db.json").read_text())
    own = next(k.split("|")[1].split("/")[0] for k in db["INTERFACE"] if "|" in k)
    added = f" neighbor FABRIC_DOWN timers 6 18\n neighbor {own} remote-as 65009\n neighbor {own} description self\n"
    edit_frr(outdir, sw, timers, added)
    try:
        rc, out = push(outdir, capsys, "--device", sw)
    finally:
        edit_frr(outdir, sw, added, timers)
    assert rc == 1, out
    assert re.search(rf"  {sw} \[disruptive\]: FAILED: vtysh router bgp \d+ / neighbor {re.escape(own)} remote-as 65009 "
                     r"failed: % .*; back on its previous config, healthy", out), out
    text = running_frr(lab, sw)
    assert set(ro_statements(text)) == set(ro_statements(before)), text
    assert "railonly-drain" not in text and established(lab, sw) == 3
    assert [lost for _, lost, _ in waves_of(out)] == [0], waves_of(out)


def ro_statements(text: str) -> list[str]:
    from railonly.fabric.outdir.rollout_rules import frr_statements

    return frr_statements(text)
