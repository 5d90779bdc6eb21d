"""The job replay's pure part: scaling a job to the lab, and its phases as flows by class."""

from __future__ import annotations

import re

import pytest

from railonly.emulation.traffic import job_plan as jp
from railonly.emulation.traffic import replay
from railonly.fabric.analysis import Cluster, load_job, phase_list

from ..conftest import REPO

JOBS = REPO / "labs" / "jobs"
NIC, HB = 100.0, 900.0  # the mini labs' shaped rates (Mbit/s): 400G:3600G
NAMES = {i: f"hb{i // 2}-gpu{i % 2}" for i in range(12)}


def mini(topology: str = "rail-only") -> Cluster:
    return Cluster(2, 6, 400.0, 3600.0, "mini", topology)


def planned(job: str, topology: str = "rail-only", time_scale: float = 1000.0):
    sc = jp.scale_job(load_job(JOBS / f"{job}.yml"), mini(topology), NIC, time_scale)
    pl, phases = jp.plan(sc, NAMES, topology, jp.lab_rates(NIC, HB))
    return sc, pl, phases


def cls_of(a: str, b: str) -> str:
    da, ra = a[2:].split("-gpu")
    db, rb = b[2:].split("-gpu")
    return "hb" if da == db else ("rail" if ra == rb else "cross_rail")


# --- scaling ----------------------------------------------------------------------


def test_a_job_that_fits_is_kept_and_bytes_scale_by_the_rate_ratio():
    sc, _, _ = planned("gpt-small", time_scale=1.0)
    assert sc.changes == () and sc.job.parallel == sc.original.parallel
    # 100 Mbit/s in the lab for 400 Gbit/s achieved at 80%: a phase keeps its modelled duration
    assert sc.byte_scale == pytest.approx(100e6 / (400e9 * 0.8))
    sc2, _, _ = planned("gpt-small", time_scale=1000.0)
    assert sc2.byte_scale == pytest.approx(1000 * sc.byte_scale)


@pytest.mark.parametrize("job", ["gpt3-175b-1k", "mixtral-h100", "moe-a100", "deepseek-h100", "gpt-1t-32k"])
def test_a_large_job_shrinks_to_the_lab_keeping_its_rules(job):
    original = load_job(JOBS / f"{job}.yml")
    sc = jp.scale_job(original, mini(), NIC)
    p, o = sc.job.parallel, original.parallel
    assert p.gpus <= 12 and sc.changes
    assert p.tp <= 2 and (p.tp == o.tp or o.tp > 2)  # tp shrinks only when the HB domain cannot hold it
    assert original.model.layers % p.pp == 0 and p.dp % p.ep == 0 and p.pp <= o.pp and p.dp <= o.dp
    assert p.order == o.order  # the rank order (placement rule) is kept
    if o.pp > 1 and p.pp > 1:  # the bubble keeps its share: (pp - 1) / m
        assert (p.pp - 1) / p.micro_batches == pytest.approx((o.pp - 1) / o.micro_batches, rel=0.35)
    if original.model.is_moe and o.ep > 1:
        assert p.ep > 1  # an MoE job keeps an all-to-all
    jp.plan(sc, NAMES, "rail-only", jp.lab_rates(NIC, HB))  # and it plans


