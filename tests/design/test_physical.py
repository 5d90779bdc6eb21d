"""One length per cable, one name per device: cabling.csv, netbox_cables.csv, bom.csv and both
ends' CABLE_LENGTH (SONiC) or description (EOS) agree for every cable of every example design."""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from railonly.fabric.compiler import compile_design
from railonly.fabric.cost.bom import price
from railonly.fabric.cost.inventory import from_fabric
from railonly.fabric.cost.prices import default_prices, parse_prices, default_text
from railonly.fabric.design import physical
from railonly.fabric.design.design import load_design, parse_design
from railonly.fabric.graph.build import build_fabric
from railonly.fabric.input.problems import InputError
from railonly.fabric.outputs import cabling

from ..conftest import REPO

EXAMPLES = sorted(p for p in (REPO / "labs").glob("*.yml") if "32k" not in p.name)  # 32k: see the pure test below
# A mid-size three-tier rail with lengths of its own, on EOS spines and cores (the description carries them).
MID = """name: mid
hb_domain: {size: 2, count: 100}
switch: {radix: 8, platform_by_tier: {2: eos, 3: eos}}
cabling: {nic_leaf_m: 7, leaf_spine_m: 42, spine_core_m: 650}
"""


def _csv(files, name):
    return list(csv.DictReader(io.StringIO(files[name].decode())))


def _profile_lengths() -> set[int]:
    """Every cable length a lossless PG profile is published for: SONiC's usual three, and each
    catalog hwsku's pg_profile_lookup.ini rows."""
    from railonly.fabric.devices.qos import PG_PROFILE_CABLE_M
    from railonly.fabric.platforms.catalog import shipped

    return set(PG_PROFILE_CABLE_M) | {int(r.cable[:-1]) for p in shipped().values() for hb in p.buffers.values()
                                      for r in hb.pg_profiles}


def _port_lengths(files: dict[str, bytes]) -> dict[tuple[str, str], int]:
    """(switch, port) -> metres, read back from every switch config the way a switch would
    (SONiC's CABLE_LENGTH, EOS's interface description)."""
    out = {}
    for path, data in files.items():
        parts = path.split("/")
        if len(parts) != 3 or parts[0] != "configs":
            continue
        sw = parts[1]
        if parts[2] == "config_db.json":
            for port, length in json.loads(data)["CABLE_LENGTH"]["AZURE"].items():
                out[(sw, port)] = int(re.fullmatch(r"(\d+)m", length).group(1))
        elif parts[2] == "startup-config":
            iface = None
            for line in data.decode().splitlines():
                if line.startswith("interface "):
                    iface = line.split()[1]
                elif iface and (m := re.fullmatch(r"   description \S+ \S+ (\d+)m", line)):
                    out[(sw, iface)] = int(m.group(1))
    return out


def _designs():
    return [pytest.param(lambda p=p: load_design(str(p)), id=p.stem,
                         marks=[pytest.mark.slow] if p.stem == "nvl72" else []) for p in EXAMPLES] + [
        pytest.param(lambda: parse_design(MID, "mid.yml"), id="mid-3tier-eos")]


@pytest.mark.parametrize("make", _designs())
def test_every_cable_has_one_length_everywhere(make):
    design = make()
    fab, files = compile_design(design)
    want = {lk.cable_id: (lk, physical.cable_length_m(design, lk.tier)) for lk in fab.cables()}
    rows = {r["cable_id"]: r for r in _csv(files, "cabling.csv")}
    netbox = {r["label"]: r for r in _csv(files, "netbox_cables.csv")}
    ports, profiles = _port_lengths(files), _profile_lengths()
    fabric = {lk["cable_id"]: lk for lk in json.loads(files["fabric.json"])["links"] if lk.get("cable_id")}
    assert rows.keys() == netbox.keys() == want.keys() == fabric.keys()
    for cid, (lk, metres) in want.items():
        r, nb = rows[cid], netbox[cid]
        assert int(r["length_m"]) == int(nb["length"]) == fabric[cid]["length_m"] == metres, cid
        assert nb["length_unit"] == "m"
        for end in (lk.a, lk.b):  # both ends that are switch ports
            if fab.node(end.node).role == "switch":
                got = ports[(end.node, end.port)]
                if fab.node(end.node).platform == "eos":
                    assert got == metres, (cid, end.node, end.port)
                else:  # SONiC's CABLE_LENGTH keys its lossless PG: the cable's, or a published profile's covering it
                    assert got == metres or (got > metres and got in profiles), (cid, end.node, end.port, got)
        assert r["media"] == physical.cable_media(design, lk.gbps, lk.tier)  # the optic type, no length in it
    # the BOM's fibre lines count exactly these lengths
    fibre = Counter()
    for r in _csv(files, "bom.csv"):
        if r["category"] == "cable":
            fibre[int(r["length_m"])] += int(r["quantity"])
            assert r["model"].endswith(f" {r['length_m']}m")
    assert fibre == Counter(m for _, m in want.values())
    # a switch port that carries no cable has no cable length
    assert len(ports) == sum(1 for lk, _ in want.values() for e in (lk.a, lk.b) if fab.node(e.node).role == "switch")


