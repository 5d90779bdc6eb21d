"""Checks, traffic and faults logic above Runtime.exec, run on a FakeRuntime (no root, no lab).

The real netns tests beside this file (test_lab_checks.py, test_traffic.py)
prove that a deployed lab answers what these tests feed the logic; here every
branch of that logic is driven on purpose, including the failing ones.
"""

from __future__ import annotations

import json
import os

import pytest

from railonly.cli import main
from railonly.emulation import lab as lab_facts
from railonly.emulation.checks import judge
from railonly.emulation.checks import check_plan as checks_plan
from railonly.emulation.checks import checker as checks_run
from railonly.emulation.lab import load_lab
from railonly.emulation.runtime.protocol import NotDeployed
from railonly.emulation.runtime.registry import RUNTIMES
from railonly.emulation.traffic import faults, iperf3, patterns

from ..conftest import REPO, FakeRuntime, compile_to, cpu_sampler, design_text


@pytest.fixture(scope="module")
def routed(tmp_path_factory):
    return load_lab(compile_to(design_text("labs/mini-routed.yml", "fakert"), tmp_path_factory.mktemp("fake") / "out"))


@pytest.fixture
def lab(routed, tmp_path, monkeypatch):
    """The routed lab with its run directory (iperf3 pid files) under tmp_path."""
    monkeypatch.setattr(lab_facts, "RUN_ROOT", str(tmp_path / "run"))
    return routed


# --- not deployed --------------------------------------------------------------------------


def test_not_deployed_is_one_error_and_exit_3(lab, monkeypatch, capsys):
    fake = FakeRuntime(state="absent")
    with pytest.raises(NotDeployed, match="railonly lab deploy"):
        checks_run.run(lab, fake)
    with pytest.raises(NotDeployed):
        iperf3.run(lab, fake, "ring-allreduce", converge=False, cpu_sampler=cpu_sampler(0.3))
    monkeypatch.setitem(RUNTIMES, "fake", lambda: fake)
    assert main(["lab", "check", str(lab.outdir), "--runtime", "fake"]) == 3
    assert main(["lab", "traffic", str(lab.outdir), "--runtime", "fake", "--pattern", "all-to-all"]) == 3
    assert capsys.readouterr().err.count(f"lab {lab.name} is not deployed") == 2
    assert not fake.calls  # nothing was run in a lab that is not there


# --- bgp: the switches' tables through exec ------------------------------------------------------


def _bgp_fake(cp, down: tuple[str, str] | None = None, mute: str | None = None) -> FakeRuntime:
    sessions: dict[str, dict] = {}
    for s in cp.bgp:
        state = "Active" if (s.switch, s.peer) == down else "Established"
        sessions.setdefault(s.switch, {})[s.peer] = {"state": state, "pfxRcd": 2, "peerUptime": "1m"}
    by_ns = {f"clab-{cp.lab}-{sw}": sw for sw in set(sessions) | set(cp.prefixes)}

    def summary(ns, argv):
        sw = by_ns[ns]
        return (1, "bgpd is not running") if sw == mute else (0, json.dumps({"ipv4Unicast": {"peers": sessions.get(sw, {})}}))

    def routes(ns, argv):
        return 0, json.dumps([{"dst": p, "type": "unicast"} for p in cp.prefixes.get(by_ns[ns], ())])

    return FakeRuntime().on(("vtysh",), summary).on(("ip", "-4", "-j", "route"), routes)


def test_bgp_healthy_tables_pass(lab):
    cp = checks_plan.load(lab)
    assert cp.bgp and cp.prefixes
    fake = _bgp_fake(cp)
    peers, routes = checks_run.collect_bgp(fake, lab, cp, timeout=0)
    results = judge.bgp(cp, peers, routes)
    assert results and all(r.passed for r in results)
    assert fake.ran("vtysh", "-d", "bgpd", "-c", "show bgp summary json")  # a runtime other than netns: plain vtysh


