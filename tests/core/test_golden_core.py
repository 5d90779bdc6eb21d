"""Golden fabric.json and cabling.csv for lab-sized designs of every shape."""

from __future__ import annotations

import pytest

from railonly.fabric.compiler import compile_design
from railonly.fabric.design.design import load_design, parse_design

from ..conftest import GOLDEN, REPO, assert_golden

DESIGNS = {
    "mini-l2": (REPO / "labs" / "mini-l2.yml").read_text(),
    "mini-routed": (REPO / "labs" / "mini-routed.yml").read_text(),
    "mini-baseline": (REPO / "labs" / "mini-baseline.yml").read_text(),
    # Two rails of 2 GPUs share one radix-4 switch as two partitions.
    "shared": "name: shared\nhb_domain: {size: 4, count: 2}\nswitch: {radix: 4, share_rails: true}\nrail: {mode: l2}\n",
    # A three-tier rail: radix 4 holds 16 endpoints in three tiers.
    "three-tier": "name: three\nhb_domain: {size: 1, count: 12}\nswitch: {radix: 4, platform: eos}\n",
}


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_core_artifacts_match_golden(name):
    _, files = compile_design(parse_design(DESIGNS[name], f"{name}.yml"))
    for artifact in ("fabric.json", "cabling.csv"):
        assert_golden(GOLDEN / "core" / name / artifact, files[artifact])


@pytest.mark.slow
def test_example_designs_all_compile():
    for path in sorted((REPO / "labs").glob("*.yml")):
        if "32k" in path.name:
            continue  # covered by the benchmark; too slow for a unit test
        fab, files = compile_design(load_design(str(path)))
        assert "fabric.json" in files and len(fab.gpus) == fab.design.gpus
