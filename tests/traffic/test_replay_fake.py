"""The replay's logic above Runtime.exec on a FakeRuntime (no root): counters read back by class,
verdicts, a failed group named, the nftables table always removed. In addition to the netns tests
(test_replay_lab.py), which prove a real lab answers what these feed the logic."""

from __future__ import annotations

import json
import os

import pytest

from railonly.emulation import lab as lab_facts
from railonly.emulation.checks import check_plan as checks_plan
from railonly.emulation.lab import load_lab
from railonly.emulation.traffic import job_plan, replay
from railonly.fabric.analysis import load_job

from ..conftest import REPO, FakeRuntime, compile_to, cpu_sampler, design_text

JOBS = REPO / "labs" / "jobs"
NIC_BPS, HB_BPS = 100e6 / 8, 900e6 / 8


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    return load_lab(compile_to(design_text("labs/mini-routed.yml", "fakerq"), tmp_path_factory.mktemp("fake") / "out"))


@pytest.fixture
def lab(compiled, tmp_path, monkeypatch):
    monkeypatch.setattr(lab_facts, "RUN_ROOT", str(tmp_path / "run"))
    return compiled


def _class_of(port: int) -> str:
    return next(c for c, lo in job_plan.CLASS_PORTS.items() if lo <= port < lo + job_plan.PORTS_PER_CLASS)


def _tx_ends(lab, cp) -> dict:
    """{(gpu, 'nic'|'hb', 'out'|'in'): (node, port) whose tx counter carries it}: the GPU's
    own port out, the leaf's (or the HB domain's) port towards it in."""
    out = {}
    for lk in lab.links:
        for g, far, what in ((lk.a, lk.b, lk.kind), (lk.b, lk.a, lk.kind)):
            if g.node in cp.gpus and what in ("rail", "hb"):
                kind = "nic" if what == "rail" else "hb"
                out[(g.node, kind, "out")], out[(g.node, kind, "in")] = (g.node, g.port), (far.node, far.port)
    return out


def lab_fake(lab, refuse_from: str | None = None, misclass: str | None = None) -> FakeRuntime:
    """iperf3 clients 'send' at the shaped rate of their class and bump the nft counters of
    their namespace by class, as the real table does, and the tx counters of the GPU links on
    their path as the kernel moves the bytes (a cross-rail pair on rail-only: over HB to the
    sibling on the destination's rail, out of its NIC); ``misclass`` counts that class as
    cross_rail (a misrouted byte); ``refuse_from`` fails every flow that GPU sends."""
    cp = checks_plan.load(lab)
    prefix = lab_facts.netns_prefix(lab.name)
    counters: dict[str, dict[str, int]] = {}
    ends, tx = _tx_ends(lab, cp), {}

    def path(src: str, dst: str) -> list:
        a, b = cp.gpus[src], cp.gpus[dst]
        if a.hb == b.hb:
            return [(src, "hb", "out"), (dst, "hb", "in")]
        if a.rail == b.rail or cp.topology != "rail-only":
            return [(src, "nic", "out"), (dst, "nic", "in")]
        via = next(g.name for g in cp.gpus.values() if g.hb == a.hb and g.rail == b.rail)
        return [(src, "hb", "out"), (via, "hb", "in"), (via, "nic", "out"), (dst, "nic", "in")]

    def server(ns, argv):
        with open(argv[argv.index("--pidfile") + 1], "w") as f:  # never an iperf3: stop_servers signals nobody
            f.write(f"{os.getpid()}\n")
        return 0, ""

    def client(ns, argv):
        src = ns[len(prefix):]
        dst = cp.ip_owner[argv[argv.index("-c") + 1]]
        n, cls = int(argv[argv.index("-n") + 1]), _class_of(int(argv[argv.index("-p") + 1]))
        if src == refuse_from:
            return 1, json.dumps({"error": "unable to connect to server: Network is unreachable"})
        counted = "cross_rail" if cls == misclass else cls
        for leg in path(src, dst):
            tx[ends[leg]] = tx.get(ends[leg], 0) + n
        counters.setdefault(src, {}).setdefault(f"tx_{counted}", 0)
        counters[src][f"tx_{counted}"] += n
        if cls == "staged":
            counters.setdefault(dst, {}).setdefault("rx_staged", 0)
            counters[dst]["rx_staged"] += n
        secs = n / (HB_BPS if cls in ("hb", "staged") else NIC_BPS)
        return 0, json.dumps({"end": {"sum_sent": {"bytes": n, "seconds": secs}, "sum_received": {"bytes": n, "seconds": secs}}})

    def nft_list(ns, argv):
        vals = counters.get(ns[len(prefix):], {})
        return 0, json.dumps({"nftables": [{"counter": {"table": replay.TABLE, "name": k, "bytes": v}} for k, v in vals.items()]})

    def links(ns, argv):
        node = ns[len(prefix):]
        return 0, json.dumps([{"ifname": p, "stats64": {"tx": {"bytes": v}, "rx": {"bytes": 0}}}
                              for (nd, p), v in tx.items() if nd == node])

    return (FakeRuntime()
            .on(("tc", "-j", "qdisc"), (0, json.dumps([{"kind": "tbf", "options": {"rate": NIC_BPS}}])))
            .on(("tc", "-j", "class"), (0, json.dumps([{"kind": "htb", "options": {"rate": HB_BPS}}])))
            .on(("ip", "-s", "-j", "link"), links)
            .on(("nft",), (0, "")).on(("nft", "-j", "list", "counters"), nft_list)
            .on(("iperf3", "-s"), server).on(("iperf3", "-c"), client))


