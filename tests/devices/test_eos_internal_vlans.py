"""EOS gives each routed port an internal VLAN from 1006 up by default (ascending
1006-4094); a rail VLAN there collides with one already taken and EOS refuses it
(ipspace/netlab#1871). Rail r's VLAN is 1000 + r: every EOS switch holding a VLAN at or
above 1006 moves the internal range above every rail VLAN (`vlan internal order`)."""

from __future__ import annotations

import re

import pytest

from railonly.fabric.compiler import compile_design
from railonly.fabric.design.design import parse_design

EOS_DEFAULT_INTERNAL = (1006, 4094)


def _internal_range(text: str) -> tuple[int, int]:
    m = re.search(r"^vlan internal order ascending range (\d+) (\d+)$", text, re.M)
    return (int(m[1]), int(m[2])) if m else EOS_DEFAULT_INTERNAL


@pytest.mark.parametrize("mode, radix", [("routed", 4), ("l2", 16)])
def test_no_rail_vlan_inside_the_internal_range(mode, radix):
    # 8 rails (VLANs 1000-1007); routed: two tiers, so leaves have routed uplinks too
    text = f"name: iv\nhb_domain: {{size: 8, count: 6}}\nswitch: {{radix: {radix}, platform: eos}}\nrail: {{mode: {mode}}}\n"
    _, files = compile_design(parse_design(text, "iv.yml"))
    configs = {p: b.decode() for p, b in files.items() if p.endswith("/startup-config")}
    assert configs
    moved = 0
    for path, cfg in configs.items():
        first, last = _internal_range(cfg)
        vlans = [int(v) for v in re.findall(r"^vlan (\d+)$", cfg, re.M)]
        assert not [v for v in vlans if first <= v <= last], f"{path}: rail VLAN in the internal range {first}-{last}"
        moved += (first, last) != EOS_DEFAULT_INTERNAL
        if not any(v >= EOS_DEFAULT_INTERNAL[0] for v in vlans):
            assert "vlan internal order" not in cfg, path  # only where a rail VLAN needs it
    assert moved  # rails 6 and 7 (VLANs 1006, 1007)
