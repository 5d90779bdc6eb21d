"""The rollout's rules (railonly.fabric.outdir.rollout_rules, docs/push.md): what is hitless, what needs a
reload, the patch, the vtysh statements, the drain, the waves. Pure: no lab."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from railonly.emulation.runtime.netns.patch import PatchError, apply_ops, live_commands
from railonly.fabric.outdir import rollout_rules as ro

DB = {"PORT": {"Ethernet0": {"mtu": "9100", "description": "a", "admin_status": "up"}},
      "INTERFACE": {"Ethernet0": {}, "Ethernet0|10.0.0.0/31": {}},
      "DEVICE_METADATA": {"localhost": {"hostname": "s", "bgp_asn": "65001", "hwsku": "x"}}}
FRR = """router bgp 65001
 neighbor FABRIC peer-group
 neighbor FABRIC timers 3 9
 neighbor 10.0.0.1 remote-as 65002
 neighbor 10.0.0.1 peer-group FABRIC
 neighbor 10.0.0.1 description leaf0
 address-family ipv4 unicast
  neighbor FABRIC route-map OUT out
 exit-address-family
"""


def files(db=DB, frr=FRR):
    return {"config_db.json": json.dumps(db), "frr.conf": frr}


def edited(fn):
    db = json.loads(json.dumps(DB))
    fn(db)
    return db


def test_descriptions_and_mtu_are_hitless_and_patched():
    new = edited(lambda db: db["PORT"]["Ethernet0"].update(mtu="9000", description="b"))
    ch = ro.classify("s", "sonic", files(), files(new, FRR.replace("description leaf0", "description leaf0:E16")))
    assert ch.mark == "hitless" and not ch.reload_why
    assert ch.patch == [{"op": "replace", "path": "/PORT/Ethernet0", "value": new["PORT"]["Ethernet0"]}]
    assert ch.apply_method() == "config apply-patch (1 operation(s) on PORT) + vtysh (1 added, 1 removed statement(s))"


def test_bgp_and_addresses_are_disruptive_an_asn_needs_a_reload():
    ch = ro.classify("s", "sonic", files(), files(frr=FRR.replace("timers 3 9", "timers 1 3")))
    assert ch.mark == "disruptive" and not ch.reload_why
    new = edited(lambda db: db["INTERFACE"].pop("Ethernet0|10.0.0.0/31"))
    assert ro.classify("s", "sonic", files(), files(new)).patch == [{"op": "remove", "path": "/INTERFACE/Ethernet0|10.0.0.0~131"}]
    new = edited(lambda db: db["DEVICE_METADATA"]["localhost"].update(bgp_asn="65009"))
    ch = ro.classify("s", "sonic", files(), files(new, FRR.replace("router bgp 65001", "router bgp 65009")))
    assert ch.mark == "disruptive"
    assert ch.reload_why == ["DEVICE_METADATA|localhost|bgp_asn changes (read at start-up)", "the BGP ASN changes (bgpd restarts)"]
    assert ch.apply_method().startswith("config reload (")


def test_unknown_table_is_disruptive_and_no_change_is_nothing():
    new = edited(lambda db: db.setdefault("SOMETHING_NEW", {"k": {"f": "v"}}))
    assert ro.classify("s", "sonic", files(), files(new)).mark == "disruptive"
    ch = ro.classify("s", "sonic", files(), files())
    assert not ch.changed and ch.apply_method() == "nothing"


def test_eos_lines():
    old = "hostname e\ninterface Ethernet1\n   mtu 1500\n   description x\n"
    assert ro.classify("e", "eos", {"startup-config": old}, {"startup-config": old.replace("1500", "9214")}).mark == "hitless"
    assert ro.classify("e", "eos", {"startup-config": old},
                       {"startup-config": old + "   ip address 10.0.0.1/31\n"}).mark == "disruptive"


def test_vtysh_statements_removals_first_and_remote_as_replaced_in_place():
    new = FRR.replace("timers 3 9", "timers 1 3").replace("remote-as 65002", "remote-as 65003")
    ch = ro.classify("s", "sonic", files(), files(frr=new))
    assert ro.vtysh_commands(ch.frr_add, ch.frr_remove) == [
        ["configure terminal", "router bgp 65001", "no neighbor FABRIC timers 3 9"],
        ["configure terminal", "router bgp 65001", "neighbor 10.0.0.1 remote-as 65003"],
        ["configure terminal", "router bgp 65001", "neighbor FABRIC timers 1 3"],
    ]


def test_drain_prepends_and_marks_graceful_shutdown_and_is_not_config():
    on = ro.drain_commands(FRR, ro.bgp_asn(FRR), True)
    assert on == [["configure terminal", "route-map OUT permit 1", "description railonly-drain",
                   "set as-path prepend 65001 65001 65001", "set community 65535:0 additive", "on-match next"]]
    assert ro.drain_commands(FRR, "65001", False) == [["configure terminal", "no route-map OUT permit 1"]]
    drained = FRR + "route-map OUT permit 1\n description railonly-drain\n set as-path prepend 65001 65001 65001\n"
    assert ro.frr_statements(drained) == ro.frr_statements(FRR)  # a drained switch is not drift


def test_waves_canary_then_at_most_n_per_rail_and_tier():
    targets = [ro.Target(f"rail{r}-{kind}{i}", str(r), tier) for r in range(3)
               for kind, tier, n in (("leaf", 1, 4), ("spine", 2, 2)) for i in range(n)]
    for n in (1, 2):
        waves = ro.waves(targets, n)
        assert waves[0] == [ro.Target("rail0-leaf0", "0", 1)]
        assert sorted(t.device for w in waves for t in w) == sorted(t.device for t in targets)
        for w in waves:
            groups = [(t.rail, t.tier) for t in w]
            assert all(groups.count(g) <= n for g in groups)
            assert len({t.tier for t in w}) == 1  # one tier at a time, lower tiers first
    assert [len(w) for w in ro.waves(targets, 1)] == [1, 3, 3, 3, 2, 3, 3]


def test_lab_patch_applies_whole_keys_and_refuses_what_it_cannot_do_live():
    ops = ro.db_patch(DB, edited(lambda db: (db["PORT"]["Ethernet0"].update(mtu="4200"),
                                             db["INTERFACE"].__setitem__("Ethernet0|10.9.0.0/31", {}),
                                             db.setdefault("CABLE_LENGTH", {"AZURE": {"Ethernet0": "5m"}}))))
    new = apply_ops(DB, ops)
    assert new["PORT"]["Ethernet0"]["mtu"] == "4200" and "Ethernet0|10.9.0.0/31" in new["INTERFACE"]
    assert live_commands(DB, new) == [["addr", "add", "10.9.0.0/31", "dev", "Ethernet0"],
                                      ["link", "set", "dev", "Ethernet0", "mtu", "4200"]]
    assert live_commands(DB, new, present=set()) == []  # no device: its MTU and its address in the DB only
    try:
        live_commands(DB, edited(lambda db: db.setdefault("VLAN", {"Vlan1": {}})))
        raise AssertionError("VLAN applied live")
    except PatchError as exc:
        assert "use config reload" in str(exc)
    for bad in ({"op": "move", "path": "/PORT"}, {"op": "replace", "path": "/NOPE/x", "value": {}}, {"op": "add", "path": "/a/b/c", "value": {}}):
        try:
            apply_ops(DB, [bad])
            raise AssertionError(bad)
        except PatchError:
            pass


def test_probe_count_finds_losses_in_their_wave(tmp_path):
    """The per-wave loss count itself can fail: unanswered sequence numbers are counted in the
    wave during which they were sent (from the answered probe before them)."""
    from railonly.emulation.push.rollout import Prober

    log = tmp_path / "probe0.log"
    t0 = 1000.0
    answered = [n for n in range(1, 301) if not 120 <= n <= 124 and n != 250]  # 5 lost in wave A, 1 in wave B
    log.write_text("".join(f"[{t0 + (n - 1) * 0.01 + 0.0002:.6f}] 64 bytes from 10.0.0.19: icmp_seq={n} ttl=62 time=0.2 ms\n"
                           for n in answered))
    p = Prober([("a", "ns", "b", "10.0.0.19")], str(tmp_path))
    p.logs, p.t0 = [str(log)], [t0]
    assert p.count(t0 + 1.0, t0 + 2.0) == (100, 5)  # probes 101..200
    assert p.count(t0 + 2.0, t0 + 3.0) == (100, 1)
    assert p.count(t0 + 0.0, t0 + 0.995) == (100, 0)


def test_rollout_stops_after_the_wave_that_failed():
    """Planning logic only (the real thing: test_rollout_lab.py): read all, push the changed in
    waves, stop after the first failed wave; in-sync switches are not in any wave."""
    from railonly.emulation.push import rollout
    from railonly.emulation.push import pusher as push
    from railonly.emulation.push.targets import Device

    devices = [Device(f"rail{r}-spine{i}", "h", 22, "sonic") for r in range(2) for i in range(3)]
    applied = []

    def fake(d, configs_dir, creds, dry_run, timeout, opts):
        if dry_run:
            return push.DeviceResult(d.name, "sonic", True, changed=d.name != "rail1-spine2", mark="disruptive")
        applied.append(d.name)
        return push.DeviceResult(d.name, "sonic", d.name != "rail1-spine0", changed=True, message="x")

    rep = rollout.run(devices, {}, None, push.Credentials(), push_one=fake)
    assert [w.devices for w in rep.waves] == [["rail0-spine0"], ["rail0-spine1", "rail1-spine0"], ["rail0-spine2", "rail1-spine1"]]
    assert rep.stopped_at == 1 and applied == ["rail0-spine0", "rail0-spine1", "rail1-spine0"]
    text = rollout.report_text(rep, False)
    assert "wave 2: rail0-spine2, rail1-spine1: not started (the rollout stopped)" in text
    assert [r.device for r in rep.unchanged] == ["rail1-spine2"]
    assert rep.unchanged[0].message == "in sync: nothing to push"  # was "in sync (dry run)" after a real push
    dry = rollout.run(devices, {}, None, push.Credentials(), dry_run=True, push_one=fake)
    assert len(dry.waves) == 3 and not applied[3:]  # a dry run applies nothing


def test_a_dry_run_with_an_unread_switch_says_a_push_would_not_start():
    """It said "no switch changes" first, as if the unread switch were in sync."""
    from railonly.emulation.push import rollout
    from railonly.emulation.push import pusher as push
    from railonly.emulation.push.targets import Device

    devices = [Device(f"rail0-spine{i}", "h", 22, "sonic") for i in range(2)]

    def fake(d, configs_dir, creds, dry_run, timeout, opts):
        if d.name == "rail0-spine1":
            return push.DeviceResult(d.name, "sonic", False, message="cannot connect")
        return push.DeviceResult(d.name, "sonic", True, changed=False)

    dry = rollout.run(devices, {}, None, push.Credentials(), dry_run=True, push_one=fake)
    text = rollout.report_text(dry, True)
    assert dry.stopped_at == -1 and "no switch changes" not in text
    assert "a push would not start: a switch could not be read" in text


def test_a_wave_with_no_probe_sent_says_loss_was_not_measured():
    """'probes lost 0 of 0' read as a zero-loss wave, where nothing was measured."""
    from railonly.emulation.push import rollout
    from railonly.emulation.push import pusher as push

    ok = push.DeviceResult("rail0-spine0", "sonic", True, changed=True, message="x")
    rep = rollout.Report([rollout.Wave(0, ["rail0-spine0"], [ok], 0.0, 1.0, 0, 0),
                          rollout.Wave(1, ["rail0-spine1"], [ok], 1.0, 2.0, 40, 0)], probes=["hb0-gpu0 -> hb1-gpu0"])
    text = rollout.report_text(rep, False)
    assert "canary: rail0-spine0: ok (1.0s); no probe sent in this wave: loss not measured" in text
    assert "wave 1: rail0-spine1: ok (1.0s); probes lost 0 of 40" in text and "lost 0 of 0" not in text


def test_a_lab_switch_applies_a_vlan_mtu_live_and_keeps_buffer_and_service_tables_in_its_db():
    # a switch.mtu change patches VLAN|VlanN mtu on every routed leaf; the lab's shell refused
    # the VLAN table ("use config reload"), so every MTU push stopped at a leaf canary
    old = edited(lambda db: db.update(VLAN={"Vlan1000": {"vlanid": "1000", "mtu": "9100", "admin_status": "up"}}))
    new = apply_ops(old, ro.db_patch(old, edited(lambda db: db.update(
        VLAN={"Vlan1000": {"vlanid": "1000", "mtu": "9200", "admin_status": "up"}},
        BUFFER_PORT_INGRESS_PROFILE_LIST={"Ethernet0": {"profile_list": "ingress_lossless_profile"}},
        BUFFER_PORT_EGRESS_PROFILE_LIST={"Ethernet0": {"profile_list": "egress_lossless_profile"}},
        DEFAULT_LOSSLESS_BUFFER_PARAMETER={"AZURE": {"default_dynamic_th": "0"}},
        LOSSLESS_TRAFFIC_PATTERN={"AZURE": {"mtu": "1024"}}, NTP_SERVER={"192.0.2.5": {}},
        DNS_NAMESERVER={"192.0.2.53": {}}, SYSLOG_SERVER={"192.0.2.9": {}}, TACPLUS_SERVER={"192.0.2.7": {}}))))
    assert live_commands(old, new) == [["link", "set", "dev", "Vlan1000", "mtu", "9200"]]
    with pytest.raises(PatchError, match="only its mtu"):  # a VLAN's id or members are still a reload
        live_commands(old, edited(lambda db: db.update(VLAN={"Vlan1000": {"vlanid": "1001", "mtu": "9100"}})))


def test_a_switch_mtu_change_is_hitless_on_a_leaf_too():
    # switch.mtu sets the routed leaf's VLAN interface MTU beside its ports': a leaf's MTU
    # change was disruptive (drained, its GPUs interrupted) though docs/push.md calls the MTU hitless
    vlan = lambda mtu: lambda db: (db["PORT"]["Ethernet0"].update(mtu=mtu),  # noqa: E731
                                   db.update(VLAN={"Vlan1000": {"vlanid": "1000", "mtu": mtu, "admin_status": "up"}}))
    ch = ro.classify("s", "sonic", files(edited(vlan("9100"))), files(edited(vlan("9200"))))
    assert ch.changed and ch.mark == "hitless" and not ch.reload_why, [i.what for i in ch.items]
    ch = ro.classify("s", "sonic", files(edited(vlan("9100"))), files(edited(lambda db: (
        vlan("9100")(db), db["VLAN"]["Vlan1000"].update(admin_status="down")))))
    assert ch.mark == "disruptive"


def test_a_port_cabled_since_the_deploy_gets_its_address_in_the_db_only():
    # a grown design pushed to its lab: a spine's new uplink is cabled in the OUTDIR but has no
    # device in the namespace; `ip addr add ... dev Ethernet16` failed the spine's whole patch
    new = edited(lambda db: db["INTERFACE"].update({"Ethernet16": {}, "Ethernet16|10.128.0.8/31": {}}))
    assert live_commands(DB, new, present={"Ethernet0", "lo"}) == []
    assert live_commands(DB, new, present={"Ethernet0", "Ethernet16", "lo"}) == [
        ["addr", "add", "10.128.0.8/31", "dev", "Ethernet16"]]


def test_a_new_neighbour_is_defined_before_its_description():
    # growth adds a leaf's neighbour to every spine; sorted, `neighbor X description` came
    # before `neighbor X peer-group`, and FRR refused it ("Specify remote-as or peer-group
    # commands first"), failing the spine's push
    grown = FRR + " neighbor NEW peer-group\n neighbor 10.0.0.9 remote-as 65009\n neighbor 10.0.0.9 peer-group NEW\n" \
                  " neighbor 10.0.0.9 description leaf2:Ethernet16\n neighbor 10.0.0.9 timers 3 9\n"
    ch = ro.classify("s", "sonic", files(), files(frr=grown))
    cmds = [c[-1] for c in ro.vtysh_commands(ch.frr_add, ch.frr_remove)]
    assert cmds.index("neighbor NEW peer-group") < cmds.index("neighbor 10.0.0.9 peer-group NEW")
    assert max(cmds.index("neighbor 10.0.0.9 remote-as 65009"), cmds.index("neighbor 10.0.0.9 peer-group NEW")) < \
        min(cmds.index("neighbor 10.0.0.9 description leaf2:Ethernet16"), cmds.index("neighbor 10.0.0.9 timers 3 9"))


def test_each_live_command_has_its_undo_back_to_the_old_db():
    from railonly.emulation.runtime.netns.patch import undo_command

    new = edited(lambda db: (db["PORT"]["Ethernet0"].update(mtu="4200", admin_status="down"),
                             db["INTERFACE"].__setitem__("Ethernet0|10.9.0.0/31", {})))
    cmds = live_commands(DB, new)
    assert [undo_command(c, DB) for c in cmds] == [
        ["addr", "del", "10.9.0.0/31", "dev", "Ethernet0"],
        ["link", "set", "dev", "Ethernet0", "mtu", DB["PORT"]["Ethernet0"]["mtu"]],
        ["link", "set", "dev", "Ethernet0", "up"]]
    assert undo_command(["addr", "del", "10.9.0.0/31", "dev", "lo"], DB) == ["addr", "add", "10.9.0.0/31", "dev", "lo"]
    assert undo_command(["link", "set", "dev", "Ethernet99", "mtu", "9000"], DB) is None  # no old MTU to go back to


def test_eos_printed_defaults_are_no_drift():
    # `show running-config` of a vEOS/cEOS prints these on every switch (the published ones,
    # EOS 4.20-4.33); railonly does not write them and the session puts them back: every
    # switch showed drift and every push was disruptive
    cand = "hostname eos1\n!\ninterface Ethernet1\n   mtu 9214\n   no switchport\n!\nip routing\n!\nend\n"
    printed = ("! Command: show running-config\n! device: eos1 (vEOS-lab, EOS-4.33.1.1F)\n!\n"
               "! boot system flash:/vEOS-lab.swi\n!\nno aaa root\n!\n"
               "no service interface inactive port-id allocation disabled\n!\n"
               "transceiver qsfp default-mode 4x10G\n!\n" + cand)
    ch = ro.classify("eos1", "eos", {"startup-config": printed}, {"startup-config": cand})
    assert not ch.changed, ch.items
    ch = ro.classify("eos1", "eos", {"startup-config": printed}, {"startup-config": cand.replace("9214", "9100")})
    assert [i.what for i in ch.items] == ["- interface Ethernet1 > mtu 9214", "+ interface Ethernet1 > mtu 9100"]


GOLDEN_EOS = Path(__file__).parents[1] / "golden" / "configs" / "eos-routed-2tier" / "configs"


def _printed(cand: str, version: str = "vEOS-lab, EOS-4.33.1F") -> str:
    """`show running-config` of railonly's own intent as the published EOS ones print it
    (tests/data/eos_forms.yaml, printed_defaults): the header comments, the defaults EOS prints
    on every switch (`system l1` and its two lines from 4.31.2F on), and every port railonly
    leaves alone as a bare `interface EthernetN` / `interface Management1`."""
    head = (f"! Command: show running-config\n! device: sw ({version})\n!\n! boot system flash:/vEOS-lab.swi\n!\n"
            "no aaa root\n!\nno service interface inactive port-id allocation disabled\n!\n"
            "transceiver qsfp default-mode 4x10G\n!\n")
    body = cand.split("\n", 1)[1]  # railonly's `! device:` comment line
    body = body.replace("!\ninterface Loopback0\n", "!\n" + "".join(f"interface Ethernet{n}\n!\n" for n in range(5, 9))
                        + "interface Ethernet49/1\n!\ninterface Loopback0\n", 1)
    body = body.replace("!\nip routing\n", "!\ninterface Management1\n!\nip routing\n", 1)
    body = body.replace("spanning-tree mode mstp\n!\n", "spanning-tree mode mstp\n!\nsystem l1\n"
                        "   unsupported speed action error\n   unsupported error-correction action error\n!\n", 1)
    return head + body


def test_eos_printed_running_config_of_the_same_intent_is_no_drift():
    cand = (GOLDEN_EOS / "er2-rail0-leaf2" / "startup-config").read_text()
    printed = _printed(cand)
    assert "interface Ethernet5\n!" in printed and "system l1\n" in printed and "interface Management1\n!" in printed
    ch = ro.classify("sw", "eos", {"startup-config": printed}, {"startup-config": cand})
    assert not ch.changed, [i.what for i in ch.items]


def test_eos_printed_defaults_do_not_hide_a_real_change():
    cand = (GOLDEN_EOS / "er2-rail0-leaf2" / "startup-config").read_text()
    # a port railonly does not write, configured on the switch: drift, and disruptive
    printed = _printed(cand).replace("interface Ethernet5\n!", "interface Ethernet5\n   no switchport\n!", 1)
    ch = ro.classify("sw", "eos", {"startup-config": printed}, {"startup-config": cand})
    assert [i.what for i in ch.items] == ["- interface Ethernet5", "- interface Ethernet5 > no switchport"]
    assert ch.mark == "disruptive"
    # a changed speed on a port railonly writes
    ch = ro.classify("sw", "eos", {"startup-config": _printed(cand)},
                     {"startup-config": cand.replace("   speed 400g-8\n", "   speed 400g-4\n", 1)})
    assert [i.what for i in ch.items] == ["- interface Ethernet1 > speed 400g-8", "+ interface Ethernet1 > speed 400g-4"]
    # something set under `system l1` besides its defaults
    printed = _printed(cand).replace("   unsupported speed action error\n", "   unsupported speed action warn\n", 1)
    ch = ro.classify("sw", "eos", {"startup-config": printed}, {"startup-config": cand})
    assert [i.what for i in ch.items] == ["- system l1 > unsupported speed action warn"]
    # SONiC's FRR comparison is not EOS's: an empty FRR interface block stays a statement there
    assert ro.frr_statements("interface Ethernet0\n!\n") == ["interface Ethernet0"]


def test_eos_printed_defaults_are_the_recorded_ones():
    # each default push leaves out of the EOS comparison has a published running-config in
    # tests/data/eos_forms.yaml (printed_defaults), and the other way round
    import yaml

    doc = yaml.safe_load((Path(__file__).parents[1] / "data" / "eos_forms.yaml").read_text())
    rows = doc["printed_defaults"]
    assert all(r["source"] in doc["sources"] for r in rows)
    assert {r["statement"] for r in rows if "statement" in r} == ro.EOS_PRINTED_DEFAULTS
    assert [r["form"] for r in rows if "form" in r] == [ro._EOS_BARE_PORT.pattern]