def test_bgp_a_session_down_and_a_mute_bgpd_fail_by_name(lab):
    cp = checks_plan.load(lab)
    s = cp.bgp[0]
    mute = next(x.switch for x in cp.bgp if x.switch != s.switch)
    peers, routes = checks_run.collect_bgp(_bgp_fake(cp, down=(s.switch, s.peer), mute=mute), lab, cp, timeout=0)
    bad = [r for r in judge.bgp(cp, peers, routes) if not r.passed]
    assert any(r.id == f"bgp/{s.switch}/{s.peer}" and "Active" in r.detail for r in bad)
    assert any(r.id.startswith(f"bgp/{mute}/") and "does not answer" in r.detail for r in bad)
    assert all(r.id.startswith((f"bgp/{s.switch}/", f"bgp/{mute}/")) for r in bad)


# --- traffic -----------------------------------------------------------------------------------


def _iperf3_fake(lab, refuse: str | None = None) -> FakeRuntime:
    nic_bps = 100e6 / 8

    def server(ns, argv):
        pidfile = argv[argv.index("--pidfile") + 1]
        with open(pidfile, "w") as f:  # a pid that is never an iperf3: stop_servers signals nobody
            f.write(f"{os.getpid()}\n")
        return 0, ""

    def client(ns, argv):
        dst, n = argv[argv.index("-c") + 1], int(argv[argv.index("-n") + 1])
        if dst == refuse:
            return 1, json.dumps({"error": "unable to send control message: Connection refused"})
        secs = n / nic_bps
        return 0, json.dumps({"end": {"sum_sent": {"bytes": n, "seconds": secs, "retransmits": 0},
                                      "sum_received": {"bytes": n, "seconds": secs},
                                      "streams": [{"sender": {"mean_rtt": 250}}]}})

    return (FakeRuntime()
            .on(("tc", "-j", "qdisc"), (0, json.dumps([{"kind": "tbf", "options": {"rate": nic_bps}}])))
            .on(("tc", "-j", "class"), (0, json.dumps([{"kind": "htb", "options": {"rate": nic_bps * 9}}])))
            .on(("iperf3", "-s"), server).on(("iperf3", "-c"), client))


@pytest.mark.parametrize("pattern", patterns.PATTERNS)
def test_traffic_runs_every_planned_flow_and_reports_it(lab, pattern):
    fake = _iperf3_fake(lab)
    rep = iperf3.run(lab, fake, pattern, 200_000, converge=False, cpu_sampler=cpu_sampler(0.3))
    cp = checks_plan.load(lab)
    planned = patterns.plan_flows(cp, pattern, 200_000, rep["schedule"])
    assert len(rep["flows"]) == len(planned) == len(fake.ran("iperf3", "-c"))
    # persistent agents: one server per GPU and flow it receives at once, started once for every step
    concurrent = max(sum(1 for f in st if f.dst == g) for st in patterns.steps_of(planned) for g in cp.gpus)
    assert len(fake.ran("iperf3", "-s")) == len({f.dst for f in planned}) * concurrent
    # every transfer as NCCL sends it: NCCL's channels per network peer (4 at 400G) as parallel streams
    assert rep["streams"] == iperf3.nccl_streams(400) == 4
    assert all(argv[argv.index("-P") + 1] == "4" for _, argv in fake.ran("iperf3", "-c"))
    for k in ("network_s", "overhead_s", "model_ideal_s", "model_placed_s", "verdict"):
        assert k in rep
    assert all({"measured_s", "model_ideal_s", "model_placed_s"} <= set(s) for s in rep["steps"])
    assert rep["verdict"] == "pass" and rep["model_placed_s"] == rep["model_ideal_s"]  # no link counters read back
    assert rep["failed_flows"] == 0 and all(f["bytes"] == 200_000 for f in rep["flows"])
    assert rep["nic_gbps_emulated"] == 0.1  # read back from tc, not assumed
    assert len(rep["steps"]) == len(patterns.steps_of(planned))
    assert not lab.traffic_state_file.exists()  # servers stopped, record gone
    assert f"{len(planned)} flows" in iperf3.format_report(rep)


