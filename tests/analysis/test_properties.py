"""Properties over random jobs and fabrics (hypothesis)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from railonly.fabric.analysis import NETWORKS, Cluster, Rates, parse_job, place
from railonly.fabric.analysis.matrix import domain_matrix, iter_pairs, silent_pair_share
from railonly.fabric.analysis.timing import iteration
from railonly.fabric.analysis.traffic import class_bytes, collectives

ORDERS = ["tp-ep-dp-pp", "tp-dp-ep-pp", "tp-pp-ep-dp", "pp-tp-ep-dp", "ep-dp-tp-pp", "dp-ep-pp-tp", "tp-ep-pp-dp"]


@st.composite
def cases(draw):
    K = draw(st.sampled_from([1, 2, 3, 4, 6, 8]))
    tp = draw(st.sampled_from([1, 2, 4]))
    pp = draw(st.sampled_from([1, 2, 3]))
    ep = draw(st.sampled_from([1, 2, 4]))
    dp = ep * draw(st.sampled_from([1, 2, 3]))
    moe = ep > 1 or draw(st.booleans())
    gpus = tp * pp * dp
    count = -(-gpus // K) + draw(st.integers(0, 2))
    vpp = 2 if pp > 1 and draw(st.booleans()) else 1
    mb = draw(st.sampled_from([1, 2]))
    micro = pp * draw(st.integers(1, 3))
    moe_text = f", moe: {{experts: {4 * ep}, top_k: {draw(st.sampled_from([1, 2]))}, every: {draw(st.sampled_from([1, 2]))}}}" if moe else ""
    text = (f"name: p\nmodel: {{layers: {pp * vpp * 2}, hidden: {64 * tp * 2}, heads: {tp * 2}, seq: {128 * tp}, vocab: 1000{moe_text}}}\n"
            f"parallel: {{tp: {tp}, pp: {pp}, dp: {dp}, ep: {ep}, vpp: {vpp}, micro_batch: {mb}, global_batch: {micro * mb * dp}, "
            f"order: {draw(st.sampled_from(ORDERS))}, recompute: {draw(st.sampled_from(['none', 'selective', 'full']))}, "
            f"sp: {str(draw(st.booleans())).lower()}, dp_overlap: {draw(st.sampled_from([0.0, 0.5]))}}}\n"
            "gpu: {preset: h100}\n")
    cluster = Cluster(K, count, draw(st.sampled_from([100, 200, 400, 8000])), draw(st.sampled_from([800, 2400, 3600])))
    return parse_job(text), cluster


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(cases())
def test_bytes_are_conserved_across_classes(case):
    """The collectives' per-class bytes equal the explicit GPU-pair enumeration, class by class."""
    job, cluster = case
    pl = place(job, cluster)
    colls = collectives(job, pl)
    by_class = class_bytes(colls)
    rows = domain_matrix(colls, pl)
    for i, cls in enumerate(("hb", "rail", "cross_rail")):
        assert sum(r[2 + i] for r in rows) == pytest.approx(by_class[cls], rel=1e-9, abs=1e-6)
    # and nothing appears from nowhere: HB-class bytes stay on the diagonal of the domain matrix
    assert all((r[0] == r[1]) == (r[3] == 0 and r[4] == 0) for r in rows if r[2] + r[3] + r[4] > 0)


@SETTINGS
@given(cases())
def test_silent_pairs_by_formula_equal_enumeration(case):
    job, cluster = case
    pl = place(job, cluster)
    colls = collectives(job, pl)
    n = pl.gpus
    talking = set()
    for a, b, w in iter_pairs(colls, pl):
        talking |= {(min(x, y), max(x, y)) for x, y, v in zip(a.tolist(), b.tolist(), w.tolist()) if v > 0 and x != y}
    expected = 1 - len(talking) / (n * (n - 1) / 2) if n > 1 else 1.0
    assert silent_pair_share(colls, pl) == pytest.approx(expected, abs=1e-12)


@SETTINGS
@given(cases(), st.sampled_from([1.0, 1.5, 4.0]), st.sampled_from([1.0, 2.0, 8.0]), st.sampled_from([1.0, 2.0]))
def test_more_bandwidth_never_makes_an_iteration_slower(case, nic_x, hb_x, oversub):
    job, cluster = case
    pl = place(job, cluster)
    colls = collectives(job, pl)
    base = Rates.of(cluster, oversub)
    more = Rates(base.nic * nic_x, base.hb * hb_x, oversub)
    for net in NETWORKS:
        slow = iteration(job, colls, net, base).iteration_s
        fast = iteration(job, colls, net, more).iteration_s
        assert fast <= slow * (1 + 1e-12)
    # the ideal network bounds both real ones from below
    for net in ("rail-only", "rail-optimized"):
        assert iteration(job, colls, "ideal", base).iteration_s <= iteration(job, colls, net, base).iteration_s * (1 + 1e-12)


@SETTINGS
@given(cases(), st.sampled_from([1.0, 2.0, 3.0]))
def test_rail_only_equals_rail_optimized_when_no_byte_crosses_rails(case, oversub):
    job, cluster = case
    pl = place(job, cluster)
    colls = collectives(job, pl)
    rates = Rates.of(cluster, oversub)
    ro = iteration(job, colls, "rail-only", rates).iteration_s
    opt = iteration(job, colls, "rail-optimized", rates).iteration_s
    if class_bytes(colls)["cross_rail"] == 0:
        assert ro == opt
    elif oversub == 1.0:
        assert ro > opt  # forwarding over NVLink costs something


def test_a_cross_rail_placement_is_slower_on_rail_only():
    """The companion that must differ: the property above is not vacuous."""
    cluster = Cluster(4, 2, 100, 800)
    job = parse_job("name: x\nmodel: {layers: 2, hidden: 256, heads: 4, seq: 256, vocab: 1000}\n"
                    "parallel: {tp: 1, pp: 1, dp: 8, global_batch: 8, order: tp-pp-dp}\ngpu: {preset: h100}\n")
    # dp 8 over 2 domains x 4 rails is a grid: hierarchical, no cross-rail
    pl = place(job, cluster)
    assert class_bytes(collectives(job, pl))["cross_rail"] == 0
    skew = dataclasses.replace(cluster, hb_size=3, hb_count=3)  # 8 of 9 GPUs in domains of 3: not a grid
    pl = place(job, skew)
    colls = collectives(job, pl)
    assert class_bytes(colls)["cross_rail"] > 0
    rates = Rates.of(skew)
    assert iteration(job, colls, "rail-only", rates).iteration_s > iteration(job, colls, "rail-optimized", rates).iteration_s
