"""Real labs for the check/traffic/fault tests: compiled under a unique lab name,
deployed with NetnsRuntime, always destroyed (the finalizer also asserts no
namespace of the lab is left). Skipped when not root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from railonly.cli import main
from railonly.emulation.lab import load_lab
from railonly.emulation.runtime.netns import setns
from railonly.emulation.runtime.registry import get_runtime

from ..conftest import skip_reason as shared_skip_reason

LABS = Path(__file__).resolve().parents[2] / "labs"
_count = [0]


def skip_reason() -> str | None:
    return shared_skip_reason("ip", "tc", "iperf3", "vtysh")


def compile_design(tmp: Path, design: str, tag: str, overrides: dict | None = None) -> Path:
    _count[0] += 1
    name = f"rc{os.getpid() % 1000}{tag}{_count[0]}"[:20]
    d = yaml.safe_load((LABS / f"{design}.yml").read_text())
    for key, value in (overrides or {}).items():
        d.setdefault(key, {}).update(value) if isinstance(value, dict) else d.__setitem__(key, value)
    d["name"] = name
    src = tmp / f"{name}.yml"
    src.write_text(yaml.safe_dump(d))
    out = tmp / name
    assert main(["compile", str(src), "-o", str(out)]) == 0
    return out


class Deployed:
    def __init__(self, outdir: Path):
        self.outdir = outdir
        self.rt = get_runtime("netns")
        self.lab = load_lab(outdir)

    def ns(self, node: str) -> str:
        return self.lab.netns(node)

    def sw(self, bare: str) -> str:
        """A switch by its bare name ('rail0-leaf0'): the design's name (the lab's) prefixes it."""
        return f"{self.lab.name}-{bare}"


def _deploy(tmp: Path, design: str, tag: str, overrides: dict | None = None):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    os.chmod(tmp, 0o755)
    d = Deployed(compile_design(tmp, design, tag, overrides))
    try:
        d.rt.deploy(d.lab)
        yield d
    finally:
        from railonly.emulation.traffic import iperf3

        iperf3.stop_servers(d.lab)
        d.rt.destroy(d.lab)
        left = [n for n in d.lab.nodes.values() if setns.exists(n.netns)]
        assert not left, f"namespaces left behind: {[n.netns for n in left]}"


@pytest.fixture
def routed(tmp_path):
    yield from _deploy(tmp_path, "mini-routed", "r")


@pytest.fixture
def routed_per_switch(tmp_path):
    yield from _deploy(tmp_path, "mini-routed", "p", {"bgp": {"asn_scheme": "per-switch"}})


@pytest.fixture
def l2(tmp_path):
    yield from _deploy(tmp_path, "mini-l2", "l")


@pytest.fixture(scope="module")
def routed_shared(tmp_path_factory):
    yield from _deploy(tmp_path_factory.mktemp("lab"), "mini-routed", "s")
