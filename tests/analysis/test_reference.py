"""Published numbers the model must reproduce (docs/analyze.md, docs/bom-sweep.md)."""

from __future__ import annotations

import pytest

from railonly.fabric.analysis import Rates, evaluate, place, place_auto
from railonly.fabric.analysis.report import analyze
from railonly.fabric.analysis.timing import hardware_flops, model_flops
from railonly.fabric.analysis.traffic import class_bytes, collectives
from railonly.fabric.analysis.matrix import silent_pair_share

from .conftest import cluster_of, job_of

# Korthikanti et al. 2022, Table 5 (Selene, DGX A100): seconds per iteration, and
# MFU / HFU in percent for sp + selective.
TABLE5 = {
    "22b": (1.42, 1.10, 41.5, 43.7),
    "175b": (18.13, 13.75, 51.4, 52.8),
    "530b": (49.05, 37.83, 56.0, 57.0),
    "1t": (94.42, 71.49, 56.3, 57.0),
}


def _predict(path: str) -> float:
    c = cluster_of("dgx-a100")
    job = job_of(path)
    return evaluate(job, place(job, c), Rates.of(c))["rail-only"].iteration_s


def test_table5_iteration_times_within_mean_5_worst_10_percent():
    errors = {}
    for model, (full, sel, _, _) in TABLE5.items():
        errors[f"{model}-full"] = _predict(f"table5/{model}-full.yml") / full - 1
        errors[f"{model}-sel"] = _predict(f"table5/{model}-sel.yml") / sel - 1
    absolute = [abs(e) for e in errors.values()]
    report = ", ".join(f"{k} {v:+.1%}" for k, v in errors.items())
    assert len(absolute) == 8
    assert sum(absolute) / 8 <= 0.05, report
    assert max(absolute) <= 0.10, report


@pytest.mark.parametrize("model", TABLE5)
def test_each_table5_time_within_10_percent(model):
    full, sel, _, _ = TABLE5[model]
    assert _predict(f"table5/{model}-full.yml") == pytest.approx(full, rel=0.10)
    assert _predict(f"table5/{model}-sel.yml") == pytest.approx(sel, rel=0.10)


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
