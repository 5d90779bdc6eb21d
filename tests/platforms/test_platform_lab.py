"""A catalog platform in a real lab: SONiC breakout names (Ethernet0, Ethernet4, ...) are
the lab's Linux interfaces; an EOS model's lab runs under generic names (no '/' in Linux)."""

from __future__ import annotations

import subprocess

import pytest

from railonly.cli import main

from ..conftest import skip_reason, unique

pytestmark = [pytest.mark.netns, pytest.mark.slow]
WHY = skip_reason("ip", "tc", "vtysh")


@pytest.mark.skipif(WHY is not None, reason=WHY or "")
@pytest.mark.parametrize("model,tag", [("nvidia-sn5600", "ps"), ("arista-7060x6-64pe", "pa")])
def test_lab_of_a_2x400g_platform_passes_its_checks(model, tag, tmp_path, capsys):
    name = unique(tag)
    design = tmp_path / "d.yml"
    design.write_text(f"name: {name}\nhb_domain: {{size: 2, count: 3}}\nswitch: {{model: {model}, breakout: 2x400G}}\n")
    out = tmp_path / "o"
    assert main(["compile", str(design), "-o", str(out), "-q"]) == 0
    try:
        assert main(["lab", "deploy", str(out), "-q"]) == 0, capsys.readouterr()
        assert main(["lab", "check", str(out)]) == 0, capsys.readouterr().out
        if model == "nvidia-sn5600":  # the published names are the lab's interfaces
            links = subprocess.run(["ip", "-n", f"clab-{name}-{name}-rail0-leaf0", "-o", "link"], capture_output=True, text=True).stdout
            assert "Ethernet0@" in links and "Ethernet4@" in links
    finally:
        assert main(["lab", "destroy", str(out), "-q"]) == 0
