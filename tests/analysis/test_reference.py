"""Published numbers the model must reproduce (docs/analyze-validation.md)."""

from __future__ import annotations

import pytest

from railonly.fabric.analysis import Rates, evaluate, place, place_auto
from railonly.fabric.analysis.analysis_report import analyze
from railonly.fabric.analysis.timing import hardware_flops, model_flops
from railonly.fabric.analysis.traffic import class_bytes, collectives
from railonly.fabric.analysis.matrix import silent_pair_share
from railonly.fabric.analysis.search import sweep

from .conftest import cluster_of, job_of
from .published import RAIL_ONLY_BATCH_SWEEP, TABLE5

def _predict(path: str) -> float:
    c = cluster_of("dgx-a100")
    job = job_of(path)
    return evaluate(job, place(job, c), Rates.of(c))["rail-only"].iteration_s


def test_table5_jobs_use_the_published_schedules():
    # 175B and 530B ran with 3 interleaved stages a GPU (Megatron's scripts, Calculon's
    # validation configs and the paper's activation-memory figure agree); 22B and 1T without
    for model, vpp in (("22b", 1), ("175b", 3), ("530b", 3), ("1t", 1)):
        for mode in ("full", "sel"):
            job = job_of(f"table5/{model}-{mode}.yml")
            assert job.parallel.vpp == vpp and job.parallel.tp == 8 and not job.parallel.flash_attention
            assert job.parallel.sp == (mode == "sel")


def test_table5_iteration_times_within_mean_3_5_worst_6_percent():
    errors = {}
    for model, (full, sel, _, _) in TABLE5.items():
        errors[f"{model}-full"] = _predict(f"table5/{model}-full.yml") / full - 1
        errors[f"{model}-sel"] = _predict(f"table5/{model}-sel.yml") / sel - 1
    absolute = [abs(e) for e in errors.values()]
    report = ", ".join(f"{k} {v:+.1%}" for k, v in errors.items())
    assert len(absolute) == 8
    assert sum(absolute) / 8 <= 0.035, report
    assert max(absolute) <= 0.06, report


@pytest.mark.parametrize("model", TABLE5)
def test_each_table5_time_within_6_percent(model):
    full, sel, _, _ = TABLE5[model]
    assert _predict(f"table5/{model}-full.yml") == pytest.approx(full, rel=0.06)
    assert _predict(f"table5/{model}-sel.yml") == pytest.approx(sel, rel=0.06)


@pytest.mark.parametrize("model", TABLE5)
def test_mfu_hfu_from_published_times_within_0_3_points(model):
    _, sel, mfu, hfu = TABLE5[model]
    job = job_of(f"table5/{model}-sel.yml")
    peak = job.gpu.tflops * 1e12 * job.parallel.gpus
    assert 100 * model_flops(job) / (sel * peak) == pytest.approx(mfu, abs=0.3)
    assert 100 * hardware_flops(job) / (sel * peak) == pytest.approx(hfu, abs=0.3)


def test_dense_gpt_on_32k_gpus_sends_nothing_across_rails():
    c = cluster_of("dgx-h100-32k")
    job = job_of("gpt-1t-32k.yml")
    assert job.parallel.gpus == 32768
    pl = place(job, c)
    colls = collectives(job, pl)
    b = class_bytes(colls)
    assert pl.ok
    assert b["cross_rail"] == 0 and b["hb"] > 0 and b["rail"] > 0
    results = evaluate(job, pl, Rates.of(c))
    assert results["rail-only"].iteration_s == results["rail-optimized"].iteration_s
    assert results["ideal"].iteration_s < results["rail-only"].iteration_s
    assert silent_pair_share(colls, pl) > 0.99
    # TP keeps most bytes on NVLink (the paper: over 75% for large GPT models)
    assert b["hb"] / sum(b.values()) > 0.75


def _ideal_share(points) -> dict[int, float]:
    """Rail-only's iteration time as a share of the ideal network's (ideal / rail-only), per swept batch."""
    for pt in points:
        assert pt["networks"]["rail-only"]["iteration_s"] == pt["networks"]["rail-optimized"]["iteration_s"]
    return {int(pt["value"]): pt["networks"]["ideal"]["iteration_s"] / pt["networks"]["rail-only"]["iteration_s"]
            for pt in points}


