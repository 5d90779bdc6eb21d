"""ContainerlabRuntime without containerlab: argv it builds, inspect parsing, errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from railonly import cli
from railonly import proc
from railonly.emulation import lab as lab_module
from railonly.emulation.lab import run_dir
from railonly.emulation.runtime import containerlab
from railonly.emulation.runtime.containerlab import ContainerlabRuntime, parse_inspect
from railonly.emulation.runtime.protocol import RuntimeProblem
from railonly.emulation.runtime.registry import get_runtime

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_registered_by_name():
    rt = get_runtime("containerlab")
    assert type(rt) is ContainerlabRuntime and rt.name == "containerlab"


def test_argv(tiny_lab):
    rt = ContainerlabRuntime(exec_via="netns")
    f = str(tiny_lab.topology_file)
    # containerlab's lab directory (clab-<lab>) goes to the lab's run dir, never beside the
    # topology file in the OUTDIR; through env, which sudo keeps
    env = ["env", f"CLAB_LABDIR_BASE={run_dir('ctest')}"]
    assert not run_dir("ctest").startswith(str(tiny_lab.outdir))
    assert rt.deploy_argv(tiny_lab) == env + ["containerlab", "deploy", "-t", f, "--reconfigure"]
    assert rt.destroy_argv(tiny_lab) == env + ["containerlab", "destroy", "-t", f, "--cleanup"]
    assert rt.inspect_argv(tiny_lab) == env + ["containerlab", "inspect", "-t", f, "--format", "json"]
    node = tiny_lab.node("hb0-gpu0")
    assert rt.exec_argv(node, ["ip", "-j", "addr"]) == ["ip", "netns", "exec", "clab-ctest-hb0-gpu0", "ip", "-j", "addr"]
    assert rt.exec_argv("clab-ctest-hb0", ["true"]) == ["ip", "netns", "exec", "clab-ctest-hb0", "true"]
    docker = ContainerlabRuntime(exec_via="docker", sudo=True)
    assert docker.exec_argv(node, ["true"]) == ["docker", "exec", "clab-ctest-hb0-gpu0", "true"]
    assert docker.deploy_argv(tiny_lab)[:4] == ["sudo", *env, "containerlab"]


def test_parse_old_shape():
    found = parse_inspect((FIXTURES / "inspect_old.json").read_text(), "ctest")
    assert found == {"hb0-gpu0": "running", "hb0-gpu1": "running", "hb0": "running", "ctest-rail0-leaf0": "exited"}


def test_parse_new_shape():
    found = parse_inspect((FIXTURES / "inspect_new.json").read_text(), "ctest")
    assert len(found) == 8 and set(found.values()) == {"running"}
    assert parse_inspect((FIXTURES / "inspect_new.json").read_text(), "other") == {}


@pytest.mark.parametrize("text", ["", "  \n", "{}", '{"containers": []}'])
def test_parse_empty(text):
    assert parse_inspect(text, "ctest") == {}


@pytest.mark.parametrize("text", ["[1, 2]", '{"ctest": 3}', '{"ctest": [{"state": "running"}]}'])
def test_parse_garbage(text):
    with pytest.raises(ValueError):
        parse_inspect(text, "ctest")


def _fake_run(stdout: str = "", rc: int = 0, stderr: str = ""):
    calls = []

    def run(argv, timeout=60.0, **kw):
        calls.append(list(argv))
        return proc.Result(tuple(argv), rc, stdout, stderr)

    return run, calls


@pytest.fixture
def installed(monkeypatch):
    monkeypatch.setattr(proc, "which", lambda prog: f"/usr/bin/{prog}")


def test_status_from_both_shapes(installed, monkeypatch, tiny_lab):
    rt = ContainerlabRuntime()
    run, calls = _fake_run((FIXTURES / "inspect_new.json").read_text())
    monkeypatch.setattr(proc, "run", run)
    st = rt.status(tiny_lab)
    assert st.running and st.state == "running" and calls == [rt.inspect_argv(tiny_lab)]
    run, _ = _fake_run((FIXTURES / "inspect_old.json").read_text())
    monkeypatch.setattr(proc, "run", run)
    st = rt.status(tiny_lab)
    assert st.state == "partial" and st.nodes["ctest-rail0-leaf0"] == "exited" and st.nodes["hb1"] == "missing"


def test_status_absent(installed, monkeypatch, tiny_lab):
    run, _ = _fake_run("", rc=1, stderr='level=error msg="no containers found"')
    monkeypatch.setattr(proc, "run", run)
    assert ContainerlabRuntime().status(tiny_lab).state == "absent"
    run, _ = _fake_run("{}")
    monkeypatch.setattr(proc, "run", run)
    assert ContainerlabRuntime().status(tiny_lab).state == "absent"


def test_deploy_failure_is_an_environment_problem(installed, monkeypatch, tiny_lab, tmp_path):
    run, _ = _fake_run("", rc=1, stderr="Error: failed to pull image ceos:4.32.0F")
    monkeypatch.setattr(proc, "run", run)
    monkeypatch.setattr(lab_module, "RUN_ROOT", str(tmp_path / "run"))  # deploy makes the lab's run dir as root
    with pytest.raises(RuntimeProblem, match="deploy failed .*ceos:4.32.0F"):
        ContainerlabRuntime().deploy(tiny_lab)


def test_run_dir_made_for_deploy_and_removed_after_destroy(installed, monkeypatch, tiny_lab, tmp_path):
    """Root makes the lab's run dir (CLAB_LABDIR_BASE) before containerlab runs and removes it,
    emptied by --cleanup, after a destroy; a run dir holding anything else is left."""
    if os.geteuid() != 0:
        pytest.skip("the run dir is root's")
    run, calls = _fake_run("", rc=0)
    monkeypatch.setattr(proc, "run", run)
    monkeypatch.setattr(lab_module, "RUN_ROOT", str(tmp_path / "run"))
    ContainerlabRuntime().deploy(tiny_lab)
    assert os.path.isdir(run_dir("ctest")) and calls[-1][1] == f"CLAB_LABDIR_BASE={run_dir('ctest')}"
    ContainerlabRuntime().destroy(tiny_lab)
    assert not os.path.exists(tmp_path / "run")
    ContainerlabRuntime().deploy(tiny_lab)
    Path(run_dir("ctest"), "clab-ctest").mkdir()  # what a failed --cleanup leaves
    ContainerlabRuntime().destroy(tiny_lab)
    assert os.path.isdir(Path(run_dir("ctest"), "clab-ctest"))


def test_exec_returns_rc_and_output(installed, monkeypatch):
    run, calls = _fake_run("out\n", rc=0)
    monkeypatch.setattr(proc, "run", run)
    assert ContainerlabRuntime(exec_via="netns").exec("clab-ctest-hb0", ["ip", "link"]) == (0, "out\n")
    run, _ = _fake_run("partial\n", rc=2, stderr="Cannot find device\n")
    monkeypatch.setattr(proc, "run", run)
    assert ContainerlabRuntime(exec_via="netns").exec("clab-ctest-hb0", ["ip", "link"]) == (2, "partial\nCannot find device\n")


def test_missing_containerlab(tiny_lab):
    rt = ContainerlabRuntime(binary="containerlab-not-installed-here")
    for op in (rt.deploy, rt.destroy, rt.status):
        with pytest.raises(RuntimeProblem, match="'containerlab-not-installed-here' program, which is not on PATH.*--runtime netns") as err:
            op(tiny_lab)
        assert containerlab.INSTALL_HINT in str(err.value)  # how to install it, every time


def test_missing_docker(monkeypatch, tiny_lab):
    monkeypatch.setattr(proc, "which", lambda prog: None if prog == "docker" else f"/usr/bin/{prog}")
    with pytest.raises(RuntimeProblem, match="'docker' is not on PATH"):
        ContainerlabRuntime().deploy(tiny_lab)


def test_cli_maps_runtime_problems_to_exit_3(monkeypatch, capsys):
    def boom(args):
        raise RuntimeProblem("containerlab is missing")

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda only=None: parser)
    parser.set_defaults(func=boom)
    assert cli.main([]) == cli.EXIT_ENV
    assert "error: containerlab is missing" in capsys.readouterr().err
