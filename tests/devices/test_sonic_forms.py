"""Every config_db.json table, key shape and field railonly emits is in SONiC's sample ConfigDB
(tests/data/sonic_forms.yaml); the YANG models stay the first check (tests/validate)."""

from __future__ import annotations

import pytest

from corpus import compiled, designs, sonic_configs, sonic_corpus, sonic_unmatched

# The NVL72 example (576 GPUs, 72 rails) takes 9-10 s a run: kept out of the fast lane.
NAMES = sorted(designs())
PARAMS = [pytest.param(n, marks=pytest.mark.slow) if "nvl72" in n else n for n in NAMES]


def test_corpus_names_its_sources():
    doc = sonic_corpus()
    assert doc["source"]["repo"] == "sonic-net/sonic-buildimage" and doc["source"]["path"].endswith(".json")
    for table, spec in doc["tables"].items():
        assert spec["keys"] and "fields" in spec, table


@pytest.mark.parametrize("name", PARAMS)
def test_every_emitted_table_and_field_is_in_the_sample(name):
    configs = sonic_configs(compiled(name))
    if not configs:
        pytest.skip("no SONiC switch in this design")
    shown = 0
    for path, doc in configs.items():
        bad = sonic_unmatched(doc)
        assert not bad, f"{path}:\n" + "\n".join(bad[:20])
        shown += 1
        if shown >= 64:  # same code per shape; the golden cases and small examples cover every shape
            break


@pytest.mark.parametrize("edit, want", [
    (lambda d: d["PORT"]["Ethernet0"].update(speed="400G"), "PORT|Ethernet0.speed"),
    (lambda d: d["PORT"]["Ethernet0"].update(autoneg="on"), "PORT|Ethernet0.autoneg: field not in the corpus"),
    (lambda d: d.update(BGP_NEIGHBOR={"10.0.0.1": {"asn": "1"}}), "BGP_NEIGHBOR: table not in the corpus"),
    (lambda d: d["VLAN_MEMBER"].update({"Vlan1000|Ethernet0|x": {"tagging_mode": "untagged"}}), "key shape"),
])
def test_an_entry_the_corpus_does_not_hold_fails(edit, want):
    doc = sonic_configs(compiled("case/sonic-l2-1tier"))["configs/sl1-rail0-leaf0/config_db.json"]
    assert not sonic_unmatched(doc)
    edit(doc)
    assert any(want in b for b in sonic_unmatched(doc)), sonic_unmatched(doc)
