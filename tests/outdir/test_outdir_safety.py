"""Never destroy what railonly did not write: `-o` replaces only a railonly
OUTDIR or an empty folder; refusals are exit 2 with a fix, write failures
exit 3 with the path, and the previous OUTDIR survives both."""

from __future__ import annotations

import errno
import fcntl
import os
import subprocess
import sys

import pytest

from railonly.cli import main
from railonly.fabric.outdir import writer

from ..conftest import REPO

DESIGN = str(REPO / "labs" / "mini-routed.yml")
OTHER = str(REPO / "labs" / "mini-l2.yml")


def tree(path):
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _compile(capsys, *args) -> tuple[int, str]:
    rc = main(["compile", *args])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err


def test_foreign_directory_is_refused_and_left_intact(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    rc, err = _compile(capsys, DESIGN, "-o", str(out), "-q")
    assert rc == 2
    assert "is not a railonly OUTDIR" in err and "thesis.tex" in err and "--force" in err
    assert tree(out) == {"thesis.tex": b"years of work"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"], "no staging dir may remain"


def test_force_replaces_a_foreign_directory_and_says_so(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "old.txt").write_text("x")
    rc, err = _compile(capsys, DESIGN, "-o", str(out), "-q", "--force")
    assert rc == 0 and "not a railonly OUTDIR (--force)" in err
    assert not (out / "old.txt").exists() and (out / "fabric.json").is_file()


def test_empty_directory_and_railonly_outdir_are_replaced(tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    assert _compile(capsys, DESIGN, "-o", str(out), "-q")[0] == 0
    assert writer.is_railonly_outdir(str(out))
    assert _compile(capsys, OTHER, "-o", str(out), "-q")[0] == 0


@pytest.mark.parametrize("given", [".", "./", "..", "/"])
def test_current_directory_and_its_parents_are_refused(given, tmp_path, capsys, monkeypatch):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    (work / "design.yml").write_text(open(DESIGN).read())
    monkeypatch.chdir(work)
    rc, err = _compile(capsys, "design.yml", "-o", given, "-q")
    assert rc == 2 and ("current directory or one of its parents" in err or "is /" in err)
    assert (work / "design.yml").is_file() and sorted(os.listdir(work)) == ["design.yml"]


def test_empty_outdir_is_refused(capsys):
    rc, err = _compile(capsys, DESIGN, "-o", "", "-q")
    assert rc == 2 and "OUTDIR is empty" in err


def test_outdir_that_is_a_file_is_refused(tmp_path, capsys):
    f = tmp_path / "f"
    f.write_text("keep")
    rc, err = _compile(capsys, DESIGN, "-o", str(f), "-q")
    assert rc == 2 and "exists and is not a directory" in err and f.read_text() == "keep"


def test_outdir_under_a_file_is_refused(tmp_path, capsys):
    f = tmp_path / "f"
    f.write_text("keep")
    rc, err = _compile(capsys, DESIGN, "-o", str(f / "sub" / "out"), "-q")
    assert rc == 2 and "is a file, not a directory" in err and f.read_text() == "keep"


def test_outdir_holding_the_design_is_refused_even_with_force(tmp_path, capsys):
    out = tmp_path / "o"
    assert _compile(capsys, DESIGN, "-o", str(out), "-q")[0] == 0
    design = out / "design.yml"
    design.write_text(open(DESIGN).read())
    rc, err = _compile(capsys, str(design), "-o", str(out), "-q", "--force")
    assert rc == 2 and "which this command reads" in err and design.is_file()


def test_manifest_must_be_a_regular_file_from_railonly(tmp_path, capsys):
    real = tmp_path / "real"
    assert _compile(capsys, DESIGN, "-o", str(real), "-q")[0] == 0
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "data").write_text("keep")
    os.symlink(real / "MANIFEST.json", fake / "MANIFEST.json")  # a link to a real manifest proves nothing
    assert _compile(capsys, DESIGN, "-o", str(fake), "-q")[0] == 2
    (fake / "MANIFEST.json").unlink()
    (fake / "MANIFEST.json").write_text('{"generator": "someone else", "files": {}}')
    assert _compile(capsys, DESIGN, "-o", str(fake), "-q")[0] == 2
    (fake / "MANIFEST.json").write_text("not json")
    assert _compile(capsys, DESIGN, "-o", str(fake), "-q")[0] == 2
    assert (fake / "data").read_text() == "keep"


def test_symlinked_outdir_is_resolved_once_and_said(tmp_path, capsys):
    target = tmp_path / "target"
    assert _compile(capsys, DESIGN, "-o", str(target), "-q")[0] == 0
    link = tmp_path / "link"
    os.symlink(target, link)
    rc, err = _compile(capsys, OTHER, "-o", str(link), "-q")
    assert rc == 0 and "is a symbolic link; writing to its target" in err
    assert link.is_symlink() and os.readlink(link) == str(target)
    import hashlib
    import json

    man = json.loads((target / "MANIFEST.json").read_text())
    assert man["design_sha256"] == hashlib.sha256(open(OTHER, "rb").read()).hexdigest()


def test_modes_are_0644_and_0755_whatever_the_umask(tmp_path, capsys):
    old = os.umask(0o077)
    try:
        assert _compile(capsys, DESIGN, "-o", str(tmp_path / "o"), "-q")[0] == 0
    finally:
        os.umask(old)
    out = tmp_path / "o"
    modes = {p.stat().st_mode & 0o777 for p in [out, *out.rglob("*")] if p.is_dir()}
    assert modes == {0o755}
    assert {p.stat().st_mode & 0o777 for p in out.rglob("*") if p.is_file()} == {0o644}


def _stage_dir(parent, name, marker=True):
    d = parent / f"{writer.STAGE_PREFIX}{name}"
    d.mkdir()
    (d / "half-written").write_text("x")
    if marker:
        (d / writer.STAGE_MARKER).write_text("railonly staging directory of pid 1\n")
    return d


def test_stale_staging_dirs_of_a_killed_compile_are_removed_and_only_ours(tmp_path, capsys):
    dead = _stage_dir(tmp_path, "o-dead")  # marker, lock free: its writer died
    unmarked = _stage_dir(tmp_path, "o-nomarker", marker=False)  # not recognisably ours
    live = _stage_dir(tmp_path, "o-live")
    other = tmp_path / ".o.tmp-foreign"
    other.mkdir()
    fd = os.open(live / writer.STAGE_MARKER, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a concurrent compile holds its lock
    try:
        rc, err = _compile(capsys, DESIGN, "-o", str(tmp_path / "o"), "-q")
    finally:
        os.close(fd)
    assert rc == 0 and "left by a killed compile" in err
    assert not dead.exists() and unmarked.is_dir() and live.is_dir() and other.is_dir()


def test_a_killed_compile_leaves_a_recognisable_staging_dir(tmp_path):
    """SIGKILL mid-write: the leftover carries the prefix and marker, and the next compile removes it."""
    code = (
        "import os, signal, sys\n"
        "from railonly.fabric.outdir import writer\n"
        "real = writer._write_files\n"
        "def die(root, items, threads=4, staged=None):\n"
        "    real(root, items[:1])\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "writer._write_files = die\n"
        f"writer.write_outdir({str(tmp_path / 'o')!r}, {{'a.txt': b'x', 'b.txt': b'y'}}, 'sha')\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert p.returncode == -9
    left = [d for d in tmp_path.iterdir() if d.name.startswith(writer.STAGE_PREFIX)]
    assert len(left) == 1 and (left[0] / writer.STAGE_MARKER).is_file()
    assert writer.remove_stale_staging(str(tmp_path)) == [str(left[0])]
    assert list(tmp_path.iterdir()) == []


def test_disk_full_is_exit_3_with_the_path_and_previous_outdir_intact(tmp_path, capsys, monkeypatch):
    out = tmp_path / "o"
    assert _compile(capsys, DESIGN, "-o", str(out), "-q")[0] == 0
    before = tree(out)
    real_write = os.write
    calls = {"n": 0}

    def full(fd, data):
        calls["n"] += 1
        if calls["n"] > 5:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full)
    rc, err = _compile(capsys, OTHER, "-o", str(out), "-q")
    monkeypatch.undo()
    assert rc == 3 and "No space left on device" in err and str(tmp_path) in err and "was not changed" in err
    assert tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]


@pytest.fixture
def tiny_tmpfs(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=800k", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root and tmpfs mounts")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


@pytest.mark.netns  # mounts a tmpfs: root
def test_real_full_disk_and_read_only_fs_are_exit_3(tiny_tmpfs, capsys):
    out = tiny_tmpfs / "out"
    assert _compile(capsys, DESIGN, "-o", str(out), "-q")[0] == 0  # ~500 kB of 800 kB (with the clabernetes manifest)
    before = tree(out)
    rc, err = _compile(capsys, str(REPO / "labs" / "mini-baseline.yml"), "-o", str(out), "-q")
    assert rc == 3 and "No space left on device" in err and str(tiny_tmpfs) in err
    assert tree(out) == before and sorted(os.listdir(tiny_tmpfs)) == ["out"]
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_tmpfs)], check=True)
    rc, err = _compile(capsys, DESIGN, "-o", str(tiny_tmpfs / "other"), "-q")
    assert rc == 3 and "Read-only file system" in err


