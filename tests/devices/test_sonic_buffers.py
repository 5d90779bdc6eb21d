"""SONiC buffer tables: what each catalog hwsku's published buffer templates render.

Every number below is typed from sonic-net/sonic-buildimage at
086b03bd70f9e211aaaf5f6aefe0790b508d2a94 (the file named next to it), not from the code:
BUFFER_POOL/BUFFER_PROFILE from the hwsku's buffers_defaults_<t0|t1>.j2, BUFFER_PG/BUFFER_QUEUE
from files/build_templates/buffers_config.j2's defaults, and per port speed the lossless
profile buffermgrd creates from the hwsku's pg_profile_lookup.ini (cfgmgr/buffermgr.cpp).
"""

from __future__ import annotations

import pytest

from railonly.fabric.design.design import parse_design
from railonly.fabric.devices import sonic_buffers, sonic_render as sonic
from railonly.fabric.devices.qos import plan as qos_plan
from railonly.fabric.graph.build import build_fabric
from railonly.fabric.outdir import rollout_rules as ro
from railonly.fabric.validate.sonic_yang import validate_config_db

# device/dell/x86_64-dell_z9864f-r0/Dell-Z9864f-O64/buffers_defaults_t0.j2 (t1 the same)
Z9864F = {
    "BUFFER_POOL": {
        "ingress_lossless_pool": {"size": "162539680", "type": "ingress", "mode": "dynamic", "xoff": "33374584"},
        "egress_lossless_pool": {"size": "162539680", "type": "egress", "mode": "static"}},
    "BUFFER_PROFILE": {  # published as "[BUFFER_POOL|...]": written in the plain form orchagent takes
        "ingress_lossy_profile": {"pool": "ingress_lossless_pool", "size": "0", "static_th": "165867080"},
        "egress_lossless_profile": {"pool": "egress_lossless_pool", "size": "0", "static_th": "165867080"},
        "egress_lossy_profile": {"pool": "egress_lossless_pool", "size": "1778", "dynamic_th": "0"},
        "egress_lossy_cpu_profile": {"pool": "egress_lossless_pool", "size": "9398", "dynamic_th": "-2"}},
}
# device/dell/x86_64-dell_z9664f-r0/DellEMC-Z9664f-O64/buffers_defaults_t0.j2 (t1 the same)
Z9664F = {
    "BUFFER_POOL": {
        "ingress_lossless_pool": {"size": "113620296", "type": "ingress", "mode": "dynamic", "xoff": "50653696"},
        "egress_lossless_pool": {"size": "113620296", "type": "egress", "mode": "static"}},
    "BUFFER_PROFILE": {
        "ingress_lossy_profile": {"pool": "ingress_lossless_pool", "size": "0", "static_th": "113620296"},
        "egress_lossless_profile": {"pool": "egress_lossless_pool", "size": "0", "static_th": "113620296"},
        "egress_lossy_profile": {"pool": "egress_lossless_pool", "size": "0", "dynamic_th": "2"},
        "egress_lossy_cpu_profile": {"pool": "egress_lossless_pool", "size": "0", "dynamic_th": "-5"}},
}
# device/arista/x86_64-arista_7060x6_64pe/Arista-7060X6-64PE-O128S2/buffers_defaults_t0.j2 (t1 the same)
O128S2 = {
    "BUFFER_POOL": {
        "ingress_lossless_pool": {"size": "166115492", "type": "ingress", "mode": "dynamic", "xoff": "29423360"},
        "egress_lossless_pool": {"size": "166115492", "type": "egress", "mode": "dynamic"}},
    "BUFFER_PROFILE": {
        "ingress_lossy_profile": {"pool": "ingress_lossless_pool", "size": "0", "static_th": "167546528"},
        "egress_lossy_profile": {"pool": "egress_lossless_pool", "size": "1778", "dynamic_th": "0"},
        "egress_lossless_profile": {"pool": "egress_lossless_pool", "size": "0", "static_th": "167546528"}},
}
# device/arista/x86_64-arista_7060x6_64pe/Arista-7060X6-64PE-256x200G/BALANCED/buffers_defaults_t0.j2
X256_T0 = {
    "BUFFER_POOL": {
        "ingress_lossless_pool": {"size": "165660324", "type": "ingress", "mode": "dynamic", "xoff": "29520896"},
        "egress_lossless_pool": {"size": "165660324", "type": "egress", "mode": "dynamic"}},
    "BUFFER_PROFILE": {
        "ingress_lossy_profile": {"pool": "ingress_lossless_pool", "size": "0", "static_th": "167546528"},
        "egress_lossy_profile": {"pool": "egress_lossless_pool", "size": "1778", "dynamic_th": "0"},
        "egress_lossless_profile": {"pool": "egress_lossless_pool", "size": "0", "static_th": "167546528"}},
}
# ... and its buffers_defaults_t1.j2
X256_T1 = {
    "BUFFER_POOL": {
        "ingress_lossless_pool": {"size": "121964196", "type": "ingress", "mode": "dynamic", "xoff": "29520896"},
        "egress_lossless_pool": {"size": "121964196", "type": "egress", "mode": "static"}},
    "BUFFER_PROFILE": {
        "ingress_lossy_profile": {"pool": "ingress_lossless_pool", "size": "0", "static_th": "167546528"},
        "egress_lossy_profile": {"pool": "egress_lossless_pool", "size": "1778", "dynamic_th": "1"},
        "egress_lossless_profile": {"pool": "egress_lossless_pool", "size": "0", "static_th": "125995684"}},
}

