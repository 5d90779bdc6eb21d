"""Incremental compile: onto a previous OUTDIR, only changed files are written, and the
result is byte for byte the OUTDIR a full compile writes into a fresh directory."""

from __future__ import annotations

import json
import os
import typing

import pytest

from railonly.cli import main
from railonly.fabric.compiler import compile_design_units
from railonly.fabric.design.design import load_design
from railonly.fabric.outdir import previous

from ..conftest import REPO

# 4 rails, radix 16: a leaf serves 8 HB domains; planned 32 sizes the spines for four leaves a rail
GROWN = "name: t\nhb_domain: {{size: 4, count: {count}, planned: 32}}\nswitch: {{radix: 16{extra}}}\nrail: {{mode: routed}}\n"


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RAILONLY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def tree(path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def folders(path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_dir())


def inodes(path) -> dict[str, int]:
    return {str(p.relative_to(path)): p.stat().st_ino for p in path.rglob("*") if p.is_file()}


def compile_(tmp_path, text: str, out, *extra: str) -> str:
    design = tmp_path / "d.yml"
    design.write_text(text)
    assert main(["compile", str(design), "-o", str(out), *extra]) == 0


def same_as_full(tmp_path, out, text: str, capsys, *extra: str) -> str:
    """Compile `text` incrementally onto `out` and fully into a fresh folder; both trees equal.
    Returns what the incremental compile printed."""
    capsys.readouterr()
    compile_(tmp_path, text, out, *extra)
    said = capsys.readouterr().out
    compile_(tmp_path, text, tmp_path / "fresh", "--full", "-q")
    a, b = tree(out), tree(tmp_path / "fresh")
    assert a.keys() == b.keys()
    assert folders(out) == folders(tmp_path / "fresh")  # no folder left over from the previous tree
    assert [p for p in a if a[p] != b[p]] == []
    return said


@pytest.mark.parametrize("count", [7, 8])  # 7 -> 8 fills leaf0's last ports; 8 -> 9 adds a leaf a rail
def test_growth_within_planned_rewrites_only_changed_files(count, tmp_path, capsys):
    out = tmp_path / "o"
    compile_(tmp_path, GROWN.format(count=count, extra=""), out, "-q")
    before, old_bytes = inodes(out), tree(out)
    said = same_as_full(tmp_path, out, GROWN.format(count=count + 1, extra=""), capsys)
    assert "unchanged since the last compile, kept" in said
    after, new_bytes = inodes(out), tree(out)
    kept = {p for p in before.keys() & after.keys() if before[p] == after[p]}
    changed = {p for p in old_bytes.keys() & new_bytes.keys() if old_bytes[p] != new_bytes[p]}
    # unchanged unit files are the very same files (hard-linked), not rewritten
    assert "hosts/hb0/netplan.yaml" in kept and "configs/t-rail0-spine0/config_db.json" in kept | changed
    assert not kept & changed
    if count == 7:
        assert "configs/t-rail0-leaf0/config_db.json" in changed  # the leaf the new domain is cabled to
        assert "configs/t-rail0-spine0/config_db.json" in kept
    else:
        assert "configs/t-rail0-leaf1/config_db.json" in new_bytes.keys() - old_bytes.keys()
        assert "configs/t-rail0-spine0/config_db.json" in changed  # cabled to the new leaf
        # a leaf the growth does not cable keeps its files, its BGP (maximum-prefix) included
        assert {"configs/t-rail0-leaf0/config_db.json", "configs/t-rail0-leaf0/frr.conf"} <= kept
    assert {f"hosts/hb{count}/{f}" for f in ("netplan.yaml", "rails.sh")} <= new_bytes.keys() - old_bytes.keys()
    # the record of what was written lives outside OUTDIR
    assert os.path.isfile(previous.record_path(os.path.realpath(out)))
    assert not any("record" in p or "cache" in p for p in new_bytes)


@pytest.mark.parametrize("change", ["platform", "qos", "lengths"])
def test_changed_settings_rerender_what_they_touch(change, tmp_path, capsys):
    out = tmp_path / "o"
    compile_(tmp_path, GROWN.format(count=8, extra=""), out, "-q")
    text = {
        "platform": GROWN.format(count=8, extra=", platform: eos"),
        "qos": GROWN.format(count=8, extra="") + "qos: {roce_dscp: 24}\n",
        "lengths": GROWN.format(count=8, extra="") + "cabling: {leaf_spine_m: 150}\n",
    }[change]
    same_as_full(tmp_path, out, text, capsys)


def test_edited_platform_file_rerenders(tmp_path, capsys):
    base = (REPO / "fabric" / "platforms" / "data" / "switches" / "dell-z9664f.yaml").read_text()
    platform = tmp_path / "acme.yaml"
    platform.write_text(base.replace("model: dell-z9664f", "model: acme-25t"))
    text = "name: t\nhb_domain: {size: 2, count: 4}\nswitch: {model: acme-25t, platform_files: [acme.yaml]}\n"
    out = tmp_path / "o"
    compile_(tmp_path, text, out, "-q")
    assert "DellEMC-Z9664f-O64" in base
    platform.write_text(base.replace("model: dell-z9664f", "model: acme-25t").replace("DellEMC-Z9664f-O64", "Acme-25T-O64"))
    same_as_full(tmp_path, out, text, capsys)
    assert b"Acme-25T-O64" in (out / "configs" / "t-rail0-leaf0" / "config_db.json").read_bytes()


def _tamper(path) -> None:
    """Same size, same mtime, other bytes: only the inode's ctime tells."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[0:1] = b"#" if data[0:1] != b"#" else b"!"
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_tampered_file_is_rewritten(tmp_path, capsys):
    out = tmp_path / "o"
    text = GROWN.format(count=8, extra="")
    compile_(tmp_path, text, out, "-q")
    victim = out / "hosts" / "hb3" / "rails.sh"
    good = victim.read_bytes()
    _tamper(victim)
    leaf = out / "configs" / "t-rail0-leaf0" / "config_db.json"
    leaf.chmod(0o600)  # a mode change alone makes it not ours either
    design = tmp_path / "d.yml"
    assert main(["compile", str(design), "-o", str(out), "-q"]) == 2  # an edit is not thrown away unasked
    assert "changed since railonly wrote it (hosts/hb3/rails.sh" in capsys.readouterr().err
    said = same_as_full(tmp_path, out, text, capsys, "--force")
    assert victim.read_bytes() == good
    assert "unchanged since the last compile, kept" in said  # the rest was still carried over
    assert oct(leaf.stat().st_mode & 0o777) == "0o644"


def test_hard_link_planted_in_outdir_is_not_carried(tmp_path, capsys):
    """A file of the OUTDIR hard-linked from elsewhere (nlink 2) is rewritten, never linked on."""
    out = tmp_path / "o"
    text = GROWN.format(count=8, extra="")
    compile_(tmp_path, text, out, "-q")
    victim = out / "hosts" / "hb5" / "nccl.env"
    os.link(victim, tmp_path / "outside")
    same_as_full(tmp_path, out, text, capsys)
    assert victim.stat().st_ino != (tmp_path / "outside").stat().st_ino


def test_replaced_outdir_is_compiled_in_full(tmp_path, capsys):
    """Another directory at the same path (a checkout, a copy) is not the one the record
    describes: every file is rendered again."""
    out = tmp_path / "o"
    text = GROWN.format(count=8, extra="")
    compile_(tmp_path, text, out, "-q")
    os.rename(out, tmp_path / "moved")
    os.mkdir(out)
    for p, data in tree(tmp_path / "moved").items():
        (out / p).parent.mkdir(parents=True, exist_ok=True)
        (out / p).write_bytes(data)
    said = same_as_full(tmp_path, out, text, capsys)
    assert "kept" not in said


@pytest.mark.parametrize("record", ["garbage", "wrong-shape", "other-path"])
def test_damaged_record_means_full_compile(record, tmp_path, capsys):
    out = tmp_path / "o"
    text = GROWN.format(count=8, extra="")
    compile_(tmp_path, text, out, "-q")
    path = previous.record_path(os.path.realpath(out))
    doc = json.loads(open(path).read())
    with open(path, "w") as fh:
        if record == "garbage":
            fh.write("{not json")
        elif record == "wrong-shape":
            fh.write(json.dumps({**doc, "files": {"../../etc/passwd": ["x", [0, 0, 0, 0, 1, 0, 0]]}}))
        else:
            fh.write(json.dumps({**doc, "outdir": "/elsewhere"}))
    said = same_as_full(tmp_path, out, text, capsys)
    assert "kept" not in said


def test_full_flag_and_unwritable_cache(tmp_path, capsys, monkeypatch):
    out = tmp_path / "o"
    text = GROWN.format(count=8, extra="")
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("RAILONLY_CACHE_DIR", str(tmp_path / "file" / "cache"))  # cannot be created
    compile_(tmp_path, text, out, "-q")
    said = same_as_full(tmp_path, out, text, capsys)
    assert "kept" not in said


def test_old_tree_removed_after_the_swap_stays_ours_until_gone(tmp_path, capsys, monkeypatch):
    """A big OUTDIR's old folders, when they cannot be kept as the spare, are removed by a
    detached process after the swap: the skeleton keeps its writer's lock (no other compile
    takes it for a dead one's), the record written before is still good (every file carried
    next time), and it goes."""
    from railonly.cli.commands import compile as compile_command
    from railonly.fabric.outdir import writer

    monkeypatch.setattr(writer, "BACKGROUND_REMOVAL_FILES", 0)
    monkeypatch.setattr(writer, "_keep", lambda tree, keep: False)  # e.g. the cache on another mount
    out = tmp_path / "o"
    compile_(tmp_path, GROWN.format(count=8, extra=""), out, "-q")
    compile_(tmp_path, GROWN.format(count=9, extra=""), out, "-q")
    assert compile_command._removals, "the old tree was removed in the foreground"
    assert writer.remove_stale_staging(str(tmp_path)) == [], "a live removal was taken for a dead writer's"
    left = [p for p in tmp_path.iterdir() if p.name.startswith(writer.STAGE_PREFIX)]
    assert all(not f.is_file() for p in left for f in p.rglob("*") if f.name != writer.STAGE_MARKER)
    compile_command.wait_for_removals()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "d.yml", "o"]
    before = inodes(out)
    said = same_as_full(tmp_path, out, GROWN.format(count=9, extra=""), capsys)
    assert "is up to date" in said and inodes(out) == before, \
        "a file recorded while the old tree still linked it was rewritten: its record was stale"


# a lab slice: the lab is 2 of the design's domains, its files a unit of their own
SLICED = GROWN.replace("rail: {{mode: routed}}\n", "rail: {{mode: routed}}\nlab: {{domains: {lab}}}\n")


def _lab_files(files) -> set[str]:
    return {p for p in files if p.startswith("lab/") or p.endswith((".clab.yml", ".clabernetes.yaml"))}


def test_lab_slice_is_carried_over_on_growth(tmp_path, capsys):
    out = tmp_path / "o"
    compile_(tmp_path, SLICED.format(count=8, extra="", lab=2), out, "-q")
    before = inodes(out)
    lab = _lab_files(before)
    assert "lab/configs/t-rail0-leaf0/config_db.json" in lab and "t.clabernetes.yaml" in lab
    (tmp_path / "d.yml").write_text(SLICED.format(count=9, extra="", lab=2))
    last = previous.load(os.path.realpath(out))
    _fab, grown = compile_design_units(load_design(str(tmp_path / "d.yml")), None, last.units, last.read, last.paths)
    assert lab <= grown.files.carried, "the lab slice was rendered again"
    same_as_full(tmp_path, out, SLICED.format(count=9, extra="", lab=2), capsys)
    after = inodes(out)
    assert _lab_files(after) == lab
    assert {p for p in lab if after[p] != before[p]} == set()


@pytest.mark.parametrize("change", ["domains", "tampered"])
def test_lab_slice_rerenders_when_it_changes(change, tmp_path, capsys):
    out = tmp_path / "o"
    compile_(tmp_path, SLICED.format(count=8, extra="", lab=2), out, "-q")
    before = inodes(out)
    old_bytes = tree(out)
    if change == "tampered":
        _tamper(out / "lab" / "fabric.json")
    text = SLICED.format(count=8, extra="", lab=3 if change == "domains" else 2)
    # the tampered file is rendered again (--force: an edit is not thrown away unasked), like the rest of its unit
    same_as_full(tmp_path, out, text, capsys, *(["--force"] if change == "tampered" else []))
    after = inodes(out)
    if change == "domains":
        assert tree(out)["t.clab.yml"] != old_bytes["t.clab.yml"]
    assert tree(out)["lab/fabric.json"] == old_bytes["lab/fabric.json"] or change == "domains"
    assert after["hosts/hb0/netplan.yaml"] == before["hosts/hb0/netplan.yaml"]


@pytest.mark.parametrize("check", [True, False])
def test_fabric_json_that_does_not_parse_back_is_never_written(check, tmp_path, capsys, monkeypatch):
    """A renderer bug in fabric.json stops the compile: a failed self-check (exit 1), or
    without the self-check the compile's own parse; nothing is written either way."""
    from railonly.fabric.graph import fabric_json

    monkeypatch.setattr(fabric_json, "render", lambda fab: '{"nodes": [\n')
    design = tmp_path / "d.yml"
    design.write_text(GROWN.format(count=8, extra=""))
    out = tmp_path / "o"
    if check:
        assert main(["compile", str(design), "-o", str(out)]) == 1
        assert "fabric.json does not parse back" in capsys.readouterr().err
    else:
        with pytest.raises(ValueError):
            main(["compile", str(design), "-o", str(out), "--no-check"])
    assert not out.exists()


