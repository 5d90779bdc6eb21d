"""The paper's headline table (docs/bom-sweep.md), from built fabric graphs and the default price book."""

from __future__ import annotations

import json

import pytest

from railonly.fabric.cost.compare import compare, report
from railonly.fabric.cost.prices import default_prices

from .conftest import design_text, make_design, run_cli

# gpus, radix, share_rails, baseline (tiers, switches, transceivers), rail-only (...), cost %, power %
ROWS = [
    (32768, 64, False, (3, 2560, 196608), (2, 1536, 131072), 38, 37),
    (32768, 128, False, (3, 1280, 196608), (1, 256, 65536), 77, 75),
    (32768, 256, True, (2, 384, 131072), (1, 128, 65536), 62, 60),
    (65536, 128, False, (3, 2560, 393216), (2, 1536, 262144), 38, 37),
    (65536, 256, False, (3, 1280, 393216), (1, 256, 131072), 77, 75),
]


# The 65,536-GPU rows build graphs of 2,560 switches and 400k ports: 3-4 s each, kept out of the fast lane.
@pytest.mark.parametrize("gpus,radix,share,base,ro,cost,power",
                         [pytest.param(*r, marks=pytest.mark.slow) if r[0] > 32768 else r for r in ROWS],
                         ids=[f"{r[0]}-r{r[1]}" for r in ROWS])
def test_paper_row_from_graphs(gpus, radix, share, base, ro, cost, power):
    doc = report(compare(make_design(256, gpus // 256, radix, share), default_prices()))
    for key, want in (("rail-optimized", base), ("rail-only", ro)):
        got = doc[key]
        assert (got["tiers"], got["switches"], got["transceivers"]) == want, key
        assert got["gpus"] == gpus
        assert got["transceivers"] == 2 * got["links"]
    assert abs(doc["saving"]["cost"] * 100 - cost) <= 1.5
    assert abs(doc["saving"]["power"] * 100 - power) <= 1.5
    # The default book is fitted to the paper: whole percents match exactly.
    assert round(doc["saving"]["cost"] * 100) == cost
    assert round(doc["saving"]["power"] * 100) == power


@pytest.mark.parametrize("topology", ["rail-only", "rail-optimized"])
def test_cli_json_shape_whatever_the_topology(tmp_path, capsys, topology):
    path = tmp_path / "d.yml"
    path.write_text(design_text(256, 128, 128, topology=topology))
    code, out, err = run_cli(["bom", str(path), "--compare", "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert list(doc)[:3] == ["rail-only", "rail-optimized", "saving"]
    for side in ("rail-only", "rail-optimized"):
        for key in ("switches", "transceivers", "links", "cost_usd", "power_w"):
            assert isinstance(doc[side][key], (int, float)), (side, key)
    assert set(doc["saving"]) >= {"cost", "power"}
    assert 0.76 < doc["saving"]["cost"] < 0.78
    assert doc["rail-only"]["switches"] == 256 and doc["rail-optimized"]["switches"] == 1280


def test_l2_design_compares_against_routed_baseline(tmp_path, capsys):
    path = tmp_path / "d.yml"
    path.write_text(design_text(256, 128, 256, share=True, mode="l2"))
    code, out, err = run_cli(["bom", str(path), "--compare", "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["rail-only"]["switches"] == 128
    assert doc["rail-optimized"]["switches"] == 384


def test_text_output(tmp_path, capsys):
    path = tmp_path / "d.yml"
    path.write_text(design_text(8, 16, 16))
    code, out, _ = run_cli(["bom", str(path)], capsys)
    assert code == 0 and "rail-only" in out and "switches" in out and "rail-optimized" not in out
    code, out, _ = run_cli(["bom", str(path), "--compare"], capsys)
    assert code == 0 and "saving:" in out


def test_baseline_past_three_tiers_is_a_clear_error(tmp_path, capsys):
    # 8 rails x 64 domains = 512 GPUs at radix 8: rails fit 3 tiers, the baseline does not.
    path = tmp_path / "d.yml"
    path.write_text(design_text(8, 64, 8))
    code, out, err = run_cli(["bom", str(path), "--compare"], capsys)
    assert code == 2 and out == ""
    assert "rail-optimized baseline" in err and "Traceback" not in err


def test_baseline_that_outgrows_a_pool_names_the_variant(tmp_path, capsys):
    path = tmp_path / "d.yml"
    # a /23 holds rail-only's loopbacks (64 per rail: 16 leaves in a 32-address leaf slot, 8 spines) but not the baseline's
    path.write_text(design_text(8, 512, 64) + "addressing: {loopback_pool: 10.255.0.0/23}\n")
    code, out, err = run_cli(["bom", str(path), "--compare"], capsys)
    assert code == 2 and out == ""
    assert "addressing.loopback_pool" in err and "rail-optimized variant" in err


@pytest.mark.parametrize("gbps", [100, 200, 800])
def test_other_speeds_are_priced(tmp_path, capsys, gbps):
    path = tmp_path / "d.yml"
    path.write_text(design_text(8, 64, 64) + f"nic: {{gbps: {gbps}}}\n")
    code, out, err = run_cli(["bom", str(path), "--compare", "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["rail-only"]["cost_usd"] > 0 and 0 < doc["saving"]["cost"] < 1
