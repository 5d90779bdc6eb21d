"""hb_domain.planned: every count up to the build-out is a subset of it (only cables are added)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from railonly.fabric.compiler import compile_design
from railonly.fabric.cost.bom import buildout
from railonly.fabric.outdir_layout import BOM_BUILDOUT_CSV
from railonly.fabric.cost.inventory import from_design, from_fabric
from railonly.fabric.design import clos
from railonly.fabric.design.design import parse_design
from railonly.fabric.graph.build import build_fabric
from railonly.fabric.graph.invariants import check
from railonly.fabric.input.problems import InputError
from railonly.fabric.outputs import cabling

from .conftest import REPO, design, lab_1k


def _cables(fab) -> set[tuple]:
    return {tuple(row) for row in cabling.rows(fab)}


def _switches(fab) -> dict[str, tuple]:
    return {sw.name: (sw.tier, tuple(sw.rails), sw.asn, sw.loopback, tuple((v.vlan, v.subnet, v.gateway) for v in sw.vlans))
            for sw in fab.switches}


# Designs with a build-out: the size of an HB domain, the planned domains, the radix, the
# topology and whether small rails share a switch (a count up to `planned` is drawn in each test)
BUILD_OUTS = given(K=st.integers(1, 6), planned=st.integers(1, 70), radix=st.sampled_from([4, 6, 8, 16]),
                   topology=st.sampled_from(["rail-only", "rail-optimized"]), share=st.booleans(), data=st.data())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@BUILD_OUTS
def test_smaller_count_is_a_subset_of_a_larger_one(K, planned, radix, topology, share, data):
    a = data.draw(st.integers(1, planned), label="smaller count")
    b = data.draw(st.integers(a, planned), label="larger count")
    try:
        small, large = (build_fabric(design(K, n, radix, planned, topology, share)) for n in (a, b))
    except InputError:
        return  # the build-out is over three tiers: rejected up front
    assert check(small) == [] and check(large) == []
    # Every cable of the smaller count is in the larger one, same id and both ends.
    assert _cables(small) <= _cables(large)
    # Existing switches keep name, tier, rails, ASN, loopback and subnets; existing links keep their /31s.
    s_sw, l_sw = _switches(small), _switches(large)
    assert all(l_sw.get(name) == facts for name, facts in s_sw.items())
    ips = {(lk.a.node, lk.a.port, lk.a.ip, lk.b.node, lk.b.port, lk.b.ip) for lk in large.links}
    assert all((lk.a.node, lk.a.port, lk.a.ip, lk.b.node, lk.b.port, lk.b.ip) in ips for lk in small.links)
    # The fast path follows the builder.
    assert from_design(small.design).key() == from_fabric(small).key()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@BUILD_OUTS
def test_bgp_prefix_limits_are_the_build_out_s_at_every_count(K, planned, radix, topology, share, data):
    """Growing within `planned` must not change the BGP prefix limit of every switch: each
    routing domain's prefixes are counted at build-out whatever the count (the limit's floor
    hides the difference on small fabrics, so the count itself is compared)."""
    from railonly.fabric.devices.device import _domain_prefixes

    count = data.draw(st.integers(1, planned), label="count")
    try:
        now, built = (build_fabric(design(K, n, radix, planned, topology, share)) for n in (count, planned))
    except InputError:
        return  # the build-out is over three tiers: rejected up front
    assert [_domain_prefixes(now, sw) for sw in now.switches if sw.asn is not None] == \
        [_domain_prefixes(built, built.by_name[sw.name]) for sw in now.switches if sw.asn is not None]


def test_the_32k_growth_past_a_leaf_keeps_every_other_leaf_s_bgp():
    """labs/dgx-h100-32k.yml at 4,096 and 4,097 HB domains of 4,160 planned: the new domain
    needs a new leaf a rail, and every leaf's maximum-prefix stays (it grew with each leaf)."""
    from railonly.fabric.devices.device import switch_view

    text = (REPO / "labs" / "dgx-h100-32k.yml").read_text()
    views = []
    for count in (4096, 4097):
        fab = build_fabric(parse_design(text.replace("  count: 4096\n", f"  count: {count}\n  planned: 4160\n")))
        views.append({sw.name: switch_view(fab, sw).max_prefix for sw in fab.switches if sw.tier == 1})
    assert views[0]["dgx32k-rail0-leaf0"] > 2 * 450  # past the floor: the count decides it
    assert all(views[1][name] == limit for name, limit in views[0].items())


