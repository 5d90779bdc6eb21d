"""Root: SIGTERM to a running `lab traffic --job` (kill PID, a cancelled CI job) cleans up as
Ctrl-C does: exit 143 and no nftables table railonly_replay left in any GPU namespace."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from railonly.emulation.checks import check_plan as checks_plan
from railonly.emulation.lab import load_lab
from railonly.emulation.runtime.netns.runtime import NetnsRuntime
from railonly.emulation.traffic import replay

from ..conftest import REPO, compile_to, design_text, skip_reason, unique

pytestmark = pytest.mark.netns


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    reason = skip_reason("nft")
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("sig")
    os.chmod(tmp, 0o755)
    lab = load_lab(compile_to(design_text("labs/mini-routed.yml", unique("sg")), tmp / "out"))
    rt = NetnsRuntime()
    try:
        rt.deploy(lab)
        yield lab
    finally:
        rt.destroy(lab)
        assert rt.status(lab).state == "absent"


def _has_table(ns: str) -> bool:
    return subprocess.run(["ip", "netns", "exec", ns, "nft", "list", "table", "inet", replay.TABLE],
                          capture_output=True, timeout=10).returncode == 0


def test_sigterm_during_a_replay_removes_its_table_and_exits_143(lab):
    gpus = [lab.netns(g) for g in sorted(checks_plan.load(lab).gpus)]
    cli = [sys.executable, "-m", "railonly", "lab", "traffic", str(lab.outdir), "--job",
           str(REPO / "labs" / "jobs" / "gpt-small.yml"), "--time-scale", "800"]
    p = subprocess.Popen(cli, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and p.poll() is None and not _has_table(gpus[-1]):
            time.sleep(0.2)
        if p.poll() is not None:
            pytest.fail(f"the replay ended before its table was seen: {p.returncode} {p.communicate()[1][-500:]}")
        assert _has_table(gpus[0])
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 143 and "terminated" in err, err[-800:]
        assert not [ns for ns in gpus if _has_table(ns)]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