def test_the_moe_job_keeps_its_ep_group_across_two_domains_and_two_rails():
    _, pl, phases = planned("moe-mini")
    ep = [ph for ph in phases if ph.parallelism == "ep"]
    assert len(ep) == 1 and ep[0].kind == "cross-rail"
    for g in pl.groups["ep"].tolist():
        assert len({x // 2 for x in g}) == 2 and len({x % 2 for x in g}) == 2
    assert not pl.problems  # only the all-to-all crosses rails (a note, not a problem)


# --- phases as flows --------------------------------------------------------------


@pytest.mark.parametrize("topology", ["rail-only", "rail-optimized"])
@pytest.mark.parametrize("job", ["gpt-small", "moe-mini", "mixtral-h100"])
def test_flows_carry_the_models_bytes_by_class(job, topology):
    sc, pl, phases = planned(job, topology)
    model = {ph.name: ph for ph in phase_list(sc.job, pl, jp.lab_rates(NIC, HB), topology)}
    assert phases[0].name == "compute" and phases[0].idle_s > 0 and not phases[0].steps
    for ph in phases[1:]:
        m = model[ph.name]
        for c in ("hb", "rail", "cross_rail"):
            want = m.bytes_per_gpu[c] * m.collective.gpus * sc.byte_scale  # averaged over the GPUs it runs on
            assert ph.planned[c] == pytest.approx(want, rel=1e-3, abs=len(ph.flows)), (ph.name, c)
        # rail-only stages every cross-rail byte once over HB (PXN); the baseline never does
        staged = ph.planned["cross_rail"] if topology == "rail-only" and ph.parallelism == "ep" else 0
        assert ph.planned["staged"] == pytest.approx(staged, abs=len(ph.flows))


@pytest.mark.parametrize("topology", ["rail-only", "rail-optimized"])
@pytest.mark.parametrize("job", ["gpt-small", "moe-mini"])
def test_every_flow_has_one_class_its_port_range_and_its_path(job, topology):
    _, _, phases = planned(job, topology)
    for ph in phases[1:]:
        ports = [f.port for f in ph.flows]
        assert len(ports) == len(set(ports))  # unique in a phase: one iperf3 server each
        for f in ph.flows:
            lo = jp.CLASS_PORTS[f.pair_class]
            assert lo <= f.port < lo + jp.PORTS_PER_CLASS
            assert 0 <= f.group < len(ph.groups) and f.src in sum(ph.groups, ()) + tuple(NAMES.values())
            path = cls_of(f.src, f.dst)
            if f.pair_class == "staged":  # HB leg of a cross-rail pair, to the domain-mate
                assert path == "hb" and f.hb
            elif f.pair_class == "cross_rail" and topology == "rail-only":
                assert path == "rail" and not f.hb and f.via is None  # the NIC leg from the forwarding GPU
            else:
                assert path == f.pair_class and f.hb == (path == "hb")


def test_a_dense_job_well_placed_sends_nothing_across_rails():
    for topology in ("rail-only", "rail-optimized"):
        _, pl, phases = planned("gpt-small", topology)
        assert not pl.problems
        assert all(ph.planned["cross_rail"] == 0 and ph.planned["staged"] == 0 for ph in phases[1:])
        assert all(cls_of(f.src, f.dst) != "cross_rail" for ph in phases for f in ph.flows)


def test_pxn_stages_first_then_nic_steps_with_hb_peers_alongside():
    _, _, phases = planned("moe-mini", "rail-only")
    ep = next(ph for ph in phases if ph.parallelism == "ep")
    assert {f.pair_class for f in ep.steps[0]} == {"staged"}
    assert {f.pair_class for f in ep.steps[1]} == {"hb", "rail", "cross_rail"}
    assert len(ep.steps) == 2  # two domains per group: one domain offset
    # every staged byte leaves a forwarding GPU's NIC again, for a peer on that GPU's rail
    staged_to = {}
    for f in ep.steps[0]:
        staged_to[f.dst] = staged_to.get(f.dst, 0) + f.bytes
    forwarded = {}
    for f in ep.steps[1]:
        if f.pair_class == "cross_rail":
            forwarded[f.src] = forwarded.get(f.src, 0) + f.bytes
    assert staged_to == forwarded


@pytest.mark.parametrize("job", ["moe-mini", "mixtral-h100", "moe-a100"])
def test_baseline_all_to_all_is_phased_direct_and_balanced(job):
    _, _, phases = planned(job, "rail-optimized")
    ep = next(ph for ph in phases if ph.parallelism == "ep")
    for st in ep.steps:  # one domain offset a step: every GPU sends and receives as many network flows
        net = [f for f in st if not f.hb]
        sends = {f.src: 0 for f in net}
        recvs = {f.dst: 0 for f in net}
        for f in net:
            sends[f.src] += 1
            recvs[f.dst] += 1
        assert len(set(sends.values())) == 1 and set(sends.values()) == set(recvs.values())
        assert all(f.via is None for f in st)  # direct: the spine carries cross-rail pairs


@pytest.mark.parametrize("topology", ["rail-only", "rail-optimized"])
def test_the_lab_plan_runs_as_long_as_the_model_says(topology):
    """Ring, pipeline and baseline all-to-all steps take the analysis model's time on the lab's
    shaped links; rail-only's staged all-to-all takes less, as only the cross-rail share of
    the inter-domain bytes crosses NVLink (the model's convention puts all of them there)."""
    for job in ("gpt-small", "moe-mini"):
        _, _, phases = planned(job, topology)
        for ph in phases[1:]:
            t = sum(jp.step_model_s(st, NIC, HB) for st in ph.steps)
            if ph.parallelism == "ep" and topology == "rail-only":
                assert t < ph.model_s and t == pytest.approx(ph.model_s, rel=0.06)
            else:
                assert t == pytest.approx(ph.model_s, rel=1e-3), ph.name


def test_auto_time_scale_makes_every_phase_long_enough_to_time():
    for job in ("gpt-small", "moe-mini"):
        sc, _, phases = planned(job, time_scale=1.0)
        ts = jp.auto_time_scale(phases, NIC, HB)
        assert ts > 100  # a small job's phases last milliseconds at real scale
        _, _, stretched = planned(job, time_scale=ts)
        assert min(ph.model_s for ph in stretched[1:]) >= jp.MIN_PHASE_S * 0.95
        assert min(jp.step_model_s(st, NIC, HB) for ph in stretched for st in ph.steps) >= jp.MIN_STEP_S * 0.95
        # every duration stretches alike: the compute share of the iteration is unchanged
        share = phases[0].model_s / jp.model_iteration(phases)
        assert stretched[0].model_s / jp.model_iteration(stretched) == pytest.approx(share, rel=1e-6)


def test_plans_are_deterministic():
    assert planned("moe-mini")[2] == planned("moe-mini")[2]


# --- verdicts (pure parts of the runner) -------------------------------------------


def _rec(phase, flows, counted):
    return {"flows": flows, "bytes_by_class": counted, "measured_s": phase.model_s}


def test_a_failed_flow_names_the_pipeline_and_its_members():
    _, _, phases = planned("gpt-small")
    pp = next(ph for ph in phases if ph.parallelism == "pp")
    f = pp.flows[0]
    flows = [{"src": f.src, "dst": f.dst, "class": f.pair_class, "group": f.group, "seconds": None,
              "error": "unable to connect to server: Network is unreachable"}]
    probs = replay._problems(pp, _rec(pp, flows, dict(pp.planned)), 0.1)
    assert probs and probs[0].startswith(f"pipeline {f.group} (") and f.src in probs[0] and "unreachable" in probs[0]


def test_bytes_on_the_wrong_class_fail_the_phase():
    _, _, phases = planned("gpt-small")
    dp = next(ph for ph in phases if ph.parallelism == "dp")
    ok = [{"src": f.src, "dst": f.dst, "class": f.pair_class, "group": f.group, "seconds": 1.0} for f in dp.flows]
    assert replay._problems(dp, _rec(dp, ok, dict(dp.planned)), 0.1) == []
    # headers and a socket tail's worth either way pass
    assert replay._problems(dp, _rec(dp, ok, {**dp.planned, "rail": int(dp.planned["rail"] * 1.04)}), 0.1) == []
    moved = {**dp.planned, "cross_rail": 5_000_000}
    assert any("cross_rail bytes counted 5,000,000, planned 0" in p for p in replay._problems(dp, _rec(dp, ok, moved), 0.1))
    short = {**dp.planned, "rail": dp.planned["rail"] // 2}
    assert replay._problems(dp, _rec(dp, ok, short), 0.1)


def test_slow_is_judged_against_the_tolerance():
    _, _, phases = planned("gpt-small")
    dp = next(ph for ph in phases if ph.parallelism == "dp")
    # against the model under the flows' placement, not the ideal
    rec = {"model_placed_s": dp.model_s * 1.2}
    assert replay._slow(dp, {**rec, "measured_s": dp.model_s * 1.3}, 0.1) is None
    assert "under the flows' placement" in replay._slow(dp, {**rec, "measured_s": dp.model_s * 1.5}, 0.1)


def test_nft_ruleset_counts_each_class_range():
    gpu = replay.ruleset(True)
    for c in jp.CLASSES:
        assert f"tcp dport {replay._range(c)} counter name tx_{c}" in gpu
        assert f"counter name routed_{c}" in gpu
    assert "rx_staged" in gpu and "rx_hb" not in gpu
    sw = replay.ruleset(False)
    assert "hook forward" in sw and "hook output" not in sw


def test_a_context_parallel_job_scales_to_the_lab_without_cp():
    job = load_job(str(JOBS / "llama3-70b-h100.yml"))
    s = jp.scale_job(job, Cluster(2, 6, 100, 900), 100)
    assert s.job.parallel.cp == 1 and "cp 2 -> 1" in s.changes
    assert s.job.parallel.gpus <= 12


@pytest.mark.parametrize("planned", [7 * 3600.0, 6.5 * 3600.0, 25 * 3600.0, 30000.0])
def test_the_time_scale_a_long_replay_is_told_to_use_is_accepted(planned):
    # the advice was the limit's scale rounded to two digits (:.2g), which rounds up as often as
    # down: 7 h at x1 advised --time-scale 0.86, planning 6.02 h, refused again
    with pytest.raises(jp.ScaleError) as exc:
        jp.check_duration(planned, 1, 1.0, 8, True)
    advised = float(re.search(r"--time-scale (\S+) or less", exc.value.fix).group(1))
    jp.check_duration(planned * advised, 1, advised, 8, True)  # linear in the scale: accepted
