"""`railonly sweep`: CSV and PNG, deterministic, with zero saving where tiers are equal."""

from __future__ import annotations

import csv

from railonly.fabric.cost.prices import default_prices
from railonly.fabric.cost.sweep import point

from .conftest import run_cli


def test_sweep_writes_csv_and_png(tmp_path, capsys):
    out = tmp_path / "s"
    code, text, err = run_cli(["sweep", "--hb-sizes", "8,256", "--gpus", "4096,32768", "--radix", "64,128", "-o", str(out)], capsys)
    assert code == 0, err
    rows = list(csv.DictReader(open(out / "sweep.csv")))
    assert len(rows) == 8
    png = (out / "sweep.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    code, _, _ = run_cli(["sweep", "--hb-sizes", "8,256", "--gpus", "4096,32768", "--radix", "64,128", "-o", str(tmp_path / "t")], capsys)
    assert (tmp_path / "t" / "sweep.png").read_bytes() == png
    assert (tmp_path / "t" / "sweep.csv").read_bytes() == (out / "sweep.csv").read_bytes()


def test_no_saving_when_a_rail_needs_as_many_tiers():
    r = point(8, 32768, 64, default_prices())  # the paper's example (docs/bom-sweep.md)
    assert r["baseline_tiers"] == r["rail_tiers"] == 3 and r["cost_saving"] == 0


def test_paper_row_in_sweep():
    r = point(256, 32768, 128, default_prices())
    assert (r["baseline_switches"], r["rail_switches"]) == (1280, 256)
    assert round(r["cost_saving"] * 100) == 77


def test_infeasible_baseline_is_a_gap():
    r = point(72, 65536, 64, default_prices())
    assert "cost_saving" not in r and "three tiers" in r["note"]


def test_bad_list_is_exit_2(tmp_path, capsys):
    code, _, err = run_cli(["sweep", "--radix", "64,abc", "-o", str(tmp_path / "x")], capsys)
    assert code == 2 and "--radix" in err and not (tmp_path / "x").exists()
    code, _, err = run_cli(["sweep", "--radix", "63", "-o", str(tmp_path / "x")], capsys)
    assert code == 2 and "even" in err


def test_summary_counts_only_real_savings(tmp_path, capsys):
    # without shared rails, 32 one-switch rails of 4 GPUs cost more than the packed baseline:
    # the summary said "1 where rail-only saves" and "largest saving: -1482% of cost"
    code, text, err = run_cli(["sweep", "--no-share-rails", "--hb-sizes", "256", "--gpus", "1024,32768", "--radix", "128,256",
                               "-o", str(tmp_path / "s")], capsys)
    assert code == 0, err
    rows = list(csv.DictReader(open(tmp_path / "s" / "sweep.csv")))
    saving = [float(r["cost_saving"]) for r in rows]
    assert sum(s > 0 for s in saving) == 2 and sum(s < 0 for s in saving) == 2  # the two sides this test is about
    assert "4 clusters, 2 where rail-only saves, 2 where it costs more;" in text
    assert "largest saving: 77% of cost" in text and "largest saving: -" not in text
    code, text, err = run_cli(["sweep", "--no-share-rails", "--hb-sizes", "256", "--gpus", "1024", "--radix", "256",
                               "-o", str(tmp_path / "t")], capsys)
    assert code == 0 and "1 cluster, 0 where rail-only saves, 1 where it costs more;" in text and "largest saving" not in text


def test_one_cluster_is_singular(tmp_path, capsys):
    # it printed "1 clusters, 1 where rail-only saves" and "packed ... in 1 clusters"
    code, text, err = run_cli(["sweep", "--hb-sizes", "256", "--gpus", "1024", "--radix", "64", "-o", str(tmp_path / "s")], capsys)
    assert code == 0, err
    assert text.startswith("1 cluster, 1 where rail-only saves;") and "shared tier-1 switches in 1 cluster (" in text, text
    assert "clusters" not in text
