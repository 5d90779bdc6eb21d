"""Fixtures of the runtime contract suite: a tiny compiled lab in a temp OUTDIR."""

from __future__ import annotations

from pathlib import Path

import pytest

from railonly.emulation.lab import load_lab

from ..conftest import compile_to

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# Two servers of two GPUs, one L2 switch per rail: the smallest lab that has
# two rails, an HB domain with a sibling to forward through, and a switch.
TINY = """\
name: ctest
topology: rail-only
hb_domain: {size: 2, count: 2, gbps: 3600}
nic: {gbps: 400}
switch: {radix: 4, platform: eos}
rail: {mode: l2}
"""


@pytest.fixture(scope="session")
def tiny_outdir(tmp_path_factory) -> Path:
    return compile_to(TINY, tmp_path_factory.mktemp("tiny") / "out", "tiny.yml")


@pytest.fixture(scope="session")
def tiny_lab(tiny_outdir):
    return load_lab(tiny_outdir)
