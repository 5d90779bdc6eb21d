"""NetBox import files as NetBox's import forms take them (netbox-community/netbox,
netbox/dcim/forms/bulk_import.py and the models' field limits, at
43fe81f9e833228c9869f7ddadb67e6c5f145060, v4.6.8)."""

from __future__ import annotations

import csv
import io

from railonly.fabric.design.design import parse_design
from railonly.fabric.graph.build import build_fabric
from railonly.fabric.outputs import netbox

# netbox/netbox/models/__init__.py: description = CharField(max_length=200) on every primary model
NETBOX_DESCRIPTION_MAX = 200

# one HB domain of 128 GPUs on one shared 128-port switch: every rail on one leaf
SHARED = ("name: share\nhb_domain: {size: 128, count: 1}\nnic: {gbps: 400}\n"
          "switch: {radix: 128, platform: sonic, share_rails: true}\nrail: {mode: routed}\n")


def test_a_switch_joining_many_rails_has_a_description_netbox_takes():
    fab = build_fabric(parse_design(SHARED))
    rows = list(csv.DictReader(io.StringIO(netbox.render_devices(fab))))
    switch = next(r for r in rows if r["role"] == "leaf")
    assert switch["description"] == "tier 1, rails 0-127"  # as its name says: share-rails0-127
    assert all(len(r["description"]) <= NETBOX_DESCRIPTION_MAX for r in rows)


def test_rail_runs():
    assert netbox.rail_runs([0]) == "0"
    assert netbox.rail_runs([1, 0]) == "0,1"
    assert netbox.rail_runs([3, 4, 5, 9, 11, 12, 13, 14]) == "3-5,9,11-14"
    assert netbox.rail_runs(range(64, 128)) == "64-127"
