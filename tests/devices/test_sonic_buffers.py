"""SONiC buffer tables: what each catalog hwsku's published buffer templates render.

Every number below is typed from sonic-net/sonic-buildimage at
086b03bd70f9e211aaaf5f6aefe0790b508d2a94 (the file named next to it), not from the code:
BUFFER_POOL/BUFFER_PROFILE from the hwsku's buffers_defaults_<t0|t1>.j2, BUFFER_PG/BUFFER_QUEUE
from files/build_templates/buffers_config.j2's defaults, and per port speed the lossless
profile buffermgrd creates from the hwsku's pg_profile_lookup.ini (cfgmgr/buffermgr.cpp).
"""

from __future__ import annotations

import json

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
                                            ("arista-7060dx5-64s", "1x400G")])
def test_no_buffer_tables_without_published_ones(model, breakout):
    # generic: no published templates; Arista-7060X6-64PE: its BALANCED templates render none;
    # Arista-7060DX5-64S: none published
    doc = render(design(model, breakout))
    assert not set(doc) & set(sonic_buffers.BUFFER_TABLES)
    assert "create_only_config_db_buffers" not in doc["DEVICE_METADATA"]["localhost"]


# NVIDIA SN5600, sonic-net/sonic-buildimage 086b03bd70f9e211aaaf5f6aefe0790b508d2a94.
# ACS-SN5600 and Mellanox-SN5600-O128 (dynamic model): buffers_dynamic.json.j2 ->
# files/build_templates/buffers_config.j2 with dynamic_mode, device/mellanox/x86_64-nvidia_sn5600-r0/
# ACS-SN5600/buffers_defaults_t0.j2 (O128's is a link to it; t1 differs only in the sizes the
# dynamic render leaves out: egress_lossless_pool 158229504 in both) and
# device/mellanox/x86_64-mlnx_msn2700-r0/ACS-MSN2700/buffers_defaults_objects.j2.
SN5600_DYNAMIC = {
    "BUFFER_POOL": {
        "ingress_lossless_pool": {"type": "ingress", "mode": "dynamic"},
        "ingress_lossy_pool": {"type": "ingress", "mode": "dynamic"},
        "egress_lossless_pool": {"size": "158229504", "type": "egress", "mode": "dynamic"},
        "egress_lossy_pool": {"type": "egress", "mode": "dynamic"}},
    "BUFFER_PROFILE": {
        "ingress_lossless_profile": {"pool": "ingress_lossless_pool", "size": "0", "dynamic_th": "7"},
        "ingress_lossy_profile": {"pool": "ingress_lossy_pool", "size": "0", "dynamic_th": "3"},
        "egress_lossless_profile": {"pool": "egress_lossless_pool", "size": "0", "dynamic_th": "7"},
        "egress_lossy_profile": {"pool": "egress_lossy_pool", "size": "9216", "dynamic_th": "7"},
        "q_lossy_profile": {"pool": "egress_lossy_pool", "size": "0", "dynamic_th": "3"}},
    # every port of PORT, neighbored or not (dynamic_mode: inactive ports get the same rows)
    "port": {
        "BUFFER_PORT_INGRESS_PROFILE_LIST": {"": {"profile_list": "ingress_lossless_profile,ingress_lossy_profile"}},
        "BUFFER_PORT_EGRESS_PROFILE_LIST": {"": {"profile_list": "egress_lossless_profile,egress_lossy_profile"}},
        "BUFFER_PG": {"|3-4": {"profile": "NULL"}, "|0": {"profile": "ingress_lossy_profile"}},
        "BUFFER_QUEUE": {"|3-4": {"profile": "egress_lossless_profile"}, "|0-2": {"profile": "q_lossy_profile"},
                         "|5-6": {"profile": "q_lossy_profile"}}},
    "idle": None,  # the same rows
    # buffers_config.j2, dynamic_mode (no shp)
    "DEFAULT_LOSSLESS_BUFFER_PARAMETER": {"AZURE": {"default_dynamic_th": "0"}},
    "LOSSLESS_TRAFFIC_PATTERN": {"AZURE": {"mtu": "1024", "small_packet_percentage": "50"}},
}
# Mellanox-SN5600-V256 (traditional model: sonic-utilities scripts/mellanox_buffer_migrator.py
# is_default_traditional_model): buffers.json.j2 -> buffers_config.j2 without dynamic_mode,
# .../Mellanox-SN5600-V256/buffers_defaults_t0.j2 (t1 the same file) and
# device/mellanox/x86_64-mlnx_msn2700-r0/Mellanox-SN2700-D48C8/buffers_defaults_objects.j2.
SN5600_V256 = {
    "BUFFER_POOL": {
        "ingress_zero_pool": {"mode": "static", "type": "ingress", "size": "0"},
        "ingress_lossless_pool": {"size": "73684992", "xoff": "60293120", "type": "ingress", "mode": "dynamic"},
        "egress_lossless_pool": {"size": "158229504", "type": "egress", "mode": "dynamic"},
        "egress_lossy_pool": {"size": "73684992", "type": "egress", "mode": "dynamic"}},
    "BUFFER_PROFILE": {
        "ingress_lossy_pg_zero_profile": {"pool": "ingress_zero_pool", "size": "0", "static_th": "0"},
        "ingress_lossless_zero_profile": {"pool": "ingress_lossless_pool", "size": "0", "dynamic_th": "-8"},
        "egress_lossless_zero_profile": {"pool": "egress_lossless_pool", "size": "0", "dynamic_th": "-8"},
        "egress_lossy_zero_profile": {"pool": "egress_lossy_pool", "size": "0", "dynamic_th": "-8"},
        "ingress_lossless_profile": {"pool": "ingress_lossless_pool", "size": "0", "dynamic_th": "7"},
        "ingress_lossy_profile": {"pool": "ingress_lossless_pool", "size": "0", "dynamic_th": "3"},
        "egress_lossless_profile": {"pool": "egress_lossless_pool", "size": "0", "dynamic_th": "7"},
        "egress_lossy_profile": {"pool": "egress_lossy_pool", "size": "9216", "dynamic_th": "7"},
        "q_lossy_profile": {"pool": "egress_lossy_pool", "size": "0", "dynamic_th": "3"}},
    "port": {
        "BUFFER_PORT_INGRESS_PROFILE_LIST": {"": {"profile_list": "ingress_lossless_profile"}},
        "BUFFER_PORT_EGRESS_PROFILE_LIST": {"": {"profile_list": "egress_lossless_profile,egress_lossy_profile"}},
        "BUFFER_PG": {"|0": {"profile": "ingress_lossy_profile"}},
        "BUFFER_QUEUE": {"|3-4": {"profile": "egress_lossless_profile"}, "|0-2": {"profile": "q_lossy_profile"},
                         "|5-6": {"profile": "q_lossy_profile"}}},
    "idle": {  # ports not in DEVICE_NEIGHBOR: zero profiles
        "BUFFER_PORT_INGRESS_PROFILE_LIST": {"": {"profile_list": "ingress_lossless_zero_profile"}},
        "BUFFER_PORT_EGRESS_PROFILE_LIST": {"": {"profile_list": "egress_lossless_zero_profile,egress_lossy_zero_profile"}},
        "BUFFER_PG": {"|0": {"profile": "ingress_lossy_pg_zero_profile"}},
        "BUFFER_QUEUE": {"|3-4": {"profile": "egress_lossless_zero_profile"}, "|0-2": {"profile": "egress_lossy_zero_profile"},
                         "|5-6": {"profile": "egress_lossy_zero_profile"}}},
}
# (breakout, hwsku, tables, PORT rows, speed, CABLE_LENGTH of the 30 m NIC cables)
SN5600 = [
    ("1x800G", "ACS-SN5600", SN5600_DYNAMIC, 65, "800000", "30m"),  # 64 cages + Ethernet512
    ("2x400G", "Mellanox-SN5600-O128", SN5600_DYNAMIC, 129, "400000", "30m"),
    ("4x200G", "Mellanox-SN5600-V256", SN5600_V256, 257, "200000", "40m"),  # pg_profile_lookup.ini: 5m 40m 300m
]


