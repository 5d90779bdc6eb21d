"""The platform catalog (docs/platforms.md): published port maps port for port, breakout
names and speed forms, one optic per cage in the BOM, every platform x breakout compiled
and validated, contradictions and hostile platform files refused with exit 2."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

import pytest

from railonly.cli import main
from railonly.fabric.cost import bom
from railonly.fabric.cost.inventory import from_design, from_fabric
from railonly.fabric.cost.prices import default_prices
from railonly.fabric.design.design import parse_design
from railonly.fabric.devices import eos_render as eos, sonic_render as sonic
from railonly.fabric.devices.device import switch_view
from railonly.fabric.devices.qos import plan as qos_plan
from railonly.fabric.graph.build import build_fabric
from railonly.fabric.outputs import netbox
from railonly.fabric.platforms import catalog

from ..conftest import REPO

DATA = Path(__file__).parent / "data"
CATALOG = catalog.shipped()
# every (model, breakout, OS) the catalog offers: a platform file added later is checked too
COMBOS = [(m, b, o) for m, p in sorted(CATALOG.items()) for b in p.breakouts for o in p.os]


def published_rows(path: Path) -> dict[str, dict[str, str]]:
    """A port_config.ini as SONiC reads it: the `# name ...` header names the columns."""
    cols, rows = None, {}
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            words = line.lstrip("#").split()
            if words[:1] == ["name"]:
                cols = words
            continue
        if line.strip():
            v = dict(zip(cols, line.split()))
            rows[v.pop("name")] = v
    return rows


def design(model: str, breakout: str, count: int = 16, size: int = 8, extra: str = "") -> str:
    return (f"name: t\nhb_domain: {{size: {size}, count: {count}}}\n"
            f"switch: {{model: {model}, breakout: {breakout}}}\n{extra}")


def leaf(fab):
    return next(s for s in fab.switches if s.tier == 1)


def test_catalog_has_the_five_platforms_each_with_sources():
    assert {"nvidia-sn5600", "dell-z9864f", "dell-z9664f", "arista-7060x6-64pe", "arista-7060dx5-64s"} <= set(CATALOG)
    for p in CATALOG.values():
        assert p.sources and p.management_port
        for b in p.breakouts.values():
            if "sonic" in p.os:
                src = b.source
                assert src["repo"] == "sonic-net/sonic-buildimage" and len(src["commit"]) == 40 and src["path"]
                assert not src["derived"] or "how" in src, "a derived port map says how"


def test_sn5600_2x400g_port_table_is_the_published_map_port_for_port():
    d = parse_design(design("nvidia-sn5600", "2x400G", count=256))
    assert (d.radix, d.nic_gbps, d.platform) == (128, 400, "sonic")
    fab = build_fabric(d)
    doc, _ = sonic.render_switch(fab, leaf(fab), qos_plan(d))
    published = published_rows(DATA / "Mellanox-SN5600-O128.port_config.ini")
    assert set(doc["PORT"]) == set(published)
    for name, want in published.items():
        got = doc["PORT"][name]
        assert {k: got[k] for k in want} == want, name
    meta = doc["DEVICE_METADATA"]["localhost"]
    assert meta["hwsku"] == "Mellanox-SN5600-O128" and meta["platform"] == "x86_64-nvidia_sn5600-r0"
    assert doc["PORT"]["Ethernet512"]["admin_status"] == "down"  # the SFP port past the cages, as defined
    assert doc["BREAKOUT_CFG"]["Ethernet0"] == {"brkout_mode": "2x400G[200G,100G,50G,40G,25G,10G]"}


def test_sn5600_names_agree_across_configs_cabling_and_netbox(tmp_path):
    rc = main(["compile", str(REPO / "labs" / "h100-2k-sn5600.yml"), "-o", str(tmp_path / "o"), "-q"])
    assert rc == 0
    out = tmp_path / "o"
    cab = list(csv.DictReader(io.StringIO((out / "cabling.csv").read_text())))
    ports = {r[f"{end}_port"] for r in cab for end in "ab" if r[f"{end}_device"] == "h100-2k-sn5600-rail0-leaf0"}
    cfg = json.loads((out / "configs" / "h100-2k-sn5600-rail0-leaf0" / "config_db.json").read_text())
    cabled = {n for n, p in cfg["PORT"].items() if p["admin_status"] == "up"}
    assert ports == cabled and "Ethernet4" in ports  # etp1b: the second 400G port of cage 1
    nb = list(csv.DictReader(io.StringIO((out / "netbox_interfaces.csv").read_text())))
    assert ports <= {r["name"] for r in nb if r["device"] == "h100-2k-sn5600-rail0-leaf0"}
    media = {r["media"] for r in cab if r["tier"] == "1"}
    assert media == {"400G-SR4 MMF"}


# NetBox's InterfaceTypeChoices slugs for these cages (netbox-community/netbox,
# netbox/dcim/choices.py at 43fe81f9e833228c9869f7ddadb67e6c5f145060, v4.6.8)
NETBOX_CAGE_TYPES = {"400gbase-x-osfp", "800gbase-x-osfp", "100gbase-x-qsfpdd", "200gbase-x-qsfpdd",
                     "400gbase-x-qsfpdd", "800gbase-x-qsfpdd"}


@pytest.mark.parametrize("model,breakout,want", [
    ("dell-z9664f", "1x400G", "400gbase-x-qsfpdd"),
    ("arista-7060dx5-64s", "1x400G", "400gbase-x-qsfpdd"),
    ("arista-7060dx5-64s", "2x200G", "200gbase-x-qsfpdd"),
    ("arista-7060dx5-64s", "4x100G", "100gbase-x-qsfpdd"),
    ("nvidia-sn5600", "2x400G", "400gbase-x-osfp"),
    ("nvidia-sn5600", "1x800G", "800gbase-x-osfp"),
])
def test_netbox_switch_ports_are_typed_by_the_platforms_cage(model, breakout, want):
    """A QSFP-DD switch's ports are NetBox QSFP-DD interfaces, not OSFP: the type names the
    cage an optic goes in, as the BOM's cage optic does."""
    fab = build_fabric(parse_design(design(model, breakout, count=4)))
    sw = leaf(fab)
    rows = list(csv.reader(io.StringIO(netbox.switch_interfaces(fab, sw, switch_view(fab, sw)))))
    assert rows and {r[netbox.INTERFACE_COLUMNS.index("type")] for r in rows} == {want}
    assert want in NETBOX_CAGE_TYPES


