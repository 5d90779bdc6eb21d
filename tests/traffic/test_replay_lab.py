"""The job replay on real mini labs: counters by class, verdicts, a fault named by phase and group.

Ideal tiers (the switch-to-switch links unshaped, as the bench) so ECMP collisions on the
shaped uplinks do not blur the comparison with the model; a small time scale keeps CI short
(phases of ~0.1-2 s), so the time tolerance is wide here: the bench measures time."""

from __future__ import annotations

import json

import pytest

from railonly.cli import main
from railonly.emulation.traffic import iperf3, job_plan, replay
from railonly.fabric.analysis import load_job

from ..checks.conftest import _deploy
from ..conftest import REPO

pytestmark = pytest.mark.netns

JOBS = REPO / "labs" / "jobs"
TIME_SCALE = 800.0


def _ideal(d):
    iperf3.unshape_fabric(d.lab, d.rt)
    return d


@pytest.fixture(scope="module")
def routed(tmp_path_factory):
    for d in _deploy(tmp_path_factory.mktemp("replay"), "mini-routed", "j"):
        yield _ideal(d)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    for d in _deploy(tmp_path_factory.mktemp("replayb"), "mini-baseline", "k"):
        yield _ideal(d)


def _timed_ok(rep: dict) -> bool:
    """The timing verdict a healthy replay gets: pass, or inconclusive when the host's CPU was
    saturated (the shared machine tests run on); the three figures are there either way."""
    want = "inconclusive" if rep["host_cpu"]["saturated"] else "pass"
    figures = all(rep[k] > 0 for k in ("communication_measured_s", "communication_model_placed_s",
                                         "communication_model_ideal_s"))
    per_phase = all({"measured_s", "model_ideal_s", "model_placed_s"} <= set(p) for p in rep["phases"])
    return rep["verdict"] == want and figures and per_phase


def _close(got: int, want: float, flows: int) -> bool:
    return abs(got - want) <= want * replay.BYTE_SLACK_REL + flows * replay.BYTE_SLACK_PER_FLOW


def test_dense_job_on_rail_only_counts_no_cross_rail_byte(routed, tmp_path):
    out = tmp_path / "replay.json"
    rc = main(["lab", "traffic", str(routed.outdir), "--job", str(JOBS / "gpt-small.yml"), "--time-scale", str(TIME_SCALE),
               "--tolerance", "0.6", "--json", str(out)])
    rep = json.loads(out.read_text())
    assert _timed_ok(rep) and rc == {"pass": 0, "inconclusive": 3}[rep["verdict"]] and rep["failed_phases"] == []
    assert rep["pattern"] == "job" and rep["job"] == "gpt-small" and rep["iterations"] == 1
    assert [p["name"] for p in rep["phases"]] == ["compute", "tp.all-gather", "tp.reduce-scatter", "pp.send-recv",
                                                 "dp.all-reduce.dense"]
    # the counters: TP bytes on HB, PP and DP bytes on the rails, nothing across rails
    assert rep["bytes"]["cross_rail"] == 0 and rep["staged_bytes"] == 0 and rep["kernel_forwarded_bytes"] == 0
    for p in rep["phases"][1:]:
        assert p["verdict"] in ("pass", "slow")
        n = len(p["iterations"][0]["flows"])
        for c in job_plan.CLASSES:
            assert _close(p["bytes_by_class"][c], p["planned_bytes"][c], n), (p["name"], c)
        want = "hb" if p["parallelism"] == "tp" else "rail"
        assert p["bytes_by_class"][want] > 0 and p["bytes"] == p["bytes_by_class"][want]
        # and the raw port counters agree: HB ports carried the TP phases, NICs the others
        ports = p["iterations"][0]["ports"]
        on = sum(v[f"{'hb' if want == 'hb' else 'nic'}_tx"] for v in ports.values())
        assert on >= p["bytes"] * 0.99
    assert rep["measured_iteration_s"] == pytest.approx(rep["model_iteration_s"], rel=0.6)
    # ideal tiers: nothing above the NICs is shaped, so the placed model is each step's busiest GPU link:
    # the planned bytes plus what the counters add (headers, ACKs, retransmissions)
    assert rep["communication_model_ideal_s"] <= rep["communication_model_placed_s"] <= 1.05 * rep["communication_model_ideal_s"]
    assert all(s["bound"]["kind"] == "gpu" for p in rep["phases"][1:] for s in p["iterations"][0]["steps"])