def test_a_recompile_carries_nothing_of_an_old_lab_dir_and_opens_no_fifo(tmp_path, capsys):
    out = tmp_path / "o"
    assert _compile(capsys, DESIGN, "-o", str(out), "-q")[0] == 0
    lab = out / ".lab"
    lab.mkdir()
    (lab / "state.json").write_text("{}")
    os.mkfifo(lab / "pipe")  # copying it would block forever
    secret = tmp_path / "secret"
    secret.write_text("do not copy")
    os.symlink(secret, lab / "link")
    assert _compile(capsys, DESIGN, "-o", str(out), "-q")[0] == 0
    assert not (out / ".lab").exists() and secret.read_text() == "do not copy"


def _first_frr(out):
    return next(p for p in sorted((out / "configs").glob("*/frr.conf")))


@pytest.mark.parametrize("record", [True, False], ids=["with-record", "no-record"])
def test_a_file_edited_by_hand_is_not_thrown_away(record, tmp_path, capsys, monkeypatch):
    """A file railonly wrote and someone changed since: a recompile would replace it with the
    compiled bytes, so it is refused (exit 2, named) unless --force; with or without the
    record in railonly's cache (the OUTDIR's MANIFEST.json then tells its bytes)."""
    out = tmp_path / "o"
    assert _compile(capsys, DESIGN, "-o", str(out), "-q")[0] == 0
    if not record:
        monkeypatch.setenv("RAILONLY_CACHE_DIR", str(tmp_path / "another-cache"))
    frr = _first_frr(out)
    frr.write_text(frr.read_text() + "! my change\n")
    before = tree(out)
    for extra in ([], ["--full"]):
        rc, err = _compile(capsys, DESIGN, "-o", str(out), "-q", *extra)
        assert rc == 2, err
        assert f"holds 1 file changed since railonly wrote it ({frr.relative_to(out)}" in err
        assert "--force" in err and "nothing was written" in err
        assert tree(out) == before
    assert _compile(capsys, DESIGN, "-o", str(out), "-q", "--force")[0] == 0
    assert "! my change" not in _first_frr(out).read_text()