def test_a_refused_flow_is_reported_failed(lab):
    cp = checks_plan.load(lab)
    victim = sorted(cp.gpus)[1]
    rep = iperf3.run(lab, _iperf3_fake(lab, refuse=cp.gpus[victim].ip), "ring-allreduce", 100_000, converge=False, cpu_sampler=cpu_sampler(0.3))
    failed = [f for f in rep["flows"] if f.get("error")]
    assert rep["failed_flows"] == len(failed) >= 1
    assert all(f["dst"] == victim and "Connection refused" in f["error"] for f in failed)


def test_traffic_on_a_faulted_lab_says_so_in_the_text_and_the_json(lab):
    """A run after 'lab fault' reported its verdict without a word of the fault (the pre-run
    check's warning was a progress line only, gone with -q and absent from the JSON)."""
    fake = _iperf3_fake(lab).on(("ip", "link", "show"), (0, "")).on(("ip", "-4", "route", "show"), (0, ""))
    sp = next(s.name for s in lab.switches if "spine" in s.name)
    faults.link_down(lab, fake, f"{sp}:Ethernet0")
    try:
        rep = iperf3.run(lab, fake, "ring-allreduce", 100_000, converge=False, cpu_sampler=cpu_sampler(0.3))
    finally:
        faults.restore(lab, fake)
    assert rep["preflight"]["faults"] == [f"link {sp}:Ethernet0"]
    assert json.loads(json.dumps(rep))["preflight"]["checks_failed"] is None  # not asked (converge=False)
    assert f"warning: the lab was not healthy when the run started: faults set: link {sp}:Ethernet0" in \
        iperf3.format_report(rep)
    assert iperf3.preflight_lines({"preflight": {"faults": [], "checks_failed": 0, "failures": []}}) == []
    line = iperf3.preflight_lines({"preflight": {"faults": [], "checks_failed": 3, "failures": ["bgp/x/y: Active"]}})
    assert line and "3 reachability/bgp checks failed" in line[0] and "first: bgp/x/y: Active" in line[0]


@pytest.mark.parametrize("out, rc, want", [
    (json.dumps({"end": {"sum_sent": {"bytes": 1000, "seconds": 0.5, "retransmits": 3},
                         "sum_received": {"bytes": 800, "seconds": 0.4}}}), 0,
     {"bytes": 800, "bytes_written": 1000, "seconds": 0.4, "seconds_at_rate": 0.5, "retransmits": 3, "mbps": 0.016}),
    (json.dumps({"error": "unable to connect to server"}), 1, {"error": "unable to connect to server"}),
    ("iperf3: error - control socket has closed unexpectedly", 1,
     {"error": "iperf3: error - control socket has closed unexpectedly"}),
    ("", 124, {"error": "iperf3 exited 124"}),
])
def test_parse_iperf3(out, rc, want):
    assert iperf3.parse_iperf3(out, rc, 1000) == want


# --- faults ------------------------------------------------------------------------------------


ROUTES = ("10.64.0.0/10 via 172.16.0.2 dev hb0 src 10.0.0.2\n"
          "10.0.0.0/29 dev eth1 proto kernel scope link src 10.0.0.2\n"
          "10.1.0.0/16 nhid 12 proto bgp metric 20\n")


def test_link_down_records_then_restore_undoes(lab):
    fake = FakeRuntime().on(("ip", "link", "show"), (0, "")).on(("ip", "-4", "route", "show"), (0, ROUTES))
    gpu = lab.gpus[0]
    said = faults.link_down(lab, fake, f"{gpu.name}:eth1")
    far = next(e for lk in lab.links for me, e in ((lk.a, lk.b), (lk.b, lk.a)) if (me.node, me.port) == (gpu.name, "eth1"))
    assert said == f"link {gpu.name}:eth1 -- {far.node}:{far.port} down"
    downs = fake.ran("ip", "link", "set")
    assert [(ns, argv[-1]) for ns, argv in downs] == [(gpu.netns, "down"), (lab.netns(far.node), "down")]
    record = json.loads(lab.faults_file.read_text())
    assert record[0]["routes"][gpu.netns] == [ROUTES.split("\n")[0].split()]  # only what a link-down flushes for good
    fake.calls.clear()
    assert faults.restore(lab, fake) == [f"link {gpu.name}:eth1"]
    assert [argv[-1] for _, argv in fake.ran("ip", "link", "set")] == ["up", "up"]
    assert (gpu.netns, ("ip", "route", "replace", *ROUTES.split("\n")[0].split())) in fake.calls
    assert not lab.faults_file.exists()