def _run(lab, fake, job="gpt-small", time_scale=1.0):
    path = JOBS / f"{job}.yml" if (JOBS / f"{job}.yml").exists() else REPO / "tests" / "traffic" / "jobs" / f"{job}.yml"
    return replay.run(lab, fake, load_job(path), time_scale=time_scale, converge=False, cpu_sampler=cpu_sampler(0.3))


def test_the_placed_model_prices_the_hop_a_sibling_forwards_on_its_nic(lab):
    """pp 4 / dp 3 on rail-only: a dp ring hop to the other rail is forwarded by the sender's
    HB sibling, whose NIC also carries its own hop. The analysis model (perfect balance)
    prices each GPU's NIC once; the counters see the sibling's NIC carry two hops."""
    rep = _run(lab, lab_fake(lab), "dense-pp4-dp3", time_scale=100.0)
    dp = next(p for p in rep["phases"] if p["name"] == "dp.all-reduce.dense")
    step = dp["iterations"][0]["steps"][0]
    hop = max(f["bytes"] for f in dp["iterations"][0]["flows"])
    assert step["bound"]["kind"] == "gpu" and step["bound"]["bytes"] == 2 * hop
    assert dp["model_placed_s"] == pytest.approx(2 * hop / NIC_BPS, rel=1e-3)
    assert dp["model_placed_s"] > 1.7 * dp["model_ideal_s"]  # ideal: each NIC carries one hop
    assert rep["placement_bound"]["link"] == step["bound"]["link"] and "the busiest link is a GPU's" in rep["why"]
    # a phase without forwarding keeps its plan: pipeline sends on their own NICs, one hop each
    pp = next(p for p in rep["phases"] if p["name"] == "pp.send-recv")
    assert pp["model_placed_s"] == pytest.approx(pp["plan_model_s"], rel=1e-3)


@pytest.mark.parametrize("job", ["gpt-small", "moe-mini"])
def test_a_healthy_replay_passes_with_bytes_by_class_and_removes_its_table(lab, job):
    fake = lab_fake(lab)
    rep = _run(lab, fake, job)
    assert rep["verdict"] == "pass" and rep["failed_phases"] == [] and rep["iteration_within_tolerance"]
    assert rep["pattern"] == "job" and rep["job"] == job
    for p in rep["phases"]:
        assert p["verdict"] == "pass" and p["bytes_by_class"] == {c: p["planned_bytes"].get(c, 0) for c in job_plan.CLASSES}
    if job == "gpt-small":
        assert rep["bytes"]["cross_rail"] == 0 and rep["staged_bytes"] == 0 and rep["bytes"]["hb"] > 0
        assert rep["moe_all_to_all_overhead_model"] is None
    else:
        ep = next(p for p in rep["phases"] if p["parallelism"] == "ep")["iterations"][0]
        assert sum(ep["staged_in"].values()) == rep["staged_bytes"] == rep["bytes"]["cross_rail"] > 0
    # the table went into every GPU namespace and came out again
    gpus = {lab.netns(g) for g in checks_plan.load(lab).gpus}
    added = {ns for ns, argv in fake.ran("nft") if argv[1].startswith("add table")}
    removed = {ns for ns, argv in fake.ran("nft") if argv[1] == f"delete table inet {replay.TABLE}"}
    assert added == gpus and removed == gpus
    text = replay.format_report(rep)
    assert "verdict: pass" in text and f"job {job}" in text
    # the verdict's 50 ms go once onto the summed communication time (it said "a phase"), and the JSON says so
    assert "plus 50 ms once" in text and "a phase" not in text.splitlines()[-1]
    assert rep["slack_s"] == 0.05 and "once on the summed communication time" in rep["verdict_rule"]


