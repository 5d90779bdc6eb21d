"""`railonly validate`: passes good output, fails tampered copies naming the problem."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from railonly.cli import main

REPO = Path(__file__).resolve().parents[2]
LABS = REPO / "labs"


@pytest.fixture(scope="module")
def compiled_dirs(tmp_path_factory):
    out = {}
    base = tmp_path_factory.mktemp("good")
    for lab in ("mini-routed", "mini-l2", "mini-baseline"):
        assert main(["compile", str(LABS / f"{lab}.yml"), "-o", str(base / lab), "-q"]) == 0
        out[lab] = base / lab
    # the routed lab again with EOS switches
    text = (LABS / "mini-routed.yml").read_text().replace("platform: sonic", "platform: eos")
    (base / "eos-routed.yml").write_text(text)
    assert main(["compile", str(base / "eos-routed.yml"), "-o", str(base / "eos-routed"), "-q"]) == 0
    out["eos-routed"] = base / "eos-routed"
    return out


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "out"
    shutil.copytree(src, dst)
    return dst


def _validate(outdir: Path, tmp_path: Path, capsys) -> tuple[int, str, dict]:
    jf = tmp_path / "v.json"
    rc = main(["validate", str(outdir), "--json", str(jf), "--junit", str(tmp_path / "v.xml")])
    return rc, capsys.readouterr().out, json.loads(jf.read_text())


@pytest.mark.parametrize("lab", ["mini-routed", "mini-l2", "mini-baseline", "eos-routed"])
def test_good_output_passes(compiled_dirs, lab, tmp_path, capsys):
    rc, out, doc = _validate(compiled_dirs[lab], tmp_path, capsys)
    assert rc == 0, out
    assert doc["failed"] == 0 and doc["passed"] == len(doc["results"]) > 0
    ids = [r["id"] for r in doc["results"]]
    assert len(ids) == len(set(ids))
    suite = ET.parse(tmp_path / "v.xml").getroot()
    assert sorted(c.get("name") for c in suite.iter("testcase")) == sorted(ids)  # grouped by check
    if lab != "mini-l2" and lab != "eos-routed":
        assert {"yang", "frr", "bgp", "cabling", "unique"} <= {r["check"] for r in doc["results"]}


def _edit_json(path: Path, fn) -> None:
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc, indent=4, sort_keys=True))


def _failures(doc: dict) -> str:
    return "\n".join(f"{r['id']}: {r['detail']}" for r in doc["results"] if not r["passed"])


def test_duplicate_address(compiled_dirs, tmp_path, capsys):
    out = _copy(compiled_dirs["mini-routed"], tmp_path)
    db = out / "configs/minir-rail0-spine0/config_db.json"
    leaf_ip = "10.128.0.1/31"  # minir-rail0-leaf0's uplink address, now also on the spine

    def dup(doc):
        doc["INTERFACE"] = {k: v for k, v in doc["INTERFACE"].items() if not k.startswith("Ethernet0|")}
        doc["INTERFACE"][f"Ethernet0|{leaf_ip}"] = {}
    _edit_json(db, dup)
    rc, text, doc = _validate(out, tmp_path, capsys)
    assert rc == 1
    fails = _failures(doc)
    assert "unique/addresses" in fails and "10.128.0.1 is used by" in fails
    assert "configs/minir-rail0-spine0/config_db.json" in text


def test_missing_neighbor(compiled_dirs, tmp_path, capsys):
    out = _copy(compiled_dirs["mini-routed"], tmp_path)
    frr = out / "configs/minir-rail0-leaf0/frr.conf"
    frr.write_text("\n".join(l for l in frr.read_text().splitlines() if not l.startswith(" neighbor 10.128.0.0 ")) + "\n")
    rc, text, doc = _validate(out, tmp_path, capsys)
    assert rc == 1
    assert "bgp/minir-rail0-leaf0" in _failures(doc)
    assert "configs/minir-rail0-leaf0/frr.conf: no BGP neighbor 10.128.0.0 (minir-rail0-spine0:Ethernet0)" in text


def test_wrong_remote_as(compiled_dirs, tmp_path, capsys):
    out = _copy(compiled_dirs["mini-routed"], tmp_path)
    frr = out / "configs/minir-rail0-spine0/frr.conf"
    frr.write_text(frr.read_text().replace("neighbor 10.128.0.1 remote-as 4200000001", "neighbor 10.128.0.1 remote-as 4200000099"))
    rc, text, doc = _validate(out, tmp_path, capsys)
    assert rc == 1
    assert "neighbor 10.128.0.1 remote-as 4200000099, minir-rail0-leaf0 has ASN 4200000001" in text


def test_bad_mtu(compiled_dirs, tmp_path, capsys):
    out = _copy(compiled_dirs["mini-routed"], tmp_path)
    _edit_json(out / "configs/minir-rail0-leaf1/config_db.json", lambda d: d["PORT"]["Ethernet16"].update(mtu="1500"))
    rc, text, doc = _validate(out, tmp_path, capsys)
    assert rc == 1
    assert "mtu/minir-rail0-leaf1" in _failures(doc)
    assert "PORT|Ethernet16.mtu is 1500, the fabric uses 9100" in text


def test_mtu_out_of_yang_range_is_a_yang_failure(compiled_dirs, tmp_path, capsys):
    out = _copy(compiled_dirs["mini-routed"], tmp_path)
    _edit_json(out / "configs/minir-rail0-leaf1/config_db.json", lambda d: d["PORT"]["Ethernet16"].update(mtu="99999"))
    rc, _, doc = _validate(out, tmp_path, capsys)
    assert rc == 1
    assert "yang/minir-rail0-leaf1" in _failures(doc)


@pytest.mark.parametrize("prefix", ["10.128.0.300/31", "10.128.0.3/33", "2001:db8::1/129"])
def test_bad_interface_prefix_is_a_yang_failure(compiled_dirs, tmp_path, capsys, prefix):
    """The YANG memo keys fitting prefixes by their fit: one that does not fit, on one
    switch among others of its shape, is still judged and named."""
    out = _copy(compiled_dirs["mini-routed"], tmp_path)

    def edit(d):
        d["INTERFACE"] = {(f"Ethernet16|{prefix}" if k.startswith("Ethernet16|") else k): v
                          for k, v in d["INTERFACE"].items()}
    _edit_json(out / "configs/minir-rail0-leaf1/config_db.json", edit)
    rc, _, doc = _validate(out, tmp_path, capsys)
    assert rc == 1
    yang = [r for r in doc["results"] if r["id"].startswith("yang/") and not r["passed"]]
    assert [r["id"] for r in yang] == ["yang/minir-rail0-leaf1"]
    assert prefix in yang[0]["detail"]


def test_hostname_and_speed_and_frr_syntax(compiled_dirs, tmp_path, capsys):
    out = _copy(compiled_dirs["mini-routed"], tmp_path)

    def edit(d):
        d["DEVICE_METADATA"]["localhost"]["hostname"] = "wrong"
        d["PORT"]["Ethernet0"]["speed"] = "100000"
    _edit_json(out / "configs/minir-rail1-leaf0/config_db.json", edit)
    frr = out / "configs/minir-rail1-spine0/frr.conf"
    frr.write_text(frr.read_text().replace(" bgp log-neighbor-changes", " bgp log-neighbour-changes"))
    rc, text, doc = _validate(out, tmp_path, capsys)
    assert rc == 1
    fails = _failures(doc)
    assert "hostname is 'wrong', fabric.json names this switch 'minir-rail1-leaf0'" in fails
    assert "PORT|Ethernet0.speed is 100.0 Gbit/s, cable" in fails
    assert "frr/minir-rail1-spine0" in fails and "Unknown command" in fails


def test_eos_tampered(compiled_dirs, tmp_path, capsys):
    out = _copy(compiled_dirs["eos-routed"], tmp_path)
    cfg = out / "configs/minir-rail0-leaf0/startup-config"
    text = cfg.read_text()
    text = text.replace("   neighbor 10.128.0.0 remote-as 4200032769", "   neighbor 10.128.0.0 remote-as 4200032799")
    old = "interface Ethernet3\n   description minir-rail0-spine0:Ethernet1 R0-T2-00001 100m\n   mtu 9100"
    assert old in text
    text = text.replace(old, old.replace("mtu 9100", "mtu 9000"))
    cfg.write_text(text)
    rc, out_text, doc = _validate(out, tmp_path, capsys)
    assert rc == 1
    fails = _failures(doc)
    assert "neighbor 10.128.0.0 remote-as 4200032799, minir-rail0-spine0 has ASN 4200032769" in fails
    assert "mtu/minir-rail0-leaf0" in fails


def test_missing_config_and_l2_vlan(compiled_dirs, tmp_path, capsys):
    out = _copy(compiled_dirs["mini-l2"], tmp_path)
    cfg = out / "configs/mini-rail1-leaf0/startup-config"
    cfg.write_text(cfg.read_text().replace("switchport access vlan 1001", "switchport access vlan 1003", 1))
    (out / "configs/mini-rail2-leaf0/startup-config").unlink()
    rc, text, doc = _validate(out, tmp_path, capsys)
    assert rc == 1
    fails = _failures(doc)
    assert "is in VLAN 1003, expected Vlan1001" in fails
    assert "no config for switch mini-rail2-leaf0" in fails


@pytest.mark.parametrize("setup", ["missing", "empty", "badjson", "notfabric"])
def test_bad_outdir_exits_2(tmp_path, capsys, setup):
    d = tmp_path / "o"
    if setup != "missing":
        d.mkdir()
    if setup == "badjson":
        (d / "fabric.json").write_text("{nope")
    if setup == "notfabric":
        (d / "fabric.json").write_text('{"a": 1}')
    assert main(["validate", str(d)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err


@pytest.mark.parametrize("flag", ["--json", "--junit"])
def test_a_report_is_never_written_into_the_outdir_nor_to_an_empty_path(flag, compiled_dirs, tmp_path, capsys):
    out = _copy(compiled_dirs["mini-routed"], tmp_path)
    assert main(["validate", str(out), flag, str(out / "configs" / "report")]) == 2
    assert "lies inside OUTDIR" in capsys.readouterr().err and not (out / "configs" / "report").exists()
    assert main(["validate", str(out), flag, ""]) == 2
    assert "is empty" in capsys.readouterr().err


def test_the_file_system_root_is_refused_before_it_is_walked(capsys, monkeypatch):
    from railonly.fabric.outdir import reader

    monkeypatch.setattr(reader, "unsafe_entries", lambda *a, **k: pytest.fail("walked /"))
    assert main(["validate", "/"]) == 2
    assert "no fabric.json" in capsys.readouterr().err


def test_compile_rejects_overlapping_pools(tmp_path, capsys):
    """Overlapping pools would give two ports one address: the design is refused up front (exit 2)."""
    text = (LABS / "mini-routed.yml").read_text().replace(
        "rail:", "addressing: {fabric_pool: 10.0.0.0/10, gpu_pool: 10.0.0.0/9}\nrail:")
    design = tmp_path / "overlap.yml"
    design.write_text(text)
    assert main(["compile", str(design), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "addressing.gpu_pool: 10.0.0.0/9 overlaps addressing.fabric_pool (10.0.0.0/10)" in err
    assert not (tmp_path / "o").exists()


def test_compile_refuses_configs_that_fail_validation(tmp_path, capsys, monkeypatch):
    """A renderer bug (here: every SONiC switch gets the MTU 99) is caught by
    compile's self-check: exit 1, the failing check named, nothing written."""
    from railonly.fabric.devices import sonic_render as sonic

    real = sonic.config_db

    def buggy(*args, **kwargs):
        doc = real(*args, **kwargs)
        for port in doc["PORT"].values():
            port["mtu"] = "99"
        return doc

    monkeypatch.setattr(sonic, "config_db", buggy)
    monkeypatch.setenv("RAILONLY_JOBS", "1")
    assert main(["compile", str(LABS / "mini-routed.yml"), "-o", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "error: mtu/minir-rail0-leaf0:" in err and "nothing was written" in err
    assert list(tmp_path.iterdir()) == [], "neither OUTDIR nor its staging directory may remain"


def test_checks_beside_the_pool_give_the_same_results(compiled_dirs, tmp_path, monkeypatch):
    """A big OUTDIR runs the whole-tree checks in a forked process beside the per-switch
    pool, and MANIFEST.json's hashes in another while fabric.json is parsed: same results in
    the same order as in line, for a good and a tampered OUTDIR (a stray folder's frr.conf is
    vtysh's to judge in neither)."""
    from railonly.fabric.validate import validator

    out = _copy(compiled_dirs["mini-routed"], tmp_path)
    good = compiled_dirs["mini-routed"]
    _edit_json(out / "configs/minir-rail0-leaf1/config_db.json", lambda d: d["PORT"]["Ethernet16"].update(mtu="99999"))
    (out / "cabling.csv").write_text((out / "cabling.csv").read_text().replace("minir-rail0-leaf0", "rail0-leafX", 1))
    frr = out / "configs/minir-rail1-leaf0/frr.conf"
    frr.write_text(frr.read_text().replace("router bgp", "router bgpp", 1))
    (out / "configs/minir-stray").mkdir()
    (out / "configs/minir-stray/frr.conf").write_text("no such command here\n")
    monkeypatch.setenv("RAILONLY_JOBS", "2")
    for outdir in (good, out):
        monkeypatch.setattr(validator, "BESIDE_MIN_SWITCHES", 10**9)
        in_line = validator.validate_outdir(str(outdir))
        monkeypatch.setattr(validator, "BESIDE_MIN_SWITCHES", 0)
        beside = validator.validate_outdir(str(outdir))
        assert [(r.id, r.passed, r.detail) for r in beside] == [(r.id, r.passed, r.detail) for r in in_line]
        assert any(not r.passed for r in beside) == (outdir == out)
        failed = {r.id for r in beside if not r.passed}
        assert ("frr/minir-rail1-leaf0" in failed) == (outdir == out)
        assert not any("stray" in r.id for r in beside if r.check == "frr")


def test_cross_check_in_the_workers_gives_the_same_results(compiled_dirs, tmp_path, monkeypatch):
    """Forked workers judge their own switches and the parent merges the verdicts shard by
    shard: same results in the same order as one process judging all, tampered or not."""
    from railonly.fabric.validate import validator

    out = _copy(compiled_dirs["mini-routed"], tmp_path)
    _edit_json(out / "configs/minir-rail0-leaf1/config_db.json", lambda d: d["PORT"]["Ethernet16"].update(mtu="1500"))
    _edit_json(out / "configs/minir-rail1-leaf0/config_db.json",
               lambda d: d["DEVICE_METADATA"]["localhost"].update(hostname="minir-elsewhere"))
    monkeypatch.setenv("RAILONLY_JOBS", "2")
    for outdir in (compiled_dirs["mini-routed"], out):
        monkeypatch.setattr(validator, "POOL_MIN_SWITCHES", 10**9)
        in_line = validator.validate_outdir(str(outdir))
        monkeypatch.setattr(validator, "POOL_MIN_SWITCHES", 0)
        pooled = validator.validate_outdir(str(outdir))
        assert [(r.id, r.passed, r.detail) for r in pooled] == [(r.id, r.passed, r.detail) for r in in_line]
        failed = {r.id for r in pooled if not r.passed}
        assert ({"mtu/minir-rail0-leaf1", "hostname/minir-rail1-leaf0"} <= failed) == (outdir == out)


def test_cross_check_merge_does_not_depend_on_arrival_order(compiled_dirs):
    """Workers' verdicts arrive in shard order; the fabric-wide parts (the fabric's MTU on a
    tie, the owners of a shared address) are added up in fabric.json's switch order, so the
    results are the same for any worker count."""
    from railonly.fabric.validate import validator
    from railonly.fabric.validate.crosscheck import Merge, Plan, Verdict

    out = str(compiled_dirs["mini-routed"])
    plan = Plan(validator.load_fabric(validator.disk_reader(out), out))
    first, second = plan.switches[0].name, plan.switches[1].name
    verdicts = [Verdict(first, f"configs/{first}/config_db.json", {}, {9000: 1}, [], [("10.9.9.9", "Ethernet0")], None),
                Verdict(second, f"configs/{second}/config_db.json", {}, {9100: 1}, [(0, 9100, "PORT|Ethernet0")],
                        [("10.9.9.9", "Ethernet8")], None)]

    def merged(order):
        merge = Merge(plan)
        for v in order:
            merge.add(v)
        return [(r.id, r.passed, r.detail) for r in merge.results()]

    forward = merged(verdicts)
    assert forward == merged(verdicts[::-1])
    failed = {i: d for i, ok, d in forward if not ok}
    assert "the fabric uses 9000" in failed[f"mtu/{second}"]  # the tie goes to fabric order's first
    assert failed["unique/addresses"].index(first) < failed["unique/addresses"].index(second)


def test_lab_yaml_loads_alike_with_libyaml_and_pure_python(compiled_dirs):
    """clabernetes renders from its .clab.yml and the CRD schema is read with libyaml's safe
    loader where installed: the data must be what PyYAML's own safe loader makes of them."""
    import yaml

    from railonly.fabric.outputs.clabernetes import SAFE_LOADER
    from railonly.fabric.validate import lab_schemas

    texts = [lab_schemas.CLABERNETES_CRD.read_text()]
    texts += [p.read_text() for d in compiled_dirs.values() for p in d.glob("*.clab.yml")]
    assert len(texts) == 1 + len(compiled_dirs)
    for text in texts:
        assert yaml.load(text, Loader=SAFE_LOADER) == yaml.safe_load(text)
