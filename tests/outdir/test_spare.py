"""The spare: the tree an incremental compile swaps out is kept in railonly's cache, and
the next compile's stage starts from it. Whatever happened to it since, the OUTDIR
written is byte for byte a full compile's, and nothing outside the spare is touched."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

import pytest

from railonly.fabric.outdir import previous, removal, writer

from .test_incremental import GROWN, _tamper, cache, compile_, inodes, same_as_full  # noqa: F401 (fixture)


def spare_of(out) -> str:
    return previous.spare_path(os.path.realpath(out))


def lineage(tmp_path, out, *counts: int) -> None:
    for count in counts:
        compile_(tmp_path, GROWN.format(count=count, extra=""), out, "-q")


def test_growth_in_a_lineage_starts_from_the_spare(tmp_path, capsys, monkeypatch):
    out = tmp_path / "o"
    lineage(tmp_path, out, 7, 8)
    spare = spare_of(out)
    assert os.path.isdir(spare), "the tree swapped out was not kept"
    made: list[set[str]] = []  # each stage's folders made, the incremental compile's first
    make_dirs = writer._make_dirs
    monkeypatch.setattr(writer, "_make_dirs", lambda root, folders: (made.append(set(folders)), make_dirs(root, folders)))
    before = inodes(out)
    said = same_as_full(tmp_path, out, GROWN.format(count=9, extra=""), capsys)
    assert "unchanged since the last compile, kept" in said
    assert "hosts/hb8" in made[0] and "hosts/hb0" not in made[0], "folders the spare had were made again"
    assert inodes(out)["hosts/hb0/netplan.yaml"] == before["hosts/hb0/netplan.yaml"]
    assert os.path.isdir(spare)
    assert os.stat(out / "hosts" / "hb0" / "netplan.yaml").st_nlink == 2  # one in OUTDIR, one in the spare


def test_whatever_the_spare_went_through_the_outdir_is_a_full_compiles(tmp_path, capsys):
    """A stray file and folder, a folder replaced by a link to someone else's folder, the
    staging lock file's name taken by a link, a file replaced with other bytes, and an
    OUTDIR file edited in place (the spare holds the same inode): the stage drops or
    replaces each, never follows a link."""
    out = tmp_path / "o"
    lineage(tmp_path, out, 7, 8)
    spare = spare_of(out)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "netplan.yaml").write_text("not railonly's\n")
    (victim / "keep.txt").write_text("not railonly's either\n")
    with open(os.path.join(spare, "stray.txt"), "w") as fh:
        fh.write("planted\n")
    os.symlink(victim / "keep.txt", os.path.join(spare, writer.STAGE_MARKER))  # the stage's lock file, as a link
    os.makedirs(os.path.join(spare, "configs", "planted", "deep"))
    hb1 = os.path.join(spare, "hosts", "hb1")
    for name in os.listdir(hb1):
        os.unlink(os.path.join(hb1, name))
    os.rmdir(hb1)
    os.symlink(victim, hb1)
    replaced = os.path.join(spare, "hosts", "hb2", "netplan.yaml")
    os.unlink(replaced)
    with open(replaced, "w") as fh:
        fh.write("other bytes\n")
    _tamper(out / "hosts" / "hb3" / "netplan.yaml")
    same_as_full(tmp_path, out, GROWN.format(count=9, extra=""), capsys, "--force")  # --force: the edit goes
    assert sorted(os.listdir(victim)) == ["keep.txt", "netplan.yaml"]
    assert (victim / "netplan.yaml").read_text() == "not railonly's\n"


def test_a_spare_that_is_a_link_is_dropped_never_followed(tmp_path, capsys):
    out = tmp_path / "o"
    lineage(tmp_path, out, 7, 8)
    spare = spare_of(out)
    removal.remove_tree(spare)
    victim = tmp_path / "victim"
    (victim / "hosts").mkdir(parents=True)
    (victim / "hosts" / "data").write_text("mine\n")
    os.symlink(victim, spare)
    same_as_full(tmp_path, out, GROWN.format(count=9, extra=""), capsys)
    assert (victim / "hosts" / "data").read_text() == "mine\n"
    assert os.path.isdir(spare) and not os.path.islink(spare)  # the new spare, a real folder


def test_a_spare_that_cannot_move_in_is_removed_and_the_stage_starts_empty(tmp_path, capsys, monkeypatch):
    """The cache on another mount than OUTDIR: the rename fails with EXDEV."""
    out = tmp_path / "o"
    lineage(tmp_path, out, 7, 8)
    spare = spare_of(out)
    rename = os.rename

    def cross_device(src, dst, *a, **k):
        if src == spare or dst == spare:
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return rename(src, dst, *a, **k)

    monkeypatch.setattr(os, "rename", cross_device)
    same_as_full(tmp_path, out, GROWN.format(count=9, extra=""), capsys)
    assert not os.path.lexists(spare)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(writer.STAGE_PREFIX)]


def test_full_takes_the_spares_folders_and_keeps_none(tmp_path, capsys, monkeypatch):
    """--full after a lineage: every file written anew, the spare's folders used, its files
    (links of the replaced tree) gone, and no spare kept: none of the old bytes stay on disk."""
    out = tmp_path / "o"
    lineage(tmp_path, out, 7, 8)
    made: list[set[str]] = []
    make_dirs = writer._make_dirs
    monkeypatch.setattr(writer, "_make_dirs", lambda root, folders: (made.append(set(folders)), make_dirs(root, folders)))
    before = inodes(out)
    compile_(tmp_path, GROWN.format(count=9, extra=""), out, "-q", "--full")
    assert "hosts/hb0" not in made[0] and "hosts/hb8" in made[0]
    after = inodes(out)
    assert all(before[p] != after[p] for p in before.keys() & after.keys()), "--full linked a file"
    assert not os.path.lexists(spare_of(out))
    assert {os.stat(out / p).st_nlink for p in after} == {1}
    same_as_full(tmp_path, out, GROWN.format(count=9, extra=""), capsys)


def test_the_spare_and_record_of_a_deleted_outdir_go_and_full_keeps_none(tmp_path, capsys):
    gone, other = tmp_path / "gone", tmp_path / "other"
    lineage(tmp_path, gone, 7, 8)
    assert os.path.isdir(spare_of(gone))
    writer.discard(str(gone))
    older = os.path.join(os.path.dirname(spare_of(gone)), "0" * 40 + ".json")
    with open(older, "w") as fh:
        fh.write("{}")  # a record from a railonly before owner files: whose, unknown
    theirs = os.path.join(os.path.dirname(spare_of(gone)), "notes.json")
    with open(theirs, "w") as fh:
        fh.write("{}")  # not a name railonly gives: a cache folder set to one holding other files
    lineage(tmp_path, other, 7)
    assert not os.path.lexists(older)
    assert os.path.exists(theirs)
    compile_(tmp_path, GROWN.format(count=8, extra=""), other, "-q", "--full")
    assert not os.path.lexists(spare_of(gone)), "a deleted OUTDIR's bytes are kept alive by its spare"
    assert not os.path.lexists(previous.record_path(os.path.realpath(gone))), "a deleted OUTDIR's record stays"
    assert os.path.exists(previous.record_path(os.path.realpath(other)))
    assert not os.path.lexists(spare_of(other)), "--full kept the tree it swapped out"
    lineage(tmp_path, other, 9)
    assert os.path.isdir(spare_of(other))


def test_compiles_into_other_outdirs_leave_a_new_outdirs_record(tmp_path, capsys):
    """The first compile into a new OUTDIR names its owner before the OUTDIR exists; a
    compile into another OUTDIR in between must not take that for a gone one."""
    a, b = tmp_path / "a", tmp_path / "b"
    lineage(tmp_path, a, 8)
    lineage(tmp_path, b, 8)
    assert "unchanged since the last compile, kept" in same_as_full(tmp_path, a, GROWN.format(count=9, extra=""), capsys)


@pytest.mark.parametrize("count", [9, 7])  # grow, then shrink back: folders come and go
def test_up_and_down_a_lineage(count, tmp_path, capsys):
    out = tmp_path / "o"
    lineage(tmp_path, out, 8, count, 8)
    same_as_full(tmp_path, out, GROWN.format(count=count, extra=""), capsys)


def test_no_spare_or_record_is_kept_when_the_cache_lies_inside_outdir(tmp_path, capsys, monkeypatch):
    """A cache inside OUTDIR: the swapped-out tree and the record would land in the new
    OUTDIR as a stray folder; each compile is a full one instead."""
    out = tmp_path / "o"
    monkeypatch.setenv("RAILONLY_CACHE_DIR", str(out / "cache"))
    lineage(tmp_path, out, 7, 8, 9)
    assert not (out / "cache").exists()
    assert previous.spare_path(os.path.realpath(out)) is None


def test_fifos_at_owner_files_hang_no_compile(tmp_path, cache):
    """The cache is railonly's, yet whoever can write it may leave a FIFO where an owner
    file goes (this OUTDIR's, or another's the compile reads): opened without blocking."""
    out = tmp_path / "o"
    lineage(tmp_path, out, 8)
    owner = previous.record_path(os.path.realpath(out)).replace(previous.RECORD_SUFFIX, previous.OWNER_SUFFIX)
    os.unlink(owner)
    os.mkfifo(owner)
    os.mkfifo(os.path.join(os.path.dirname(owner), "f" * 40 + previous.OWNER_SUFFIX))
    p = subprocess.run([sys.executable, "-m", "railonly", "compile", str(tmp_path / "d.yml"), "-o", str(out), "-q", "--full"],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "RAILONLY_CACHE_DIR": str(cache)})
    assert p.returncode == 0 and "Traceback" not in p.stderr


@pytest.mark.parametrize("field", ["files", "units"])
def test_a_damaged_record_is_a_full_compile(field, tmp_path, cache, capsys):
    out = tmp_path / "o"
    lineage(tmp_path, out, 8)
    path = previous.record_path(os.path.realpath(out))
    doc = json.loads(open(path).read())
    doc[field] = [1, 2]
    with open(path, "w") as fh:
        json.dump(doc, fh)
    assert previous.load(os.path.realpath(out)) is None
    lineage(tmp_path, out, 9)
    assert "Traceback" not in capsys.readouterr().err