def test_shrink_drops_the_gone_units_and_their_folders(tmp_path, capsys):
    """9 -> 7 domains: a leaf a rail and two hosts go, files and folders."""
    out = tmp_path / "o"
    compile_(tmp_path, GROWN.format(count=9, extra=""), out, "-q")
    said = same_as_full(tmp_path, out, GROWN.format(count=7, extra=""), capsys)
    assert "unchanged since the last compile, kept" in said
    assert not (out / "configs" / "t-rail0-leaf1").exists() and not (out / "hosts" / "hb8").exists()


def test_file_replaced_after_the_record_was_checked_is_never_linked(tmp_path):
    """Carried files are linked by path after previous.load checked them: one swapped in
    between is not linked on; its recorded bytes are read instead (checked again), which
    fails: previous.Changed (exit 3), nothing staged, the OUTDIR as it was."""
    from railonly.fabric.outdir import writer

    out = tmp_path / "o"
    compile_(tmp_path, GROWN.format(count=8, extra=""), out, "-q")
    last = previous.load(os.path.realpath(out))
    victim = "hosts/hb3/rails.sh"
    assert victim in last.sha
    os.rename(out / victim, tmp_path / "aside")
    (out / victim).write_bytes(b"#!/bin/sh\nrm -rf /\n")
    with pytest.raises(previous.Changed):  # (prepare alone: the stage's own check, not the edit guard before it)
        writer.stage(writer.prepare(str(out)), {}, "0" * 64, {victim, "hosts/hb3/netplan.yaml"}, last)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(writer.STAGE_PREFIX)]
    assert (out / victim).read_bytes().startswith(b"#!/bin/sh\nrm")


