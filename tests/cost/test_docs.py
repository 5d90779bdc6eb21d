"""OUTDIR docs: bom.csv, README.md, topology.svg and netbox_cables.csv (goldens, determinism, content)."""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET

import pytest

from railonly.fabric.compiler import compile_design
from railonly.fabric.cost import bom
from railonly.fabric.design.design import load_design
from railonly.fabric.graph.build import build_fabric
from railonly.fabric.outputs import docs, netbox

from .conftest import REPO, assert_golden, make_design

SMALL = REPO / "labs" / "mini-routed.yml"


MINE = ("bom.csv", "README.md", "topology.svg", "netbox_cables.csv", "netbox_devices.csv", "netbox_interfaces.csv")


def _files(design):
    """Only this feature's producers (the full compile also renders every switch config)."""
    fab = build_fabric(design)
    out = {}
    for produce in (bom.produce, docs.produce, netbox.produce):
        out.update(produce(fab, None))
    return out


def test_producers_are_registered():
    _, files = compile_design(load_design(str(SMALL)))
    assert {k: v.decode() for k, v in files.items() if k in MINE} == _files(load_design(str(SMALL)))


def test_goldens_for_a_small_design():
    files = _files(load_design(str(SMALL)))
    for name in MINE:
        assert_golden(f"mini-routed/{name}", files[name])


def test_goldens_for_a_shared_baseline_design():
    # rail-optimized, so the README compares against rail-only, and spines join rails in the diagram
    files = _files(load_design(str(REPO / "labs" / "mini-baseline.yml")))
    for name in ("bom.csv", "README.md", "topology.svg"):
        assert_golden(f"mini-baseline/{name}", files[name])


@pytest.mark.parametrize("args", [(4, 4, 8), (256, 16, 64), (8, 128, 64, False, "rail-optimized"), (256, 8, 64, True, "rail-only", "l2")])
def test_docs_are_deterministic_and_well_formed(args):
    d = make_design(*args)
    a, b = _files(d), _files(d)
    assert a == b
    ET.fromstring(a["topology.svg"])  # well-formed XML
    assert "timestamp" not in a["README.md"].lower()
    rows = list(csv.DictReader(io.StringIO(a["netbox_cables.csv"])))
    fab = build_fabric(d)
    assert len(rows) == len(fab.cables())
    assert list(rows[0]) == ["side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name",
                             "type", "status", "label", "length", "length_unit"]
    assert {r["side_a_type"] for r in rows} == {"dcim.interface"}
    assert {r["label"] for r in rows} == {lk.cable_id for lk in fab.cables()}


def test_large_fabric_diagram_is_summarised():
    fab = build_fabric(make_design(256, 64, 64))  # 256 rails, two tiers each
    svg = __import__("railonly.fabric.outputs.diagram", fromlist=["render_svg"]).render_svg(fab)
    assert "252 more rails" in svg and "61 more HB domains" in svg
    assert svg.count("<rect") < 80 and svg.count("<line") < 200


def test_readme_sections():
    text = _files(make_design(256, 128, 128))["README.md"]
    for section in ("## Design", "## Switches per rail and tier", "## Port use", "## Address plan",
                    "## Bill of materials", "## Against the rail-optimized baseline", "## Topology diagram"):
        assert section in text
    assert "| switches | 1,280 | 256 | 1,024 |" in text
    assert "| transceivers | 196,608 | 65,536 | 131,072 |" in text
