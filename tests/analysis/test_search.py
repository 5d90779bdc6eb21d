"""--search: the fast search agrees with brute force and respects GPU memory."""

from __future__ import annotations

import pytest

from railonly.fabric.analysis import Rates, parse_job
from railonly.fabric.analysis.memory import estimate
from railonly.fabric.analysis.search import brute_force, candidates, search, sweep

from .conftest import cluster_of


def _job(model="preset: gpt-3-175b", parallel="tp: 8, pp: 8, dp: 8, global_batch: 512", gpu="preset: a100"):
    return parse_job(f"name: s\nmodel: {{{model}}}\nparallel: {{{parallel}}}\ngpu: {{{gpu}}}\n")


def test_search_equals_brute_force():
    c = cluster_of("dgx-a100")
    job = _job()
    fast, counts = search(job, c, Rates.of(c))
    slow = brute_force(job, c, Rates.of(c))
    assert counts["fit_memory"] > 0 and counts["placements"] < counts["fit_memory"]
    assert set(fast) == set(slow) == {"rail-only", "rail-optimized", "ideal"}
    for net in fast:
        assert fast[net].job.parallel == slow[net].job.parallel
        assert fast[net].result.iteration_s == pytest.approx(slow[net].result.iteration_s, rel=1e-12)


def test_search_keeps_gpus_and_batch_and_fits_memory():
    c = cluster_of("dgx-a100")
    job = _job()
    found, _ = search(job, c, Rates.of(c))
    for best in found.values():
        p = best.job.parallel
        assert p.gpus == 512 and p.global_batch == 512 and p.tp <= 8
        assert estimate(best.job)["fits"]
    # every candidate is a valid job, and some were refused for memory
    assert any(not estimate(j)["fits"] for j in candidates(job, c))


def test_search_finds_nothing_when_nothing_fits():
    c = cluster_of("dgx-a100")
    job = _job(model="preset: gpt-1t", parallel="tp: 8, pp: 1, dp: 1, global_batch: 8", gpu="tflops: 312, memory_gb: 1")
    found, counts = search(job, c, Rates.of(c))
    assert found == {} and counts["fit_memory"] == 0


def test_moe_search_tries_expert_parallel_sizes():
    c = cluster_of("dgx-a100")
    job = _job(model="preset: mixtral-style", parallel="tp: 1, pp: 1, dp: 64, ep: 8, global_batch: 256")
    eps = {j.parallel.ep for j in candidates(job, c)}
    assert {1, 2, 4, 8} <= eps
    found, _ = search(job, c, Rates.of(c))
    assert found["rail-only"].result.iteration_s >= found["ideal"].result.iteration_s


def test_sweep_over_k_falls_then_levels():
    c = cluster_of("dgx-h100-1k")
    job = _job(parallel="tp: 8, pp: 8, dp: 16, global_batch: 1024", gpu="preset: h100")
    points = sweep(job, c, "k", [1, 2, 4, 8, 16, 32])
    times = [p["networks"]["rail-only"]["iteration_s"] for p in points]
    assert times == sorted(times, reverse=True)
    assert all(p["networks"]["ideal"]["iteration_s"] <= p["networks"]["rail-only"]["iteration_s"] for p in points)


def test_sweep_batch_skips_what_does_not_split():
    c = cluster_of("dgx-a100")
    points = sweep(_job(), c, "batch", [512, 500])
    assert "networks" in points[0] and "not a multiple" in points[1]["note"]
