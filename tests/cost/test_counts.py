"""Counts agree with the fabric graph, and the fast path is proven equal to it."""

from __future__ import annotations

import itertools

import pytest

from railonly.fabric.cost.bom import price
from railonly.fabric.cost.compare import variant
from railonly.fabric.cost.inventory import from_design, from_fabric
from railonly.fabric.cost.prices import default_prices
from railonly.fabric.design import clos
from railonly.fabric.graph.build import build_fabric

from .conftest import make_design


def _cases():
    """Many small shapes: partly filled leaves and pods, 1-3 tiers, shared rails, both topologies."""
    for radix, size, count in itertools.product((4, 6, 8, 12), (1, 2, 3, 5, 8), (1, 2, 3, 4, 5, 7, 9, 13, 17, 31, 40)):
        for share in (False, True):
            yield radix, size, count, share


CASES = list(_cases())


def test_fast_path_equals_graph_over_many_sizes():
    checked = 0
    for radix, size, count, share in CASES:
        base = make_design(size, count, radix, share) if clos.tiers(count, radix) else None
        if base is None:
            continue
        for topo in ("rail-only", "rail-optimized"):
            d = variant(base, topo)
            if topo == "rail-optimized" and clos.baseline_depth(size, count, radix) is None:
                continue
            fab = build_fabric(d)
            assert from_design(d).key() == from_fabric(fab).key(), (radix, size, count, share, topo)
            checked += 1
    assert checked > 600


@pytest.mark.slow
@pytest.mark.parametrize("size,count,radix,share", [(256, 128, 64, False), (256, 128, 256, True), (8, 4096, 64, False), (72, 16, 64, False)])
def test_fast_path_equals_graph_at_scale(size, count, radix, share):
    for topo in ("rail-only", "rail-optimized"):
        d = variant(make_design(size, count, radix, share), topo)
        assert from_design(d).key() == from_fabric(build_fabric(d)).key()


@pytest.mark.parametrize("size,count,radix", [(4, 4, 8), (2, 6, 4), (8, 128, 64), (3, 7, 6)])
def test_bom_quantities_match_graph_links(size, count, radix):
    for topo in ("rail-only", "rail-optimized"):
        fab = build_fabric(variant(make_design(size, count, radix), topo))
        bom = price(from_fabric(fab), default_prices())
        q = {r.category: 0 for r in bom.rows}
        for r in bom.rows:
            q[r.category] += r.quantity
        cables = fab.cables()
        rail_links = sum(1 for lk in cables if lk.kind == "rail")
        assert q["switch"] == len(fab.switches)
        assert q["cable"] == len(cables)
        assert q["nic-optic"] == rail_links == len(fab.gpus)
        # one transceiver at each end of every cable, the NIC side included
        assert q["transceiver"] + q["nic-optic"] == 2 * len(cables)
        ends_on_switches = sum((lk.a.node in fab.by_name and fab.by_name[lk.a.node].role == "switch") + 1 for lk in cables)
        assert q["transceiver"] == ends_on_switches


@pytest.mark.parametrize("n,radix", [(16, 8), (32, 8), (128, 16), (2048, 64), (4096, 64), (65536, 64)])
def test_full_clos_matches_the_counting_model(n, radix):
    # A rail of n GPUs that fills its leaves: switches, links and transceivers are the paper's formulas.
    inv = from_design(make_design(1, n, radix))
    m = clos.model_counts(n, radix)
    assert (inv.tiers, inv.switch_count, inv.link_count, inv.transceiver_count) == (m["tiers"], m["switches"], m["links"], m["transceivers"])
