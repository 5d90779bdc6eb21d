"""A report never replaces a file the command reads, another report of the same run, or a
file inside an OUTDIR: every such path is refused (exit 2, the option named) before the work.

`analyze --launcher DESIGN.yml` replaced the design with a CSV; `--traffic t.csv --launcher
t.csv` wrote one report over the other; `lab check --json OUTDIR/x` wrote a file the next
validate fails on, after the whole check had run.
"""

from __future__ import annotations

import os
import shutil

import pytest

from railonly.cli import main

from ..conftest import REPO

LABS = REPO / "labs"


@pytest.fixture()
def inputs(tmp_path):
    """A design, a job and a price book of one's own, each a file the command reads."""
    for src in (LABS / "dgx-a100.yml", LABS / "jobs" / "moe-a100.yml", REPO / "fabric" / "cost" / "data" / "prices.yaml",
                REPO / "fabric" / "cost" / "data" / "failure_rates.yaml"):
        shutil.copy(src, tmp_path / src.name)
    return {p.name: p.read_bytes() for p in tmp_path.iterdir()}


@pytest.fixture(scope="module")
def outdir(tmp_path_factory):
    out = tmp_path_factory.mktemp("reports") / "out"
    assert main(["compile", str(LABS / "mini-routed.yml"), "-o", str(out), "-q"]) == 0
    return out


def _refused(capsys, argv, *words):
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and all(w in err for w in words), err


@pytest.mark.parametrize("flag, name, what", [
    ("--launcher", "dgx-a100.yml", "the design"), ("--json", "moe-a100.yml", "the job"),
    ("--traffic", "prices.yaml", "the price book"), ("--plot", "dgx-a100.yml", "the design"),
])
def test_analyze_never_replaces_its_inputs(flag, name, what, inputs, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    extra = ["--sweep", "k=8,16"] if flag == "--plot" else []
    _refused(capsys, ["analyze", "dgx-a100.yml", "moe-a100.yml", "--prices", "prices.yaml", *extra, flag, name],
             f"{name} ({flag})", f"it is {what}, which this command reads")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == inputs


@pytest.mark.parametrize("argv, said", [
    (["--traffic", "t.csv", "--launcher", "t.csv"], "t.csv (--launcher): --traffic writes there too"),
    (["--traffic", "t.csv", "--json", "t.png"], "t.png (--traffic's heat map): --json writes there too"),
    (["--launcher", "r.csv", "--json", "r.env"], "r.env (--launcher's NCCL settings): --json writes there too"),
    (["--sweep", "k=8,16", "--plot", "s.png", "--json", "s.csv"], "s.csv (--plot's CSV): --json writes there too"),
])
def test_analyze_reports_each_go_to_their_own_file(argv, said, inputs, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _refused(capsys, ["analyze", "dgx-a100.yml", "moe-a100.yml", *argv], said)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == inputs


def test_resilience_never_replaces_its_rates_or_design(inputs, tmp_path, capsys):
    for name, what in (("failure_rates.yaml", "the failure rates"), ("dgx-a100.yml", "the design")):
        _refused(capsys, ["resilience", tmp_path / "dgx-a100.yml", "--rates", tmp_path / "failure_rates.yaml",
                          "--json", tmp_path / name], f"it is {what}")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == inputs


def test_validate_json_and_junit_are_two_files(outdir, tmp_path, capsys):
    _refused(capsys, ["validate", outdir, "--json", tmp_path / "r", "--junit", f"{tmp_path}/./r"],
             "(--junit): --json writes there too")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [["check", "{out}", "--json", "{out}/x.json"], ["check", "{out}", "--junit", "{out}/configs/j"],
                                  ["traffic", "{out}", "--pattern", "ring-allreduce", "--json", "{out}/t.json"]])
def test_lab_reports_are_refused_inside_the_outdir_before_the_lab_is_opened(argv, outdir, capsys):
    """No lab of this OUTDIR is deployed: the refusal comes first, not a 'not deployed'."""
    out = outdir
    _refused(capsys, ["lab", *[a.format(out=out) for a in argv]], "lies inside OUTDIR")
    assert not (out / "x.json").exists() and not (out / "t.json").exists() and not (out / "configs" / "j").exists()


@pytest.mark.parametrize("kind", ["device", "link", "fifo", "socket"])
def test_a_device_or_a_link_is_never_replaced(kind, tmp_path, capsys):
    """A rename over `--launcher /dev/zero` replaced the device with a regular file (as root);
    `--json /dev/stdout` would have replaced the system's link. Stand-ins of our own here, so
    that a regression breaks no device of the machine that runs the tests."""
    import socket
    import stat

    at = tmp_path / "target"
    if kind == "device":
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(at, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # what /dev/null is
    elif kind == "link":
        at.symlink_to("/proc/self/fd/1")  # what /dev/stdout is
    elif kind == "fifo":
        os.mkfifo(at)
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(at))
        sock.close()
    before = os.lstat(at)
    _refused(capsys, ["analyze", LABS / "dgx-a100.yml", LABS / "jobs" / "moe-a100.yml", "--json", at],
             f"{at} (--json)", "a report replaces only a regular file")
    after = os.lstat(at)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino, before.st_rdev)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["target"]


