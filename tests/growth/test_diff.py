"""`railonly diff`: the change plan between two compiles, its exit codes, JSON and hostile input."""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from railonly.cli import main
from railonly.fabric.compiler import compile_design
from railonly.fabric.graph.build import build_fabric
from railonly.fabric.design import clos
from railonly.fabric.design.design import parse_design
from railonly.fabric.outdir.changeplan import Cable, cable_changes, plan, read_snapshot
from railonly.fabric.outdir.writer import write_outdir

from .conftest import lab_1k


def _compile(text: str, out) -> str:
    d = parse_design(text, "d.yml")
    _, files = compile_design(d)
    write_outdir(str(out), files, d.sha256)
    return str(out)


@pytest.fixture(scope="module")
def grown(tmp_path_factory):
    """labs/dgx-h100-1k.yml planned for 256 domains, at 128 and at 144; and 144 without a plan."""
    tmp = tmp_path_factory.mktemp("grown")
    return {
        "128": _compile(lab_1k(128, planned=256), tmp / "p128"),
        "144": _compile(lab_1k(144, planned=256), tmp / "p144"),
        "plain128": _compile(lab_1k(128), tmp / "n128"),
        "plain144": _compile(lab_1k(144), tmp / "n144"),
    }


def _run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_growing_to_144_within_the_plan_only_adds_cables(grown, tmp_path, capsys):
    path = tmp_path / "plan.json"
    code, out, err = _run(["diff", grown["128"], grown["144"], "--json", str(path)], capsys)
    assert code == 1, err
    doc = json.loads(path.read_text())
    cables = doc["cables"]
    added = 8 * ((144 - 128) + (clos.leaves_needed(144, 64) - clos.leaves_needed(128, 64)) * 32)
    assert len(cables["added"]) == added == 384
    assert cables["removed"] == [] and cables["moved"] == [] and cables["relabelled"] == [] and cables["changed"] == []
    # one entry per cable, with its id and both ends
    assert len({c["cable_id"] for c in cables["added"]}) == 384
    assert set(cables["added"][0]) == {"cable_id", "a", "b", "rail", "tier"} and set(cables["added"][0]["a"]) == {"device", "port"}
    # new leaves come in; the leaves already cabled keep their configs, spines gain neighbours
    dev = doc["devices"]
    assert [d["device"] for d in dev["added"]] == [f"dgx1k-rail{r}-leaf4" for r in range(8)]
    assert dev["removed"] == []
    assert {d["device"] for d in dev["changed"]} == {f"dgx1k-rail{r}-spine{s}" for r in range(8) for s in range(4)}
    assert all(d["diff"].startswith("--- a/configs/") for d in dev["changed"])
    # what an existing config loses: only a port's "down" (it is cabled now); maximum-paths is the
    # ECMP width of the plan (docs/bgp.md), not a count of the neighbours built so far, so it stays
    removed = {line[1:].strip() for d in dev["changed"] for line in d["diff"].splitlines()
               if line.startswith("-") and not line.startswith("---")}
    assert removed == {'"admin_status": "down",'}
    assert [h["host"] for h in doc["hosts"]["added"]] == sorted(f"hb{i}" for i in range(128, 144))
    assert doc["bom"]["quantity"]["delta"] > 0 and doc["bom"]["cost_usd"]["delta"] > 0 and doc["bom"]["power_w"]["delta"] > 0
    assert out.startswith("cables: 384 added, 0 removed, 0 moved, 0 relabelled, 0 changed\n")


def test_growing_past_the_plan_moves_cables(grown, capsys):
    code, out, _ = _run(["diff", grown["plain128"], grown["plain144"], "--no-diffs"], capsys)
    assert code == 1
    assert out.startswith("cables: 384 added, 0 removed, 1,008 moved,")
    # a moved cable keeps its id (it is the same cable, re-plugged at the spine end); none is relabelled
    assert out.startswith("cables: 384 added, 0 removed, 1,008 moved, 0 relabelled, 0 changed\n")
    assert "  ~ cable R0-T2-00003  dgx1k-rail0-leaf0:Ethernet272 - dgx1k-rail0-spine0:Ethernet8  =>  dgx1k-rail0-leaf0:Ethernet272 - dgx1k-rail0-spine2:Ethernet0\n" in out


