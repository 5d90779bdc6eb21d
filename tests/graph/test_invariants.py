"""The graph keeps its wiring promises for any valid design, and the checker
catches each way of breaking them (a checker that cannot fail proves nothing)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from railonly.fabric.design import clos
from railonly.fabric.design.design import parse_design
from railonly.fabric.graph.build import build_fabric
from railonly.fabric.graph.invariants import check
from railonly.fabric.graph.model import Endpoint
from railonly.fabric.input.problems import InputError


def design(K, count, radix, topology="rail-only", mode="routed", share=False, platform="sonic"):
    return parse_design(
        f"name: t\ntopology: {topology}\nhb_domain: {{size: {K}, count: {count}}}\n"
        f"switch: {{radix: {radix}, share_rails: {str(share).lower()}, platform: {platform}}}\nrail: {{mode: {mode}}}\n"
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    K=st.integers(1, 9),
    count=st.integers(1, 80),
    radix=st.sampled_from([4, 6, 8, 16]),
    topology=st.sampled_from(["rail-only", "rail-optimized"]),
    share=st.booleans(),
    platform=st.sampled_from(["sonic", "eos"]),
)
def test_invariants_hold_for_any_valid_design(K, count, radix, topology, share, platform):
    try:
        d = design(K, count, radix, topology, share=share, platform=platform)
    except InputError:
        return  # too large for three tiers: rejected up front, nothing to build
    fab = build_fabric(d)
    assert check(fab) == []
    assert len(fab.gpus) == K * count
    if topology == "rail-only" and not (share and fab.tiers == 1):
        # Per rail, a whole number of leaves: the counting model exactly when rails fill switches.
        assert fab.tiers == clos.tiers(count, radix)
        # Exact when tiers fill up: full leaves (two tiers), an even number of full pods (three).
        if fab.tiers == 1 or (fab.tiers == 2 and count % radix == 0) or count % (radix * radix // 2) == 0:
            model = clos.model_counts(count, radix)
            assert len(fab.switches) == K * model["switches"]
            assert len(fab.cables()) == K * model["links"]


@pytest.mark.parametrize("K,count,radix,switches,cables", [
    pytest.param(8, 4096, 64, 2560, 98304, marks=pytest.mark.slow),  # the 32,768-GPU design: three tiers per rail
    pytest.param(256, 128, 64, 1536, 65536, marks=pytest.mark.slow),  # paper row 1, rail-only
    (256, 128, 128, 256, 32768),  # paper row 2
])
def test_rail_only_counts_match_paper(K, count, radix, switches, cables):
    fab = build_fabric(design(K, count, radix))
    assert (len(fab.switches), len(fab.cables())) == (switches, cables)


@pytest.mark.slow
def test_shared_rails_pack_two_rails_a_switch():
    fab = build_fabric(design(256, 128, 256, share=True, mode="l2"))
    assert len(fab.switches) == 128
    assert all(len(sw.rails) == 2 and len(sw.vlans) == 2 for sw in fab.switches)
    assert check(fab) == []


@pytest.mark.slow
@pytest.mark.parametrize("radix,switches", [(64, 2560), (128, 1280), (256, 384)])
def test_baseline_counts_match_paper(radix, switches):
    fab = build_fabric(design(256, 128, radix, topology="rail-optimized"))
    assert len(fab.switches) == switches
    assert check(fab) == []


def test_adding_a_server_moves_no_cable():
    small = build_fabric(design(4, 40, 16))
    large = build_fabric(design(4, 41, 16))
    def rail_cables(fab):
        return {(lk.a.node, lk.a.port, lk.b.node, lk.b.port, lk.a.ip) for lk in fab.links if lk.kind == "rail"}
    assert rail_cables(small) <= rail_cables(large)


# -- the checker must fail on broken graphs ---------------------------------------

@pytest.fixture
def two_tier():
    fab = build_fabric(design(2, 6, 4))
    assert fab.tiers == 2 and check(fab) == []
    return fab


def test_checker_catches_cross_rail_link(two_tier):
    fab = two_tier
    gpu1 = next(g for g in fab.gpus if g.rail == 1)
    link = next(lk for lk in fab.links if lk.kind == "rail" and lk.a.node == gpu1.name)
    leaf0 = next(sw for sw in fab.switches if sw.rails == [0] and sw.tier == 1)
    link.b = Endpoint(leaf0.name, "Ethernet999", None, 99)
    assert any("cross-rail" in p and gpu1.name in p for p in check(fab))


def test_checker_catches_blocking_switch(two_tier):
    fab = two_tier
    uplink = next(lk for lk in fab.links if lk.kind == "fabric")
    fab.links.remove(uplink)
    assert any(p.startswith("blocking switch: " + uplink.a.node) for p in check(fab))


def test_checker_catches_reused_port(two_tier):
    fab = two_tier
    lk = next(lk for lk in fab.links if lk.kind == "fabric")
    dup = copy.deepcopy(lk)
    dup.b = Endpoint("t-rail0-spine1", "Ethernet56", None, 7)
    fab.links.append(dup)
    assert any(f"port {lk.a.node}:{lk.a.port} used by 2 links" in p for p in check(fab))


def test_checker_catches_duplicate_asn_and_address(two_tier):
    fab = two_tier
    fab.switches[1].asn = fab.switches[0].asn
    fab.switches[1].loopback = fab.switches[0].loopback
    problems = check(fab)
    assert any("ASN" in p for p in problems) and any("address" in p for p in problems)


def test_checker_catches_leaf_missing_a_spine(two_tier):
    fab = two_tier
    leaf = "t-rail0-leaf0"
    links = [lk for lk in fab.links if lk.kind == "fabric" and lk.a.node == leaf]
    # Rewire one uplink to the other spine: still non-blocking, but a spine is unreachable.
    spines = sorted({lk.b.node for lk in links})
    for lk in links:
        lk.b = Endpoint(spines[0], lk.b.port + "x", None, 0)
    assert any(f"{leaf} does not reach spine" in p for p in check(fab))


def test_link_kinds_present(two_tier):
    kinds = {lk.kind for lk in two_tier.links}
    assert kinds == {"rail", "fabric", "hb"}
