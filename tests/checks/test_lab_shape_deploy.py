"""The default lab of labs/dgx-h100-1k.yml, deployed: two tiers per rail, two spines, and
every leaf with Established eBGP sessions to both spines (real FRR in namespaces)."""

from __future__ import annotations

import pytest

from railonly.emulation.checks import checker as checks_run

from .conftest import _deploy

pytestmark = [pytest.mark.netns, pytest.mark.slow]


@pytest.fixture(scope="module")
def dgx1k(tmp_path_factory):
    yield from _deploy(tmp_path_factory.mktemp("dgx1k"), "dgx-h100-1k", "d")


def test_default_dgx_h100_1k_lab_runs_bgp_on_every_leaf_to_two_spines(dgx1k):
    lab, rt = dgx1k.lab, dgx1k.rt
    assert lab.sliced
    switches = {n.name: n.fabric_node for n in lab.switches}
    leaves = [s for s, i in switches.items() if i.tier == 1]
    spines = [s for s, i in switches.items() if i.tier == 2]
    for rail in range(8):
        assert len([s for s in spines if switches[s].rails == [rail]]) >= 2, rail
    run = checks_run.run(lab, rt, timeout=90.0, checks=("bgp",))
    assert run.failed == 0 and run.passed > 0
    for leaf in leaves:
        peers = checks_run.bgp_peers(rt, lab, leaf) or {}
        up = [p for p, v in peers.items() if v.get("state") == "Established"]
        assert len(up) >= 2, (leaf, peers)