def test_a_file_touched_or_removed_is_no_change_to_keep(tmp_path, capsys, monkeypatch):
    """Same bytes with another stat (touch), or a listed file gone: nothing to lose."""
    out = tmp_path / "o"
    assert _compile(capsys, DESIGN, "-o", str(out), "-q")[0] == 0
    os.utime(out / "fabric.json", (1, 1))
    (out / "bom.csv").unlink()
    assert _compile(capsys, DESIGN, "-o", str(out), "-q")[0] == 0
    monkeypatch.setenv("RAILONLY_CACHE_DIR", str(tmp_path / "another-cache"))  # every file hashed
    assert _compile(capsys, DESIGN, "-o", str(out), "-q", "--full")[0] == 0


def test_a_link_in_a_listed_files_place_is_a_change_and_never_followed(tmp_path, capsys):
    out = tmp_path / "o"
    assert _compile(capsys, DESIGN, "-o", str(out), "-q")[0] == 0
    secret = tmp_path / "secret"
    secret.write_bytes((out / "bom.csv").read_bytes())  # even the very bytes listed: a link is no file of ours
    (out / "bom.csv").unlink()
    os.symlink(secret, out / "bom.csv")
    rc, err = _compile(capsys, DESIGN, "-o", str(out), "-q")
    assert rc == 2 and "changed since railonly wrote it (bom.csv" in err
    assert os.path.islink(out / "bom.csv")


def test_many_changed_files_are_counted_and_three_named(tmp_path, capsys):
    out = tmp_path / "o"
    assert _compile(capsys, DESIGN, "-o", str(out), "-q")[0] == 0
    for p in sorted((out / "configs").glob("*/config_db.json"))[:5]:
        p.write_text(p.read_text().replace('"up"', '"down"'))
    rc, err = _compile(capsys, DESIGN, "-o", str(out), "-q")
    assert rc == 2 and "holds 5 files changed since railonly wrote them" in err and "and 2 more" in err