def test_7060x6_2x400g_breakout_names_speed_form_and_one_twin_port_optic_per_cage():
    d = parse_design(design("arista-7060x6-64pe", "2x400G", count=64))
    assert (d.radix, d.platform) == (128, "eos")
    fab = build_fabric(d)
    sw = leaf(fab)
    cfg, files = eos.render_switch(fab, sw, qos_plan(d))
    text = next(iter(files.values()))
    assert "interface Ethernet1/1\n" in text and "interface Ethernet1/5\n" in text and "interface Ethernet64/5\n" in text
    assert {e["speed"] for e in cfg["ethernets"]} == {"400g-4"}
    # 8 rails of 64 GPUs: one 128-port leaf per rail, 64 NIC ports = 32 cages, each ONE 2xSR4 optic
    b = bom.price(from_fabric(fab), default_prices())
    rows = {r.model: r.quantity for r in b.rows if r.category == "transceiver"}
    assert rows == {"800G-2xSR4": 8 * 32}
    nic = {r.model: r.quantity for r in b.rows if r.category == "nic-optic"}
    assert nic == {"400G-SR4": 8 * 64}


def test_a_half_used_cage_still_takes_one_optic():
    d = parse_design(design("arista-7060x6-64pe", "2x400G", count=63))  # 63 GPUs per leaf: 32 cages
    b = bom.price(from_fabric(build_fabric(d)), default_prices())
    assert {r.model: r.quantity for r in b.rows if r.category == "transceiver"} == {"800G-2xSR4": 8 * 32}


