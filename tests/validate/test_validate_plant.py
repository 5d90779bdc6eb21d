"""`railonly validate`: MANIFEST.json (changed, missing, extra files named) and the plant files
(cabling.csv, netbox_*.csv, bom.csv fibre, CABLE_LENGTH / EOS descriptions) against fabric.json."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from railonly.cli import main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def outdirs(tmp_path_factory):
    base = tmp_path_factory.mktemp("plant")
    text = (REPO / "labs" / "mini-routed.yml").read_text()
    (base / "eos.yml").write_text(text.replace("platform: sonic", "platform: eos"))
    out = {}
    for name, design in (("sonic", REPO / "labs" / "mini-routed.yml"), ("eos", base / "eos.yml")):
        assert main(["compile", str(design), "-o", str(base / name), "-q"]) == 0
        out[name] = base / name
    return out


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "out"
    shutil.copytree(src, dst)
    return dst


def _run(out: Path, tmp_path: Path, capsys) -> tuple[int, dict, str]:
    jf = tmp_path / "v.json"
    rc = main(["validate", str(out), "--json", str(jf)])
    return rc, json.loads(jf.read_text()), capsys.readouterr().out


def _failures(out: Path, tmp_path: Path, capsys) -> tuple[int, dict[str, str], str]:
    rc, doc, text = _run(out, tmp_path, capsys)
    return rc, {r["id"]: r["detail"] for r in doc["results"] if not r["passed"]}, text


@pytest.mark.parametrize("name", ["sonic", "eos"])
def test_a_fresh_outdir_passes_manifest_and_plant(outdirs, name, tmp_path, capsys):
    rc, doc, text = _run(outdirs[name], tmp_path, capsys)
    assert rc == 0 and doc["failed"] == 0, text
    passed = {r["id"] for r in doc["results"] if r["passed"]}
    assert {"manifest/files", "plant/cabling.csv", "plant/netbox_cables.csv", "plant/bom.csv",
            "plant/netbox_interfaces.csv"} <= passed


def test_hand_edited_config_is_named(outdirs, tmp_path, capsys):
    out = _copy(outdirs["sonic"], tmp_path)
    f = out / "configs/minir-rail0-spine1/frr.conf"
    f.write_text(f.read_text() + "! a note by hand\n")  # valid FRR, same facts: only the manifests see it
    rc, fails, text = _failures(out, tmp_path, capsys)
    # MANIFEST.json's hash, and the clabernetes manifest, which still carries the compiled file
    assert rc == 1 and set(fails) == {"manifest/files", "trust/minir.clabernetes.yaml"}
    assert "changed: configs/minir-rail0-spine1/frr.conf" in fails["manifest/files"]


def test_deleted_cabling_csv_is_named(outdirs, tmp_path, capsys):
    out = _copy(outdirs["sonic"], tmp_path)
    (out / "cabling.csv").unlink()
    rc, fails, _ = _failures(out, tmp_path, capsys)
    assert rc == 1
    assert "missing: cabling.csv" in fails["manifest/files"]
    assert "cabling.csv: missing" in fails["plant/cabling.csv"]


def test_extra_file_is_named(outdirs, tmp_path, capsys):
    out = _copy(outdirs["sonic"], tmp_path)
    (out / "configs/minir-rail0-leaf0/notes.txt").write_text("mine\n")
    (out / ".lab").mkdir()  # lab records never live in an OUTDIR: an old .lab/ is an extra file too
    (out / ".lab" / "netns-state.json").write_text("{}")
    rc, fails, _ = _failures(out, tmp_path, capsys)
    assert rc == 1 and set(fails) == {"manifest/files"}
    detail = fails["manifest/files"]
    assert "extra: configs/minir-rail0-leaf0/notes.txt (file)" in detail
    assert "extra: .lab/netns-state.json (file)" in detail


def _refused(out: Path, capsys) -> str:
    """A symlink anywhere in OUTDIR: validate refuses the OUTDIR (exit 2), names the link, reads nothing."""
    rc = main(["validate", str(out)])
    cap = capsys.readouterr()
    assert rc == 2 and "Traceback" not in cap.err + cap.out
    return cap.err + cap.out


def test_extra_symlink_is_refused_and_named(outdirs, tmp_path, capsys):
    out = _copy(outdirs["sonic"], tmp_path)
    os.symlink("/etc/passwd", out / "configs/minir-rail0-leaf1/frr.conf.bak")
    text = _refused(out, capsys)
    assert "configs/minir-rail0-leaf1/frr.conf.bak" in text and "root:" not in text


def test_a_replaced_file_that_is_now_a_symlink_is_not_read(outdirs, tmp_path, capsys):
    out = _copy(outdirs["sonic"], tmp_path)
    target = out / "hosts/hb0/nccl.env"
    target.unlink()
    os.symlink("/etc/passwd", target)
    text = _refused(out, capsys)
    assert "hosts/hb0/nccl.env" in text and "root:" not in text


def test_missing_or_broken_manifest(outdirs, tmp_path, capsys):
    out = _copy(outdirs["sonic"], tmp_path)
    (out / "MANIFEST.json").write_text("{not json")
    rc, fails, _ = _failures(out, tmp_path, capsys)
    assert rc == 1 and "is not valid JSON" in fails["manifest/files"] and fails["manifest/files"].startswith("MANIFEST.json")
    (out / "MANIFEST.json").write_text("[" * 100_000 + "]" * 100_000)  # deeper than json parses
    rc, fails, _ = _failures(out, tmp_path, capsys)
    assert rc == 1 and "is not valid JSON" in fails["manifest/files"] and fails["manifest/files"].startswith("MANIFEST.json")
    (out / "MANIFEST.json").write_text('{"files": {"fabric.json": 3}}')
    rc, fails, _ = _failures(out, tmp_path, capsys)
    assert rc == 1 and 'needs "files": {path: sha256}' in fails["manifest/files"]
    (out / "MANIFEST.json").unlink()
    rc, fails, _ = _failures(out, tmp_path, capsys)
    assert rc == 1 and "MANIFEST.json: missing" in fails["manifest/files"]


def _rewrite(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, count))


def test_sonic_cable_length_must_be_the_cables(outdirs, tmp_path, capsys):
    out = _copy(outdirs["sonic"], tmp_path)
    # a generic switch runs the traditional buffer model: its 30 m cable is written 40m
    # (the shortest pg_profile_lookup.ini length that covers it); 300m is no longer the cable's
    _rewrite(out / "configs/minir-rail0-leaf0/config_db.json", '"Ethernet0": "40m"', '"Ethernet0": "300m"')
    rc, fails, _ = _failures(out, tmp_path, capsys)
    assert rc == 1
    assert ("configs/minir-rail0-leaf0/config_db.json: CABLE_LENGTH|AZURE|Ethernet0 says 300m, cable R0-T1-00001 is 30 m long"
            in fails["cabling/minir-rail0-leaf0"])


def test_eos_description_must_carry_the_cable_length(outdirs, tmp_path, capsys):
    out = _copy(outdirs["eos"], tmp_path)
    _rewrite(out / "configs/minir-rail0-leaf0/startup-config", "description hb0:rail0 R0-T1-00001 30m", "description hb0:rail0 R0-T1-00001 3m")
    rc, fails, _ = _failures(out, tmp_path, capsys)
    assert rc == 1
    assert "interface Ethernet1 description says 3m, cable R0-T1-00001 is 30 m long" in fails["cabling/minir-rail0-leaf0"]


def test_cabling_netbox_and_bom_must_agree_with_fabric_json(outdirs, tmp_path, capsys):
    out = _copy(outdirs["sonic"], tmp_path)
    _rewrite(out / "cabling.csv", "R0-T1-00002,hb1,rail0,minir-rail0-leaf0,Ethernet8,0,1,400,400G-SR8 MMF,30,",
             "R0-T1-00002,hb1,rail1,minir-rail0-leaf0,Ethernet8,0,1,400,400G-SR8 MMF,50,")
    _rewrite(out / "netbox_cables.csv", "R0-T1-00003,30,m", "R0-T1-00003,100,m")
    _rewrite(out / "bom.csv", "fibre smf-os2 100m,cable,smf-os2 100m,12,", "fibre smf-os2 100m,cable,smf-os2 100m,11,")
    _rewrite(out / "netbox_interfaces.csv", "hb2,rail0,", "hb2,nic0,")
    rc, fails, text = _failures(out, tmp_path, capsys)
    assert rc == 1
    assert "cabling.csv: line 3: a_device,a_port is hb1:rail1, fabric.json's cable R0-T1-00002 ends at hb1:rail0" in fails["plant/cabling.csv"]
    assert "cabling.csv: line 3: length_m is '50', fabric.json's cable R0-T1-00002 is 30 m" in fails["plant/cabling.csv"]
    assert "netbox_cables.csv: line 4: length is 100 m, fabric.json's cable R0-T1-00003 is 30 m" in fails["plant/netbox_cables.csv"]
    assert "bom.csv: fibre of 100 m: 11 cables, fabric.json has 12" in fails["plant/bom.csv"]
    assert "netbox_interfaces.csv: no interface hb2:rail0 (an end of cable R0-T1-00003)" in fails["plant/netbox_interfaces.csv"]


def test_a_plant_file_cut_to_its_header_misses_every_cable(outdirs, tmp_path, capsys):
    """Without MANIFEST.json's hashes (--no-manifest) the plant check alone must see a cabling
    or NetBox cable list emptied to its header: every cable of fabric.json is missing."""
    out = _copy(outdirs["sonic"], tmp_path)
    for name in ("cabling.csv", "netbox_cables.csv"):
        path = out / name
        path.write_text(path.read_text().split("\n", 1)[0] + "\n")
    jf = tmp_path / "v.json"
    assert main(["validate", str(out), "--no-manifest", "--json", str(jf)]) == 1
    fails = {r["id"]: r["detail"] for r in json.loads(jf.read_text())["results"] if not r["passed"]}
    assert "cabling.csv: cable R0-T1-00001 of fabric.json is missing" in fails["plant/cabling.csv"]
    assert "netbox_cables.csv: cable R0-T1-00001 of fabric.json is missing" in fails["plant/netbox_cables.csv"]
    capsys.readouterr()


def test_a_file_that_is_not_csv_is_reported_not_raised(outdirs, tmp_path, capsys):
    out = _copy(outdirs["sonic"], tmp_path)
    (out / "cabling.csv").write_text("just,some\n\"unterminated\n")
    (out / "bom.csv").write_bytes(b"item,category\n")
    rc, fails, _ = _failures(out, tmp_path, capsys)
    assert rc == 1
    assert "cabling.csv: line 1: missing column(s)" in fails["plant/cabling.csv"]
    assert "bom.csv: line 1: missing column(s) model, quantity, length_m" in fails["plant/bom.csv"]


def test_undecodable_plant_file_fails_and_symlinked_one_is_not_followed(outdirs, tmp_path, capsys):
    out = _copy(outdirs["sonic"], tmp_path)
    (out / "cabling.csv").write_bytes(b"\xff\xfe\x00 not text")
    rc = main(["validate", str(out)])
    cap = capsys.readouterr()
    assert rc in (1, 2) and "cabling.csv" in cap.out + cap.err and "Traceback" not in cap.out + cap.err
    out = _copy(outdirs["sonic"], tmp_path / "b")
    secret = tmp_path / "secret.csv"
    secret.write_text("label,side_a_device\nTOPSECRET,x\n")
    (out / "netbox_cables.csv").unlink()
    os.symlink(secret, out / "netbox_cables.csv")
    text = _refused(out, capsys)
    assert "TOPSECRET" not in text and "netbox_cables.csv" in text

def _csv_rows(text: str, need: list[str]):
    """plant._rows by csv.reader alone (the fast cut disabled)."""
    from railonly.fabric.validate import plant

    probs: list[str] = []
    real = plant._plain_rows
    plant._plain_rows = lambda *a: None
    try:
        return plant._rows(lambda p: text, "f.csv", need, probs), probs
    finally:
        plant._plain_rows = real


@pytest.mark.parametrize("edit", [
    lambda t: t, lambda t: t.rstrip("\n"), lambda t: t.split("\n", 1)[0] + "\n",
    lambda t: t.replace("\n", "\r\n"), lambda t: t.replace(",", '","', 1), lambda t: t + "x\n",
    lambda t: t.replace("\n", "\n\n", 2), lambda t: "\n" + t, lambda t: t + "\x00\n", lambda t: "",
    lambda t: t + "a," + "b" * 200_000 + "\n", lambda t: t.replace("cable_id", "cable"),
    lambda t: t + '"q",x,"y,z"\n', lambda t: t.replace("\n", "\n   ", 3),
])
def test_plain_rows_are_what_csv_reads(outdirs, edit):
    """The comma cut of a plain CSV text (`plant._plain_rows`) gives csv.reader's rows and line
    numbers, and leaves anything else (quotes, CR, NUL, blank or narrow lines, huge fields,
    a missing column) to csv.reader, whose problems name the line."""
    from railonly.fabric.validate import plant

    text = edit((outdirs["sonic"] / "cabling.csv").read_text())
    need = plant.CABLING_COLUMNS
    probs: list[str] = []
    got = plant._rows(lambda p: text, "f.csv", need, probs)
    assert (got, probs) == _csv_rows(text, need)
    if text and '"' not in text and "\r" not in text and "\n\n" not in text and not text.startswith("\n") and not probs:
        assert plant._plain_rows(text, need) is not None  # plain: the fast cut took it


def _swap_rows(t: str) -> str:
    lines = t.split("\n")
    lines[1], lines[2] = lines[2], lines[1]
    return "\n".join(lines)


@pytest.mark.parametrize("name", ["cabling.csv", "netbox_cables.csv", "netbox_interfaces.csv"])
@pytest.mark.parametrize("edit", [
    lambda t: t, _swap_rows, lambda t: t + t.split("\n")[1] + "\n", lambda t: t.replace(",30,", ",030,", 1),
    lambda t: t.replace(",30,", ",31,", 1), lambda t: t.replace("leaf0", "leaf9", 1),
    lambda t: "\n".join(t.split("\n")[:-2]) + "\n", lambda t: t.replace(",m\n", ",km\n", 1),
])
def test_the_column_check_is_the_row_judges_shortcut(outdirs, name, edit):
    """`plant._columns_as_expected` passes a cable file only where every row judge would say
    nothing: the plant results are the same with it as with the judges alone (a swapped or
    repeated row, another length spelling, a wrong end or length, a row cut)."""
    from railonly.fabric.validate import plant, validator

    out = outdirs["sonic"]
    fabric = validator.load_fabric(validator.disk_reader(str(out)), str(out))
    texts = {n: (out / n).read_text() for n in (plant.CABLING_CSV, plant.NETBOX_CABLES_CSV, plant.BOM_CSV,
                                                 plant.NETBOX_DEVICES_CSV, plant.NETBOX_INTERFACES_CSV)}
    texts[name] = edit(texts[name])
    fast = plant.plant(fabric, texts.get)
    real = plant._columns_as_expected
    plant._columns_as_expected = lambda *a: False
    try:
        assert fast == plant.plant(fabric, texts.get)
    finally:
        plant._columns_as_expected = real


@pytest.mark.parametrize("optic,metres,switch", [("AOC", 30, ""), ("DAC", 3, ""),
                                                 ("DAC", 2, "switch: {model: nvidia-sn5600, breakout: 2x400G}\n")])
def test_nic_leaf_cable_assemblies_are_the_boms_cables(optic, metres, switch, tmp_path, capsys):
    """AOC/DAC NIC-leaf cables are bought as assemblies of their length (one per NIC, or one
    twin-port splitter per cage): no fibre line, and compile's self-check and validate agree."""
    design = tmp_path / "d.yml"
    if switch:
        design.write_text(f"name: t\nhb_domain: {{size: 8, count: 64}}\n{switch}cabling: {{nic_optic: {optic}, nic_leaf_m: {metres}}}\n")
    else:
        design.write_text((REPO / "labs" / "mini-routed.yml").read_text() + f"cabling:\n  nic_optic: {optic}\n  nic_leaf_m: {metres}\n")
    out = tmp_path / "o"
    assert main(["compile", str(design), "-o", str(out), "-q"]) == 0, capsys.readouterr().err
    rc, doc, said = _run(out, tmp_path, capsys)
    assert rc == 0, said
    lines = (out / "bom.csv").read_text().splitlines()
    assembly = [x for x in lines if x.startswith(f"transceiver {'800G-2x400G' if switch else '400G'}-{optic},")]
    assert len(assembly) == 1 and assembly[0].endswith(f",{metres}")
    assert not any(x.startswith("fibre") and x.endswith(f",{metres}") for x in lines)
    # one assembly short of the NIC-leaf cables: named
    text = (out / "bom.csv").read_text()
    n = assembly[0].split(",")[3]
    (out / "bom.csv").write_text(text.replace(assembly[0], assembly[0].replace(f",{n},", f",{int(n) - 1},", 1)))
    rc, doc, said = _run(out, tmp_path, capsys)
    assert rc == 1 and f"NIC-leaf cable assemblies of {metres} m" in json.dumps(doc)