def test_a_fault_on_a_port_without_a_device_names_it(lab):
    fake = FakeRuntime().on(("ip", "-4", "route", "show"), (0, ""))  # `ip link show dev` answers 127
    gpu = lab.gpus[0]
    with pytest.raises(Exception, match=f"no device for port eth1 in {gpu.netns}"):
        faults.link_down(lab, fake, f"{gpu.name}:eth1")
    assert not lab.faults_file.exists()
    assert not fake.ran("ip", "link", "set")


def test_a_switch_down_on_another_runtime_downs_its_ports(lab):
    fake = FakeRuntime().on(("ip", "link", "show"), (0, "")).on(("ip", "-4", "route", "show"), (0, ""))
    sw = lab.switches[0]
    assert faults.node_down(lab, fake, sw.name) == f"switch {sw.name} down: {len(lab.ports(sw.name))} ports down"
    assert len([1 for ns, argv in fake.ran("ip", "link", "set") if ns == sw.netns]) == len(lab.ports(sw.name))
    faults.restore(lab, fake)
    with pytest.raises(Exception, match="not a switch"):
        faults.node_down(lab, fake, lab.gpus[0].name)


def test_failover_on_a_lab_with_faults_set_fails_and_changes_nothing(lab, monkeypatch, capsys):
    """check --failover SWITCH after 'lab fault --node SWITCH' passed with '0.03 s until all pairs
    pass again' (it measured nothing) and its restore silently undid the user's fault."""
    fake = FakeRuntime().on(("ip", "link", "show"), (0, "")).on(("ip", "-4", "route", "show"), (0, ""))
    monkeypatch.setitem(RUNTIMES, "fake", lambda: fake)
    sp = next(s.name for s in lab.switches if "spine" in s.name)
    faults.node_down(lab, fake, sp)
    fake.calls.clear()
    rc = main(["lab", "check", str(lab.outdir), "--runtime", "fake", "--failover", sp])
    out = capsys.readouterr().out
    assert rc == 1 and f"faults already set: node {sp}" in out and "--restore' first" in out, out
    assert faults.active(lab, fake) == [f"node {sp}"]  # the user's fault is still recorded
    assert not fake.ran("ip", "link", "set")  # nothing set down, nothing brought up
    faults.restore(lab, fake)


