"""Placement verdicts: each problem appears where it must, and not where it must not."""

from __future__ import annotations

from railonly.fabric.analysis import Cluster, parse_job, place
from railonly.fabric.analysis.placement import layout


def _job(parallel: str, model: str = "layers: 8, hidden: 512, heads: 8, seq: 512, vocab: 1000"):
    return parse_job(f"name: p\nmodel: {{{model}}}\nparallel: {{{parallel}}}\ngpu: {{preset: h100}}\n")


def test_aligned_dense_job_has_no_problem():
    pl = place(_job("tp: 4, pp: 2, dp: 4, global_batch: 8"), Cluster(4, 8, 400, 3600))
    assert pl.ok and pl.problems == [] and pl.notes == []
    assert pl.kind_counts("tp") == {"hb": 8} and pl.kind_counts("dp") == {"rail": 8} and pl.kind_counts("pp") == {"rail": 16}


def test_tp_group_spanning_hb_domains():
    pl = place(_job("tp: 8, pp: 1, dp: 2, global_batch: 2"), Cluster(4, 4, 400, 3600))
    (prob,) = [p for p in pl.problems if p.group == "tp"]
    assert "2 of 2 TP groups span HB domains" in prob.message
    assert "divides K = 4" in prob.fix and "tp 4" in prob.fix


def test_tp_not_first_in_the_order():
    pl = place(_job("tp: 2, pp: 1, dp: 4, global_batch: 4, order: dp-tp-pp"), Cluster(8, 1, 400, 3600))
    assert pl.ok  # all 8 GPUs in one HB domain: nothing leaves NVLink
    pl = place(_job("tp: 2, pp: 1, dp: 4, global_batch: 4, order: dp-tp-pp"), Cluster(4, 2, 400, 3600))
    (prob,) = [p for p in pl.problems if p.group == "tp"]
    assert "put tp first" in prob.fix and "order: tp-" in prob.fix


def test_dp_groups_across_rails_and_ep_as_a_note():
    # K = 3 with tp 2: DP members two ranks apart land on other rails
    pl = place(_job("tp: 2, pp: 1, dp: 3, global_batch: 3"), Cluster(3, 2, 400, 3600))
    assert any(p.group == "dp" and "different rails" in p.message for p in pl.problems)
    moe = _job("tp: 1, pp: 1, dp: 8, ep: 8, global_batch: 8",
               model="layers: 2, hidden: 256, heads: 4, seq: 256, vocab: 1000, moe: {experts: 8}")
    pl = place(moe, Cluster(4, 2, 400, 3600))
    assert pl.ok
    assert any("EP groups span rails" in n for n in pl.notes)


def test_job_smaller_than_the_fabric_is_a_note():
    pl = place(_job("tp: 4, pp: 1, dp: 2, global_batch: 2"), Cluster(4, 8, 400, 3600))
    assert pl.ok and any("uses 8 of the fabric's 32 GPUs" in n for n in pl.notes)


def test_layout_alone_finds_no_problems():
    pl = layout(_job("tp: 8, pp: 1, dp: 2, global_batch: 2"), Cluster(4, 4, 400, 3600))
    assert pl.problems == [] and pl.kind_counts("tp") == {"hb+rail": 2}
