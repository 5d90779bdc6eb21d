"""OUTDIR writing: byte-identical across runs, atomic, MANIFEST hashes true."""

from __future__ import annotations

import hashlib
import json

import pytest

from railonly.cli import main
from railonly.fabric import compiler

from ..conftest import REPO

DESIGN = str(REPO / "labs" / "mini-routed.yml")


def tree(path):
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_same_design_gives_byte_identical_outdir(tmp_path):
    assert main(["compile", DESIGN, "-o", str(tmp_path / "a"), "-q"]) == 0
    assert main(["compile", DESIGN, "-o", str(tmp_path / "b"), "-q"]) == 0
    a, b = tree(tmp_path / "a"), tree(tmp_path / "b")
    assert a.keys() == b.keys() and a == b
    assert {"fabric.json", "cabling.csv", "MANIFEST.json"} <= a.keys()


def test_manifest_hashes_every_file(tmp_path):
    out = tmp_path / "o"
    main(["compile", DESIGN, "-o", str(out), "-q"])
    man = json.loads((out / "MANIFEST.json").read_text())
    files = tree(out)
    del files["MANIFEST.json"]
    assert man["files"] == {p: hashlib.sha256(d).hexdigest() for p, d in files.items()}
    assert man["design_sha256"] == hashlib.sha256((REPO / "labs" / "mini-routed.yml").read_bytes()).hexdigest()


def test_failed_compile_leaves_previous_outdir_intact(tmp_path, monkeypatch):
    out = tmp_path / "o"
    main(["compile", DESIGN, "-o", str(out), "-q"])
    before = tree(out)

    def broken(fab, progress):
        raise RuntimeError("renderer bug")

    monkeypatch.setattr(compiler, "PRODUCERS", compiler.PRODUCERS + [("broken", broken)])
    with pytest.raises(RuntimeError):
        main(["compile", str(REPO / "labs" / "mini-l2.yml"), "-o", str(out), "-q"])
    assert tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"], "no partial temp dir may remain"


def test_failed_compile_leaves_no_renderer_beside_it(tmp_path, monkeypatch):
    """On a big fabric the graph-only files render in a forked process: a renderer bug in
    this one stops that one too (it would wait on its full pipe for ever)."""
    import multiprocessing

    def broken(fab, progress):
        raise RuntimeError("renderer bug")

    monkeypatch.setattr(compiler, "BESIDE_MIN_SWITCHES", 0)
    monkeypatch.setenv("RAILONLY_JOBS", "2")
    monkeypatch.setattr(compiler, "PRODUCERS", [("broken", broken)] + compiler.PRODUCERS)
    with pytest.raises(RuntimeError):
        main(["compile", str(REPO / "labs" / "dgx-h100-1k.yml"), "-o", str(tmp_path / "o"), "-q"])
    assert multiprocessing.active_children() == []


def test_recompile_replaces_outdir_whole(tmp_path, capsys):
    """The OUTDIR holds only what the compiler wrote: a lab's records live in its run
    directory (/run/railonly/<lab>), so nothing of an old railonly's `.lab/` is carried over.
    A file of the user's is not deleted: the compile is refused, naming it, unless --force."""
    out = tmp_path / "o"
    main(["compile", DESIGN, "-o", str(out), "-q"])
    (out / ".lab").mkdir()
    (out / ".lab" / "state.json").write_text("{}")
    (out / "README.md").unlink()
    (out / "README.md").mkdir()  # a folder where railonly wrote a file: the user's
    (out / "README.md" / "mine.txt").write_text("notes")
    (out / "configs" / "notes.txt").write_text("mine")
    capsys.readouterr()
    assert main(["compile", DESIGN, "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert "holds 2 entries railonly did not write (README.md, configs/notes.txt: not in its MANIFEST.json)" in err, err
    assert (out / "configs" / "notes.txt").read_text() == "mine" and (out / ".lab").exists()
    assert main(["compile", DESIGN, "-o", str(out), "-q", "--force"]) == 0
    assert not (out / "configs" / "notes.txt").exists() and not (out / ".lab").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]
    (out / ".lab").mkdir()  # an older railonly's records alone: replaced without a word
    assert main(["compile", DESIGN, "-o", str(out), "-q"]) == 0 and not (out / ".lab").exists()


def test_compile_prints_summary(tmp_path, capsys):
    assert main(["compile", DESIGN, "-o", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "GPUs      12 (2 rails x 6 HB domains of 2)" in out
    assert "switches  10 (6 leaf, 4 spine)" in out
    assert "cables    24" in out


@pytest.mark.slow
def test_parallel_compile_is_byte_identical_to_serial(monkeypatch):
    """Forked workers render shards; the merged output must not depend on the worker count."""
    text = "name: par\nhb_domain: {size: 8, count: 1024}\nswitch: {radix: 64}\n"  # 384 switches, 1,024 servers
    from railonly.fabric.design.design import parse_design

    monkeypatch.setenv("RAILONLY_JOBS", "1")
    _, serial = compiler.compile_design(parse_design(text))
    monkeypatch.setenv("RAILONLY_JOBS", "2")
    _, forked = compiler.compile_design(parse_design(text))
    assert serial.keys() == forked.keys()
    assert [p for p in serial if serial[p] != forked[p]] == []
