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
