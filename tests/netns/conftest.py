"""Fixtures for tests/netns: compiled OUTDIRs with names unique to this run, and
deployed labs that are ALWAYS destroyed (finalizer), with a check that nothing
of the lab (namespace, process, FRR run dir) is left."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from railonly.emulation.lab import load_lab
from railonly.emulation.netns import pids, setns
from railonly.fabric.compiler import compile_design
from railonly.fabric.design import parse_design
from railonly.fabric.writer import write_outdir

REPO = Path(__file__).resolve().parents[2]
RUN = os.getpid() % 10000


def unique(tag: str) -> str:
    """A lab name nobody else uses (design names: at most 20 characters)."""
    return f"nt{RUN}{tag}"[:20]


def design_text(path: str, name: str) -> str:
    lines = (REPO / path).read_text().splitlines()
    return "\n".join(f"name: {name}" if ln.startswith("name:") else ln for ln in lines) + "\n"


EOS_ROUTED = "name: {name}\nhb_domain: {{size: 2, count: 6}}\nswitch: {{radix: 4, platform: eos}}\nrail: {{mode: routed}}\n"
SONIC_L2 = "name: {name}\nhb_domain: {{size: 2, count: 3}}\nswitch: {{radix: 8, platform: sonic}}\nrail: {{mode: l2}}\n"


def compile_to(text: str, outdir: Path) -> Path:
    design = parse_design(text, "design.yml")
    _, files = compile_design(design)
    write_outdir(str(outdir), files, design.sha256)
    return outdir


def skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "tc", "vtysh"):
        if shutil.which(tool) is None:
            return f"'{tool}' is not installed"
    return None


def leftovers(lab) -> list[str]:
    out = [n for n in setns.list_netns() if n.startswith(f"clab-{lab.name}-")]
    rundir = f"/run/railonly/{lab.name}"
    if os.path.exists(rundir):
        out.append(rundir)
    return out


class Deployed:
    """Deploys through a NetnsRuntime and destroys every lab it touched at teardown."""

    def __init__(self):
        from railonly.emulation.netns.runtime import NetnsRuntime

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
