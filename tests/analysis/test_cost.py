"""Cost per unit of throughput from the project's BOM, energy per token, equal budget."""

from __future__ import annotations

import pytest

from railonly.fabric.analysis import Cluster, Rates, place
from railonly.fabric.analysis.cost import cost_view, network_boms
from railonly.fabric.analysis.analysis_report import analyze
from railonly.fabric.cost.compare import compare
from railonly.fabric.cost.prices import default_prices
from railonly.fabric.design.design import load_design, parse_design

from ..conftest import REPO
from .conftest import job_of


def test_cost_from_the_bom_by_hand():
    design = load_design(str(REPO / "labs" / "dgx-a100.yml"))
    job = job_of("moe-a100.yml")
    c = Cluster.from_design(design)
    boms = network_boms(design)
    a = analyze(job, c, place(job, c), Rates.of(c), boms)
    ref = compare(design, default_prices(), fast=True)
    for net in ("rail-only", "rail-optimized"):
        got = a.cost[net]
        r = a.results[net]
        assert got["network_usd"] == pytest.approx(ref[net].cost_usd)  # the job uses all 512 GPUs
        assert got["usd_per_token_per_s"] == pytest.approx(ref[net].cost_usd / r.tokens_per_s)
        tokens = job.parallel.global_batch * job.model.seq
        assert got["joules_per_token"] == pytest.approx((512 * 400 + ref[net].power_w) * r.iteration_s / tokens)
    eb = a.cost["equal_budget"]
    spine = ref["rail-optimized"].cost_usd - ref["rail-only"].cost_usd
    assert spine > 0 and eb["extra_gpus"] == int(spine // 15000)
    assert eb["rail_only_tokens_per_s"] == pytest.approx(a.results["rail-only"].tokens_per_s * (512 + eb["extra_gpus"]) / 512)


def test_a_job_on_part_of_the_fabric_pays_its_share():
    design = load_design(str(REPO / "labs" / "nvl72.yml"))
    job = job_of("nvl72-pp18.yml").replace(dp=2, global_batch=128)
    c = Cluster.from_design(design)
    boms = network_boms(design)
    a = analyze(job, c, place(job, c), Rates.of(c), boms)
    assert a.cost["rail-only"]["network_usd"] == pytest.approx(boms["rail-only"].cost_usd * 288 / 576)


def test_no_cost_when_a_network_cannot_be_built():
    # 65,536 GPUs at radix 32: the baseline needs more than three tiers
    design = parse_design("name: big\nhb_domain: {size: 256, count: 256}\nswitch: {radix: 32}\n")
    assert network_boms(design) is None
    assert cost_view(job_of("gpt-small.yml"), {}, None)["rail-only"]["network_usd"] is None


def test_a_price_book_without_a_part_the_design_needs_is_exit_2(tmp_path, capsys):
    # analyze printed "network cost: not available (one of the two networks cannot be built at
    # this radix)" and exit 0, where bom with the same book names the missing optic (exit 2)
    from railonly.cli import main
    from railonly.fabric.cost.prices import default_text

    book = tmp_path / "p.yaml"
    book.write_text("".join(ln for ln in default_text().splitlines(keepends=True) if "400G-SR8" not in ln))
    js = tmp_path / "a.json"
    rc = main(["analyze", str(REPO / "labs/mini-routed.yml"), str(REPO / "labs/jobs/gpt-small.yml"), "--prices", str(book),
               "--json", str(js)])
    out = capsys.readouterr()
    assert rc == 2 and out.out == "" and not js.exists()
    assert f"error: {book}: transceivers.400G-SR8: the design needs 400G-SR8 optics" in out.err and "fix: add" in out.err


def test_a_job_on_part_of_the_fabric_says_its_cost_is_a_share(capsys):
    # 12 GPUs on dgx-h100-1k printed "network cost: rail-only $48,960" beside bom --compare's
    # $4,177,920 for the same design, with no word that it is the job's 12/1,024 share
    import json

    from railonly.cli import main

    design, job = REPO / "labs/dgx-h100-1k.yml", REPO / "labs/jobs/gpt-small.yml"
    assert main(["analyze", str(design), str(job)]) == 0
    text = capsys.readouterr().out
    assert "network cost: the job's share (12 of 1,024 GPUs): rail-only $48,960" in text
    assert main(["bom", str(design), "--compare", "--json"]) == 0
    bom = json.loads(capsys.readouterr().out)
    assert bom["rail-only"]["cost_usd"] * 12 / 1024 == pytest.approx(48960)
    assert main(["analyze", str(REPO / "labs/mini-routed.yml"), str(job)]) == 0  # the whole fabric: no share said
    assert "network cost: rail-only $52,960" in capsys.readouterr().out