@pytest.mark.parametrize("make", _designs())
def test_nic_ends_are_named_as_the_host_configs_name_them(make):
    design = make()
    fab, files = compile_design(design)
    hosts = {}
    for path, data in files.items():
        if path.startswith("hosts/") and path.endswith("/netplan.yaml"):
            server = path.split("/")[1]
            hosts[server] = set(re.findall(r"^    (rail\d+):$", data.decode(), re.M))
    interfaces = {(r["device"], r["name"]): r for r in _csv(files, "netbox_interfaces.csv")}
    devices = {r["name"]: r for r in _csv(files, "netbox_devices.csv")}
    nic_rows = [r for r in _csv(files, "cabling.csv") if r["tier"] == "1"]
    assert nic_rows
    for r in nic_rows:
        gpu = fab.node(r["a_gpu"])  # the lab's per-GPU node stays the GPU's
        host = physical.host_name(f"hb{gpu.hb_domain}", gpu.rank, design.gpus_per_host, design.hb_size)
        assert r["a_device"] == host and r["a_port"] == f"rail{gpu.rank}"
        assert r["a_port"] in hosts[r["a_device"]], "host config has no NIC of that name"
        assert (r["a_device"], r["a_port"]) in interfaces and (r["b_device"], r["b_port"]) in interfaces
        assert devices[r["a_device"]]["role"] == "gpu-server"
        assert cabling.graph_ends(r)[0] == (gpu.name, "eth1")
    # one NetBox device per host (server or tray) and switch, never per GPU
    assert len(devices) == len(fab.hbs) * (design.hb_size // design.gpus_per_host) + len(fab.switches)
    assert not any("-gpu" in name for name in devices)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gh200-32k", "dgx-h100-32k"])
def test_big_designs_lengths_from_the_graph_without_writing(name):
    """The 32k designs: the pure functions on the full graph (no configs rendered)."""
    design = load_design(str(REPO / "labs" / f"{name}.yml"))
    fab = build_fabric(design)
    rows = cabling.rows(fab)
    length_col = cabling.COLUMNS.index("length_m")
    by_tier = Counter((r[cabling.COLUMNS.index("tier")], r[length_col]) for r in rows)
    assert by_tier == Counter((lk.tier, design.cable_length_m[lk.tier]) for lk in fab.cables())
    bom = price(from_fabric(fab), default_prices())
    fibre = {r.length_m: r.quantity for r in bom.rows if r.category == "cable"}
    assert sum(fibre.values()) == len(rows)
    assert Counter(r[length_col] for r in rows) == Counter(fibre)


def test_default_lengths_are_within_each_optic_reach():
    for tier, (_, _, default) in physical.TIERS.items():
        assert 1 <= default <= physical.OPTICS[tier].reach_m


def test_a_price_book_that_still_gives_lengths_is_told_where_they_went():
    text = default_text().replace("1: {type: mmf-om4, price_usd", "1: {type: mmf-om4, length_m: 30, price_usd")
    with pytest.raises(InputError) as exc:
        parse_prices(text, "old.yml")
    msg = str(exc.value)
    assert "old.yml:" in msg and "cables.1.length_m" in msg and "cabling.nic_leaf_m" in msg


def test_overridden_lengths_reach_every_artifact():
    design = parse_design(MID.replace("leaf_spine_m: 42", "leaf_spine_m: 43"), "mid.yml")
    _, files = compile_design(design)
    assert b",43,m\n" in files["netbox_cables.csv"] and b",43," in files["cabling.csv"]
    assert any(b" 43m\n" in data for path, data in files.items() if path.endswith("/startup-config"))
    readme = files["README.md"].decode()
    assert "| 43 m | `cabling.leaf_spine_m` |" in readme


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(size=st.sampled_from([1, 2, 4]), count=st.integers(1, 40), radix=st.sampled_from([4, 8]),
       topology=st.sampled_from(["rail-only", "rail-optimized"]),
       nic=st.integers(1, 50), leaf=st.integers(1, 500), core=st.integers(1, 2000))
def test_any_design_and_lengths_pass_the_plant_check(size, count, radix, topology, nic, leaf, core):
    """Property: whatever the design and lengths, the files compile writes agree with each other
    (validate's plant check, the same reader `railonly validate` uses) and carry the lengths given."""
    from railonly.fabric.validate import plant, validator as run

    text = (f"name: p\ntopology: {topology}\nhb_domain: {{size: {size}, count: {count}}}\nswitch: {{radix: {radix}}}\n"
            f"cabling: {{nic_leaf_m: {nic}, leaf_spine_m: {leaf}, spine_core_m: {core}}}\n")
    try:
        design = parse_design(text)
    except InputError:
        return  # beyond three tiers at this radix
    fab, files = compile_design(design)
    read = run.memory_reader(files)
    fabric = run.load_fabric(read, "<memory>")
    assert all(r.passed for r in plant.plant(fabric, read))
    given_lengths = {1: nic, 2: leaf, 3: core}
    assert all(lk.length_m == given_lengths[lk.tier] for lk in fabric.cables())