def test_two_phase_on_a_rail_optimized_lab_is_exit_2_naming_the_option(tmp_path, monkeypatch, capsys):
    # two-phase is rail-only's store-and-forward: on the baseline it is a bad option, not a traceback
    base = compile_to(design_text("labs/mini-baseline.yml", "fakebase"), tmp_path / "out")
    fake = _iperf3_fake(load_lab(base))
    monkeypatch.setattr(lab_facts, "RUN_ROOT", str(tmp_path / "run"))
    monkeypatch.setitem(RUNTIMES, "fake", lambda: fake)
    rc = main(["lab", "traffic", str(base), "--runtime", "fake", "--pattern", "all-to-all", "--schedule", "two-phase"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "--schedule" in err and "rail-only" in err and "fix:" in err and "Traceback" not in err
    assert not fake.ran("iperf3", "-s")  # nothing started


@pytest.mark.parametrize("argv", [["--pattern", "ring-allreduce"], ["--job", "JOB"]], ids=["ring", "job"])
def test_schedule_without_an_all_to_all_is_exit_2(tmp_path, monkeypatch, capsys, argv):
    """--schedule two-phase with ring-allreduce ran a concurrent ring and said nothing."""
    base = compile_to(design_text("labs/mini-routed.yml", "fakesched"), tmp_path / "out")
    fake = _iperf3_fake(load_lab(base))
    monkeypatch.setattr(lab_facts, "RUN_ROOT", str(tmp_path / "run"))
    monkeypatch.setitem(RUNTIMES, "fake", lambda: fake)
    argv = [a.replace("JOB", str(REPO / "labs" / "jobs" / "gpt-small.yml")) for a in argv]
    rc = main(["lab", "traffic", str(base), "--runtime", "fake", *argv, "--schedule", "two-phase"])
    err = capsys.readouterr().err
    assert rc == 2 and "--schedule orders an all-to-all's flows" in err and "fix:" in err, err
    assert not fake.ran("iperf3", "-s")  # nothing started


@pytest.mark.parametrize("argv, named", [
    (["--pattern", "ring-allreduce", "--iterations", "3"], "--iterations is for --job"),
    (["--pattern", "all-to-all", "--time-scale", "2"], "--time-scale is for --job"),
    (["--job", "JOB", "--bytes", "5000"], "--bytes is for --pattern"),
], ids=["iterations", "time-scale", "bytes"])
def test_an_option_of_the_other_form_is_exit_2(tmp_path, monkeypatch, capsys, argv, named):
    """--iterations and --time-scale with --pattern, --bytes with --job were taken and ignored, without a word."""
    base = compile_to(design_text("labs/mini-routed.yml", "fakeopts"), tmp_path / "out")
    fake = _iperf3_fake(load_lab(base))
    monkeypatch.setattr(lab_facts, "RUN_ROOT", str(tmp_path / "run"))
    monkeypatch.setitem(RUNTIMES, "fake", lambda: fake)
    argv = [a.replace("JOB", str(REPO / "labs" / "jobs" / "gpt-small.yml")) for a in argv]
    out = tmp_path / "t.json"
    rc = main(["lab", "traffic", str(base), "--runtime", "fake", *argv, "--json", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and named in err and "fix: leave out" in err and "Traceback" not in err, err
    assert not fake.calls and not out.exists()  # nothing run, nothing written


def test_only_with_failover_is_exit_2(tmp_path, monkeypatch, capsys):
    """--failover ran its own measurement and ignored --only."""
    base = compile_to(design_text("labs/mini-routed.yml", "fakefo"), tmp_path / "out")
    fake = _iperf3_fake(load_lab(base))
    monkeypatch.setattr(lab_facts, "RUN_ROOT", str(tmp_path / "run"))
    monkeypatch.setitem(RUNTIMES, "fake", lambda: fake)
    rc = main(["lab", "check", str(base), "--runtime", "fake", "--failover", "fakefo-rail0-spine0", "--only", "bgp"])
    err = capsys.readouterr().err
    assert rc == 2 and "--only" in err and "--failover" in err and "fix:" in err, err
    assert not fake.calls


def test_unknown_node_names_a_fix(routed):
    from railonly.emulation.lab import LabError

    with pytest.raises(LabError) as exc:
        routed.node("hb0-gpuX")
    text = exc.value.problems[0].format()
    assert "no node 'hb0-gpuX'" in text and "hb0-gpu0" in text and "railonly lab status" in text
    with pytest.raises(LabError) as exc:
        routed.node("rail0-leaf0")  # the switch without its site prefix
    text = exc.value.problems[0].format()
    assert f"switch names carry the site prefix: {routed.name}-rail0-leaf0" in text


@pytest.mark.parametrize("when", ["ports", "frr"])
def test_failover_interrupted_while_the_switch_goes_down_restores_it(lab, monkeypatch, when):
    """The take-down ran before the try/finally that restores: a Ctrl-C (or SIGTERM) while the
    ports went down or FRR stopped left the switch down (a recorded fault)."""
    from railonly.emulation.traffic import failover

    cp = checks_plan.load(lab)

    class Reached:  # every same-rail pair passes before the fault (the probes need a real lab)
        def __init__(self, *a):
            self.ev = type("Ev", (), {"reach": set(cp.reach_pairs()), "reach_rounds": {}})()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

    monkeypatch.setattr(failover.probe, "Agent", Reached)
    monkeypatch.setattr(failover, "_open_sockets", lambda *a: None)
    monkeypatch.setattr(failover, "_reach", lambda *a: None)
    monkeypatch.setattr(failover, "_round_sender", lambda *a: (lambda rnd: None))
    monkeypatch.setattr(failover, "fabric_whole", lambda *a, **kw: ([], 0.0))  # BGP/BFD: the next test
    downs = []

    def set_down(ns, argv):
        downs.append(ns)
        if when == "ports" and len(downs) == 2:
            raise KeyboardInterrupt
        return 0, ""

    fake = (FakeRuntime().on(("ip", "link", "show"), (0, "")).on(("ip", "-4", "route", "show"), (0, ""))
            .on(("ip", "link", "set"), (0, "")).on(("ip", "link", "set", "dev"), lambda ns, a: set_down(ns, a) if a[-1] == "down" else (0, "")))
    if when == "frr":
        def stop_frr(lab_, switch):
            raise KeyboardInterrupt
        monkeypatch.setattr(fake, "stop_frr", stop_frr, raising=False)
    sp = next(s.name for s in lab.switches if "spine" in s.name)
    with pytest.raises(KeyboardInterrupt):
        failover.measure(lab, fake, sp, timeout=1.0)
    assert downs and faults.active(lab, fake) == []  # restored: nothing recorded any more
    ups = [ns for ns, argv in fake.ran("ip", "link", "set", "dev") if argv[-1] == "up"]
    assert len(ups) == len(lab.ports(sp))  # every port of the switch brought up again


def _restoring_fake(cp, clock, routes_at: float) -> FakeRuntime:
    """A lab just after `lab fault --restore`: every session Established and BFD up, but no
    session has received a route before ``routes_at`` on the fake clock."""
    by_ns = {f"clab-{cp.lab}-{sw}": sw for sw in {s.switch for s in cp.bgp} | set(cp.prefixes)}

    def vtysh(ns, argv):
        sw = by_ns[ns]
        mine = [s for s in cp.bgp if s.switch == sw]
        if argv[-1] == "show bfd peers json":
            return 0, json.dumps([{"peer": s.peer, "status": "up"} for s in mine])
        rcvd = 3 if clock[0] >= routes_at else 0
        return 0, json.dumps({"ipv4Unicast": {"peers": {s.peer: {"state": "Established", "pfxRcd": rcvd} for s in mine}}})

    def routes(ns, argv):
        return 0, json.dumps([{"dst": p, "type": "unicast"} for p in cp.prefixes.get(by_ns[ns], ())])

    return (FakeRuntime().on(("vtysh",), vtysh).on(("ip", "-4", "-j", "route"), routes)
            .on(("ip", "link", "show"), (0, "")).on(("ip", "-4", "route", "show"), (0, ""))
            .on(("ip", "link", "set"), (0, "")).on(("ip", "route", "replace"), (0, "")))


@pytest.mark.parametrize("routes_at", [6.0, None], ids=["routes-come", "routes-never-come"])
def test_failover_waits_for_every_session_to_carry_its_routes(lab, monkeypatch, routes_at):
    """`lab check --failover rail0-spine1` right after `lab fault --node rail0-spine0` and its
    restore measured 5.5 s (0.1 s otherwise): every pair passed through spine1, spine0's sessions
    were not up yet (or up without routes), and taking spine1 down left the rail no spine until
    spine0's came. The fault waits until every session has received routes, counts steady."""
    from railonly.emulation.traffic import failover

    cp = checks_plan.load(lab)
    clock = [0.0]
    for mod in (checks_run, failover):
        monkeypatch.setattr(mod.time, "monotonic", lambda: clock[0])
        monkeypatch.setattr(mod.time, "sleep", lambda d: clock.__setitem__(0, clock[0] + d))

    class Reached:  # every same-rail pair passes, the spine being restored or not (probes need a real lab)
        def __init__(self, *a):
            self.ev = type("Ev", (), {"reach": set(cp.reach_pairs()), "reach_rounds": {1: set(cp.reach_pairs())}})()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def pump(self, s):
            clock[0] += s

    monkeypatch.setattr(failover.probe, "Agent", Reached)
    monkeypatch.setattr(failover, "_open_sockets", lambda *a: None)
    monkeypatch.setattr(failover, "_reach", lambda *a: None)
    monkeypatch.setattr(failover, "_round_sender", lambda *a: (lambda rnd: None))
    fake = _restoring_fake(cp, clock, routes_at if routes_at is not None else float("inf"))
    downed_at = []
    real = fake.exec

    def exec_(node, argv, timeout=30.0):
        if tuple(argv[:3]) == ("ip", "link", "set") and argv[-1] == "down" and not downed_at:
            downed_at.append(clock[0])
        return real(node, argv, timeout)

    monkeypatch.setattr(fake, "exec", exec_)
    sp = sorted(s.name for s in lab.switches if "spine" in s.name)[1]
    run = failover.measure(lab, fake, sp, timeout=20.0)
    res = {r.id: r for r in run.results}
    if routes_at is None:
        assert not downed_at and not fake.ran("ip", "link", "set")  # nothing taken down
        fo = res[f"failover/{sp}"]
        assert not fo.passed and "no routes received yet" in fo.detail and "nothing was changed" in fo.detail, fo.detail
        return
    # down only once every session carried routes, in two readings in a row
    assert downed_at and downed_at[0] >= routes_at + failover.WHOLE_POLL_S, (downed_at, routes_at)
    assert res[f"failover/{sp}"].passed and res[f"failover/{sp}/restored"].passed
    assert any("waited" in n and "before the fault" in n for n in run.notes), run.notes
    assert faults.active(lab, fake) == []


def test_timing_lines_say_where_the_agents_start_went():
    """A dead NIC: 'overhead 17.14 s ... wall 3.49 s' and nothing said that agent start-up spent
    16 s in connect timeouts to hb0-gpu3 (and "wall" had the retries in, the step's time not)."""

    class Waited:
        failed_wait_s = 16.04
        failed_pairs = {("hb0-gpu2", "hb0-gpu3"): "No route to host", ("hb0-gpu3", "hb1-gpu3"): "Network is unreachable"}

    w = iperf3.agents_waited(Waited(), {"hb0-gpu3": "hb0-gpu3:eth1"})
    assert w["gpus"] == ["hb0-gpu3"] and w["seconds"] == 16.04 and len(w["pairs"]) == 2
    line = iperf3.waited_line(w)[0]
    assert "agents: 16.0 s of their start waiting for hb0-gpu3, whose NIC is down (lab fault --link hb0-gpu3:eth1)" in line
    # no fault recorded: the GPU in most failed pairs, unreached
    assert iperf3.agents_waited(Waited(), {})["gpus"] == ["hb0-gpu3"]
    assert iperf3.agents_waited(type("None_", (), {"failed_pairs": {}})(), {}) is None and iperf3.waited_line(None) == []
    # the parts add up to the overhead: what they leave is "other"
    parts = iperf3.overhead_parts({"agents_start_s": 16.1, "client_start_and_barrier_s": 0.5}, 17.14)
    assert parts["other_s"] == pytest.approx(0.54) and sum(parts.values()) == pytest.approx(17.14)


def test_wall_is_the_steps_own_time_and_the_run_wall_is_reported(lab):
    fake = _iperf3_fake(lab)
    rep = iperf3.run(lab, fake, "all-to-all", 100_000, converge=False, cpu_sampler=cpu_sampler(0.3))
    assert rep["completion_s"] == pytest.approx(sum(s["wall_s"] for s in rep["steps"]), abs=0.002)
    assert rep["wall_s"] >= rep["completion_s"] and rep["agents_waited"] is None
    assert sum(rep["overhead"].values()) >= rep["overhead_s"] - 0.01  # "other" fills what the parts leave
    assert "wall: run" in iperf3.format_report(rep)


def test_a_faulted_lab_stops_waiting_once_what_fails_stays_the_same(lab, monkeypatch):
    """After `lab fault` a session over the downed link cannot come up: the convergence wait
    before traffic (and `lab check`) ended only at its 60 s timeout. With faults set it ends
    once the failing sessions have not changed for FAULTED_STABLE_S; without, it waits on."""
    cp = checks_plan.load(lab)
    s = cp.bgp[0]
    clock = [0.0]
    monkeypatch.setattr(checks_run.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(checks_run.time, "sleep", lambda d: clock.__setitem__(0, clock[0] + d))
    fake = _bgp_fake(cp, down=(s.switch, s.peer))
    st = checks_run.collect_switches(fake, lab, cp, 60.0, bgp=True, bfd=False, faulted=True)
    assert st.stable_failing and checks_run.FAULTED_STABLE_S <= clock[0] < checks_run.FAULTED_STABLE_S + 2
    assert [r.id for r in judge.bgp(cp, st.peers, st.routes) if not r.passed] == [f"bgp/{s.switch}/{s.peer}"]
    clock[0] = 0.0
    st = checks_run.collect_switches(fake, lab, cp, 60.0, bgp=True, bfd=False)
    assert not st.stable_failing and clock[0] > 60.0  # no faults: a session may yet come up
    # a failing set that keeps changing is waited for: each change restarts the count
    clock[0] = 0.0
    flip = _bgp_fake(cp, down=(cp.bgp[1].switch, cp.bgp[1].peer))
    calls = [0]
    real = FakeRuntime.exec

    def exec_(self, node, argv, timeout=30.0):
        calls[0] += 1
        rt = fake if clock[0] < 8.0 else flip  # the failing session changes at 8 s
        return real(rt, node, argv, timeout)

    monkeypatch.setattr(FakeRuntime, "exec", exec_)
    st = checks_run.collect_switches(fake, lab, cp, 60.0, bgp=True, bfd=False, faulted=True)
    assert st.stable_failing and clock[0] >= 8.0 + checks_run.FAULTED_STABLE_S


@pytest.mark.parametrize("spoil,named", [
    ("cabling_columns", "cabling.csv:2: has a row without the cable_id"),
    ("cabling_short_row", "cabling.csv:3: has a row without the cable_id"),
    ("cabling_binary", "cabling.csv: is not UTF-8 text"),
    ("frr_binary", "frr.conf: is not UTF-8 text"),
    ("frr_link", "frr.conf: is a symbolic link"),
])
def test_a_hostile_cabling_or_frr_conf_in_the_outdir_is_exit_2_naming_it(tmp_path, monkeypatch, capsys, spoil, named):
    # check_plan.load read them with open()/read_text: a KeyError or UnicodeDecodeError traceback;
    # a link is refused by load_lab already, and by the reader now reading them too
    lab = load_lab(compile_to(design_text("labs/mini-routed.yml", "fakert"), tmp_path / "out"))
    cab = lab.fabric_file.parent / "cabling.csv"
    frr = lab.configs_dir / lab.switches[0].name / "frr.conf"
    if spoil == "cabling_columns":
        cab.write_text("x,y\n1,2\n")
    elif spoil == "cabling_short_row":
        cab.write_text("\n".join(cab.read_text().splitlines()[:2] + ["x,y"]) + "\n")
    elif spoil == "cabling_binary":
        cab.write_bytes(b"\xff\xfe\x00")
    elif spoil == "frr_binary":
        frr.write_bytes(b"\xff\xfe\x00")
    else:
        (tmp_path / "elsewhere").write_text(frr.read_text())
        frr.unlink()
        frr.symlink_to(tmp_path / "elsewhere")
    monkeypatch.setitem(RUNTIMES, "fake", lambda: FakeRuntime())
    assert main(["lab", "check", str(lab.outdir), "--runtime", "fake", "--timeout", "0.01"]) == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err, err