def test_failed_incremental_self_check_writes_nothing_and_leaves_no_stage(tmp_path, capsys, monkeypatch):
    from railonly.fabric.graph import fabric_json
    from railonly.fabric.outdir import writer

    out = tmp_path / "o"
    compile_(tmp_path, GROWN.format(count=8, extra=""), out, "-q")
    before = tree(out)
    monkeypatch.setattr(fabric_json, "render", lambda fab: '{"nodes": [\n')
    (tmp_path / "d.yml").write_text(GROWN.format(count=9, extra=""))
    assert main(["compile", str(tmp_path / "d.yml"), "-o", str(out)]) == 1
    assert tree(out) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(writer.STAGE_PREFIX)]


def test_file_replaced_while_compiling_is_exit_3_and_nothing_written(tmp_path, capsys, monkeypatch):
    """The CLI's view of the case above: a clear message and exit 3, no traceback."""
    out = tmp_path / "o"
    compile_(tmp_path, GROWN.format(count=8, extra=""), out, "-q")
    victim = out / "hosts" / "hb3" / "rails.sh"
    load = previous.load

    def load_then_replace(outdir):
        last = load(outdir)
        os.rename(victim, tmp_path / "aside")
        victim.write_bytes(b"#!/bin/sh\n")
        return last

    monkeypatch.setattr(previous, "load", load_then_replace)
    (tmp_path / "d.yml").write_text(GROWN.format(count=9, extra=""))
    assert main(["compile", str(tmp_path / "d.yml"), "-o", str(out), "-q"]) == 3
    assert "changed while railonly was compiling onto it" in capsys.readouterr().err
    assert victim.read_bytes() == b"#!/bin/sh\n" and not (out / "hosts" / "hb8").exists()


