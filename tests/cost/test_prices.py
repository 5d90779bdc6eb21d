"""The price book: the default loads, bad books are rejected with the key named (exit 2)."""

from __future__ import annotations

import json

import pytest

from railonly.fabric.cost.prices import default_prices, default_text

from .conftest import REPO, design_text, run_cli


def _setup(tmp_path, prices: str):
    d = tmp_path / "d.yml"
    d.write_text(design_text(8, 16, 16))
    p = tmp_path / "prices.yaml"
    p.write_text(prices)
    return str(d), str(p)


def test_default_ratios_are_the_paper_fit():
    book = default_prices()
    x = book.transceiver("400G-DR4")
    for radix in (64, 128, 256):
        sw = book.switch(radix, 400)
        assert 3.4 <= sw.price_usd / radix / x.price_usd <= 4.0
        assert 1.8 <= sw.power_w / radix / x.power_w <= 2.0


def test_custom_price_book_is_used(tmp_path, capsys):
    d, p = _setup(tmp_path, default_text().replace("price_usd: 270", "price_usd: 540"))
    code, out, err = run_cli(["bom", d, "--json", "--prices", p], capsys)
    assert code == 0, err
    code2, out2, _ = run_cli(["bom", d, "--json"], capsys)
    assert out != out2


def test_missing_price_is_rejected(tmp_path, capsys):
    text = default_text().replace("  400G-DR4: {gbps: 400, reach_m: 500, price_usd: 270, power_w: 10}",
                                  "  400G-DR4: {gbps: 400, reach_m: 500, power_w: 10}")
    d, p = _setup(tmp_path, text)
    code, out, err = run_cli(["bom", d, "--prices", p], capsys)
    assert code == 2 and out == ""
    assert "transceivers.400G-DR4.price_usd" in err and "required" in err and "Traceback" not in err
    assert "prices.yaml:" in err  # file and line


def test_negative_price_is_rejected(tmp_path, capsys):
    text = default_text().replace("price_usd: 128000", "price_usd: -5")
    d, p = _setup(tmp_path, text)
    code, out, err = run_cli(["bom", d, "--prices", p], capsys)
    assert code == 2 and out == ""
    assert "switches.51.2T-128x400G.price_usd" in err and "from 0 to 10,000,000" in err and "got -5" in err


def test_a_price_or_power_past_its_bound_is_rejected(tmp_path, capsys):
    """Finding: 1.0e+308 priced the BOM at `$inf` and `bom --json` printed Infinity (no JSON)."""
    text = default_text().replace("price_usd: 128000", "price_usd: 1.0e+308")
    d, p = _setup(tmp_path, text)
    code, out, err = run_cli(["bom", d, "--prices", p, "--json"], capsys)
    assert code == 2 and out == ""
    assert "switches.51.2T-128x400G.price_usd" in err and "from 0 to 10,000,000" in err, err


def test_unknown_key_gets_did_you_mean(tmp_path, capsys):
    d, p = _setup(tmp_path, default_text().replace("transceivers:", "transceiver:"))
    code, _, err = run_cli(["bom", d, "--prices", p], capsys)
    assert code == 2
    assert "did you mean 'transceivers'" in err


def test_part_the_design_needs_is_missing(tmp_path, capsys):
    text = "\n".join(line for line in default_text().splitlines() if not line.startswith("  400G-SR8"))
    d, p = _setup(tmp_path, text)
    code, _, err = run_cli(["bom", d, "--prices", p], capsys)
    assert code == 2
    assert "transceivers.400G-SR8" in err and "fix:" in err


def test_missing_price_file(tmp_path, capsys):
    d, _ = _setup(tmp_path, "")
    code, _, err = run_cli(["bom", d, "--prices", str(tmp_path / "nope.yaml")], capsys)
    assert code == 2 and "file not found" in err


@pytest.mark.parametrize("flag, command, starts_from", [
    ("--prices", ["bom", "DESIGN"], "fabric/cost/data/prices.yaml"),
    ("--rates", ["resilience", "DESIGN"], "fabric/cost/data/failure_rates.yaml"),
    ("--presets", ["analyze", "DESIGN", str(REPO / "labs/jobs/gpt-small.yml")], "fabric/analysis/data/gpus.yaml"),
])
@pytest.mark.parametrize("text", ["", "- a list\n"])
def test_an_empty_or_shapeless_data_file_says_what_to_start_from(tmp_path, capsys, flag, command, starts_from, text):
    # the fix said "start from an example in labs/", where only designs and jobs are
    d, p = _setup(tmp_path, text)
    code, out, err = run_cli([c.replace("DESIGN", d) for c in command] + [flag, p], capsys)
    assert code == 2 and out == ""
    assert f"error: {p}: " in err and f"fix: start from the shipped" in err and starts_from in err, err
    assert "labs/" not in err


def _fibre_lines(tmp_path, capsys, cabling: str, *extra) -> list[dict]:
    d = tmp_path / "dr.yml"
    d.write_text((REPO / "labs" / "mini-routed.yml").read_text() + cabling)
    code, out, err = run_cli(["bom", str(d), "--compare", "--detail", "--json", *extra], capsys)
    assert code == 0, err
    doc = json.loads(out)
    for net in ("rail-only", "rail-optimized"):
        names = [i["item"] for i in doc[net]["items"]]
        assert len(names) == len(set(names)), f"{net}: an item listed twice: {names}"
    return doc


def test_the_same_fibre_of_two_tiers_is_one_line(tmp_path, capsys):
    """Single-mode NIC-leaf cables of the leaf-spine cables' length: 'fibre smf-os2 100m' was
    listed twice (one line per tier, identical item names). A buyer buys one item: one line,
    the summed quantity, each tier's count in its description."""
    doc = _fibre_lines(tmp_path, capsys, "cabling: {nic_optic: DR, nic_leaf_m: 100}\n")
    fibre = [i for i in doc["rail-only"]["items"] if i["category"] == "cable"]
    assert [(i["item"], i["quantity"]) for i in fibre] == [("fibre smf-os2 100m", 24)]
    assert fibre[0]["description"].startswith("NIC-leaf 12 and leaf-spine 12 cables; smf-os2, 100 m each")
    # other lengths stay one line per tier, as before
    doc = _fibre_lines(tmp_path, capsys, "cabling: {nic_optic: DR, nic_leaf_m: 50}\n")
    fibre = [(i["item"], i["quantity"]) for i in doc["rail-only"]["items"] if i["category"] == "cable"]
    assert fibre == [("fibre smf-os2 50m", 12), ("fibre smf-os2 100m", 12)]


def test_one_fibre_priced_apart_by_tier_is_named_apart(tmp_path, capsys):
    """A price book pricing smf-os2 differently for leaf-spine and spine-core cables of one
    length: two items, each named by its tier (never two lines of one name)."""
    p = tmp_path / "prices.yaml"
    p.write_text(default_text().replace("  3: {type: smf-os2, price_usd: 0, power_w: 0}",
                                        "  3: {type: smf-os2, price_usd: 7, power_w: 0}"))
    doc = _fibre_lines(tmp_path, capsys, "cabling: {spine_core_m: 100}\n", "--prices", str(p))
    fibre = [(i["item"], i["quantity"], i["unit_cost_usd"]) for i in doc["rail-optimized"]["items"] if i["category"] == "cable"]
    assert fibre == [("fibre mmf-om4 30m", 12, 0), ("fibre smf-os2 100m (leaf-spine)", 12, 0),
                     ("fibre smf-os2 100m (spine-core)", 12, 7)]
