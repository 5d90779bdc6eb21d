"""The public API the lab replay builds on (railonly.fabric.analysis)."""

from __future__ import annotations


import pytest

import railonly.fabric.analysis as analysis
from railonly.fabric.analysis import Cluster, Rates, evaluate, phase_list, place

from .conftest import cluster_of, job_of


def test_public_names():
    for name in ("load_job", "parse_job", "Cluster", "Rates", "place", "place_auto", "phase_list", "Phase", "evaluate",
                 "Result", "NETWORKS", "Placement", "Job"):
        assert hasattr(analysis, name), name


def test_cluster_from_fabric_json_facts():
    from railonly.fabric import build_fabric, load_design
    from railonly.fabric.graph import fabric_json

    from ..conftest import REPO

    text = fabric_json.render(build_fabric(load_design(str(REPO / "labs" / "mini-routed.yml"))))
    c = Cluster.from_fabric_json(text)
    assert (c.hb_size, c.hb_count, c.nic_gbps, c.hb_gbps, c.name) == (2, 6, 400, 3600, "minir")
    assert c == cluster_of("mini-routed") == Cluster.from_fabric(fabric_json.parse(text))


def analysis_reader(outdir):
    from railonly.fabric import read_outdir

    return read_outdir(str(outdir)).read_fabric()


def test_cluster_from_a_compiled_outdir(tmp_path):
    from railonly.cli import main

    from ..conftest import REPO

    out = tmp_path / "minir"
    assert main(["compile", str(REPO / "labs" / "mini-routed.yml"), "-o", str(out)]) == 0
    c = Cluster.from_fabric(analysis_reader(out))
    assert c == cluster_of("mini-routed")


def test_cluster_from_bad_fabric_json_is_an_input_error():
    from railonly.fabric.input.problems import InputError

    with pytest.raises(InputError, match="recompile") as exc:
        Cluster.from_fabric_json('{"name": "x"}')
    assert "hb_domain_size: is missing" in str(exc.value)


def test_phases_in_schedule_order_with_groups_classes_bytes_and_time():
    c = cluster_of("mini-routed")
    job = job_of("gpt-small.yml")
    pl = place(job, c)
    rates = Rates.from_gbps(0.1, 0.9, efficiency=1.0)  # a lab's shaped rates
    phases = phase_list(job, pl, rates, "rail-only")
    assert [p.name for p in phases] == ["tp.all-gather", "tp.reduce-scatter", "pp.send-recv", "dp.all-reduce.dense"]
    tp, _, pp, dp = phases
    assert tp.groups[0] == (0, 1) and tp.kind == "hb" and len(tp.groups) == 6
    assert pp.groups[0] == (0, 4, 8) and pp.kind == "rail"  # a pipeline in stage order
    assert dp.groups[0] == (0, 2) and dp.kind == "rail"
    assert tp.bytes_per_gpu["cross_rail"] == 0 and tp.bytes_per_gpu["hb"] > 0
    assert dp.bytes_per_gpu["rail"] > 0
    # the model's time of each phase is calls x one call at the given rates
    for ph in phases:
        assert ph.model_s == pytest.approx(ph.calls * ph.collective.time("rail-only", rates))
    # and the iteration's exposed communication is built from the same calls
    r = evaluate(job, pl, rates)["rail-only"]
    assert r.breakdown_s["dp"] == pytest.approx(dp.model_s)
    assert r.breakdown_s["tp"] == pytest.approx(tp.model_s + phases[1].model_s)
    assert r.breakdown_s["pp"] == pytest.approx(pp.model_s)


def test_rates_from_gbps():
    r = Rates.from_gbps(400, 3600, efficiency=1.0)
    assert r.nic == 50e9 and r.hb == 450e9 and r.oversub == 1.0