def test_same_design_again_is_up_to_date_and_touches_nothing(tmp_path, capsys):
    out = tmp_path / "o"
    text = GROWN.format(count=7, extra="")
    compile_(tmp_path, text, out, "-q")
    before, top = inodes(out), out.stat().st_ino
    said = same_as_full(tmp_path, out, text, capsys)
    assert "is up to date" in said
    assert inodes(out) == before and out.stat().st_ino == top  # not even swapped
    said = same_as_full(tmp_path, out, text.replace("count: 7", "count: 8"), capsys)
    assert "is up to date" not in said and "kept" in said


@pytest.mark.parametrize("stray", ["file", "folder", "link", "folder moved behind a link", "folder mode", "top mode",
                                   pytest.param("folder owner", marks=pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root"))])
def test_anything_railonly_did_not_write_means_a_compile(stray, tmp_path, capsys):
    """Up to date means OUTDIR holds the recorded files in real folders, 0755 as made,
    and nothing else."""
    out = tmp_path / "o"
    text = GROWN.format(count=7, extra="")
    compile_(tmp_path, text, out, "-q")
    leaf = out / "configs" / "t-rail0-leaf0"
    if stray == "file":
        (out / "configs" / "notes.txt").write_text("mine\n")
    elif stray == "folder":
        (out / "hosts" / "hb99").mkdir()
    elif stray == "link":
        (out / "configs" / "extra").symlink_to(leaf)
    elif stray == "folder mode":
        (out / "configs").chmod(0o777)  # anyone may now put files beside the switch configs
    elif stray == "top mode":
        out.chmod(0o777)
    elif stray == "folder owner":
        os.chown(out / "hosts", 65534, 65534)
    else:  # its files keep their inodes and stats, found through the link
        leaf.rename(tmp_path / "elsewhere")
        leaf.symlink_to(tmp_path / "elsewhere")
    force = ()
    if "mode" not in stray and "owner" not in stray:  # an entry of the user's: replacing the tree would delete it
        before = sorted(map(str, out.rglob("*")))
        capsys.readouterr()
        assert main(["compile", str(tmp_path / "d.yml"), "-o", str(out)]) == 2
        err = capsys.readouterr().err
        assert "1 entry railonly did not write" in err and "--force" in err, err
        assert sorted(map(str, out.rglob("*"))) == before  # nothing written, nothing removed
        force = ("--force",)
    said = same_as_full(tmp_path, out, text, capsys, *force)
    assert "is up to date" not in said
    assert {oct(p.stat().st_mode & 0o777) for p in [out, *out.rglob("*")] if p.is_dir()} == {"0o755"}
    assert {p.stat().st_uid for p in [out, *out.rglob("*")]} == {os.geteuid()}
    said = same_as_full(tmp_path, out, text.replace("count: 7", "count: 8"), capsys)  # from the spare: the tree changed
    assert {oct(p.stat().st_mode & 0o777) for p in [out, *out.rglob("*")] if p.is_dir()} == {"0o755"}
    assert {p.stat().st_uid for p in [out, *out.rglob("*")]} == {os.geteuid()}


def test_up_to_date_needs_the_same_lab_and_a_self_check(tmp_path, capsys):
    out = tmp_path / "o"
    text = GROWN.format(count=7, extra="")
    compile_(tmp_path, text, out, "-q", "--no-check")
    assert "is up to date" not in same_as_full(tmp_path, out, text, capsys)  # never self-checked: now it is
    capsys.readouterr()
    compile_(tmp_path, text, out, "--no-check")
    assert "is up to date" in capsys.readouterr().out
    compile_(tmp_path, text, out, "--lab-domains", "2")
    assert "is up to date" not in capsys.readouterr().out


@pytest.mark.parametrize("beside", [False, True])
def test_a_wrong_new_row_of_a_plant_file_fails_the_incremental_self_check(beside, tmp_path, capsys, monkeypatch):
    """The self-check judges the plant files by their rows new since the last compile: a
    wrong one stops the compile (exit 1, nothing written). `beside`: the files' changes
    taken in a forked process while fabric.json is parsed, as on a big fabric."""
    from railonly.fabric import compiler
    from railonly.fabric.outputs import cabling

    if beside:
        monkeypatch.setattr(compiler, "SINCE_BESIDE_MIN_BYTES", 0)
        monkeypatch.setenv("RAILONLY_JOBS", "2")

    out = tmp_path / "o"
    compile_(tmp_path, GROWN.format(count=7, extra=""), out, "-q")
    before = tree(out)
    render = cabling.render
    monkeypatch.setattr(cabling, "render", lambda fab: render(fab).replace(",hb7,rail0,", ",hb7,rail1,"))
    (tmp_path / "d.yml").write_text(GROWN.format(count=8, extra=""))
    capsys.readouterr()
    assert main(["compile", str(tmp_path / "d.yml"), "-o", str(out)]) == 1
    assert "plant/cabling.csv" in capsys.readouterr().err
    assert tree(out) == before


def yang_calls(tmp_path, monkeypatch) -> "typing.Callable[[], int]":
    """Counts the switches the self-check sends to the YANG models (it runs in a forked
    process: each call leaves a line in a file)."""
    from railonly.fabric.validate import sonic_yang

    log = tmp_path / "yang-calls"
    log.write_text("")
    judge = sonic_yang.validate_config_db

    def counted(*a, **k):
        with open(log, "a") as fh:
            fh.write("x\n")
        return judge(*a, **k)

    monkeypatch.setattr(sonic_yang, "validate_config_db", counted)
    return lambda: len(log.read_text().splitlines())


@pytest.mark.parametrize("count, judged", [(9, 0), (7, 1)])
def test_incremental_self_check_samples_only_shapes_no_carried_switch_has(count, judged, tmp_path, capsys,
                                                                          monkeypatch):
    """9 -> 10 re-renders leaf1 of each rail while leaf0, a switch of the same shape, is
    carried: its shape was sampled by the self-check before. 7 -> 8 re-renders every leaf."""
    out = tmp_path / "o"
    compile_(tmp_path, GROWN.format(count=count, extra=""), out, "-q")
    calls = yang_calls(tmp_path, monkeypatch)
    compile_(tmp_path, GROWN.format(count=count + 1, extra=""), out, "-q")
    assert calls() == judged


def test_self_check_after_a_no_check_compile_judges_every_shape(tmp_path, capsys, monkeypatch):
    """Nothing carried from a --no-check compile was judged: the next self-check is whole."""
    out = tmp_path / "o"
    compile_(tmp_path, GROWN.format(count=9, extra=""), out, "-q", "--no-check")
    calls = yang_calls(tmp_path, monkeypatch)
    compile_(tmp_path, GROWN.format(count=10, extra=""), out, "-q")
    assert calls() == 2  # a leaf and a spine


def judged_switches(tmp_path, monkeypatch) -> "typing.Callable[[], list[set[str]]]":
    """The switches each self-check judges (it runs in a forked process: a line a self-check)."""
    from railonly.fabric import compiler

    log = tmp_path / "judged"
    log.write_text("")
    judged = compiler._judged

    def logged(*a, **k):
        got = judged(*a, **k)
        with open(log, "a") as fh:
            fh.write(json.dumps(sorted(got)) + "\n")
        return got

    monkeypatch.setattr(compiler, "_judged", logged)
    return lambda: [set(json.loads(line)) for line in log.read_text().splitlines()]


@pytest.mark.parametrize("beside", [False, True])
def test_growth_judges_the_rendered_switches_and_those_new_lines_name(beside, tmp_path, capsys, monkeypatch):
    """9 -> 10 cables the new domain to leaf1 of each rail: fabric.json only gains lines, none of
    which names a spine, so the spines cabled to those leaves (carried, their lines as judged
    before) are not judged again; 8 -> 9 adds a leaf a rail, whose new links name the spines."""
    from railonly.fabric import compiler

    if beside:
        monkeypatch.setattr(compiler, "SINCE_BESIDE_MIN_BYTES", 0)
        monkeypatch.setenv("RAILONLY_JOBS", "2")
    out = tmp_path / "o"
    compile_(tmp_path, GROWN.format(count=9, extra=""), out, "-q")
    judged = judged_switches(tmp_path, monkeypatch)
    compile_(tmp_path, GROWN.format(count=10, extra=""), out, "-q")
    assert judged() == [{f"t-rail{r}-leaf1" for r in range(4)}]

    compile_(tmp_path, GROWN.format(count=8, extra=""), tmp_path / "o8", "-q")
    (tmp_path / "judged").write_text("")
    compile_(tmp_path, GROWN.format(count=9, extra=""), tmp_path / "o8", "-q")
    (got,) = judged()
    assert {f"t-rail{r}-leaf1" for r in range(4)} <= got and {f"t-rail{r}-spine0" for r in range(4)} <= got
    assert not any("leaf0" in name for name in got)  # carried, and no new line names it


def test_judged_switches_when_fabric_json_changed_otherwise_are_every_cabled_one():
    """Without fabric.json's gained lines (a line changed or gone, or no base), the self-check
    judges the rendered switches and every switch cabled to one of them."""
    from railonly.fabric import compiler
    from railonly.fabric.validate import since

    fab, _ = compile_design_units(load_design(REPO / "labs" / "mini-routed.yml"))
    leaf = next(n.name for n in fab.switches if n.tier == 1)
    cabled = {e.node for lk in fab.links if leaf in (lk.a.node, lk.b.node) for e in (lk.a, lk.b)}
    near = {leaf} | (cabled & {n.name for n in fab.switches})
    assert len(near) > 1
    assert compiler._judged(fab, {leaf}, None) == near
    assert compiler._judged(fab, {leaf}, since.Changes(None, {})) == near
    spine = next(n.name for n in fab.switches if n.tier == 2)
    link = {"kind": "fabric", "a": {"node": leaf, "port": "Ethernet99"}, "b": {"node": spine, "port": "Ethernet98"}}
    assert compiler._judged(fab, {leaf}, since.Changes([link], {})) == {leaf, spine}
    assert compiler._judged(fab, {leaf}, since.Changes([], {})) == {leaf}
    odd = [{"name": ["not", "a", "name"]}, {"kind": "fabric", "a": "x", "b": {"node": 7}}]
    assert compiler._judged(fab, {leaf}, since.Changes(odd, {})) == {leaf}  # nothing named: no switch added


def test_a_wrong_rendered_switch_fails_the_incremental_self_check(tmp_path, capsys, monkeypatch):
    """The switches a growth renders are judged whole: a wrong hostname in one stops the compile."""
    from railonly.fabric.devices import sonic_render

    out = tmp_path / "o"
    compile_(tmp_path, GROWN.format(count=9, extra=""), out, "-q")
    before = tree(out)
    render = sonic_render.render_switch

    def wrong(fab, sw, *a):
        doc, files = render(fab, sw, *a)
        if sw.name == "t-rail2-leaf1":
            files = {p: t.replace('"hostname": "t-rail2-leaf1"', '"hostname": "t-rail2-leaf9"') for p, t in files.items()}
        return doc, files

    monkeypatch.setattr(sonic_render, "render_switch", wrong)
    (tmp_path / "d.yml").write_text(GROWN.format(count=10, extra=""))
    capsys.readouterr()
    assert main(["compile", str(tmp_path / "d.yml"), "-o", str(out)]) == 1
    assert "hostname/t-rail2-leaf1" in capsys.readouterr().err
    assert tree(out) == before


@pytest.mark.parametrize("count", [7, 8])
def test_files_rendered_beside_the_units_are_the_same(count, tmp_path, capsys, monkeypatch):
    """On a big fabric the graph-only files are rendered in a forked process beside the
    switch and host units: the same tree, compiled in full and incrementally."""
    from railonly.fabric import compiler

    compile_(tmp_path, GROWN.format(count=count, extra=""), tmp_path / "alone", "-q", "--full")
    monkeypatch.setattr(compiler, "BESIDE_MIN_SWITCHES", 0)
    monkeypatch.setenv("RAILONLY_JOBS", "2")
    out = tmp_path / "o"
    compile_(tmp_path, GROWN.format(count=count - 1, extra=""), out, "-q")
    same_as_full(tmp_path, out, GROWN.format(count=count, extra=""), capsys)
    assert tree(out) == tree(tmp_path / "alone")


@pytest.mark.parametrize("beside", [False, True])
def test_growth_is_judged_by_the_new_rows_of_the_plant_files(beside, tmp_path, capsys, monkeypatch):
    """A growth onto a self-checked compile never judges the plant files whole (the self-check
    runs in a forked process: a whole judgement would leave a line in a file)."""
    from railonly.fabric import compiler
    from railonly.fabric.validate import plant

    if beside:
        monkeypatch.setattr(compiler, "SINCE_BESIDE_MIN_BYTES", 0)
        monkeypatch.setenv("RAILONLY_JOBS", "2")
    out, log = tmp_path / "o", tmp_path / "whole"
    compile_(tmp_path, GROWN.format(count=7, extra=""), out, "-q")
    whole = plant.plant

    def counted(*a, **k):
        with open(log, "a") as fh:
            fh.write("x\n")
        return whole(*a, **k)

    monkeypatch.setattr(plant, "plant", counted)  # what since.py falls back to
    compile_(tmp_path, GROWN.format(count=8, extra=""), out, "-q")
    assert not log.exists()


def test_a_tree_another_compile_swapped_in_before_the_record_gets_none(tmp_path, capsys, monkeypatch):
    """Two compiles onto one OUTDIR: the one that records last may find the other's tree
    there. Its record would pair the other tree's files with its own sha256s, and the next
    compile of its design would find them "up to date"; it records nothing instead."""
    out, theirs = tmp_path / "o", tmp_path / "theirs"
    compile_(tmp_path, GROWN.format(count=8, extra=""), out, "-q")
    compile_(tmp_path, GROWN.format(count=9, extra=""), theirs, "-q")
    save = previous.save

    def swapped_in_first(outdir, *args, **kwargs):
        os.rename(outdir, tmp_path / "ours")
        os.rename(theirs, outdir)
        return save(outdir, *args, **kwargs)

    monkeypatch.setattr(previous, "save", swapped_in_first)
    compile_(tmp_path, GROWN.format(count=7, extra=""), out, "-q")
    monkeypatch.setattr(previous, "save", save)
    said = same_as_full(tmp_path, out, GROWN.format(count=7, extra=""), capsys)
    assert "up to date" not in said


@pytest.mark.parametrize("when", ["after the record was checked", "after the stage, before the record"])
@pytest.mark.parametrize("before", [(8,), (7, 8)], ids=["linked", "held-by-the-spare"])
def test_a_file_edited_in_place_while_compiling_is_never_vouched_for(when, before, tmp_path, capsys, monkeypatch):
    """Same size, mtime put back: only ctime tells. Edited before it is linked on (or
    kept from the spare), it is not (its recorded bytes are read and checked: exit 3);
    edited once staged, the record made after the swap leaves it out, and the next
    compile writes it again."""
    out = tmp_path / "o"
    for count in before:
        compile_(tmp_path, GROWN.format(count=count, extra=""), out, "-q")
    victim = out / "hosts" / "hb3" / "rails.sh"
    good = victim.read_bytes()
    name = "load" if when.startswith("after the record") else "save"
    real = getattr(previous, name)

    def then_tamper(outdir, *args, **kwargs):
        if name == "save":
            _tamper(victim)
        result = real(outdir, *args, **kwargs)
        if name == "load":
            _tamper(victim)
        return result

    monkeypatch.setattr(previous, name, then_tamper)
    (tmp_path / "d.yml").write_text(GROWN.format(count=9, extra=""))
    rc = main(["compile", str(tmp_path / "d.yml"), "-o", str(out), "-q"])
    assert rc == (3 if name == "load" else 0)
    monkeypatch.setattr(previous, name, real)
    capsys.readouterr()
    assert main(["compile", str(tmp_path / "d.yml"), "-o", str(out), "-q"]) == 2  # the edit is kept unless --force
    assert "changed since railonly wrote it (hosts/hb3/rails.sh" in capsys.readouterr().err
    said = same_as_full(tmp_path, out, GROWN.format(count=9, extra=""), capsys, "--force")
    assert "up to date" not in said and victim.read_bytes() == good
