"""Failures (docs/failures.md): blast radius against an independent count from the compiled
OUTDIR's cabling.csv, resilience counts against the BOM, and `analyze --fail`."""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from railonly.cli import main
from railonly.fabric.analysis.failure import Fault, impact
from railonly.fabric.design.design import parse_design
from railonly.fabric.graph.build import build_fabric

from ..conftest import REPO, compile_to, design_text

LABS = REPO / "labs"
EXAMPLES = ["labs/mini-routed.yml", "labs/mini-baseline.yml", "labs/mini-l2.yml", "labs/dgx-a100.yml"]


def cabling(outdir) -> list[dict]:
    with open(outdir / "cabling.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def check_blast(text: str, tmp_path) -> None:
    """Every leaf, spine and NIC cable of the design: impact() against cabling.csv."""
    out = compile_to(text, tmp_path / "out")
    rows = cabling(out)
    fab = build_fabric(parse_design(text, "design.yml"))
    nic_rows = [r for r in rows if r["tier"] == "1"]
    by_leaf = defaultdict(set)
    for r in nic_rows:
        by_leaf[r["b_device"]].add(r["a_gpu"])
    assert by_leaf, "no NIC cables in cabling.csv"
    for leaf, gpus in by_leaf.items():  # a leaf takes off exactly the GPUs cabled to it
        im = impact(fab, [Fault("switch", leaf, leaf)])
        assert set(im.gpus_off_rail) == gpus, leaf
        assert im.gpus_detoured == []
    up = [r for r in rows if r["tier"] == "2"]
    uplinks = defaultdict(set)
    for r in up:
        uplinks[r["a_device"]].add(r["b_device"])
    for spine in sorted({r["b_device"] for r in up}):  # a spine: its share of its rail's uplinks; no GPU off
        im = impact(fab, [Fault("switch", spine, spine)])  # but those of a leaf whose every uplink goes to it
        alone = set().union(*[by_leaf[leaf] for leaf, spines in uplinks.items() if spines == {spine}])
        assert set(im.gpus_off_rail) == alone, spine
        mine = [r for r in up if r["b_device"] == spine]
        for rail in {r["rail"] or "all" for r in mine}:
            of_rail = [r for r in up if (r["rail"] or "all") == rail]
            lost = sum(1 for r in mine if (r["rail"] or "all") == rail)
            assert im.uplinks_lost[rail]["2"] == [lost, len(of_rail)], (spine, rail)
    for r in nic_rows[:: max(1, len(nic_rows) // 7)]:  # a NIC cable detours one GPU
        im = impact(fab, [Fault("cable", r["cable_id"], r["cable_id"])])
        K = parse_design(text, "design.yml").hb_size  # a detour needs a sibling
        assert im.gpus_off_rail == [r["a_gpu"]] and im.gpus_detoured == ([r["a_gpu"]] if K > 1 else [])


@pytest.mark.parametrize("path", EXAMPLES)
def test_blast_radius_matches_cabling_csv(path, tmp_path):
    check_blast(design_text(path, "fail"), tmp_path)


DESIGN = """name: gen
topology: {topology}
hb_domain: {{size: {K}, count: {n}, gbps: 3600}}
nic: {{gbps: 400}}
switch: {{radix: {radix}, platform: sonic}}
rail: {{mode: routed}}
"""


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(topology=st.sampled_from(["rail-only", "rail-optimized"]), K=st.integers(1, 4), n=st.integers(2, 9),
       radix=st.sampled_from([4, 8]))
def test_blast_radius_matches_cabling_csv_generated(tmp_path_factory, topology, K, n, radix):
    text = DESIGN.format(topology=topology, K=K, n=n, radix=radix)
    try:
        parse_design(text, "design.yml")
        build_fabric(parse_design(text, "design.yml"))
    except Exception:  # a design the builder refuses is not this test's subject
        return
    check_blast(text, tmp_path_factory.mktemp("gen"))


def run(capsys, *argv) -> tuple[int, str, str]:
    rc = main([*map(str, argv)])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize("path", ["labs/mini-routed.yml", "labs/mini-baseline.yml", "labs/dgx-h100-1k.yml"])
def test_resilience_counts_equal_bom(path, capsys):
    rc, out, _ = run(capsys, "resilience", LABS.parent / path, "--json", "-")
    assert rc == 0
    nets = json.loads(out)["networks"]
    rc, out, _ = run(capsys, "bom", LABS.parent / path, "--compare", "--json")
    assert rc == 0
    bom = json.loads(out)
    for net in ("rail-only", "rail-optimized"):
        c, b = nets[net]["components"], bom[net]
        tiers = {int(k): v for k, v in b["switches_by_tier"].items()}
        assert c["gpu_nic"]["count"] == b["gpus"] == c["nic_cable"]["count"]
        assert [c["leaf"]["count"], c["spine"]["count"], c["core"]["count"]] == [tiers.get(t, 0) for t in (1, 2, 3)]
        assert c["nic_cable"]["count"] + c["leaf_spine_cable"]["count"] + c["spine_core_cable"]["count"] == b["links"]
        assert c["hb_domain"]["count"] * (b["gpus"] // c["hb_domain"]["count"]) == b["gpus"]
        assert nets[net]["spares"]["spare_hb_domains"] >= 0 and nets[net]["gpus_affected_per_month"] > 0
        for cls, e in c.items():
            assert e["rate_source"] in ("llama3", "hpn", "azure"), cls


def test_resilience_rail_only_leaf_blast_is_its_rail_share(capsys):
    """dgx-h100-1k: 128 domains of 8, 32 leaves of 32 GPUs; a rail-only leaf serves one rail (32
    domains lose a GPU each), a spine none."""
    rc, out, _ = run(capsys, "resilience", LABS / "dgx-h100-1k.yml", "--json", "-")
    c = json.loads(out)["networks"]["rail-only"]["components"]
    assert c["leaf"]["gpus_off_rail"] == 32 and c["leaf"]["domains_lost"] == 32
    assert c["spine"]["gpus_off_rail"] == 0 and c["spine"]["bandwidth_lost_per_rail"]
    assert c["gpu_nic"]["gpus_detoured"] == 1 and c["hb_domain"]["gpus_off_rail"] == 8


def test_resilience_table_numbers_stand_under_their_headings(capsys):
    """The headings were 6 columns left of their numbers, and a class a network lacks put its
    dash mid-table: every value now ends where its heading ends."""
    import re

    rc, out, _ = run(capsys, "resilience", LABS / "dgx-h100-1k.yml")
    lines = out.splitlines()
    ends = [m.end() for m in re.finditer(r"\S+", lines[2])]
    assert rc == 0 and len(ends) == 8
    for row in lines[3:11]:
        cells = [m.end() for m in re.finditer(r"[\d,.%-]+(?= |$)", row[19:])]
        assert cells and set(c + 19 for c in cells) <= set(ends), row


def test_resilience_bad_rates_file_exit_2(tmp_path, capsys):
    bad = tmp_path / "rates.yml"
    bad.write_text("target_availability: 2\ncomponents: {}\n")
    rc, out, err = run(capsys, "resilience", LABS / "mini-routed.yml", "--rates", bad)
    assert rc == 2 and "target_availability" in err and "rates.yml" in err and "Traceback" not in err


def fail_json(capsys, *specs):
    argv = ["analyze", LABS / "mini-routed.yml", LABS / "jobs" / "gpt-small.yml", "--json", "-"]
    for s in specs:
        argv += ["--fail", s]
    rc, out, err = run(capsys, *argv)
    return rc, (json.loads(out) if rc == 0 else None), err


def test_fail_nic_detours_and_costs_time(capsys):
    rc, doc, _ = fail_json(capsys, "nic:hb0-gpu1")
    assert rc == 0
    for net in ("rail-only", "rail-optimized"):
        f = doc["failure"][net]
        assert f["gpus_off_rail"] == ["hb0-gpu1"] and f["gpus_detoured"] == ["hb0-gpu1"] and f["runs"]
        assert f["iteration_s"] > f["healthy_iteration_s"] == doc["networks"][net]["iteration_s"] or \
            f["iteration_s"] > f["healthy_iteration_s"]
        assert {"pp", "dp"} <= set(f["groups_touched"])
    # rail-only stages over NVLink at both ends: it pays more than the baseline
    assert doc["failure"]["rail-only"]["slowdown"] >= doc["failure"]["rail-optimized"]["slowdown"]


def test_fail_leaf_cannot_run_names_spares(capsys):
    rc, doc, _ = fail_json(capsys, "switch:minir-rail0-leaf0")
    assert rc == 0
    f = doc["failure"]["rail-only"]
    assert f["gpus_off_rail"] == ["hb0-gpu0", "hb1-gpu0"] and f["gpus_detoured"] == []
    assert not f["runs"] and f["iteration_s"] is None and "hb0" in f["remedy"]


def test_fail_spine_slows_no_gpu_off(capsys):
    rc, doc, _ = fail_json(capsys, "switch:minir-rail0-spine0")
    f = doc["failure"]["rail-only"]
    assert f["gpus_off_rail"] == [] and f["runs"] and f["bandwidth_left"] == 0.5
    assert f["iteration_s"] > f["healthy_iteration_s"]


def test_fail_repeatable_and_baseline_names(capsys):
    rc, doc, _ = fail_json(capsys, "nic:hb0-gpu1", "domain:hb5")
    assert rc == 0 and set(doc["failure"]["rail-only"]["gpus_off_rail"]) == {"hb0-gpu1", "hb5-gpu0", "hb5-gpu1"}
    rc, doc, _ = fail_json(capsys, "switch:minir-pod0-spine0")  # a baseline switch name
    assert rc == 0 and doc["failure"]["rail-optimized"]["faults"][0]["name"] == "minir-pod0-spine0"


@pytest.mark.parametrize("spec,near", [("nic:hb0-gpu9", "hb0-gpu1"), ("switch:minir-rail0-leaf", "minir-rail0-leaf0"),
                                       ("link:x", None), ("cable:", None)])
def test_fail_bad_spec_exit_2(capsys, spec, near):
    rc, doc, err = fail_json(capsys, spec)
    assert rc == 2 and spec in err and "nic:GPU" in err and "Traceback" not in err
    if near:
        assert near in err


def test_fail_json_keeps_the_analysis_schema_and_is_deterministic(capsys):
    import jsonschema

    schema = json.loads((REPO / "fabric" / "analysis" / "data" / "analysis.schema.json").read_text())
    argv = ["analyze", LABS / "mini-routed.yml", LABS / "jobs" / "gpt-small.yml", "--json", "-", "--fail", "nic:hb2-gpu0"]
    rc, first, _ = run(capsys, *argv)
    rc2, second, _ = run(capsys, *argv)
    assert rc == rc2 == 0 and first == second
    jsonschema.validate(json.loads(first), schema)


def test_fail_with_spare_domains_names_them(tmp_path, capsys):
    """A job on 4 of 6 HB domains: a dead leaf's domains move to the 2 the job leaves free."""
    job = (LABS / "jobs" / "gpt-small.yml").read_text().replace("pp: 3", "pp: 2").replace("global_batch: 8", "global_batch: 4")
    (tmp_path / "job.yml").write_text(job)
    rc, out, err = run(capsys, "analyze", LABS / "mini-routed.yml", tmp_path / "job.yml", "--json", "-", "--fail", "switch:minir-rail0-leaf0")
    assert rc == 0, err
    f = json.loads(out)["failure"]["rail-only"]
    assert not f["runs"] and f["spare_domains"] == ["hb4", "hb5"] and "hb4, hb5" in f["remedy"]


@pytest.mark.parametrize("body,needle", [
    ("target_availability: 0.99\ncomponents: {}\n", "components.gpu_nic"),
    ("target_availability: 0.99\ncomponents:\n  leaf: {per_year: -1, repair_hours: 4, source: x}\n", "components.leaf.per_year"),
    ("- a list\n", "rates.yml"),
])
def test_resilience_hostile_rates(tmp_path, capsys, body, needle):
    bad = tmp_path / "rates.yml"
    bad.write_text(body)
    rc, out, err = run(capsys, "resilience", LABS / "mini-routed.yml", "--rates", bad)
    assert rc == 2 and needle in err and "Traceback" not in err and out == ""


def test_resilience_shipped_rates_have_sources():
    from railonly.fabric.cost.failure_rates import CLASSES, load_rates

    rates = load_rates()
    assert set(rates.rates) == set(CLASSES)
    text = (REPO / "fabric" / "cost" / "data" / "failure_rates.yaml").read_text()
    for r in rates.rates.values():
        assert r.per_year > 0 and f"{r.source}:" in text and r.note


@pytest.mark.parametrize("mean, target", [(0.362, 0.99), (11.6, 0.99), (700.0, 0.999999), (1000.0, 0.99), (2e6, 0.999)])
def test_spare_domains_are_the_poisson_quantile_at_any_mean(mean, target):
    """exp(-mean) is 0.0 past a mean of about 745: the spares were then the loop's cap, 100,000,
    whatever the mean (a rates file with long repairs on a large cluster)."""
    import math
    from statistics import NormalDist

    from railonly.fabric.analysis.resilience import poisson_quantile

    s = poisson_quantile(mean, target)
    if mean < 700:  # the plain product form is exact here
        term = total = math.exp(-mean)
        k = 0
        while total < target:
            k += 1
            term *= mean / k
            total += term
        assert s == k
    else:  # the normal approximation with continuity correction, within a couple of domains
        assert abs(s - (mean + NormalDist().inv_cdf(target) * mean ** 0.5 - 0.5)) <= 2 + mean ** 0.25, s


def test_resilience_spares_past_a_mean_of_745_domains_down(tmp_path, capsys):
    rates = (REPO / "fabric/cost/data/failure_rates.yaml").read_text().replace("repair_hours: 24", "repair_hours: 8760")
    (tmp_path / "r.yaml").write_text(rates.replace("per_gpu_year: 0.1163", "per_gpu_year: 100"))
    rc, out, _ = run(capsys, "resilience", LABS / "mini-routed.yml", "--rates", tmp_path / "r.yaml", "--json", "-")
    assert rc == 0
    s = json.loads(out)["networks"]["rail-only"]["spares"]
    assert 1000 < s["mean_domains_down"] < 100_000 and s["spare_hb_domains"] != 100_000
    assert s["mean_domains_down"] < s["spare_hb_domains"] < s["mean_domains_down"] + 3 * s["mean_domains_down"] ** 0.5


def test_resilience_job_larger_than_the_design_is_located_in_the_job(tmp_path, capsys):
    # it said "error: <design>: job moe-a100 needs 1,024 GPUs", pointing at the design file, no key or line
    job = LABS / "jobs" / "moe-a100.yml"
    rc, out, err = run(capsys, "resilience", LABS / "mini-routed.yml", "--job", job, "--json", tmp_path / "r.json")
    assert rc == 2 and out == "" and list(tmp_path.iterdir()) == []
    first = err.splitlines()[0]
    assert first.startswith(f"error: {job}:") and ": parallel: the job needs " in first and "the design 'minir'" in first, err
    assert "fix: give a smaller job" in err


@pytest.mark.parametrize("target,printed", [("0.999999", "99.9999%"), ("0.9995", "99.95%"), ("0.99", "99.00%")])
def test_resilience_prints_the_availability_target_unrounded(tmp_path, capsys, target, printed):
    """A target of 0.999999 printed as '100.00% availability' (':.2%'): as many decimals as the
    target has, never rounded up to 100%."""
    rates = (REPO / "fabric/cost/data/failure_rates.yaml").read_text()
    rates = re.sub(r"(?m)^target_availability: .*$", f"target_availability: {target}", rates)
    (tmp_path / "r.yaml").write_text(rates)
    rc, out, _ = run(capsys, "resilience", LABS / "mini-routed.yml", "--rates", tmp_path / "r.yaml")
    assert rc == 0
    assert out.count(f" for {printed} availability ") == 2 and "100.00%" not in out, out


@pytest.mark.parametrize("per_gpu_year,spares", [("1", "1 spare HB domain "), ("10", "2 spare HB domains ")])
def test_resilience_spare_domains_singular_and_plural(tmp_path, capsys, per_gpu_year, spares):
    # it printed "needs 1 spare HB domain(s)"
    rates = (REPO / "fabric/cost/data/failure_rates.yaml").read_text().replace("per_gpu_year: 0.1163", f"per_gpu_year: {per_gpu_year}")
    (tmp_path / "r.yaml").write_text(rates)
    rc, out, _ = run(capsys, "resilience", LABS / "mini-routed.yml", "--rates", tmp_path / "r.yaml")
    assert rc == 0 and out.count(f" needs {spares}for ") == 2 and "(s)" not in out, out


_MY_PRESETS = "gpus:\n  my-gpu: {tflops: 1307, memory_gb: 192}\nmodels:\n  tiny: {layers: 2, hidden: 128, heads: 2, seq: 64, vocab: 100}\n"
_MY_JOB = "name: mine\nmodel: {preset: tiny}\nparallel: {tp: 2, dp: 2, global_batch: 4}\ngpu: {preset: my-gpu}\n"


def test_resilience_job_with_a_custom_preset_takes_presets_as_analyze_does(tmp_path, capsys):
    """resilience --job had no --presets: a job on a GPU of the user's presets could not be loaded."""
    (tmp_path / "p.yml").write_text(_MY_PRESETS)
    (tmp_path / "j.yml").write_text(_MY_JOB)
    rc, out, err = run(capsys, "resilience", LABS / "mini-routed.yml", "--job", tmp_path / "j.yml",
                       "--presets", tmp_path / "p.yml", "--json", "-")
    assert rc == 0, err
    assert json.loads(out)["networks"]["rail-only"]["spares"]["job_gpus"] == 4
    assert run(capsys, "analyze", LABS / "mini-routed.yml", tmp_path / "j.yml", "--presets", tmp_path / "p.yml")[0] == 0
    # without it, the preset is unknown: exit 2 naming the job's key
    rc, out, err = run(capsys, "resilience", LABS / "mini-routed.yml", "--job", tmp_path / "j.yml")
    assert rc == 2 and out == "" and "gpu.preset: unknown GPU preset 'my-gpu'" in err, err


@pytest.mark.parametrize("presets", ["bad", "", "missing"])
def test_resilience_presets_are_checked_as_analyze_checks_them(tmp_path, capsys, presets):
    (tmp_path / "j.yml").write_text(_MY_JOB)
    path = {"bad": tmp_path / "bad.yml", "": "", "missing": tmp_path / "nope.yml"}[presets]
    if presets == "bad":
        path.write_text("gpus:\n  Bad Name: {tflops: -1}\n")
    said = {}
    for command in (["analyze", LABS / "mini-routed.yml", tmp_path / "j.yml"],
                    ["resilience", LABS / "mini-routed.yml", "--job", tmp_path / "j.yml"]):
        rc, out, err = run(capsys, *command, "--presets", path, "--json", tmp_path / "r.json")
        assert rc == 2 and out == "" and "Traceback" not in err and not (tmp_path / "r.json").exists(), err
        said[command[0]] = err
    assert said["analyze"] == said["resilience"]


def test_resilience_presets_without_a_job_and_the_presets_as_a_report(tmp_path, capsys):
    from railonly import cli

    (tmp_path / "p.yml").write_text(_MY_PRESETS)
    (tmp_path / "j.yml").write_text(_MY_JOB)
    rc, out, err = run(capsys, "resilience", LABS / "mini-routed.yml", "--presets", tmp_path / "p.yml")
    assert rc == 2 and out == "" and "error: command line: --presets: adds GPU and model presets for the --job file" in err, err
    assert "fix: add --job JOB.yml, or leave out --presets" in err
    rc, out, err = run(capsys, "resilience", LABS / "mini-routed.yml", "--job", tmp_path / "j.yml",
                       "--presets", tmp_path / "p.yml", "--json", tmp_path / "p.yml")
    assert rc == 2 and "it is the presets" in err and (tmp_path / "p.yml").read_text() == _MY_PRESETS, err
    sub = next(a for a in cli.build_parser()._actions if hasattr(a, "choices") and isinstance(a.choices, dict))
    helps = {name: next(a.help for a in sub.choices[name]._actions if "--presets" in a.option_strings)
             for name in ("analyze", "resilience")}
    assert helps["analyze"] == helps["resilience"]