def test_rail_only_paper_batch_sweep_on_32k_gh200_held_out():
    # held out: nothing was fitted on this figure. The paper's setup as far as the digest pins it:
    # GPT-1T, 32,768 GPUs, the strategy searched at every batch, ideal = every GPU in one HB
    # domain; K = 256 (GH200, the paper's 32,768-GPU cluster). docs/analyze-validation.md.
    job = job_of("gpt-1t-gh200-32k.yml")
    points = sweep(job, cluster_of("gh200-32k"), "batch", sorted(RAIL_ONLY_BATCH_SWEEP), do_search=True)
    share = _ideal_share(points)
    assert share[256] < share[4096]
    # what railonly predicts (the table in docs/analyze-validation.md)
    assert share[256] == pytest.approx(0.904, abs=0.005) and share[4096] == pytest.approx(0.979, abs=0.005)
    # below the paper's figure, by at most 5 points
    for batch, paper in RAIL_ONLY_BATCH_SWEEP.items():
        assert paper - 0.05 <= share[batch] <= paper, (batch, share[batch], paper)


def test_rail_only_paper_batch_sweep_is_not_the_k_8_setup():
    # the audit's reading: DGX H100 (K = 8) with the job's fixed tp 8 x pp 64 x dp 64, which
    # leaves 4 micro-batches for 64 stages at batch 256: 88.7% -> 93.1% of the ideal
    c = cluster_of("dgx-h100-32k")
    job = job_of("gpt-1t-32k.yml")
    fixed = _ideal_share(sweep(job, c, "batch", [256, 4096]))
    assert fixed[256] == pytest.approx(0.887, abs=0.005) and fixed[4096] == pytest.approx(0.931, abs=0.005)
    # searched, as the paper does: the ideal (K = N) spreads TP over more GPUs than K = 8 allows,
    # so no K = 8 cluster comes near 95% at batch 256
    (pt,) = sweep(job, c, "batch", [256], do_search=True)
    assert pt["parallel"]["rail-only"]["tp"] == 8 and pt["parallel"]["ideal"]["tp"] > 8
    assert _ideal_share([pt])[256] < 0.40


@pytest.mark.parametrize("design,job,paper", [("dgx-a100", "moe-a100.yml", 0.082), ("dgx-h100-1k", "moe-h100.yml", 0.112)])
def test_moe_all_to_all_overhead_matches_the_paper(design, job, paper):
    c = cluster_of(design)
    j = job_of(job)
    a = analyze(j, c, place(j, c), Rates.of(c))
    assert a.moe_overhead == pytest.approx(paper, abs=0.003)
    # the store-and-forward form is lower, (K-1)/K of it, and is not the paper's
    assert a.moe_overhead_hierarchical == pytest.approx(7 / 8 * c.nic_gbps / c.hb_gbps, abs=1e-9)
    assert a.moe_overhead_hierarchical < paper - 0.003


def test_dense_job_has_no_moe_overhead():
    c = cluster_of("dgx-a100")
    j = job_of("table5/175b-sel.yml")
    assert analyze(j, c, place(j, c), Rates.of(c)).moe_overhead is None


def test_nvl72_pp_neighbours_on_different_rails_reported_with_a_fix():
    c = cluster_of("nvl72")
    job = job_of("nvl72-pp18.yml")
    assert (job.parallel.tp, job.parallel.pp, job.parallel.dp) == (8, 18, 4)
    pl = place(job, c)
    assert not pl.ok
    pp = [p for p in pl.problems if p.group == "pp"]
    assert pp and "different rails" in pp[0].message and "K = 72" in pp[0].message
    assert "order" in pp[0].fix
    before = class_bytes(collectives(job, pl))["cross_rail"]
    auto = place_auto(job, c)
    after = class_bytes(collectives(job, auto))["cross_rail"]
    # no order keeps every byte on rails here, but auto cuts them
    assert 0 < after < before
    assert all(k == "hb" for k in auto.kind_counts("tp"))


def test_nvl72_tp_pp_dp_order_fixed_by_place_auto():
    c = cluster_of("nvl72")
    job = job_of("nvl72-tp-pp-dp.yml")
    assert job.parallel.order_text.replace("-ep", "") == "tp-pp-dp"
    pl = place(job, c)
    assert not pl.ok
    assert class_bytes(collectives(job, pl))["cross_rail"] > 0
    assert any("use order: tp-cp-ep-dp-pp" in p.fix for p in pl.problems)
    auto = place_auto(job, c)
    assert auto.ok
    assert class_bytes(collectives(job, auto))["cross_rail"] == 0
    r = evaluate(job, auto, Rates.of(c))
    assert r["rail-only"].iteration_s == r["rail-optimized"].iteration_s