# (model, breakout, hwsku, leaf tables, speed, the pg_profile_lookup.ini row at 40 m:
#  size xon xoff threshold xon_offset): NIC cables are 30 m, so CABLE_LENGTH is 40m
TRADITIONAL = [
    ("dell-z9864f", "1x800G", "Dell-Z9864f-O64", Z9864F, "800000", ("18796", "0", "835406", "0", "3556")),
    ("dell-z9864f", "2x400G", "Dell-Z9864f-O64", Z9864F, "400000", ("18796", "0", "446024", "0", "3556")),
    ("dell-z9864f", "4x200G", "Dell-Z9864f-O64", Z9864F, "200000", ("18796", "0", "255778", "0", "3556")),
    ("dell-z9864f", "8x100G", "Dell-Z9864f-O64", Z9864F, "100000", ("18796", "0", "160274", "0", "3556")),
    ("dell-z9664f", "1x400G", "DellEMC-Z9664f-O64", Z9664F, "400000", ("9144", "9144", "424434", "0", "9144")),
    ("arista-7060x6-64pe", "2x400G", "Arista-7060X6-64PE-O128S2", O128S2, "400000", ("18796", "0", "612140", "0", "3556")),
    ("arista-7060x6-64pe", "4x200G", "Arista-7060X6-64PE-256x200G", X256_T0, "200000", ("18796", "0", "300990", "0", "3556")),
]


def design(model: str | None, breakout: str | None, count: int = 8, extra: str = "") -> str:
    sw = f"switch: {{model: {model}, breakout: {breakout}, platform: sonic}}\n" if model else \
        "switch: {radix: 64, platform: sonic}\nnic: {gbps: 400}\n"
    return f"name: t\nhb_domain: {{size: 8, count: {count}}}\n{sw}rail: {{mode: routed}}\n{extra}"


def render(text: str, tier: int = 1) -> dict:
    d = parse_design(text)
    fab = build_fabric(d)
    sw = next(s for s in fab.switches if s.tier == tier)
    doc, _ = sonic.render_switch(fab, sw, qos_plan(d))
    return doc


def cabled(doc: dict) -> list[str]:
    return [n for n, p in doc["PORT"].items() if p["admin_status"] == "up"]


