"""`railonly bom --compare` as a user reads it: where an impossible comparison is located,
and how a comparison that rail-only loses is worded."""

from __future__ import annotations

from .conftest import design_text, run_cli


def test_a_baseline_over_three_tiers_is_located_in_the_design_file(tmp_path, capsys):
    # 911 domains of 72 at radix 64: each rail fits two tiers, the baseline of 65,592 GPUs not three;
    # the error said "error: design: hb_domain.count", naming no file and no line
    d = tmp_path / "big.yml"
    d.write_text(design_text(72, 911, 64))
    code, out, err = run_cli(["bom", str(d), "--compare"], capsys)
    assert code == 2 and out == ""
    assert f"error: {d}:3: hb_domain.count: the rail-optimized baseline of 65,592 GPUs needs more than three tiers" in err
    assert "fix: use a larger switch.radix" in err


def test_a_rail_only_with_more_switches_says_more_not_minus_fewer(tmp_path, capsys):
    # 4 domains of 256 at radix 256 without share_rails: a switch per rail (256) against a packed
    # baseline (12); the line read "(-244 switches and 2,048 transceivers fewer)"
    d = tmp_path / "d.yml"
    d.write_text(design_text(256, 4, 256))
    code, out, _ = run_cli(["bom", str(d), "--compare"], capsys)
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.lstrip().startswith("saving:"))
    assert line.endswith("(244 switches more and 2,048 transceivers fewer)") and "-244" not in line, line
