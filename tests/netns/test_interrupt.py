"""Root: a deploy interrupted halfway (Ctrl-C) or failing leaves a state file from
which destroy removes everything; nothing of the lab survives."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from railonly.emulation.lab import load_lab
from railonly.emulation.runtime.netns import pids, setns
from railonly.emulation.runtime.netns.runtime import NetnsRuntime, state_path

from ..conftest import compile_to, design_text, unique
from .conftest import leftovers, own_processes, skip_reason

pytestmark = pytest.mark.netns


@pytest.fixture
def outdir(tmp_path):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    os.chmod(tmp_path, 0o755)
    return tmp_path


def _sigint_default() -> None:
    """Children of a background job start with SIGINT ignored (so CI may run
    us that way), and Python then never raises KeyboardInterrupt; give the
    child the disposition a terminal user's Ctrl-C meets."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _cleanup(lab):
    try:
        NetnsRuntime().destroy(lab)
    finally:
        assert not leftovers(lab)


@pytest.mark.parametrize("phase", ["config", "processes"])
def test_interrupted_deploy_is_destroyed(outdir, phase):
    lab = load_lab(compile_to(design_text("labs/mini-routed.yml", unique("i" + phase[0])), outdir / "out"))
    rt = NetnsRuntime()
    started = []

    def hook(ph, steps):
        if ph == phase:
            if phase == "processes":  # let a few daemons start, then "Ctrl-C"
                started.append(ph)
                return
            raise KeyboardInterrupt
        if started and ph == "settle":
            raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            rt.deploy(lab, hook=hook)
        assert os.path.exists(state_path(lab))
        assert rt.status(lab).state == "partial"
        procs = own_processes(lab)
        rt.destroy(lab)
        assert rt.status(lab).state == "absent"
        assert not [p for p in procs if pids.info(p) is not None]
    finally:
        _cleanup(lab)


def test_sigint_to_the_cli_then_destroy(outdir):
    lab = load_lab(compile_to(design_text("labs/mini-routed.yml", unique("sig")), outdir / "out"))
    cli = [sys.executable, "-m", "railonly", "lab", "deploy", str(lab.outdir)]
    p = subprocess.Popen(cli, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_sigint_default)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # wait until the FRR daemons are being started
            if any(n.startswith(f"clab-{lab.name}-") for n in setns.list_netns()) and os.path.isdir(f"/run/railonly/{lab.name}"):
                break
            time.sleep(0.01)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        if p.returncode == 0:
            pytest.skip("deploy finished before the signal arrived")
        assert p.returncode == 130 and "railonly lab destroy" in err, err
        res = subprocess.run([sys.executable, "-m", "railonly", "lab", "destroy", str(lab.outdir)],
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        assert not leftovers(lab)
    finally:
        if p.poll() is None:
            p.kill()
        _cleanup(lab)


def test_failed_deploy_is_reported_and_destroyed(outdir):
    from railonly.emulation.runtime.protocol import RuntimeProblem

    lab = load_lab(compile_to(design_text("labs/mini-l2.yml", unique("fail")), outdir / "out"))
    clash = f"clab-{lab.name}-hb0"  # a namespace in the way, created (and removed) by this test
    subprocess.run(["ip", "netns", "add", clash], check=True, timeout=10)
    try:
        with pytest.raises(RuntimeProblem, match="not ours"):
            NetnsRuntime().deploy(lab)
    finally:
        subprocess.run(["ip", "netns", "del", clash], check=True, timeout=10)
    _cleanup(lab)