@pytest.mark.parametrize("model,breakout,hwsku,want,speed,row", TRADITIONAL, ids=[f"{t[0]}-{t[1]}" for t in TRADITIONAL])
def test_traditional_hwsku_buffer_tables_are_its_published_templates(model, breakout, hwsku, want, speed, row):
    doc = render(design(model, breakout))
    assert doc["DEVICE_METADATA"]["localhost"]["hwsku"] == hwsku
    assert doc["BUFFER_POOL"] == want["BUFFER_POOL"]
    assert doc["BUFFER_PROFILE"] == want["BUFFER_PROFILE"]
    ports = cabled(doc)
    assert ports and set(doc["DEVICE_NEIGHBOR"]) == set(ports)
    assert doc["BUFFER_PG"] == {f"{p}|0": {"profile": "ingress_lossy_profile"} for p in ports}
    want_q = {}
    for p in ports:
        want_q.update({f"{p}|3-4": {"profile": "egress_lossless_profile"}, f"{p}|0-2": {"profile": "egress_lossy_profile"},
                       f"{p}|5-6": {"profile": "egress_lossy_profile"}})
    assert doc["BUFFER_QUEUE"] == want_q
    for p in ports:  # the port of this speed gets the lossless PG buffermgrd makes from pg_profile_lookup.ini
        assert doc["PORT"][p]["speed"] == speed and doc["CABLE_LENGTH"]["AZURE"][p] == "40m"
    size, xon, xoff, threshold, xon_offset = row
    hb = sonic_buffers.hwsku_buffers(parse_design(design(model, breakout)).model_of_tier(1), breakout)
    assert sonic_buffers.lossless_profile(hb, "BackEndToRRouter", speed, "40m") == (
        f"pg_lossless_{speed}_40m_profile",
        {"pool": "ingress_lossless_pool", "xon": xon, "xoff": xoff, "size": size, "dynamic_th": threshold, "xon_offset": xon_offset})
    assert validate_config_db(doc, memo=False) == []


def test_yang_checks_the_buffer_tables():
    doc = render(design("dell-z9864f", "2x400G"))
    port = cabled(doc)[0]
    doc["BUFFER_PG"][f"{port}|0"] = {"profile": "no_such_profile"}
    assert validate_config_db(doc, memo=False)


def test_spine_tier_takes_the_t1_file_where_it_differs():
    # 300 domains on 256-port leaves: two tiers, the spines BackEndLeafRouter (t1)
    doc = render(design("arista-7060x6-64pe", "4x200G", count=300), tier=2)
    assert doc["DEVICE_METADATA"]["localhost"]["type"] == "BackEndLeafRouter"
    assert doc["BUFFER_POOL"] == X256_T1["BUFFER_POOL"] and doc["BUFFER_PROFILE"] == X256_T1["BUFFER_PROFILE"]
    assert validate_config_db(doc, memo=False) == []
    assert sonic_buffers.topology("SpineRouter") == "t1"  # no catalog hwsku publishes buffers_defaults_t2.j2


def test_cable_length_is_a_length_the_hwsku_lists_for_that_speed():
    # Arista-7060X6-64PE-O128S2/pg_profile_lookup.ini lists 5m, 40m and 150m (no 300m)
    doc = render(design("arista-7060x6-64pe", "2x400G", extra="cabling: {nic_optic: DR, nic_leaf_m: 100}\n"))
    assert set(doc["CABLE_LENGTH"]["AZURE"].values()) == {"150m"}


@pytest.mark.parametrize("model,breakout", [(None, None), ("arista-7060x6-64pe", "1x800G"), ("arista-7060x6-64pe", "8x100G"),
                                            ("arista-7060dx5-64s", "1x400G"), ("nvidia-sn5600", "2x400G")])
def test_no_buffer_tables_without_published_traditional_ones(model, breakout):
    # generic: no published templates; Arista-7060X6-64PE: its BALANCED templates render none;
    # Arista-7060DX5-64S: none published; SN5600: the dynamic buffer model (not rendered yet)
    doc = render(design(model, breakout))
    assert not set(doc) & set(sonic_buffers.BUFFER_TABLES)


def test_buffer_pool_and_profile_changes_need_a_config_reload():
    old = {"BUFFER_POOL": {"ingress_lossless_pool": {"size": "1", "type": "ingress", "mode": "dynamic"}},
           "BUFFER_PG": {"Ethernet0|0": {"profile": "ingress_lossy_profile"}}}
    new = {"BUFFER_POOL": {"ingress_lossless_pool": {"size": "2", "type": "ingress", "mode": "dynamic"}},
           "BUFFER_PG": {"Ethernet0|0": {"profile": "ingress_lossy_profile"}, "Ethernet4|0": {"profile": "ingress_lossy_profile"}}}
    _, why = ro._db_items(old, new)
    assert why == ["BUFFER_POOL|ingress_lossless_pool changes (config apply-patch refuses buffer pool and profile changes)"]
    _, why = ro._db_items({}, {"BUFFER_PROFILE": {"p": {"pool": "x", "size": "0"}}})
    assert why and why[0].startswith("BUFFER_PROFILE|p changes")