def test_a_stray_entry_and_a_changed_file_are_refused_in_one_go(tmp_path, capsys):
    """Both named at once: moving the stray file out must not meet a second refusal."""
    out = tmp_path / "o"
    assert _compile(capsys, DESIGN, "-o", str(out), "-q")[0] == 0
    (out / "NOTES.txt").write_text("mine\n")
    frr = _first_frr(out)
    frr.write_text(frr.read_text() + "! my change\n")
    rc, err = _compile(capsys, DESIGN, "-o", str(out), "-q")
    assert rc == 2 and "NOTES.txt" in err and f"changed since railonly wrote it ({frr.relative_to(out)}" in err, err
    assert "2 problems found" in err


def test_sweep_keeps_an_edited_csv_too(tmp_path, capsys):
    d = tmp_path / "s"
    sweep = ["sweep", "--hb-sizes", "8", "--gpus", "1024", "--radix", "64", "-q", "-o", str(d)]
    assert main(sweep) == 0
    (d / "sweep.csv").write_text((d / "sweep.csv").read_text() + "# my notes\n")
    assert main(sweep) == 2
    err = capsys.readouterr().err
    assert "changed since railonly wrote it (sweep.csv" in err
    assert "compile again" not in err and "run the command again" in err  # sweep has no compile to run again
    (d / "notes.txt").write_text("x")
    assert main(sweep) == 2
    err = capsys.readouterr().err
    assert "holds 1 entry railonly did not write (notes.txt" in err and "would delete it" in err, err
    assert "compil" not in err and "move it out of OUTDIR and run the command again" in err
    (d / "notes.txt").unlink()
    assert (d / "sweep.csv").read_text().endswith("# my notes\n")
    assert main([*sweep, "--force"]) == 0


def test_sweep_outdir_is_guarded_too(tmp_path, capsys):
    d = tmp_path / "mine"
    d.mkdir()
    (d / "keep.txt").write_text("x")
    rc = main(["sweep", "--hb-sizes", "8", "--gpus", "1024", "--radix", "64", "-o", str(d)])
    err = capsys.readouterr().err
    assert rc == 2 and "is not a railonly OUTDIR" in err and (d / "keep.txt").read_text() == "x"


def test_sweep_and_compile_do_not_replace_each_others_outdirs(tmp_path, capsys):
    """Both are railonly OUTDIRs; each command replaces only its own kind (or with --force)."""
    compiled, swept = tmp_path / "c", tmp_path / "s"
    assert _compile(capsys, DESIGN, "-o", str(compiled), "-q")[0] == 0
    sweep = ["sweep", "--hb-sizes", "8", "--gpus", "1024", "--radix", "64", "-q"]
    assert main([*sweep, "-o", str(swept)]) == 0
    assert main([*sweep, "-o", str(swept)]) == 0  # its own: replaced
    before = tree(compiled)
    assert main([*sweep, "-o", str(compiled)]) == 2
    assert "railonly OUTDIR of another command" in capsys.readouterr().err and tree(compiled) == before
    rc, err = _compile(capsys, DESIGN, "-o", str(swept), "-q")
    assert rc == 2 and "lists no fabric.json" in err and (swept / "sweep.csv").is_file()
    assert main([*sweep, "-o", str(compiled), "--force"]) == 0 and (compiled / "sweep.csv").is_file()


def test_a_dangling_outdir_link_is_refused_and_its_target_never_made(tmp_path, capsys):
    link = tmp_path / "o"
    os.symlink(tmp_path / "elsewhere" / "made", link)
    rc, err = _compile(capsys, DESIGN, "-o", str(link), "-q")
    assert rc == 2 and "which does not exist" in err and not (tmp_path / "elsewhere").exists()


@pytest.mark.parametrize("command", [["compile", DESIGN], ["sweep", "--gpus", "1024"]])
def test_an_outdir_name_too_long_for_its_staging_folder_is_input_not_a_write_failure(command, tmp_path, capsys):
    """It was exit 3, 'File name too long', the name printed whole twice; now exit 2 before any work."""
    assert main([*command, "-o", str(tmp_path / ("x" * (writer.LONGEST_NAME + 1)))]) == 2
    err = capsys.readouterr().err
    assert "is too long" in err and "shorter directory name" in err and len(err) < 1000, err
    assert list(tmp_path.iterdir()) == []
    assert main([*command, "-o", str(tmp_path / ("x" * writer.LONGEST_NAME)), "-q"]) == 0  # the longest that fits
