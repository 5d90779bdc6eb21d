"""The model's formulas against values computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from railonly.fabric.analysis import Cluster, Rates, parse_job, place
from railonly.fabric.analysis.memory import activation_bytes_per_layer, estimate
from railonly.fabric.analysis.network import Step, step_time
from railonly.fabric.analysis.placement import classify, rank_groups
from railonly.fabric.analysis.compute import token_efficiency
from railonly.fabric.analysis.timing import gemm_efficiency, hardware_flops, iteration, model_flops
from railonly.fabric.analysis.traffic import a2a_types, class_bytes, collectives, ring_types


def job(parallel: str = "tp: 8, pp: 8, dp: 1, global_batch: 64", model: str = "preset: gpt-3-175b", gpu: str = "preset: a100"):
    return parse_job(f"name: t\nmodel: {{{model}}}\nparallel: {{{parallel}}}\ngpu: {{{gpu}}}\n")


def test_model_flops_is_korthikanti_eq7():
    j = job()
    B, L, s, h, V = 64, 96, 2048, 12288, 51200
    assert model_flops(j) == pytest.approx(72 * B * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L)), rel=1e-12)
    # by hand: 72 * 64 * 96 * 2048 * 12288^2 = 1.3679e17 before the bracket
    assert model_flops(j) == pytest.approx(1.3679e17 * (1 + 2048 / 73728 + 51200 / 14155776), rel=1e-4)


def test_hardware_flops_selective_and_full_recompute():
    B, L, s, h, V = 64, 96, 2048, 12288, 51200
    sel = job("tp: 8, pp: 8, dp: 1, global_batch: 64, recompute: selective")
    assert hardware_flops(sel) == pytest.approx(72 * B * L * s * h * h * (1 + s / (3 * h) + V / (12 * h * L)), rel=1e-12)
    full = job("tp: 8, pp: 8, dp: 1, global_batch: 64, recompute: full")
    layers = 72 * B * L * s * h * h * (1 + s / (6 * h))
    assert hardware_flops(full) == pytest.approx(4 / 3 * layers + 6 * B * s * h * V, rel=1e-12)
    none = job("tp: 8, pp: 8, dp: 1, global_batch: 64, recompute: none")
    assert hardware_flops(none) == model_flops(none)


def test_gemm_efficiency_curve():
    j = job()  # h / tp = 1536, a100 (fitted on Table 5): 0.80 x 1536 / (1536 + 110)
    assert gemm_efficiency(j) == pytest.approx(0.80 * 1536 / 1646)
    assert gemm_efficiency(j, 128) == pytest.approx(0.80 * 128 / 238)  # one head's products
    # rows: a micro-batch of 2,048 tokens runs at 2048 / (2048 + 64) of the rate
    assert token_efficiency(j) == pytest.approx(2048 / 2112)


def test_ring_all_reduce_moves_2_n_minus_1_over_n():
    groups = np.arange(8).reshape(1, 8)
    (t,) = ring_types(groups, 8, 1000.0, "all-reduce")
    assert t.kind == "hb"
    assert t.bytes().tolist() == pytest.approx([2 * 7 / 8 * 1000, 0, 0])
    (t,) = ring_types(groups, 8, 1000.0, "all-gather")
    assert t.bytes().tolist() == pytest.approx([7 / 8 * 1000, 0, 0])
    (t,) = ring_types(np.array([[0, 8, 16, 24]]), 8, 1000.0, "all-reduce")  # one rail, 4 domains
    assert t.kind == "rail" and t.bytes().tolist() == pytest.approx([0, 1500, 0])


def test_hierarchical_all_reduce_on_a_grid():
    # 2 domains x 4 rails: HB reduce-scatter 3/4 S, rail all-reduce 2 (1/2) S/4, HB all-gather 3/4 S
    (t,) = ring_types(np.array([[0, 1, 2, 3, 8, 9, 10, 11]]), 8, 1000.0, "all-reduce")
    assert t.kind == "hb+rail"
    assert [s.hop for s in t.steps] == pytest.approx([750, 250, 750])
    assert t.bytes().tolist() == pytest.approx([1500, 250, 0])


def test_all_to_all_split_by_pair_class():
    # 4 domains x 8 rails, S = 3200: each GPU sends S/n to 31 peers: 7 hb, 3 rail, 21 cross-rail
    g = np.array([[d * 8 + r for d in range(4) for r in range(8)]])
    (t,) = a2a_types(g, 8, 3200.0)
    assert t.kind == "cross-rail"
    assert t.bytes().tolist() == pytest.approx([700, 300, 2100])


def test_step_times_by_network():
    r = Rates(nic=10.0, hb=100.0)
    ring_hb = Step("ring", 100.0, (1, 0, 0))
    ring_rail = Step("ring", 100.0, (0, 1, 0))
    assert step_time(ring_hb, "rail-only", r) == pytest.approx(1.0)
    assert step_time(ring_rail, "rail-only", r) == pytest.approx(10.0)
    assert step_time(ring_rail, "ideal", r) == pytest.approx(1.0)
    mixed = Step("ring", 100.0, (0.5, 0, 0.5))  # the slowest hop paces a ring
    assert step_time(mixed, "rail-optimized", r) == pytest.approx(10.0)
    assert step_time(mixed, "rail-only", r) == pytest.approx(100 / 10 + 100 / 100)
    assert step_time(mixed, "rail-optimized", Rates(10.0, 100.0, oversub=2)) == pytest.approx(20.0)
    a2a = Step("all-to-all", 100.0, (0.2, 0.3, 0.5))
    assert step_time(a2a, "rail-optimized", r) == pytest.approx(max(20 / 100, 80 / 10))
    assert step_time(a2a, "rail-only", r) == pytest.approx(8.0 + 80 / 100)  # NVLink stage after the NIC's
    assert step_time(a2a, "rail-only", r) / step_time(a2a, "rail-optimized", r) - 1 == pytest.approx(10 / 100)


def test_rank_order_decides_the_groups():
    sizes = {"tp": 2, "cp": 1, "ep": 1, "dp": 3, "pp": 2}
    order = ("tp", "cp", "ep", "dp", "pp")
    assert rank_groups(sizes, order, ("tp",)).tolist() == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11]]
    assert rank_groups(sizes, order, ("ep", "dp")).tolist() == [[0, 2, 4], [1, 3, 5], [6, 8, 10], [7, 9, 11]]
    assert rank_groups(sizes, order, ("pp",)).tolist()[0] == [0, 6]
    other = ("pp", "tp", "cp", "ep", "dp")
    assert rank_groups(sizes, other, ("tp",)).tolist()[0] == [0, 2]


def test_classify_groups():
    K = 4
    pairs = np.array([[0, 1], [0, 4], [0, 5]])  # same domain, same rail, neither
    assert classify(pairs, K).tolist() == [1, 2, 4]
    quads = np.array([[0, 1, 4, 5], [0, 1, 4, 6]])  # a 2 x 2 grid; not a grid
    assert classify(quads, K).tolist() == [3, 4]


def test_pipeline_bubble_and_breakdown_add_up():
    c = Cluster(8, 8, 200, 2400)
    j = job("tp: 8, pp: 8, dp: 1, global_batch: 64")
    pl = place(j, c)
    r = iteration(j, collectives(j, pl), "rail-only", Rates.of(c))
    bd = r.breakdown_s
    t_mb = (bd["compute"] + bd["tp"] + bd["pp"] + bd["ep"]) / 64
    assert bd["bubble"] == pytest.approx(7 * t_mb)
    assert sum(bd.values()) == pytest.approx(r.iteration_s)
    assert r.tokens_per_s == pytest.approx(64 * 2048 / r.iteration_s)
    j2 = job("tp: 8, pp: 8, dp: 1, global_batch: 64, vpp: 2")
    r2 = iteration(j2, collectives(j2, place(j2, c)), "rail-only", Rates.of(c))
    t2 = (r2.breakdown_s["compute"] + r2.breakdown_s["tp"] + r2.breakdown_s["pp"]) / 64
    assert r2.breakdown_s["bubble"] == pytest.approx(7 / 2 * t2)


def test_bytes_per_iteration_by_hand():
    # tp 8 pp 2 dp 2 on K = 8: TP in HB, PP and DP on rails
    c = Cluster(8, 4, 400, 3600)
    j = job("tp: 8, pp: 2, dp: 2, global_batch: 8, sp: false", model="layers: 4, hidden: 1024, heads: 8, seq: 512, vocab: 1000")
    b = class_bytes(collectives(j, place(j, c)))
    S = 2 * 1 * 512 * 1024
    m = 8 // 2  # micro-batches
    tp = 32 * m * 2 * 4 * 2 * 7 / 8 * S  # GPUs x micro-batches x layers a stage x 4 all-reduces x ring bytes
    assert b["hb"] == pytest.approx(tp)
    pp = 16 * m * 2 * S / 8  # 16 pipeline hops forward, activation and gradient each micro-batch
    params = j.model.dense_params
    dp = 32 * 2 * 1 / 2 * 4 * params / 16  # every GPU: ring all-reduce over 2 of its P/(tp pp) fp32 gradients
    assert b["rail"] == pytest.approx(pp + dp)
    assert b["cross_rail"] == 0
    # bf16 reduction halves the DP bytes; the distributed optimizer reduce-scatters fp32 gradients
    # and all-gathers bf16 parameters: (n-1)/n x (4 + 2) bytes a parameter
    j16 = job("tp: 8, pp: 2, dp: 2, global_batch: 8, sp: false, grad_reduce: bf16", model="layers: 4, hidden: 1024, heads: 8, seq: 512, vocab: 1000")
    assert class_bytes(collectives(j16, place(j16, c)))["rail"] == pytest.approx(pp + dp / 2)
    jd = job("tp: 8, pp: 2, dp: 2, global_batch: 8, sp: false, distributed_optimizer: true", model="layers: 4, hidden: 1024, heads: 8, seq: 512, vocab: 1000")
    assert class_bytes(collectives(jd, place(jd, c)))["rail"] == pytest.approx(pp + 32 * 1 / 2 * 6 * params / 16)


def test_activation_memory_korthikanti_table2():
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    assert activation_bytes_per_layer(job("tp: 8, pp: 8, dp: 1, global_batch: 64, recompute: selective")) == 34 * s * b * h / t
    assert activation_bytes_per_layer(job("tp: 8, pp: 8, dp: 1, global_batch: 64, recompute: none, flash_attention: false")) == pytest.approx(
        s * b * h * (34 + 5 * a * s / h) / t)
    # flash attention keeps no s x s scores
    assert activation_bytes_per_layer(job("tp: 8, pp: 8, dp: 1, global_batch: 64, recompute: none, flash_attention: true")) == pytest.approx(
        34 * s * b * h / t)
    assert activation_bytes_per_layer(job("tp: 8, pp: 8, dp: 1, global_batch: 64, recompute: full")) == 2 * s * b * h / t
    assert activation_bytes_per_layer(job("tp: 8, pp: 8, dp: 1, global_batch: 64, sp: false")) == pytest.approx(s * b * h * (10 + 24 / t))


def test_memory_estimate_rejects_what_cannot_fit():
    big = job("tp: 1, pp: 1, dp: 1, global_batch: 1", model="preset: gpt-1t")
    assert not estimate(big)["fits"]
    small = job("tp: 8, pp: 64, dp: 1, global_batch: 64", model="preset: gpt-1t")
    est = estimate(small)
    assert est["fits"] and est["total_gb"] < 80