def port_rows(want: dict, ports: list[str]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for p in ports:
        for table, rows in want.items():
            out.setdefault(table, {}).update({p + suffix: fields for suffix, fields in rows.items()})
    return out


@pytest.mark.parametrize("breakout,hwsku,want,nports,speed,cable", SN5600, ids=[t[1] for t in SN5600])
@pytest.mark.parametrize("tier", [1, 2])
def test_sn5600_buffer_tables_are_what_its_templates_render(breakout, hwsku, want, nports, speed, cable, tier):
    doc = render(design("nvidia-sn5600", breakout, count=8 if tier == 1 else 300), tier=tier)
    meta = doc["DEVICE_METADATA"]["localhost"]
    assert meta["hwsku"] == hwsku and meta["type"] == {1: "BackEndToRRouter", 2: "BackEndLeafRouter"}[tier]
    # device/mellanox/x86_64-nvidia_sn5600-r0/<hwsku>/create_only_config_db_buffers.json
    assert meta["create_only_config_db_buffers"] == "true"
    assert doc["BUFFER_POOL"] == want["BUFFER_POOL"]
    assert doc["BUFFER_PROFILE"] == want["BUFFER_PROFILE"]
    active = cabled(doc)
    idle = [p for p in doc["PORT"] if p not in active]
    assert len(doc["PORT"]) == nports and active and idle and set(doc["DEVICE_NEIGHBOR"]) == set(active)
    rows = port_rows(want["port"], active)
    for table, entries in port_rows(want["idle"] or want["port"], idle).items():
        rows[table].update(entries)
    for table in ("BUFFER_PORT_INGRESS_PROFILE_LIST", "BUFFER_PORT_EGRESS_PROFILE_LIST", "BUFFER_PG", "BUFFER_QUEUE"):
        assert doc[table] == rows[table], table
    for table in ("DEFAULT_LOSSLESS_BUFFER_PARAMETER", "LOSSLESS_TRAFFIC_PATTERN"):
        assert doc.get(table) == want.get(table), table
    assert {doc["PORT"][p]["speed"] for p in active} == {speed}
    if tier == 1:  # the leaves' 30 m NIC cables
        assert set(doc["CABLE_LENGTH"]["AZURE"].values()) == {cable}
    assert validate_config_db(doc, memo=False) == []
    assert validate_config_db(doc) == []


def test_sn5600_dynamic_model_keeps_each_cable_length_exact():
    # buffermgrdyn's headroom (cfgmgr/buffer_headroom_mellanox.lua) reads any "<n>m"
    doc = render(design("nvidia-sn5600", "2x400G", extra="cabling: {nic_optic: DR, nic_leaf_m: 100}\n"))
    assert set(doc["CABLE_LENGTH"]["AZURE"].values()) == {"100m"}
    hb = sonic_buffers.hwsku_buffers(parse_design(design("nvidia-sn5600", "2x400G")).model_of_tier(1), "2x400G")
    assert hb.model == "dynamic" and sonic_buffers.lossless_profile(hb, "BackEndToRRouter", "400000", "100m") is None


def test_sn5600_v256_runs_the_traditional_model_and_its_lookup_file():
    # Mellanox-SN5600-V256/pg_profile_lookup.ini: 200000 40m 19456 19456 108544 0 (six columns);
    # 300m for a 100 m cable
    d = parse_design(design("nvidia-sn5600", "4x200G"))
    hb = sonic_buffers.hwsku_buffers(d.model_of_tier(1), "4x200G")
    assert hb.model == "traditional"
    assert sonic_buffers.lossless_profile(hb, "BackEndToRRouter", "200000", "40m") == (
        "pg_lossless_200000_40m_profile",
        {"pool": "ingress_lossless_pool", "xon": "19456", "xoff": "108544", "size": "19456", "dynamic_th": "0"})
    doc = render(design("nvidia-sn5600", "4x200G", extra="cabling: {nic_optic: DR, nic_leaf_m: 100}\n"))
    assert set(doc["CABLE_LENGTH"]["AZURE"].values()) == {"300m"}


def test_yang_checks_each_profile_of_a_profile_list():
    doc = render(design("nvidia-sn5600", "2x400G"))
    port = cabled(doc)[0]
    doc["BUFFER_PORT_INGRESS_PROFILE_LIST"][port] = {"profile_list": "ingress_lossless_profile,no_such_profile"}
    problems = validate_config_db(doc, memo=False)
    assert problems and {p.table for p in problems} == {"BUFFER_PORT_INGRESS_PROFILE_LIST"}


def test_compiled_sn5600_lab_validates(tmp_path, capsys):
    from pathlib import Path

    from railonly.cli import main

    lab = Path(__file__).resolve().parents[2] / "labs" / "h100-2k-sn5600.yml"
    assert main(["compile", str(lab), "-o", str(tmp_path / "o"), "-q"]) == 0
    doc = json.loads((tmp_path / "o" / "configs" / "h100-2k-sn5600-rail0-leaf0" / "config_db.json").read_text())
    assert doc["BUFFER_PG"][f"{cabled(doc)[0]}|3-4"] == {"profile": "NULL"}
    capsys.readouterr()
    assert main(["validate", str(tmp_path / "o")]) == 0, capsys.readouterr().out[-2000:]


def test_buffer_pool_and_profile_changes_need_a_config_reload():
    old = {"BUFFER_POOL": {"ingress_lossless_pool": {"size": "1", "type": "ingress", "mode": "dynamic"}},
           "BUFFER_PG": {"Ethernet0|0": {"profile": "ingress_lossy_profile"}}}
    new = {"BUFFER_POOL": {"ingress_lossless_pool": {"size": "2", "type": "ingress", "mode": "dynamic"}},
           "BUFFER_PG": {"Ethernet0|0": {"profile": "ingress_lossy_profile"}, "Ethernet4|0": {"profile": "ingress_lossy_profile"}}}
    _, why = ro._db_items(old, new)
    assert why == ["BUFFER_POOL|ingress_lossless_pool changes (config apply-patch refuses buffer pool and profile changes)"]
    _, why = ro._db_items({}, {"BUFFER_PROFILE": {"p": {"pool": "x", "size": "0"}}})
    assert why and why[0].startswith("BUFFER_PROFILE|p changes")
    # the per-port rows and the dynamic model's parameters are a patch: apply-patch takes them
    rows = {"BUFFER_PG": {"Ethernet0|3-4": {"profile": "NULL"}}, "BUFFER_QUEUE": {"Ethernet0|0-2": {"profile": "q_lossy_profile"}},
            "BUFFER_PORT_INGRESS_PROFILE_LIST": {"Ethernet0": {"profile_list": "ingress_lossless_profile"}},
            "BUFFER_PORT_EGRESS_PROFILE_LIST": {"Ethernet0": {"profile_list": "egress_lossless_profile"}},
            "DEFAULT_LOSSLESS_BUFFER_PARAMETER": {"AZURE": {"default_dynamic_th": "0"}},
            "LOSSLESS_TRAFFIC_PATTERN": {"AZURE": {"mtu": "1024", "small_packet_percentage": "50"}}}
    items, why = ro._db_items({}, rows)
    assert why == [] and len(items) == 6


def test_catalog_refuses_sn5600_buffer_rows_that_name_no_profile(tmp_path):
    from pathlib import Path

    from railonly.fabric.input.problems import InputError
    from railonly.fabric.platforms.catalog import load_platform_file

    shipped = Path(sonic_buffers.__file__).resolve().parents[1] / "platforms" / "data" / "switches" / "nvidia-sn5600.yaml"
    text = shipped.read_text()
    bad = tmp_path / "sn5600-bad.yaml"
    bad.write_text(text.replace('"*|0-2": {profile: q_lossy_profile}', '"*|0-2": {profile: q_lossi_profile}', 1))
    with pytest.raises(InputError) as e:
        load_platform_file(str(bad))
    assert "q_lossi_profile" in str(e.value)
    # a traditional-model hwsku needs its pg_profile_lookup.ini (buffermgrd reads it)
    start = text.index("      pg_profile_lookup:\n        source: {repo: sonic-net/sonic-buildimage, commit: 086b03bd70f9e211aaaf5f6aefe0790b508d2a94, path: device/mellanox/x86_64-nvidia_sn5600-r0/Mellanox-SN5600-V256/pg_profile_lookup.ini}")
    end = text.index("      t0:", start)
    bad.write_text(text[:start] + text[end:])
    with pytest.raises(InputError) as e:
        load_platform_file(str(bad))
    assert "pg_profile_lookup" in str(e.value)


def test_catalog_buffer_metadata_cannot_set_other_device_metadata(tmp_path):
    from pathlib import Path

    from railonly.fabric.input.problems import InputError
    from railonly.fabric.platforms.catalog import load_platform_file

    shipped = Path(sonic_buffers.__file__).resolve().parents[1] / "platforms" / "data" / "switches" / "nvidia-sn5600.yaml"
    bad = tmp_path / "sn5600-meta.yaml"
    bad.write_text(shipped.read_text().replace('fields: {create_only_config_db_buffers: "true"}', 'fields: {hostname: evil}', 1))
    with pytest.raises(InputError) as e:
        load_platform_file(str(bad))
    assert "hostname" in str(e.value)


def test_cable_longer_than_every_profile_length_is_named_at_compile():
    # 150 m NIC cables on Arista-7060X6-64PE-O128S2 fit its 150m profile; on a generic switch
    # (SONiC's usual 5m/40m/300m) 400 m fits none: buffermgrd creates no lossless PG there
    from railonly.fabric.compiler import summary
    from railonly.fabric.devices.sonic_platform import unprotected_cable_tiers

    fits = parse_design(design("arista-7060x6-64pe", "2x400G", extra="cabling: {nic_optic: DR, nic_leaf_m: 150}\n"))
    assert unprotected_cable_tiers(fits, 1) == []
    too_long = design("arista-7060x6-64pe", "2x400G", extra="cabling: {nic_optic: DR, nic_leaf_m: 151}\n")
    (note,) = unprotected_cable_tiers(parse_design(too_long), 1)
    assert note.startswith("NIC-leaf cables are 151 m (cabling.nic_leaf_m)") and "leaf switches: up to 150 m" in note
    assert "cabling.nic_leaf_m to at most 150" in note and "151m row" in note
    assert set(render(too_long)["CABLE_LENGTH"]["AZURE"].values()) == {"151m"}  # what the note is about
    # a generic 2-tier fabric: leaf-spine 400 m is past 300m at both ends; the dynamic SN5600 takes any length
    generic = parse_design(design(None, None, count=300, extra="cabling: {leaf_spine_m: 400}\n"))
    fab = build_fabric(generic)
    (note,) = unprotected_cable_tiers(generic, fab.tiers)
    assert "leaf and spine switches: up to 300 m" in note
    assert f"  note      {note}" in summary(fab)
    assert unprotected_cable_tiers(parse_design(design("nvidia-sn5600", "2x400G", count=300,
                                                       extra="cabling: {leaf_spine_m: 400}\n")), 2) == []
    eos = design(None, None, count=300, extra="cabling: {leaf_spine_m: 400}\n").replace("platform: sonic", "platform: eos")
    assert unprotected_cable_tiers(parse_design(eos), 2) == []


def test_validate_refuses_a_cable_length_the_hwsku_has_no_profile_for(tmp_path, capsys):
    # Arista-7060X6-64PE-O128S2 lists 5m, 40m and 150m: a 100 m cable's CABLE_LENGTH is 150m (or
    # its own 100m, accepted as the docs say). 300m, SONiC's usual fit, is no row of that file:
    # buffermgrd would create no lossless PG, yet validate accepted it
    from railonly.cli import main
    from railonly.fabric.validate.crosscheck import _cable_length_fits

    assert _cable_length_fits("150m", 100, "Arista-7060X6-64PE-O128S2", 400)
    assert not _cable_length_fits("300m", 100, "Arista-7060X6-64PE-O128S2", 400)
    assert _cable_length_fits("300m", 100, "DellEMC-Z9664f-O64", 400)  # its file lists 300m
    assert _cable_length_fits("300m", 100, "railonly-64x400G", 400)  # SONiC's usual lengths
    path = tmp_path / "d.yml"
    path.write_text(design("arista-7060x6-64pe", "2x400G", extra="cabling: {nic_optic: DR, nic_leaf_m: 100}\n"))
    out = tmp_path / "o"
    assert main(["compile", str(path), "-o", str(out), "-q"]) == 0, capsys.readouterr().err
    cfg_path = next(out.glob("configs/*-leaf0/config_db.json"))
    cfg = json.loads(cfg_path.read_text())
    port = next(iter(cfg["CABLE_LENGTH"]["AZURE"]))
    cfg["CABLE_LENGTH"]["AZURE"][port] = "300m"
    cfg_path.write_text(json.dumps(cfg, indent=4, sort_keys=True) + "\n")
    capsys.readouterr()
    assert main(["validate", str(out), "-q", "--no-manifest"]) == 1
    assert f"CABLE_LENGTH|AZURE|{port} says 300m, cable" in capsys.readouterr().out


def test_the_default_port_rows_and_the_catalog_check_are_one_fact():
    # the catalog checked a topology for the profiles of its own list while the renderer wrote the
    # rows of another (sonic_buffers.PG_DEFAULT/QUEUE_DEFAULT): a row added to one would name a
    # profile the other never required
    from railonly.fabric.platforms import catalog

    assert sonic_buffers.PG_DEFAULT is catalog.PG_DEFAULT and sonic_buffers.QUEUE_DEFAULT is catalog.QUEUE_DEFAULT
    assert set(catalog.PORT_BUFFER_PROFILES) == {*catalog.PG_DEFAULT.values(), *catalog.QUEUE_DEFAULT.values()}


def test_an_hwsku_whose_lookup_file_lists_no_row_is_named_at_any_length():
    # Arista-7060X6-64PE (1x800G) ships a BALANCED pg_profile_lookup.ini with no row: buffermgrd
    # creates no lossless PG at any cable length. The note said nothing (SONiC's usual 5m/40m/300m
    # stood in for the missing rows) and CABLE_LENGTH named a length the file does not list
    from railonly.fabric.devices.sonic_platform import unprotected_cable_tiers

    text = design("arista-7060x6-64pe", "1x800G")
    (note,) = unprotected_cable_tiers(parse_design(text), 1)
    assert "leaf switches: none at this speed" in note and "Add a 30m row" in note and "at most" not in note
    assert set(render(text)["CABLE_LENGTH"]["AZURE"].values()) == {"30m"}
