"""fabric.json read back: the typed graph of graph/fabric_json.py, the file's one parser.

render(parse(render(fab))) == render(fab) on designs of every shape (a lab slice, a
tray design, a management network, EOS); the graph read back passes the same
invariants as the one built; a hostile file is InputError naming the file and each field.
"""

from __future__ import annotations

import json

import pytest

from railonly.fabric import build_fabric, load_design
from railonly.fabric.design import lab_slice
from railonly.fabric.graph import fabric_json
from railonly.fabric.graph.invariants import check
from railonly.fabric.input.problems import InputError

from ..conftest import REPO

DESIGNS = ["mini-routed", "mini-l2", "mini-baseline", "nvl72", "dgx-a100"]


def _fabric(name: str, slice_: bool = False):
    design = load_design(str(REPO / "labs" / f"{name}.yml"))
    return build_fabric(lab_slice.sliced(design) if slice_ else design)


@pytest.mark.parametrize("name,slice_", [(n, False) for n in DESIGNS] + [("dgx-h100-1k", True)])
def test_render_parse_render_is_the_same_file(name, slice_):
    fab = _fabric(name, slice_)
    text = fabric_json.render(fab)
    back = fabric_json.parse(text, "x/fabric.json")
    assert fabric_json.render(back) == text
    assert [n.name for n in back.nodes] == [n.name for n in fab.nodes]
    assert (back.design.name, back.design.hb_size, back.design.gpus_per_host, back.tiers) == \
           (fab.design.name, fab.design.hb_size, fab.design.gpus_per_host, fab.tiers)
    assert back.peer(fab.links[0].a.node, fab.links[0].a.port).node == fab.links[0].b.node
    assert check(back) == []  # the invariants hold on the graph read back


def test_link_lines_are_the_dict_encoding():
    """render writes each link directly (link_line); it must be what json writes for link_dict,
    on built and read-back links and on values no design makes (None rail, bools, NaN, text)."""
    from dataclasses import replace

    dumps = json.JSONEncoder(sort_keys=False, separators=(", ", ": ")).encode
    fab = _fabric("mini-routed")
    back = fabric_json.parse(fabric_json.render(fab), "x/fabric.json")
    lengths = {1: 3, 2: 30, 3: 100}
    odd = replace(fab.links[0], rail=None, gbps=float("nan"), tier=True, cable_id='c"\\é\n', length_m=2.5)
    odd2 = replace(fab.links[0], gbps=400.0, cable_id="", a=replace(fab.links[0].a, ip=None, node="ü"))
    links = fab.links + back.links + [odd, odd2]
    assert {lk.length_m is None for lk in links} == {True, False} and any(lk.rail is None for lk in links)
    for lengths_ in (lengths, None):
        assert [fabric_json.link_line(lk, lengths_, dumps) for lk in links] == \
               [dumps(fabric_json.link_dict(lk, lengths_)) for lk in links]


def test_the_golden_fabric_files_parse_and_render_byte_for_byte():
    files = sorted((REPO / "tests" / "golden" / "core").glob("*/fabric.json"))
    assert files
    for f in files:
        text = f.read_text()
        assert fabric_json.render(fabric_json.parse(text, str(f))) == text, f


def _edited(edit) -> str:
    doc = json.loads(fabric_json.render(_fabric("mini-routed")))
    edit(doc)
    return json.dumps(doc)


def _switch(doc) -> dict:
    return next(n for n in doc["nodes"] if n["role"] == "switch")


@pytest.mark.parametrize("edit,field,words", [
    (lambda d: d.update(nodes={"a": 1}), "nodes", "is not a list"),
    (lambda d: d.pop("hb_domain_size"), "hb_domain_size", "is missing"),
    (lambda d: d.update(nic_gbps="400"), "nic_gbps", "is not a number"),
    (lambda d: d["nodes"][0].update(rank=True), "nodes[0].rank", "is not an integer"),
    (lambda d: d["nodes"][0].update(role="router"), "nodes[0].role", "is not one of gpu, hb, switch"),
    (lambda d: _switch(d).update(rails=[0, "1"]), ".rails", "is not a list of integers"),
    (lambda d: _switch(d)["vlans"][0].update(subnet=7), ".vlans[0].subnet", "is not a string"),
    (lambda d: d["links"][0]["a"].update(node="nobody"), "links[0].a.node", "is not a node of this fabric"),
    (lambda d: d["links"][1].update(a=d["links"][0]["a"]), "links[1].a.port", "is the end of two links"),
    (lambda d: d["nodes"].append(d["nodes"][0]), "name", "is named twice"),
    (lambda d: d["links"].append([1]), "links[", "is not an object"),
    # addresses went through unjudged: the lab and push put them on interfaces and routes
    (lambda d: d["links"][0]["a"].update(ip="10.0.0.2"), "links[0].a.ip", "is not an IPv4 address with its prefix length"),
    (lambda d: d["links"][0]["a"].update(ip="fd00::2/64"), "links[0].a.ip", "is not an IPv4 address with its prefix length"),
    (lambda d: d["links"][0]["a"].update(ip="10.0.0.300/29"), "links[0].a.ip", "is not an IPv4 address"),
    (lambda d: _switch(d).update(loopback="10.255.0.1"), ".loopback", "is not an IPv4 address with its prefix length"),
    (lambda d: _switch(d)["vlans"][0].update(gateway="::1/64"), ".vlans[0].gateway", "is not an IPv4 address"),
    (lambda d: d.update(management={"pool": "10.9.0.0/33", "gateway": "10.9.0.1"}), "management.pool", "is not an IPv4 prefix"),
    (lambda d: d.update(management={"pool": "fd00::/64", "gateway": "fd00::1"}), "management.pool", "is not an IPv4 prefix"),
    (lambda d: d.update(management={"pool": "10.9.0.0/24", "gateway": "10.8.0.1"}), "management.gateway",
     "is not an IPv4 address in the pool 10.9.0.0/24"),
    (lambda d: d.update(management={"pool": "10.9.0.0/24", "gateway": "10.9.0.1/24"}), "management.gateway", "is not an IPv4 address"),
    (lambda d: (d.update(management={"pool": "10.9.0.0/24", "gateway": "10.9.0.1"}), _switch(d).update(mgmt_ip="10.7.0.5/24")),
     ".mgmt_ip", "in the management pool 10.9.0.0/24"),
    (lambda d: _switch(d).update(mgmt_ip="10.9.0.5/24"), ".mgmt_ip", "needs fabric.json's management pool"),
])
def test_a_hostile_fabric_json_names_file_and_field(edit, field, words):
    with pytest.raises(InputError) as exc:
        fabric_json.parse(_edited(edit), "out/fabric.json")
    text = str(exc.value)
    assert "out/fabric.json" in text and field in text and words in text and "recompile" in text, text


def test_malformed_text_and_other_documents_are_input_errors():
    for text, words in (("[1, 2]", "is a JSON list"), ('{"x": NaN}', "NaN is not allowed"),
                        ("[" * 100_000, "nested too deep"), ("{", "is not valid JSON")):
        with pytest.raises(InputError, match="recompile") as exc:
            fabric_json.parse(text, "out/fabric.json")
        assert words in str(exc.value) and "out/fabric.json" in str(exc.value)


def test_a_file_wrong_everywhere_names_the_first_problems_only():
    def edit(d):
        for n in d["nodes"]:
            n["name"] = 1
    with pytest.raises(InputError) as exc:
        fabric_json.parse(_edited(edit), "f.json")
    assert len(exc.value.problems) == fabric_json.MAX_PROBLEMS
