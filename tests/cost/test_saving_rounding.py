"""The saving is rounded once, from one value: `bom --compare` (text and JSON) and the OUTDIR
README print the same percentage, also where rounding a rounded number would differ."""

from __future__ import annotations

import json
import re

import pytest

from railonly.fabric.cost import bom
from railonly.fabric.graph.build import build_fabric
from railonly.fabric.outputs import docs

from .conftest import design_text, make_design, run_cli


def test_saving_percent_rounds_the_raw_value_once():
    # 0.642519...: rounding to four places first (0.6425) would print 64.2%; the value is 64.25...%
    assert bom.saving_percent(1 - 0.6425196850393701, 1) == 64.3
    # 0.377450...: four places first (0.3775) would print 37.8%
    assert bom.saving_percent(1 - 0.37745098039215685, 1) == 37.7
    assert bom.saving_percent(5, 0) == 0.0


# (K, HB domains, radix) where a double rounding used to make the two outputs disagree
@pytest.mark.parametrize("size,count,radix", [(128, 64, 128), (128, 16, 64)])
def test_bom_compare_and_readme_print_the_same_saving(size, count, radix, tmp_path, capsys):
    design = tmp_path / "d.yml"
    design.write_text(design_text(size, count, radix))
    code, out, _ = run_cli(["bom", str(design), "--compare"], capsys)
    assert code == 0
    cost, power = re.search(r"saving: (-?[\d.]+)% of cost, (-?[\d.]+)% of power", out).groups()
    code, js, _ = run_cli(["bom", str(design), "--compare", "--json"], capsys)
    saving = json.loads(js)["saving"]
    assert (f"{saving['cost_percent']:.1f}", f"{saving['power_percent']:.1f}") == (cost, power)
    assert saving["cost"] == round(saving["cost_percent"] / 100, 4)
    readme = docs.render_readme(build_fabric(make_design(size, count, radix)))
    assert re.search(rf"^\| cost \| .* \| {re.escape(cost)}% \|$", readme, re.M), readme
    assert re.search(rf"^\| power \| .* \| {re.escape(power)}% \|$", readme, re.M)
