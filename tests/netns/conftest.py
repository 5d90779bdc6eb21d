"""Fixtures for tests/netns: compiled OUTDIRs with names unique to this run, and
deployed labs that are ALWAYS destroyed (finalizer), with a check that nothing
of the lab (namespace, process, FRR run dir) is left."""

from __future__ import annotations

import os

import pytest

from railonly.emulation.lab import load_lab, netns_prefix, run_dir
from railonly.emulation.runtime.netns import pids, setns

from ..conftest import skip_reason as shared_skip_reason

EOS_ROUTED = "name: {name}\nhb_domain: {{size: 2, count: 6}}\nswitch: {{radix: 4, platform: eos}}\nrail: {{mode: routed}}\n"
SONIC_L2 = "name: {name}\nhb_domain: {{size: 2, count: 3}}\nswitch: {{radix: 8, platform: sonic}}\nrail: {{mode: l2}}\n"


def skip_reason() -> str | None:
    return shared_skip_reason("ip", "tc", "vtysh")


def leftovers(lab) -> list[str]:
    out = [n for n in setns.list_netns() if n.startswith(netns_prefix(lab.name))]
    rundir = run_dir(lab.name)
    if os.path.exists(rundir):
        out.append(rundir)
    return out


class Deployed:
    """Deploys through a NetnsRuntime and destroys every lab it touched at teardown."""

    def __init__(self):
        from railonly.emulation.runtime.netns.runtime import NetnsRuntime

        self.rt = NetnsRuntime()
        self.labs = []

    def deploy(self, outdir, **kw):
        lab = load_lab(outdir)
        self.labs.append(lab)
        return lab, self.rt.deploy(lab, **kw)

    def teardown(self) -> list[str]:
        problems = []
        for lab in reversed(self.labs):
            try:
                self.rt.destroy(lab)
            except Exception as exc:  # report, keep destroying the others
                problems.append(str(exc))
            problems += leftovers(lab)
        return problems


@pytest.fixture(scope="module")
def deployer():
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    d = Deployed()
    yield d
    problems = d.teardown()
    assert not problems, problems


@pytest.fixture(scope="module")
def outdirs(tmp_path_factory):
    base = tmp_path_factory.mktemp("netns-labs")
    os.chmod(base, 0o755)
    return base


def own_processes(lab) -> list[int]:
    """PIDs whose network namespace is one of the lab's (none must survive destroy)."""
    inodes = {setns.inode(n) for n in setns.list_netns() if n.startswith(f"clab-{lab.name}-")}
    inodes.discard(None)
    return [p.pid for p in pids.in_netns(inodes)] if inodes else []