@pytest.mark.parametrize("argv, said", [
    (["analyze", "dgx-a100.yml", "moe-a100.yml", "--traffic", "t.csv", "--json", "new/"], "new/ (--json): names a folder"),
    (["analyze", "dgx-a100.yml", "moe-a100.yml", "--traffic", "t.csv", "--json", "no/r.json"], "does not exist"),
    (["resilience", "dgx-a100.yml", "--json", "no/r.json"], "does not exist"),
])
def test_a_report_to_a_folder_or_into_a_missing_one_is_refused_before_any_other_is_written(
        argv, said, inputs, tmp_path, capsys, monkeypatch):
    """Finding: `--json newname/` passed the early checks; --traffic's files were written, then
    the run failed on the JSON."""
    monkeypatch.chdir(tmp_path)
    _refused(capsys, argv, said)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == inputs


def test_validate_junit_into_a_missing_folder_writes_no_json_first(outdir, tmp_path, capsys):
    _refused(capsys, ["validate", outdir, "--json", tmp_path / "ok.json", "--junit", tmp_path / "nodir" / "j.xml"],
             "(--junit): its folder")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["analyze", "d.yml", "moe-a100.yml"], ["resilience", "d.yml"]])
def test_a_report_never_replaces_a_platform_file_of_the_design(command, inputs, tmp_path, capsys, monkeypatch):
    """Finding: `analyze d.yml job --json plat/acme.yaml` replaced the platform file the design
    names; the next bom of the design failed."""
    monkeypatch.chdir(tmp_path)
    base = (REPO / "fabric" / "platforms" / "data" / "switches" / "dell-z9664f.yaml").read_text()
    (tmp_path / "plat").mkdir()
    (tmp_path / "plat" / "acme.yaml").write_text(base.replace("model: dell-z9664f", "model: acme-25t"))
    (tmp_path / "d.yml").write_text("name: t\nhb_domain: {size: 8, count: 16}\n"
                                    "switch: {model: acme-25t, platform_files: [plat/acme.yaml]}\n")
    before = (tmp_path / "plat" / "acme.yaml").read_bytes()
    _refused(capsys, [*command, "--json", "plat/acme.yaml"], "plat/acme.yaml (--json)", "platform file")
    assert (tmp_path / "plat" / "acme.yaml").read_bytes() == before


@pytest.mark.parametrize("argv, flag", [
    (["analyze", "dgx-a100.yml", "moe-a100.yml", "--sweep", "k=8,16", "--plot", ""], "--plot"),
    (["analyze", "dgx-a100.yml", "moe-a100.yml", "--sweep", ""], "--sweep"),
    (["analyze", "dgx-a100.yml", "moe-a100.yml", "--traffic", ""], "--traffic"),
    (["resilience", "dgx-a100.yml", "--json", ""], "--json"),
])
def test_an_empty_report_option_is_refused_not_taken_as_absent(argv, flag, inputs, tmp_path, capsys, monkeypatch):
    """Finding: `--plot ''` wrote ./sweep.png, `--sweep ''` and `resilience --json ''` ran and wrote nothing."""
    monkeypatch.chdir(tmp_path)
    _refused(capsys, argv, flag, "is empty")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == inputs