def test_two_tier_counts_cages_at_both_ends_and_the_fast_path_agrees():
    d = parse_design((REPO / "labs" / "h100-2k-7060x6.yml").read_text())
    exact, fast = from_fabric(build_fabric(d)), from_design(d)
    assert exact.key() == fast.key()
    # 2,048 NIC cables = 1,024 leaf cages; 2,048 leaf-spine cables = 1,024 cages at each end
    assert exact.cage_optics == fast.cage_optics == {"800G-2xDR4": 3072}
    assert exact.transceiver_count == 3072 + 2048


@pytest.mark.parametrize("model,breakout,os_name", COMBOS, ids=lambda x: str(x))
def test_every_platform_and_breakout_compiles_and_validates(model, breakout, os_name, tmp_path, capsys):
    p = CATALOG[model]
    # two tiers on the 64-port breakouts (70 domains > 64 ports), a partly filled leaf on the rest
    count = 70 if p.radix(breakout) == 64 else 3
    path = tmp_path / "d.yml"
    path.write_text(f"name: t\nhb_domain: {{size: 2, count: {count}}}\n"
                    f"switch: {{model: {model}, breakout: {breakout}, platform: {os_name}}}\n")
    out = tmp_path / "o"
    assert main(["compile", str(path), "-o", str(out), "-q"]) == 0, capsys.readouterr().err
    assert main(["validate", str(out), "-q"]) == 0, capsys.readouterr().out
    names = {r["b_port"] for r in csv.DictReader(io.StringIO((out / "cabling.csv").read_text())) if r["tier"] == "1"}
    assert names and names <= {p.port_name(breakout, os_name, i) for i in range(p.radix(breakout))}
    if os_name == "sonic":
        cfg = json.loads((out / "configs" / "t-rail0-leaf0" / "config_db.json").read_text())
        assert cfg["DEVICE_METADATA"]["localhost"]["hwsku"] == p.breakouts[breakout].hwsku
        assert len(cfg["PORT"]) == len(p.breakouts[breakout].rows)
    else:
        text = (out / "configs" / "t-rail0-leaf0" / "startup-config").read_text()
        assert f"   speed {p.breakouts[breakout].eos_speed}\n" in text


CONTRADICTIONS = {
    "nic-speed": ("switch: {model: nvidia-sn5600, breakout: 2x400G}\nnic: {gbps: 200}", "nic.gbps: 200 contradicts", "4x200G"),
    "radix": ("switch: {model: nvidia-sn5600, breakout: 2x400G, radix: 64}", "switch.radix: 64 contradicts", "leave switch.radix out"),
    "platform": ("switch: {model: nvidia-sn5600, platform: eos}", "switch.platform: eos contradicts", "switch.platform: sonic"),
    "tier-platform": ("switch: {model: nvidia-sn5600, platform_by_tier: {2: eos}}", "platform_by_tier.2: eos contradicts", "use sonic"),
    "breakout": ("switch: {model: nvidia-sn5600, breakout: 8x100G}", "does not support breakout 8x100G", "1x800G, 2x400G, 4x200G"),
    "unknown-model": ("switch: {model: nvidia-sn560}", "unknown switch model", "nvidia-sn5600"),
    "breakout-generic": ("switch: {breakout: 2x400G}", "needs a switch.model", "nvidia-sn5600"),
    "tier-radix": ("switch: {model: nvidia-sn5600, breakout: 1x800G, model_by_tier: {2: dell-z9664f}}",
                   "model_by_tier.2: dell-z9664f does not support breakout 1x800G", "1x400G"),
    "dac-reach": ("cabling: {nic_optic: DAC, nic_leaf_m: 30}", "cabling.nic_leaf_m: must be from 1 to 3", "AOC (30 m)"),
    "sr-reach": ("switch: {model: nvidia-sn5600}\ncabling: {nic_leaf_m: 80}", "must be from 1 to 50", "50 m reach of its SR"),
}


