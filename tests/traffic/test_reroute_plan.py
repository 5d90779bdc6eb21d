"""`lab traffic --job --reroute`'s plan (pure): a dead NIC's flows as PXN legs through an HB
sibling, byte totals by pair class kept, and the lab plan's slowdown against analyze --fail's."""

from __future__ import annotations

import pytest

from railonly.emulation.traffic import job_plan as jp
from railonly.emulation.traffic import replay
from railonly.emulation.traffic.completion_time import link_loads

from .test_job_plan import HB, NAMES, NIC, planned

DEAD = {"hb0-gpu0"}


def _rerouted(job: str, topology: str = "rail-only"):
    sc, pl, phases = planned(job, topology)
    rates = jp.lab_rates(NIC, HB)
    detour = jp.detour_model(sc, pl, DEAD, NAMES, topology, rates)
    return sc, pl, phases, jp.reroute(phases, DEAD, NAMES, 2, topology, detour)


@pytest.mark.parametrize("topology", ["rail-only", "rail-optimized"])
def test_no_flow_uses_the_dead_nic_and_pair_bytes_are_kept(topology):
    _, _, healthy, rer = _rerouted("gpt-small", topology)
    assert [p.name for p in rer] == [p.name for p in healthy]
    touched = 0
    for h, r in zip(healthy, rer):
        for f in r.flows:
            if not f.hb:
                assert f.via is None or f.via not in DEAD
                assert f.src not in DEAD and f.dst not in DEAD, (r.name, f)
        for c in ("hb", "rail", "cross_rail"):
            assert r.planned.get(c, 0) == h.planned.get(c, 0), (r.name, c)  # a NIC leg keeps its pair's class
        if r.planned.get("staged", 0) != h.planned.get("staged", 0):
            touched += 1
            assert len(r.steps) > len(h.steps)  # store-and-forward: HB legs before and after
            assert all(f.step == i for i, st in enumerate(r.steps) for f in st)
    assert touched >= 2  # pp and dp phases of gpt-small hold hb0-gpu0


def test_the_detoured_ring_step_costs_what_the_fail_model_says():
    """A detoured rail-only ring step: HB out, the sibling's NIC carrying two flows, HB in:
    1/NIC x 2 + 1/HB x 2 per byte, the rate failure.detour_rates gives."""
    _, _, healthy, rer = _rerouted("gpt-small")
    h = next(p for p in healthy if p.name == "dp.all-reduce.dense")
    r = next(p for p in rer if p.name == "dp.all-reduce.dense")
    plan_h = sum(jp.step_model_s(st, NIC, HB) for st in h.steps)
    plan_r = sum(jp.step_model_s(st, NIC, HB) for st in r.steps)
    assert plan_r / plan_h == pytest.approx(2 + 2 * NIC / HB, rel=0.02)
    assert r.model_s / h.model_s == pytest.approx(2 + 2 * NIC / HB, rel=0.02)
    # the sibling's NIC carries its own bytes and the detoured ones
    loads = link_loads(list(r.flows))
    assert loads[("hb0-gpu1", "nic", "out")] == 2 * loads[("hb2-gpu0", "nic", "out")]


def test_the_prediction_is_analyze_fail():
    sc, pl, _, rer = _rerouted("gpt-small")
    pr = replay.predicted(sc, pl, "rail-only", DEAD, NAMES)
    assert pr["specs"] == ["nic:hb0-gpu0"] and pr["slowdown"] > 1.0
    assert pr["iteration_s"] == pytest.approx(pr["healthy_iteration_s"] * pr["slowdown"], rel=1e-3)


def test_nothing_dead_changes_nothing():
    _, _, healthy = planned("gpt-small")
    assert jp.reroute(healthy, set(), NAMES, 2, "rail-only") == healthy


def test_no_sibling_left_is_a_clear_error():
    _, _, healthy = planned("gpt-small")
    with pytest.raises(jp.ScaleError, match="no detour"):
        jp.reroute(healthy, {"hb0-gpu0", "hb0-gpu1"}, NAMES, 2, "rail-only")