def test_growing_past_the_plan_keeps_every_existing_identifier(grown):
    """128 -> 144 domains past hb_domain.planned: every existing switch keeps its name, ASN
    and loopback, and every cable whose two ends stay keeps its id."""
    old, new = (build_fabric(parse_design(lab_1k(n), "d.yml")) for n in (128, 144))
    new_sw = {sw.name: sw for sw in new.switches}
    assert len(new.switches) > len(old.switches)  # the spine tier did grow
    for sw in old.switches:
        assert sw.name in new_sw, sw.name
        assert (new_sw[sw.name].asn, new_sw[sw.name].loopback) == (sw.asn, sw.loopback), sw.name
    ends = lambda lk: (lk.a.node, lk.a.port, lk.b.node, lk.b.port)  # noqa: E731
    new_ids = {ends(lk): lk.cable_id for lk in new.cables()}
    unmoved = [lk for lk in old.cables() if ends(lk) in new_ids]
    assert len(unmoved) > 8 * 128  # every NIC cable, and the uplinks that stay
    assert [lk.cable_id for lk in unmoved] == [new_ids[ends(lk)] for lk in unmoved]
    # ids are unique in both
    assert all(len({lk.cable_id for lk in f.cables()}) == len(f.cables()) for f in (old, new))


def test_no_change_is_exit_0(grown, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(grown["128"], copy)
    path = tmp_path / "plan.json"
    code, out, _ = _run(["diff", grown["128"], str(copy), "--json", str(path)], capsys)
    assert code == 0
    doc = json.loads(path.read_text())
    assert doc["cables"] == {"added": [], "removed": [], "moved": [], "relabelled": [], "changed": []}
    assert doc["devices"] == {"added": [], "removed": [], "changed": []}
    assert doc["bom"]["items"] == []
    assert out.startswith("cables: 0 added")
    code, out, _ = _run(["diff", "-q", grown["128"], str(copy)], capsys)
    assert code == 0 and out == ""  # -q: no summary on success
    code, out, _ = _run(["diff", "-q", grown["128"], grown["144"], "--no-diffs"], capsys)
    assert code == 1 and out.startswith("cables: 384 added")  # a change is what -q still prints


def test_json_is_deterministic(grown, tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path in (a, b):
        _run(["diff", grown["plain128"], grown["plain144"], "--json", str(path)], capsys)
    assert a.read_bytes() == b.read_bytes()


def test_a_hand_edit_is_one_changed_device_with_its_diff(grown, tmp_path, capsys):
    new = tmp_path / "new"
    shutil.copytree(grown["128"], new)
    conf = new / "configs" / "dgx1k-rail3-leaf1" / "frr.conf"
    conf.write_text(conf.read_text().replace("maximum-paths", "maximum-paths 1 ! was", 1))
    doc = plan(read_snapshot(grown["128"]), read_snapshot(str(new)))
    (changed,) = doc["devices"]["changed"]
    assert changed["device"] == "dgx1k-rail3-leaf1" and changed["files"] == ["frr.conf"]
    assert "--- a/configs/dgx1k-rail3-leaf1/frr.conf\n+++ b/configs/dgx1k-rail3-leaf1/frr.conf\n" in changed["diff"]
    assert "+  maximum-paths 1 ! was 32\n" in changed["diff"]


def test_moved_removed_and_relabelled_are_told_apart():
    old = {"C1": Cable("C1", ("g0", "eth1"), ("leaf0", "E0")), "C2": Cable("C2", ("leaf0", "E8"), ("spine0", "E0")),
           "C3": Cable("C3", ("leaf0", "E16"), ("spine1", "E0")), "C4": Cable("C4", ("g1", "eth1"), ("leaf0", "E4"))}
    new = {"C1": Cable("C1", ("g0", "eth1"), ("leaf0", "E0")), "C2": Cable("C2", ("leaf0", "E8"), ("spine2", "E0")),
           "C9": Cable("C9", ("leaf0", "E16"), ("spine1", "E0")), "C5": Cable("C5", ("g2", "eth1"), ("leaf0", "E12"))}
    ch = cable_changes(old, new)
    assert [m["cable_id"] for m in ch["moved"]] == ["C2"] and ch["moved"][0]["new"]["b"] == {"device": "spine2", "port": "E0"}
    assert [r["cable_id"] for r in ch["removed"]] == ["C4"]
    assert [a["cable_id"] for a in ch["added"]] == ["C5"]
    assert [(r["old_cable_id"], r["cable_id"]) for r in ch["relabelled"]] == [("C3", "C9")]
    assert ch["changed"] == []


def test_a_new_length_or_optic_on_the_same_ends_is_a_changed_cable():
    old = {"C1": Cable("C1", ("hb0", "rail0"), ("leaf0", "E0"), "400G-SR8 MMF", "30"),
           "C2": Cable("C2", ("leaf0", "E8"), ("spine0", "E0"), "400G-DR4 SMF", "100"),
           "C3": Cable("C3", ("leaf0", "E16"), ("spine1", "E0"), "400G-DR4 SMF", "100"),
           "C4": Cable("C4", ("hb1", "rail0"), ("leaf0", "E4"))}  # an older cabling.csv: no optic, no length
    new = {"C1": Cable("C1", ("hb0", "rail0"), ("leaf0", "E0"), "400G-SR8 MMF", "20"),
           "C9": Cable("C9", ("leaf0", "E8"), ("spine0", "E0"), "400G-FR4 SMF", "100"),
           "C3": Cable("C3", ("leaf0", "E16"), ("spine1", "E0"), "400G-DR4 SMF", "100"),
           "C4": Cable("C4", ("hb1", "rail0"), ("leaf0", "E4"), "400G-SR8 MMF", "30")}
    ch = cable_changes(old, new)
    assert [(c["cable_id"], c["old"], c["new"]) for c in ch["changed"]] == [
        ("C1", {"media": "400G-SR8 MMF", "length_m": "30"}, {"media": "400G-SR8 MMF", "length_m": "20"}),
        ("C9", {"media": "400G-DR4 SMF", "length_m": "100"}, {"media": "400G-FR4 SMF", "length_m": "100"})]
    assert [r["cable_id"] for r in ch["relabelled"]] == ["C9"] and ch["added"] == ch["removed"] == ch["moved"] == []


def test_a_new_cable_length_in_the_design_is_a_change_on_the_floor(grown, tmp_path, capsys):
    # cabling.nic_leaf_m 30 -> 20: the same ends, another cable; diff says so and exits 1
    longer = _compile(lab_1k(128, planned=256).replace("nic:", "cabling: {nic_leaf_m: 20}\nnic:", 1), tmp_path / "short")
    code, out, err = _run(["diff", grown["128"], longer, "--no-diffs", "--json", str(tmp_path / "p.json")], capsys)
    assert code == 1, err
    doc = json.loads((tmp_path / "p.json").read_text())
    assert len(doc["cables"]["changed"]) == 1024 and doc["cables"]["added"] == doc["cables"]["removed"] == []
    assert out.startswith("cables: 0 added, 0 removed, 0 moved, 0 relabelled, 1,024 changed\n")
    assert "  * cable R0-T1-00001  hb0:rail0 - dgx1k-rail0-leaf0:Ethernet0  400G-SR8 MMF 30 m => 400G-SR8 MMF 20 m\n" in out


# -- hostile input: exit 2 naming the file ---------------------------------------------

@pytest.fixture
def victim(grown, tmp_path):
    new = tmp_path / "victim"
    shutil.copytree(grown["128"], new)
    return new


@pytest.mark.parametrize("breakage,named,said", [
    (lambda o: (o / "cabling.csv").unlink(), "cabling.csv", "is missing"),
    (lambda o: (o / "cabling.csv").write_text("cable_id,a_device\nC1,x\n"), "cabling.csv", "header lacks column(s) a_port"),
    (lambda o: (o / "cabling.csv").write_text((o / "cabling.csv").read_text() + "C9,a,b\n"), "cabling.csv", "fields, the header has"),
    (lambda o: (o / "cabling.csv").write_text((o / "cabling.csv").read_text().replace(",30,", ",30\x1b[2J,", 1)),
     "cabling.csv", "line 2: length_m has control characters"),
    (lambda o: (o / "bom.csv").write_text("item,quantity,total_cost_usd,total_power_w\nx,lots,1,1\n"), "bom.csv", "line 2: quantity"),
    (lambda o: (o / "MANIFEST.json").write_text("{" * 100000), "MANIFEST.json", "not valid JSON"),
    (lambda o: (o / "MANIFEST.json").write_text("[]"), "MANIFEST.json", "not a railonly manifest"),
    # were exit 0 with nothing else changed (validate: needs "files": {path: sha256})
    *((lambda o, v=v: (o / "MANIFEST.json").write_text(
        re.sub(r'"README.md": "[0-9a-f]+"', f'"README.md": {v}', (o / "MANIFEST.json").read_text())),
       "MANIFEST.json", f"files.'README.md': {shown} is not a sha256 (needs \"files\": {{path: sha256}})")
      for v, shown in (("null", "None"), ("7", "7"), ("[]", "[]"))),
    (lambda o: (o / "MANIFEST.json").write_text((o / "MANIFEST.json").read_text().replace(' "files": {\n', ' "files": {\n  "README.md": "x",\n', 1)),
     "MANIFEST.json:5", "the name 'README.md' is given twice in one object"),  # was exit 0: the last value won
    (lambda o: (o / "configs" / "dgx1k-rail0-leaf0" / "frr.conf").write_bytes(b"\xff\xfe"), "frr.conf", "not UTF-8"),
    (lambda o: (o / "configs" / "dgx1k-rail0-leaf0" / "a b").write_text("x"), "'a b'", "has a name the compiler never writes"),
    (lambda o: (o / "hosts" / "hb0" / "nested").mkdir(), "hosts/hb0/nested", "is a directory, not a regular file"),
    # was a device of no files: `+ device ghost ()`
    (lambda o: (o / "configs" / "ghost").mkdir(), "configs/ghost", "is an empty folder, which compile never writes"),
])
def test_malformed_file_is_exit_2_naming_it(grown, victim, capsys, breakage, named, said):
    breakage(victim)
    code, out, err = _run(["diff", grown["128"], str(victim)], capsys)
    assert code == 2 and out == ""
    assert named in err and said in err and "fix:" in err and "Traceback" not in err


@pytest.mark.parametrize("beside", [False, True], ids=["inline", "forked"])  # a big fabric.json is parsed beside
@pytest.mark.parametrize("side", ["old", "new"])
@pytest.mark.parametrize("broken", [
    lambda t: t[:100], lambda t: "", lambda t: "\ufeff" + t, lambda t: "[" * 100_000,
    lambda t: t.replace('"radix": ', '"radix": NaN, "was": ', 1),
    lambda t: t.replace('"tiers": ', '"tiers": 9, "was": ', 1),  # a value no design compiles to: the field named
], ids=["truncated", "empty", "bom", "deep", "nan", "tiers"])
def test_a_broken_fabric_json_on_either_side_is_exit_2_as_every_reader_says(grown, victim, capsys, side, broken,
                                                                             beside, monkeypatch):
    """diff compared fabric.json by its hash only: `~ file fabric.json`, exit 1, for a file
    validate and the lab refuse."""
    from railonly.fabric.graph import fabric_json
    from railonly.fabric.input.problems import InputError
    from railonly.fabric.outdir import changeplan

    if beside:
        monkeypatch.setattr(changeplan, "PARSE_BESIDE_MIN_BYTES", 0)
        monkeypatch.setenv("RAILONLY_JOBS", "2")

    path = victim / "fabric.json"
    path.write_text(broken(path.read_text()), encoding="utf-8")
    with pytest.raises(InputError) as want:
        fabric_json.parse(path.read_text(encoding="utf-8"), str(path))
    argv = ["diff", grown["128"], str(victim)] if side == "new" else ["diff", str(victim), grown["128"]]
    code, out, err = _run(argv, capsys)
    assert code == 2 and out == "" and want.value.problems[0].format() in err and "Traceback" not in err


def test_symlinks_are_not_followed(grown, victim, tmp_path, capsys):
    secret = tmp_path / "secret.txt"
    secret.write_text("not yours\n")
    target = victim / "configs" / "dgx1k-rail0-leaf0" / "frr.conf"
    target.unlink()
    os.symlink(secret, target)
    code, _, err = _run(["diff", grown["128"], str(victim)], capsys)
    assert code == 2 and "dgx1k-rail0-leaf0/frr.conf: is a symbolic link; refused, not followed" in err
    target.unlink()
    target.write_text("x\n")
    (victim / "hosts" / "hb3").rename(tmp_path / "hb3")
    os.symlink(tmp_path / "hb3", victim / "hosts" / "hb3")  # a linked folder
    code, _, err = _run(["diff", grown["128"], str(victim)], capsys)
    assert code == 2 and "hosts/hb3: is a symbolic link" in err
    # the OUTDIR argument itself may be a link (the user's own choice): resolved once
    (victim / "hosts" / "hb3").unlink()
    (tmp_path / "hb3").rename(victim / "hosts" / "hb3")
    link_dir = tmp_path / "linked"
    os.symlink(victim, link_dir)
    code, out, _ = _run(["diff", grown["128"], str(link_dir), "--no-diffs"], capsys)
    assert code == 1 and "~ device dgx1k-rail0-leaf0  (frr.conf)" in out


def test_a_fifo_or_an_oversized_file_is_refused(grown, victim, capsys, monkeypatch):
    (victim / "hosts" / "hb0" / "nccl.env").unlink()
    os.mkfifo(victim / "hosts" / "hb0" / "nccl.env")
    code, _, err = _run(["diff", grown["128"], str(victim)], capsys)
    assert code == 2 and "nccl.env: is a FIFO (named pipe), not a regular file" in err  # and it did not block on the FIFO
    (victim / "hosts" / "hb0" / "nccl.env").unlink()
    (victim / "hosts" / "hb0" / "nccl.env").write_text("x")
    from railonly.fabric.outdir import changeplan
    monkeypatch.setattr(changeplan, "FILE_LIMIT", 10)
    code, _, err = _run(["diff", grown["128"], str(victim)], capsys)
    assert code == 2 and "MANIFEST.json: is larger than the limit of 10 bytes" in err


def test_missing_outdir_and_unwritable_json_are_exit_2(grown, tmp_path, capsys):
    code, _, err = _run(["diff", grown["128"], str(tmp_path / "nope")], capsys)
    assert code == 2 and "nope: no such directory" in err
    code, _, err = _run(["diff", grown["128"], grown["144"], "--json", str(tmp_path / "no" / "dir" / "p.json")], capsys)
    assert code == 2 and "cannot write" in err
    for flag in ("--json", "--runbook"):  # an empty path was ignored without a word
        code, _, err = _run(["diff", grown["128"], grown["144"], flag, ""], capsys)
        assert code == 2 and "is empty" in err
        code, _, err = _run(["diff", grown["128"], grown["144"], flag, os.path.join(grown["144"], "plan.out")], capsys)
        assert code == 2 and "lies inside OUTDIR" in err and not os.path.lexists(os.path.join(grown["144"], "plan.out"))


@pytest.mark.parametrize("field, refused", [
    ("rail0-leaf0", False),
    ("leaf-\u00e9", False),  # printable, not ASCII: the per-field check, accepted
    ("leaf\x1b[2J", True),  # a terminal escape
    ('"leaf,\x07zero"', True),  # quoted (a comma inside) with a bell
    ("x" * 201, True),  # longer than 200 characters
])
def test_parse_cabling_refuses_what_a_terminal_must_not_print(field, refused):
    from railonly.fabric.outdir.changeplan import parse_cabling
    from railonly.fabric.outdir.reader import UntrustedFile

    text = ("cable_id,a_device,a_port,b_device,b_port,rail,tier,media,length_m\n"
            "C1,hb0,gpu0,rail0-leaf0,Ethernet0,0,1,400G-SR8 MMF,3\n"
            f"C2,hb1,gpu0,{field},Ethernet4,0,1,400G-SR8 MMF,3\n")
    if refused:
        with pytest.raises(UntrustedFile, match="line 3: a_device|line 3: b_device"):
            parse_cabling(text)
    else:
        assert parse_cabling(text)["C2"].b == (field, "Ethernet4")


# -- the fast paths give what the plain ones give -------------------------------------------

def test_column_parse_of_cabling_equals_the_row_parse(grown, monkeypatch):
    from railonly.fabric.outdir import changeplan

    texts = [open(os.path.join(grown[k], "cabling.csv"), encoding="utf-8").read() for k in ("128", "plain144")]
    fast = [changeplan.parse_cabling(t) for t in texts]
    assert all(changeplan._parse_plain_cabling(t) is not None for t in texts)  # the column path was taken
    monkeypatch.setattr(changeplan, "_plain", lambda text: False)  # every row through the row-by-row parse
    assert fast == [changeplan.parse_cabling(t) for t in texts]
    assert [list(c) for c in fast] == [list(changeplan.parse_cabling(t)) for t in texts]  # same order


@pytest.mark.parametrize("row3, said", [
    ("C1,hb2,rail0,leaf0,E8,0,1", "line 3: cable id C1 appears twice"),
    ("C2,hb2,,leaf0,E8,0,1", "line 3: a_port is empty"),
    ("C2,hb2,rail0,leaf0,E8,x,1", "line 3: rail and tier must be whole numbers"),
    ("C2,hb2,rail0,leaf0,E8,\u0663,1", "line 3: rail and tier must be whole numbers"),  # in ASCII digits
    ("C2,hb2,rail0,leaf0,E8,0,²", "line 3: rail and tier must be whole numbers"),
    ("C2,hb2,rail0,leaf0,E8,0", "line 3: 6 fields, the header has 7"),
    ("", "line 3: 0 fields, the header has 7"),
])
def test_a_bad_row_in_a_plain_cabling_file_is_named_by_its_line(row3, said):
    from railonly.fabric.outdir.changeplan import _parse_plain_cabling, parse_cabling
    from railonly.fabric.outdir.reader import UntrustedFile

    text = f"cable_id,a_device,a_port,b_device,b_port,rail,tier\nC1,hb0,rail0,leaf0,E0,0,1\n{row3}\nC3,hb3,rail0,leaf0,E12,0,1\n"
    assert _parse_plain_cabling(text) is None
    with pytest.raises(UntrustedFile, match=said.replace("(", r"\(")):
        parse_cabling(text)


@pytest.mark.parametrize("pair", [("128", "144"), ("plain128", "plain144"), ("plain144", "plain128")])
def test_leaving_unchanged_cables_out_changes_no_plan(grown, pair, monkeypatch):
    from railonly.fabric.outdir import changeplan

    old, new = (read_snapshot(grown[k]).cables for k in pair)
    reduced = cable_changes(old, new)
    monkeypatch.setattr(changeplan, "_without_unchanged", lambda a, b: (a, b))
    assert reduced == cable_changes(old, new)


def test_a_port_with_two_cables_keeps_both_sides_whole():
    from railonly.fabric.outdir.changeplan import _without_unchanged

    old = {"C1": Cable("C1", ("g0", "eth1"), ("leaf0", "E0")), "C2": Cable("C2", ("g0", "eth1"), ("leaf0", "E0"))}
    new = {"C1": Cable("C1", ("g0", "eth1"), ("leaf0", "E0")), "C3": Cable("C3", ("g1", "eth1"), ("leaf0", "E4"))}
    assert _without_unchanged(old, new) == (old, new)
    assert cable_changes(old, new)["relabelled"] == [{"old_cable_id": "C2", "cable_id": "C1", "a": {"device": "g0", "port": "eth1"},
                                                     "b": {"device": "leaf0", "port": "E0"}}]


def test_diffs_made_in_a_forked_worker_equal_those_made_here(grown, monkeypatch):
    from railonly.fabric.outdir import changeplan

    old, new = read_snapshot(grown["plain128"]), read_snapshot(grown["plain144"])
    monkeypatch.setenv("RAILONLY_JOBS", "1")
    here = changeplan.to_json(plan(old, new))
    monkeypatch.setenv("RAILONLY_JOBS", "2")
    monkeypatch.setattr(changeplan, "FORK_DIFFS_AT", 1)
    doc = plan(old, new)
    assert len(doc["devices"]["changed"]) > 1 and changeplan.to_json(doc) == here


# -- the one-pass reader refuses what the reader refuses ----------------------------------------

def test_a_file_where_a_device_folder_belongs_is_refused(grown, victim, capsys):
    shutil.rmtree(victim / "configs" / "dgx1k-rail0-leaf0")
    (victim / "configs" / "dgx1k-rail0-leaf0").write_text("x\n")
    code, out, err = _run(["diff", grown["128"], str(victim)], capsys)
    assert code == 2 and out == "" and "configs/dgx1k-rail0-leaf0: is a regular file, not a directory" in err


def test_a_linked_folder_outside_configs_is_named_not_followed(grown, victim, tmp_path, capsys):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "secret").write_text("not yours\n")
    os.symlink(tmp_path / "elsewhere", victim / "docs-link")
    code, out, err = _run(["diff", grown["128"], str(victim), "--no-diffs"], capsys)
    assert code == 1, err
    assert "? file new:docs-link (not in MANIFEST.json" in out and "secret" not in out


def test_too_deep_too_many_or_too_large_is_refused(grown, victim, capsys, monkeypatch):
    from railonly.fabric.outdir import changeplan, scan

    deep = victim / "junk"
    deep.joinpath(*["d"] * (scan.MAX_DEPTH + 1)).mkdir(parents=True)
    code, _, err = _run(["diff", grown["128"], str(victim)], capsys)
    assert code == 2 and f"is nested more than {scan.MAX_DEPTH} folders deep" in err
    shutil.rmtree(deep)
    monkeypatch.setenv("RAILONLY_MAX_FILES", "100")
    code, _, err = _run(["diff", grown["128"], str(victim)], capsys)
    assert code == 2 and "holds more than 100 files and folders" in err and "RAILONLY_MAX_FILES" in err
    monkeypatch.delenv("RAILONLY_MAX_FILES")
    monkeypatch.setattr(changeplan, "TOTAL_LIMIT", 1 << 20)
    code, _, err = _run(["diff", grown["128"], str(victim)], capsys)
    assert code == 2 and "holds more than 1,048,576 bytes of artifacts" in err


@pytest.mark.parametrize("quantity", ["-5", "1.5", "\u0663", "1_0", "1e32", " 5", "nan", "inf", ""])
def test_a_bom_quantity_not_as_the_compiler_writes_it_is_refused(quantity):
    from railonly.fabric.outdir.changeplan import parse_bom
    from railonly.fabric.outdir.reader import UntrustedFile

    assert parse_bom("item,quantity,total_cost_usd,total_power_w\nx,3,67.5,0\n")["x"].quantity == 3
    with pytest.raises(UntrustedFile, match="line 2: quantity must be a whole number"):
        parse_bom(f"item,quantity,total_cost_usd,total_power_w\nx,{quantity},1,1\n")