def test_moe_job_on_rail_only_stages_cross_rail_bytes_on_the_forwarding_gpus(routed):
    rep = replay.run(routed.lab, routed.rt, load_job(JOBS / "moe-mini.yml"), time_scale=TIME_SCALE, tolerance=0.6)
    assert _timed_ok(rep)
    ep = next(p for p in rep["phases"] if p["parallelism"] == "ep")
    it = ep["iterations"][0]
    n = len(it["flows"])
    assert ep["planned_bytes"]["cross_rail"] > 0
    for c in job_plan.CLASSES:
        assert _close(ep["bytes_by_class"][c], ep["planned_bytes"][c], n), c
    # what the senders staged arrived on the HB ports of the GPUs that forward it (input hook),
    # and each of those GPUs' HB port received at least that much
    staged_to: dict[str, int] = {}
    for f in it["flows"]:
        if f["class"] == "staged":
            staged_to[f["dst"]] = staged_to.get(f["dst"], 0) + f["planned_bytes"]
    assert set(it["staged_in"]) == set(staged_to)
    for g, v in staged_to.items():
        assert _close(it["staged_in"][g], v, n), g
        assert it["ports"][g]["hb_rx"] >= it["staged_in"][g]
    assert rep["kernel_forwarded_bytes"] == 0  # staged by the replay, not routed by the kernel
    # the form the replay runs: (K-1)/K x NIC/HB at K = 2; the paper's convention NIC/HB beside it
    assert rep["moe_all_to_all_overhead_model"] == pytest.approx(0.5 * 100 / 900, abs=0.002)
    assert rep["moe_all_to_all_overhead_model_paper"] == pytest.approx(100 / 900, abs=0.002)


def test_baseline_sends_moe_cross_rail_bytes_through_the_spines_and_dense_none(baseline):
    dense = replay.run(baseline.lab, baseline.rt, load_job(JOBS / "gpt-small.yml"), time_scale=TIME_SCALE, tolerance=0.6)
    assert _timed_ok(dense) and dense["bytes"]["cross_rail"] == 0
    # the spines carry same-rail bytes between leaves, never a cross-rail pair's
    assert dense["joining_switch_bytes"]["cross_rail"] == 0 and dense["joining_switch_bytes"]["rail"] > 0
    moe = replay.run(baseline.lab, baseline.rt, load_job(JOBS / "moe-mini.yml"), time_scale=TIME_SCALE, tolerance=0.6,
                     converge=False)
    assert _timed_ok(moe) and moe["staged_bytes"] == 0
    assert moe["bytes"]["cross_rail"] > 0
    # every cross-rail byte crossed a switch that joins rails (at least once; a path may cross two)
    ep = next(p for p in moe["phases"] if p["parallelism"] == "ep")
    assert ep["iterations"][0]["joining_switches"]["cross_rail"] >= ep["bytes_by_class"]["cross_rail"] * 0.95


def test_a_fault_on_a_gpu_rail_nic_fails_the_phase_and_names_the_group(routed, capsys):
    assert main(["lab", "fault", str(routed.outdir), "--link", "hb0-gpu0:eth1"]) == 0
    try:
        rc = main(["lab", "traffic", str(routed.outdir), "--job", str(JOBS / "gpt-small.yml"), "--time-scale", "300",
                   "--tolerance", "5"])
    finally:
        assert main(["lab", "fault", str(routed.outdir), "--restore"]) == 0
    out = capsys.readouterr().out
    assert rc == 1
    assert "failed: pp.send-recv, dp.all-reduce.dense" in out
    assert "pipeline 0 (hb0-gpu0, hb2-gpu0, hb4-gpu0)" in out and "dp group 0 (hb0-gpu0, hb1-gpu0)" in out
    # HB traffic (TP) still passed: the fault is on a rail NIC
    assert "tp.all-gather" in out and "tp.all-gather                 " in out