def test_planned_equal_to_count_builds_what_count_alone_builds():
    for topo in ("rail-only", "rail-optimized"):
        plain, planned = build_fabric(design(3, 13, 8, topology=topo)), build_fabric(design(3, 13, 8, 13, topo))
        assert _cables(plain) == _cables(planned) and _switches(plain) == _switches(planned)


def test_dgx_1k_without_planned_moves_half_its_cables():
    # Why the key exists: 144 domains re-spread each leaf's uplinks over three spines instead of two.
    old, new = (build_fabric(parse_design(lab_1k(n))) for n in (128, 144))
    ends = {(lk.a.node, lk.a.port): (lk.b.node, lk.b.port) for lk in old.cables()}
    moved = sum(1 for lk in new.cables() if (lk.a.node, lk.a.port) in ends and ends[(lk.a.node, lk.a.port)] != (lk.b.node, lk.b.port))
    assert moved == 1008 and len(old.cables()) == 2048


def test_dgx_1k_planned_256_grows_from_128_to_144_by_adding_cables_only():
    old, new = (build_fabric(parse_design(lab_1k(n, planned=256))) for n in (128, 144))
    assert _cables(old) < _cables(new)
    K, half = 8, 32
    added = K * ((144 - 128) + (clos.leaves_needed(144, 64) - clos.leaves_needed(128, 64)) * half)
    assert len(_cables(new) - _cables(old)) == added == 384
    # Spines are those of the build-out (4 per rail), bought now.
    assert sum(1 for sw in old.switches if sw.tier == 2) == K * 4


def test_planned_smaller_than_count_is_named_with_line_and_fix():
    with pytest.raises(InputError) as exc:
        parse_design(lab_1k(128, planned=100), "d.yml")
    (p,) = exc.value.problems
    assert p.path == "hb_domain.planned" and p.line == 8 and "at least hb_domain.count (128)" in p.message
    assert "planned: 128" in p.hint


def test_planned_past_three_tiers_is_named():
    with pytest.raises(InputError) as exc:
        parse_design("name: t\nhb_domain: {size: 8, count: 4, planned: 70000}\nswitch: {radix: 64}\n", "d.yml")
    (p,) = exc.value.problems
    assert p.path == "hb_domain.planned" and "at build-out" in p.message


def test_planned_l2_rail_must_fit_one_switch_at_build_out():
    with pytest.raises(InputError) as exc:
        parse_design("name: t\nhb_domain: {size: 2, count: 4, planned: 9}\nswitch: {radix: 8}\nrail: {mode: l2}\n", "d.yml")
    assert [p.path for p in exc.value.problems] == ["rail.mode"]


def test_bom_says_what_is_bought_now_and_at_build_out():
    d = parse_design(lab_1k(128, planned=256))
    fab, files = compile_design(d)
    now = from_fabric(fab)
    later = buildout(d, now)
    full = from_fabric(build_fabric(dataclasses.replace(d, hb_count=256)))
    assert later.switch_count == full.switch_count - now.switch_count == 32  # 4 more leaves per rail
    assert later.link_count == full.link_count - now.link_count == 2048
    text = files[BOM_BUILDOUT_CSV].decode()
    assert "switch " in text and ",32," in text
    # built out (planned = count): no second file
    assert BOM_BUILDOUT_CSV not in compile_design(parse_design(lab_1k(128)))[1]
