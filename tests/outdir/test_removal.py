"""Trees railonly removes (stale stages, spares, swapped-out OUTDIRs) whatever their depth,
never following a link out of them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from railonly.cli import main
from railonly.fabric.outdir import removal, writer

from ..conftest import REPO

DESIGN = str(REPO / "labs" / "mini-routed.yml")
DEPTH = 3000  # shutil.rmtree recurses once per level: RecursionError past ~1,000


@pytest.fixture
def here(tmp_path):
    yield tmp_path
    removal.remove_tree(str(tmp_path))  # pytest's own cleanup is shutil.rmtree: it would fail on a leftover


def deep_chain(parent, depth: int = DEPTH) -> None:
    """`parent`/d/d/.../d/f, `depth` folders deep (made by descriptor: the path is longer than PATH_MAX)."""
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)


def test_a_tree_deeper_than_the_recursion_limit_goes_and_a_link_out_is_not_followed(here):
    outside = here / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    top = here / "top"
    top.mkdir()
    deep_chain(top)
    os.symlink(outside, top / "link")
    assert DEPTH > sys.getrecursionlimit()
    removal.remove_tree(str(top))
    assert not top.exists() and (outside / "keep").read_text() == "x"


def test_emptying_without_removing_folders_keeps_them_and_the_skipped_entry(here):
    (here / "a" / "b").mkdir(parents=True)
    (here / "a" / "b" / "f").write_text("x")
    (here / "marker").write_text("m")
    (here / "g").write_text("y")
    fd = os.open(here, os.O_RDONLY | os.O_DIRECTORY)
    try:
        removal.empty(fd, remove_folders=False, skip="marker")
    finally:
        os.close(fd)
    assert sorted(str(p.relative_to(here)) for p in here.rglob("*")) == ["a", "a/b", "marker"]


def test_the_detached_reaper_removes_a_deep_swapped_out_tree(here):
    top = here / f"{writer.STAGE_PREFIX}o-x"
    top.mkdir()
    (top / writer.STAGE_MARKER).write_text("lock")
    deep_chain(top)
    p = subprocess.run(writer.reaper_argv(str(top)), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stderr == ""
    assert not top.exists()


def test_a_deep_stale_stage_does_not_lock_compiles_out(here, capsys):
    stale = here / f"{writer.STAGE_PREFIX}o-dead"
    stale.mkdir()
    (stale / writer.STAGE_MARKER).write_text("railonly staging directory of pid 1\n")  # its writer died
    deep_chain(stale)
    rc = main(["compile", DESIGN, "-o", str(here / "o"), "-q"])
    err = capsys.readouterr().err
    assert rc == 0 and "Traceback" not in err and "left by a killed compile" in err
    assert not stale.exists() and (here / "o" / "MANIFEST.json").is_file()


def test_a_deep_folder_put_into_an_outdir_goes_at_the_next_compiles(here, capsys, monkeypatch):
    """It goes to the spare at the first recompile, and the spare is cut to shape at the next."""
    monkeypatch.setenv("RAILONLY_CACHE_DIR", str(here / "cache"))
    out = here / "o"
    for _ in range(3):  # --force: the folder is not railonly's (without, the compile is refused)
        assert main(["compile", DESIGN, "-o", str(out), "-q", "--force"]) == 0
        deep_chain(out)
    assert main(["compile", DESIGN, "-o", str(out), "-q", "--force"]) == 0
    assert "Traceback" not in capsys.readouterr().err
    assert not (out / "d").exists()
