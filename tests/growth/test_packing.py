"""A fair baseline: rails smaller than half a leaf are packed, whole, onto shared leaves."""

from __future__ import annotations

import json

from railonly.cli import main
from railonly.fabric.cost.compare import compare, report
from railonly.fabric.cost.prices import default_prices
from railonly.fabric.cost.sweep import point
from railonly.fabric.graph.build import build_fabric
from railonly.fabric.graph.invariants import check
from railonly.fabric.graph.model import Endpoint

from .conftest import design


def test_baseline_at_k256_1024_gpus_radix256_packs_onto_12_switches():
    fab = build_fabric(design(256, 4, 256, topology="rail-optimized"))
    by_tier = {t: len(v) for t, v in fab.switches_by_tier().items()}
    assert by_tier == {1: 8, 2: 4}
    assert all(len(sw.rails) == 32 and len(sw.vlans) == 32 for sw in fab.switches if sw.tier == 1)
    assert check(fab) == []


def test_bom_compare_says_which_side_packs(tmp_path, capsys):
    path = tmp_path / "d.yml"
    path.write_text("name: t\nhb_domain: {size: 256, count: 4}\nswitch: {radix: 256}\n")
    assert main(["bom", str(path), "--compare", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rail-optimized"]["switches"] == 12 and doc["rail-optimized"]["rails_per_leaf"] == 32
    assert doc["rail-only"]["rails_per_leaf"] == 1
    assert "packs 32 whole rails per leaf" in doc["packing"]["rail-optimized"]
    assert "share_rails" in doc["packing"]["rail-only"]
    assert main(["bom", str(path), "--compare"]) == 0
    assert "packing: rail-only one switch per rail" in capsys.readouterr().out


def test_sweep_row_names_both_sides_packing():
    row = point(256, 1024, 256, default_prices())
    assert (row["baseline_switches"], row["rail_switches"]) == (12, 4)
    assert (row["baseline_rails_per_leaf"], row["rail_rails_per_switch"]) == (32, 64)
    assert row["cost_saving"] < 0.7  # no longer the 99% of a baseline with 256 leaves of 4 GPUs


def test_paper_rows_do_not_pack():
    for gpus, radix in ((32768, 64), (32768, 128), (32768, 256), (65536, 128), (65536, 256)):
        doc = report(compare(design(256, gpus // 256, radix), default_prices(), fast=True))
        assert doc["rail-optimized"]["rails_per_leaf"] == 1, (gpus, radix)


def test_checker_catches_a_packed_rail_split_across_leaves():
    fab = build_fabric(design(8, 2, 8, topology="rail-optimized"))  # 2 rails of 2 GPUs per leaf
    assert check(fab) == [] and {len(sw.rails) for sw in fab.switches if sw.tier == 1} == {2}
    link = next(lk for lk in fab.links if lk.kind == "rail" and lk.a.node == "hb1-gpu0")
    other = next(sw for sw in fab.switches if sw.tier == 1 and 0 not in sw.rails)
    other.rails.append(0)  # the rail "served" there too, so only the packing rule can object
    link.b = Endpoint(other.name, "Ethernet999", None, 99)
    assert any("a packed rail must be whole" in p and "rail 0" in p for p in check(fab))


def test_check_plan_routes_cross_rail_pairs_through_the_packed_leaf():
    # Two rails' VLANs on one baseline leaf: a cross-rail pair is routed once, by that leaf
    # (the path check expected a bridged pair, 0 hops, until packed leaves existed).
    from railonly.emulation.checks import check_plan as checks_plan
    from railonly.fabric.graph import fabric_json

    fab = build_fabric(design(5, 2, 8, topology="rail-optimized"))
    cp = checks_plan.plan(fabric_json.parse(fabric_json.render(fab)))
    spec = next(p for p in cp.paths if p.src == "hb0-gpu0" and p.cross)
    assert spec.dst == "hb1-gpu1" and spec.layers == (("t-rails0-1",),)
    same = next(p for p in cp.paths if p.src == "hb0-gpu0" and not p.cross)
    assert same.layers == ()  # same rail, same leaf: bridged