@pytest.mark.parametrize("case", sorted(CONTRADICTIONS))
def test_contradictions_exit_2_naming_the_key_and_a_fix(case, tmp_path, capsys):
    body, message, fix = CONTRADICTIONS[case]
    path = tmp_path / "d.yml"
    path.write_text(f"name: t\nhb_domain: {{size: 8, count: 16}}\n{body}\n")
    assert main(["compile", str(path), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert message in err and fix in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_your_own_platform_file_is_used(tmp_path, capsys):
    text = (REPO / "fabric" / "platforms" / "data" / "switches" / "dell-z9664f.yaml").read_text().replace("model: dell-z9664f", "model: acme-25t")
    (tmp_path / "acme.yaml").write_text(text)
    path = tmp_path / "d.yml"
    path.write_text("name: t\nhb_domain: {size: 2, count: 4}\nswitch: {model: acme-25t, platform_files: [acme.yaml]}\n")
    assert main(["compile", str(path), "-o", str(tmp_path / "o"), "-q"]) == 0, capsys.readouterr().err
    cfg = json.loads((tmp_path / "o" / "configs" / "t-rail0-leaf0" / "config_db.json").read_text())
    assert cfg["DEVICE_METADATA"]["localhost"]["hwsku"] == "DellEMC-Z9664f-O64"


def test_your_own_platform_files_profile_lengths_compile_and_validate(tmp_path, capsys):
    # a user's hwsku whose pg_profile_lookup.ini lists 5m and 100m: a 30 m cable gets `100m`.
    # The self-check knew only the shipped catalog's lengths and failed it ("This is a railonly
    # bug"); a length shorter than the cable still fails, as on a shipped hwsku
    text = (REPO / "fabric" / "platforms" / "data" / "switches" / "dell-z9864f.yaml").read_text()
    text = _z(text, "model: dell-z9864f", "model: acme-z64").replace("Dell-Z9864f-O64", "Acme-Z64-O64")
    text = "\n".join(ln for ln in text.splitlines() if " 300m " not in ln).replace(" 40m ", " 100m ") + "\n"
    (tmp_path / "acme.yaml").write_text(text)
    path = tmp_path / "d.yml"
    path.write_text("name: t\nhb_domain: {size: 8, count: 8}\n"
                    "switch: {model: acme-z64, breakout: 2x400G, platform_files: [acme.yaml]}\nrail: {mode: routed}\n")
    out = tmp_path / "o"
    assert main(["compile", str(path), "-o", str(out), "-q"]) == 0, capsys.readouterr().err
    cfg_path = out / "configs" / "t-rail0-leaf0" / "config_db.json"
    cfg = json.loads(cfg_path.read_text())
    assert cfg["DEVICE_METADATA"]["localhost"]["hwsku"] == "Acme-Z64-O64"
    assert set(cfg["CABLE_LENGTH"]["AZURE"].values()) == {"100m"}
    assert main(["validate", str(out), "-q", "--no-manifest"]) == 0
    port = next(iter(cfg["CABLE_LENGTH"]["AZURE"]))
    cfg["CABLE_LENGTH"]["AZURE"][port] = "20m"  # shorter than the 30 m cable: too little headroom
    cfg_path.write_text(json.dumps(cfg, indent=4, sort_keys=True) + "\n")
    assert main(["validate", str(out), "-q", "--no-manifest"]) == 1
    assert f"CABLE_LENGTH|AZURE|{port} says 20m, cable" in capsys.readouterr().out


def test_your_own_buffer_facts_under_a_shipped_hwsku_name_are_refused(tmp_path, capsys):
    # validate knows a shipped hwsku's pg_profile_lookup by its name (an OUTDIR carries no design):
    # other rows under that name made compile's self-check fail "as a railonly bug"
    text = (REPO / "fabric" / "platforms" / "data" / "switches" / "dell-z9864f.yaml").read_text()
    text = _z(text, "model: dell-z9864f", "model: acme-z64").replace(" 40m ", " 100m ")
    (tmp_path / "acme.yaml").write_text(text)
    path = tmp_path / "d.yml"
    path.write_text("name: t\nhb_domain: {size: 8, count: 8}\n"
                    "switch: {model: acme-z64, breakout: 2x400G, platform_files: [acme.yaml]}\n")
    assert main(["compile", str(path), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "sonic.buffers.Dell-Z9864f-O64 differs from the shipped catalog's facts" in err and "a name of its own" in err
    assert "Traceback" not in err and not (tmp_path / "o").exists()


@pytest.mark.parametrize("used", [True, False])
def test_an_outdir_holding_a_platform_file_is_refused_and_the_file_kept(used, tmp_path, capsys):
    """Replacing that OUTDIR would delete the file, used by a tier or only listed, even with --force."""
    out = tmp_path / "o"
    assert main(["compile", str(REPO / "labs" / "mini-routed.yml"), "-o", str(out), "-q"]) == 0
    text = (REPO / "fabric" / "platforms" / "data" / "switches" / "dell-z9664f.yaml").read_text().replace("model: dell-z9664f", "model: acme-25t")
    (out / "acme.yaml").write_text(text)
    path = tmp_path / "d.yml"
    model = "acme-25t" if used else "dell-z9664f"
    path.write_text(f"name: t\nhb_domain: {{size: 2, count: 4}}\nswitch: {{model: {model}, platform_files: [o/acme.yaml]}}\n")
    assert main(["compile", str(path), "-o", str(out), "--force"]) == 2
    err = capsys.readouterr().err
    assert "acme.yaml, which this command reads" in err and (out / "acme.yaml").read_text() == text


def _z(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


BASE = (REPO / "fabric" / "platforms" / "data" / "switches" / "dell-z9664f.yaml").read_text().replace("model: dell-z9664f", "model: acme")
HOSTILE = {
    "bad-row": (_z(BASE, '"Ethernet0   5,6,7,8', '"Ethernet0;rm 5,6,7,8'), "ports[0]", "name"),
    # Arabic-Indic 0 and 5: Python's \d takes them, int() reads them, SONiC does not
    "other-digits-name": (_z(BASE, '"Ethernet0   5,6,7,8', '"Ethernet\u0660   5,6,7,8'), "ports[0]", "port_config.ini row"),
    "other-digits-breakout": (_z(BASE, "  1x400G:", "  1x\u0664\u0660\u0660G:"), "breakouts", "1x\u0664\u0660\u0660G"),
    "other-digits-lanes": (_z(BASE, '"Ethernet0   5,6,7,8', '"Ethernet0   \u0665,6,7,8'), "ports[0]", "port_config.ini row"),
    "missing-cage": (_z(BASE, '        - "Ethernet0 ', '        - "#Ethernet0 '), "breakouts.1x400G.sonic.ports", ""),
    "wrong-speed": (_z(BASE, "fourhundredGigE1/1  1  400000", "fourhundredGigE1/1  1  100000"),
                    "ports[0]", "Mbit/s"),
    "bad-breakout": (_z(BASE, "  1x400G:", "  3x400G:"), "breakouts.3x400G", "does not split"),
    "bad-eos-speed": (_z(BASE, "eos_speed: 400g-8", "eos_speed: 400g-3"), "eos_speed", "400g-8"),
    "alias-bomb": ("a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(f"b{i}: &b{i} [*{'a' if i == 0 else f'b{i-1}'}] \n" for i in range(8))
                   + "c: [" + ", ".join(["*b7"] * 200) + "]\n", "", ""),
    "not-yaml": ("model: [\n", "", "YAML"),
    "duplicate-model": (BASE.replace("model: acme", "model: nvidia-sn5600"), "platform_files[0]", "already in the catalog"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_platform_file_exits_2_naming_file_and_field(case, tmp_path, capsys):
    text, field, words = HOSTILE[case]
    (tmp_path / "p.yaml").write_text(text)
    path = tmp_path / "d.yml"
    path.write_text("name: t\nhb_domain: {size: 2, count: 4}\nswitch: {model: acme, platform_files: [p.yaml]}\n")
    assert main(["compile", str(path), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "p.yaml" in err and field in err and words in err, err
    assert not (tmp_path / "o").exists()


def test_platform_file_that_is_a_link_or_a_fifo_is_refused(tmp_path, capsys):
    (tmp_path / "real.yaml").write_text(BASE)
    os.symlink(tmp_path / "real.yaml", tmp_path / "link.yaml")
    os.mkfifo(tmp_path / "fifo.yaml")
    for name, words in (("link.yaml", "symbolic link"), ("fifo.yaml", "FIFO")):
        path = tmp_path / "d.yml"
        path.write_text(f"name: t\nhb_domain: {{size: 2, count: 4}}\nswitch: {{model: acme, platform_files: [{name}]}}\n")
        assert main(["compile", str(path), "-o", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert words in err and name in err


@pytest.mark.parametrize("inside, example", [((), "plat/my-file.yaml"), (("dir.yaml/",), "plat/my-file.yaml"),
                                              (("dir.yaml/", "link.yml@", "z.yml"), "plat/z.yml")])
def test_a_platform_folder_gets_a_fix_that_names_a_file(inside, example, tmp_path, capsys):
    """platform_files: [plat/] holding a folder dir.yaml suggested "e.g. plat/dir.yaml": itself a folder."""
    plat = tmp_path / "plat"
    plat.mkdir()
    for name in inside:
        if name.endswith("/"):
            (plat / name).mkdir()
        elif name.endswith("@"):
            os.symlink(tmp_path / "d.yml", plat / name[:-1])
        else:
            (plat / name).write_text(BASE)
    path = tmp_path / "d.yml"
    path.write_text("name: t\nhb_domain: {size: 2, count: 4}\nswitch: {model: acme, platform_files: [plat/]}\n")
    for cmd in (["bom", str(path)], ["compile", str(path), "-o", str(tmp_path / "o")]):
        assert main(cmd) == 2
        err = capsys.readouterr().err
        fix = next(line for line in err.splitlines() if "fix:" in line)
        assert "is a directory" in err and fix.endswith(f"e.g. {tmp_path / example}"), err
        assert not (tmp_path / example).is_dir()


@pytest.mark.parametrize("given", ["/etc/passwd", "../outside.yaml", "sub/../../outside.yaml", "out/p.yaml"])
def test_platform_files_stay_inside_the_designs_folder(given, tmp_path, capsys):
    """Absolute, '..' or through a symlinked folder: refused before it is read, its content never quoted."""
    (tmp_path / "outside.yaml").write_text("secret: hunter2\n")
    design_dir = tmp_path / "design"
    design_dir.mkdir()
    os.symlink(tmp_path, design_dir / "out")
    (tmp_path / "p.yaml").write_text("secret: hunter2\n")
    path = design_dir / "d.yml"
    path.write_text(f"name: t\nhb_domain: {{size: 2, count: 4}}\nswitch: {{model: acme, platform_files: [{given}]}}\n")
    assert main(["compile", str(path), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "platform_files[0]" in err and "inside the design's folder" in err, err
    assert "hunter2" not in err and "root:" not in err and not (tmp_path / "o").exists()


def test_a_folder_swapped_for_a_link_after_the_check_is_refused_as_opened(tmp_path, capsys, monkeypatch):
    """The path check runs before the open; a folder replaced by a link out in between
    (here: the check made to pass) is caught on the file opened, its content never quoted."""
    from railonly.fabric.platforms import catalog

    (tmp_path / "p.yaml").write_text("secret: hunter2\n")
    design_dir = tmp_path / "design"
    design_dir.mkdir()
    os.symlink(tmp_path, design_dir / "out")
    monkeypatch.setattr(catalog, "inside_folder", lambda base, rel: os.path.join(base, rel))
    path = design_dir / "d.yml"
    path.write_text("name: t\nhb_domain: {size: 2, count: 4}\nswitch: {model: acme, platform_files: [out/p.yaml]}\n")
    assert main(["compile", str(path), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "out/p.yaml" in err and "is not inside" in err and "hunter2" not in err, err
    assert not (tmp_path / "o").exists()


def test_generic_stays_the_default_and_reads_no_catalog():
    d = parse_design("name: t\nhb_domain: {size: 8, count: 16}\n")
    assert d.switch_model == "generic" and d.models == {} and d.breakout is None and d.radix == 64


def test_per_tier_models_each_tier_its_own_names_and_os(tmp_path, capsys):
    """SN5600 leaves (SONiC) under 7060X6-64PE spines (EOS), both 2 x 400G: one radix, two vendors."""
    path = tmp_path / "d.yml"
    path.write_text("name: t\nhb_domain: {size: 2, count: 130}\n"
                    "switch: {model: nvidia-sn5600, breakout: 2x400G, model_by_tier: {2: arista-7060x6-64pe}}\n")
    out = tmp_path / "o"
    assert main(["compile", str(path), "-o", str(out), "-q"]) == 0, capsys.readouterr().err
    assert main(["validate", str(out), "-q"]) == 0, capsys.readouterr().out
    cab = list(csv.DictReader(io.StringIO((out / "cabling.csv").read_text())))
    up = next(r for r in cab if r["tier"] == "2")
    assert up["a_port"].startswith("Ethernet") and "/" not in up["a_port"] and "/" in up["b_port"]
    assert (out / "configs" / "t-rail0-spine0" / "startup-config").exists()
    assert (out / "configs" / "t-rail0-leaf0" / "config_db.json").exists()
    rows = {r["model"]: int(r["quantity"]) for r in csv.DictReader(io.StringIO((out / "bom.csv").read_text()))}
    assert rows["nvidia-sn5600"] == 2 * 3 and rows["arista-7060x6-64pe"] == 2 * 2


@pytest.mark.parametrize("model,item,per_cable", [("arista-7060x6-64pe", "800G-2x400G-DAC", 0.5), ("generic", "400G-DAC", 1)])
def test_dac_is_one_assembly_per_cage_with_no_nic_optic_and_no_fibre(model, item, per_cable):
    switch = f"switch: {{model: {model}, breakout: 2x400G}}\n" if model != "generic" else ""
    d = parse_design(f"name: t\nhb_domain: {{size: 8, count: 64}}\n{switch}cabling: {{nic_optic: DAC, nic_leaf_m: 2}}\n")
    b = bom.price(from_fabric(build_fabric(d)), default_prices())
    cats = {(r.category, r.model): r.quantity for r in b.rows}
    assert cats[("transceiver", item)] == int(8 * 64 * per_cable)
    assert not any(c == "nic-optic" for c, _ in cats) and not any(c == "cable" for c, _ in cats)


# --- hidden designs: shapes beyond the examples, on every platform x breakout x OS ---------

SWITCHES = REPO / "fabric" / "platforms" / "data" / "switches"


def platform_file_ports(model: str, breakout: str) -> dict[str, dict[str, str]]:
    """The PORT rows of a platform file as written, read with plain YAML (not the catalog's
    parser, which is what is under test): name -> {lanes, alias, index, speed[, fec]}."""
    import yaml

    sonic_part = yaml.safe_load((SWITCHES / f"{model}.yaml").read_text())["breakouts"][breakout]["sonic"]
    rows = {}
    for line in sonic_part["ports"]:
        v = dict(zip(sonic_part["columns"], line.split()))
        rows[v.pop("name")] = v
    return rows


def eos_names_and_speed(model: str, breakout: str) -> tuple[list[str], str]:
    """EOS's names for every port of a breakout (Ethernet<cage>/<first lane>) and its speed form,
    from the platform file's cage count, lanes per cage and eos_speed."""
    import yaml

    doc = yaml.safe_load((SWITCHES / f"{model}.yaml").read_text())
    per_cage = int(breakout.split("x")[0])
    step = doc["cages"]["lanes"] // per_cage
    names = [f"Ethernet{c}/{k * step + 1}" for c in range(1, doc["cages"]["count"] + 1) for k in range(per_cage)]
    return names, doc["breakouts"][breakout]["eos_speed"]


HIDDEN_SHAPES = {
    # every NIC port of one leaf but the last used, L2 rails: the highest port names are cabled
    "l2-full-leaf": lambda radix: f"hb_domain: {{size: 2, count: {radix - 1}}}\nrail: {{mode: l2}}\n",
    # past one leaf: two tiers, spines of one ASN, a management plane; 4 rails
    "routed-2tier-mgmt": lambda radix: (f"hb_domain: {{size: 4, count: {radix + 2}}}\n"
                                        "management: {pool: 192.168.0.0/20, gateway: 192.168.0.1, ntp: [192.0.2.1]}\n"),
}


@pytest.mark.slow
@pytest.mark.parametrize("shape", sorted(HIDDEN_SHAPES))
@pytest.mark.parametrize("model,breakout,os_name", COMBOS, ids=lambda x: str(x))
def test_hidden_designs_print_the_platform_ports_port_for_port(model, breakout, os_name, shape):
    """Designs no example holds, compiled on each catalog platform, breakout and OS: every
    switch's SONiC PORT table is the platform file's rows (names, lanes, alias, index, speed,
    fec), admin up exactly on the cabled ports; every EOS switch names each port as the
    breakout CLI does with the breakout's speed form; and validate (YANG on one switch per
    shape, FRR, cross-file, plant) passes on the files in memory."""
    from railonly.fabric.compiler import compile_design
    from railonly.fabric.validate import validator

    p = CATALOG[model]
    text = (f"name: hid{len(shape)}\nswitch: {{model: {model}, breakout: {breakout}, platform: {os_name}}}\n"
            + HIDDEN_SHAPES[shape](p.radix(breakout)))
    _, files = compile_design(parse_design(text, "hidden.yml"))
    fabric = json.loads(files["fabric.json"])
    switches = [n for n in fabric["nodes"] if n["role"] == "switch"]
    assert {n["tier"] for n in switches} == ({1} if shape.startswith("l2") else {1, 2})
    cabled = {(e["node"], e["port"]) for lk in fabric["links"] for e in (lk["a"], lk["b"])}
    if os_name == "sonic":
        published = platform_file_ports(model, breakout)
        for n in switches:
            port_table = json.loads(files[f"configs/{n['name']}/config_db.json"])["PORT"]
            assert set(port_table) == set(published), n["name"]
            for name, want in published.items():
                got = port_table[name]
                assert {k: got[k] for k in want} == want, (n["name"], name)
                assert got["admin_status"] == ("up" if (n["name"], name) in cabled else "down"), (n["name"], name)
    else:
        names, speed = eos_names_and_speed(model, breakout)
        for n in switches:
            conf = files[f"configs/{n['name']}/startup-config"].decode()
            blocks = dict(re.findall(r"^interface (Ethernet\S+)\n((?:   .*\n)*)", conf, re.M))
            assert list(blocks) == names, n["name"]
            for name, body in blocks.items():
                assert f"   speed {speed}\n" in body, (n["name"], name)
                assert ("   shutdown\n" not in body) == ((n["name"], name) in cabled), (n["name"], name)
    read = validator.memory_reader(files)
    results = validator.validate(read, validator.load_fabric(read, "<hidden>"), yang_for=validator.sample_per_shape())
    assert all(r.passed for r in results), [(r.id, r.detail) for r in results if not r.passed][:5]