def test_a_gpu_that_cannot_send_fails_its_phases_by_group_name(lab):
    fake = lab_fake(lab, refuse_from="hb0-gpu0")
    rep = _run(lab, fake)
    assert rep["verdict"] == "fail" and rep["failed_phases"] == ["tp.all-gather", "tp.reduce-scatter", "pp.send-recv",
                                                                 "dp.all-reduce.dense"]
    text = replay.format_report(rep)
    assert "pipeline 0 (hb0-gpu0, hb2-gpu0, hb4-gpu0): 1 flow(s) failed" in text
    assert "dp group 0 (hb0-gpu0, hb1-gpu0): 1 flow(s) failed" in text
    assert any(argv[1] == f"delete table inet {replay.TABLE}" for _, argv in fake.ran("nft"))


def test_bytes_counted_on_another_class_fail_the_phase(lab):
    rep = _run(lab, lab_fake(lab, misclass="rail"), time_scale=100.0)  # bytes well above the per-flow slack
    assert rep["verdict"] == "fail" and "dp.all-reduce.dense" in rep["failed_phases"]
    dp = next(p for p in rep["phases"] if p["name"] == "dp.all-reduce.dense")
    probs = dp["iterations"][0]["problems"]
    assert any(p.startswith("rail bytes counted 0") for p in probs) and any(p.startswith("cross_rail bytes counted") for p in probs)


class _Unhandled(Exception):
    """What SIGTERM raises when railonly installs no handler of its own (the test's fallback,
    so a regression fails this test instead of killing pytest)."""


def _sigterm_on_first(fake: FakeRuntime, prefix: tuple[str, ...]) -> FakeRuntime:
    """The first argv starting with ``prefix`` gets a SIGTERM to this process (`kill PID`)."""
    import signal

    inner = next(a for p, a in reversed(fake.handlers) if p == prefix)
    fired = []

    def answer(ns, argv):
        if not fired:
            fired.append(ns)
            os.kill(os.getpid(), signal.SIGTERM)
        return inner(ns, argv) if callable(inner) else inner

    return fake.on(prefix, answer)


@pytest.mark.parametrize("what", ["job", "pattern"])
def test_sigterm_cleans_up_as_ctrl_c_and_exits_143(lab, monkeypatch, capsys, what):
    """A plain SIGTERM (kill PID, a cancelled CI job) ended the replay without its finally: the
    nftables table railonly_replay stayed in every GPU namespace until the next replay (Ctrl-C
    removed it and exited 130); iperf3 servers of a pattern stayed recorded the same way."""
    import signal

    from railonly.cli import main
    from railonly.emulation.runtime.registry import RUNTIMES
    from railonly.emulation.traffic import iperf3

    def fallback(signum, frame):
        raise _Unhandled()

    fake = _sigterm_on_first(lab_fake(lab), ("iperf3", "-c"))
    monkeypatch.setitem(RUNTIMES, "fake", lambda: fake)
    quiet = {"faults": [], "checks_failed": None, "failures": []}
    monkeypatch.setattr(replay, "preflight", lambda *a, **k: quiet)
    monkeypatch.setattr(iperf3, "preflight", lambda *a, **k: quiet)
    argv = (["--job", str(JOBS / "gpt-small.yml"), "--time-scale", "1"] if what == "job"
            else ["--pattern", "ring-allreduce", "--bytes", "100000"])
    previous = signal.signal(signal.SIGTERM, fallback)
    try:
        rc = main(["lab", "traffic", str(lab.outdir), "--runtime", "fake", *argv])
        assert signal.getsignal(signal.SIGTERM) is fallback  # the CLI's own handler was put back
    finally:
        signal.signal(signal.SIGTERM, previous)
    err = capsys.readouterr().err
    assert rc == 143 and "terminated" in err and "Traceback" not in err, err
    gpus = {lab.netns(g) for g in checks_plan.load(lab).gpus}
    if what == "job":
        added = {ns for ns, argv in fake.ran("nft") if argv[1].startswith("add table")}
        removed = {ns for ns, argv in fake.ran("nft") if argv[1] == f"delete table inet {replay.TABLE}"}
        assert added == gpus and removed >= gpus
        last_add = max(i for i, (_, a) in enumerate(fake.calls) if a[:1] == ("nft",) and a[1].startswith("add table"))
        assert {ns for ns, a in fake.calls[last_add:] if a[:2] == ("nft", f"delete table inet {replay.TABLE}")} == gpus
    assert fake.ran("iperf3", "-s") and not lab.traffic_state_file.exists()  # the servers' record: stopped, removed
