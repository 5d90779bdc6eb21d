"""`railonly lab traffic --job`: exit codes without a lab (bad job 2, not deployed 3), nothing written."""

from __future__ import annotations

import pytest

from railonly.cli import main
from railonly.emulation import lab as lab_facts
from railonly.emulation.lab import load_lab
from railonly.emulation.runtime.registry import RUNTIMES

from ..conftest import REPO, FakeRuntime, compile_to, design_text

JOB = str(REPO / "labs" / "jobs" / "gpt-small.yml")


@pytest.fixture(scope="module")
def routed(tmp_path_factory):
    return load_lab(compile_to(design_text("labs/mini-routed.yml", "fakerp"), tmp_path_factory.mktemp("fake") / "out"))


@pytest.fixture
def fake(routed, tmp_path, monkeypatch):
    monkeypatch.setattr(lab_facts, "RUN_ROOT", str(tmp_path / "run"))
    rt = FakeRuntime(state="absent")
    monkeypatch.setitem(RUNTIMES, "fake", lambda: rt)
    return rt


def test_not_deployed_is_exit_3_and_nothing_runs(routed, fake, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["lab", "traffic", str(routed.outdir), "--runtime", "fake", "--job", JOB, "--json", str(out)]) == 3
    assert f"lab {routed.name} is not deployed" in capsys.readouterr().err
    assert not fake.calls and not out.exists()


@pytest.mark.parametrize("text, words", [
    ("name: bad\nmodel: {layers: 12, hidden: 1024, heads: 16, seq: 1024, vocab: 32000}\n"
     "parallel: {tp: 5, global_batch: 8}\ngpu: {preset: h100}\n", "parallel.tp"),
    ("name: bad\nmodel: {preset: nope}\nparallel: {global_batch: 8}\ngpu: {preset: h100}\n", "model.preset"),
    ("name: [\n", "bad.yml"),
])
def test_a_bad_job_is_exit_2_naming_the_field(routed, fake, tmp_path, capsys, text, words):
    bad = tmp_path / "bad.yml"
    bad.write_text(text)
    out = tmp_path / "r.json"
    assert main(["lab", "traffic", str(routed.outdir), "--runtime", "fake", "--job", str(bad), "--json", str(out)]) == 2
    assert words in capsys.readouterr().err
    assert not fake.calls and not out.exists()


@pytest.mark.parametrize("opt", [["--iterations", "0"], ["--time-scale", "0"], ["--tolerance", "-1"]])
def test_bad_options_are_exit_2(routed, fake, opt, capsys):
    assert main(["lab", "traffic", str(routed.outdir), "--runtime", "fake", "--job", JOB, *opt]) == 2
    assert opt[0] in capsys.readouterr().err
    assert not fake.calls


def test_pattern_and_job_are_one_or_the_other(routed, fake):
    with pytest.raises(SystemExit) as e:
        main(["lab", "traffic", str(routed.outdir), "--runtime", "fake", "--job", JOB, "--pattern", "all-to-all"])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["lab", "traffic", str(routed.outdir), "--runtime", "fake"])
    assert e.value.code == 2


def test_the_plan_of_a_compiled_lab_names_its_gpus_and_ports(routed, tmp_path):
    from railonly.emulation.checks import check_plan as checks_plan
    from railonly.emulation.traffic import replay
    from railonly.fabric.analysis import load_job

    cp = checks_plan.load(routed)
    sc, pl, phases = replay.prepare(routed, cp, load_job(JOB), 100.0, 900.0, 1000.0)
    assert sc.time_scale == 1000.0 and not pl.problems
    for ph in phases[1:]:
        for f in ph.flows:
            assert f.src in cp.gpus and f.dst in cp.gpus
            g, h = cp.gpus[f.src], cp.gpus[f.dst]
            assert (g.hb == h.hb) == (f.pair_class == "hb") and (g.rail == h.rail or g.hb == h.hb)
    assert replay.joining_switches(routed) == []  # rail-only: no switch joins rails
    base = load_lab(compile_to(design_text("labs/mini-baseline.yml", "fakerb"), tmp_path / "b"))
    assert replay.joining_switches(base) and all("spine" in s or "core" in s for s in replay.joining_switches(base))


def test_reroute_without_a_job_is_exit_2(routed, fake, capsys):
    assert main(["lab", "traffic", str(routed.outdir), "--runtime", "fake", "--pattern", "all-to-all", "--reroute"]) == 2
    assert "--reroute" in capsys.readouterr().err
    assert not fake.calls


def test_dead_nics_are_read_from_the_fault_record(routed, fake):
    """A link fault at a GPU's rail NIC names that GPU; a switch fault names none (no detour)."""
    from railonly.emulation.checks import check_plan
    from railonly.emulation.traffic import faults

    cp = check_plan.load(routed)
    g = cp.gpus["hb0-gpu0"]
    nic_ports = {x.name: x.port for x in cp.gpus.values()}
    ends = [{"node": "hb0-gpu0", "port": g.port, "netns": routed.netns("hb0-gpu0"), "dev": g.port},
            {"node": g.leaf, "port": g.leaf_port, "netns": routed.netns(g.leaf), "dev": "eth1"}]
    faults._save(routed, [{"kind": "link", "what": "hb0:rail0", "ends": ends, "routes": {}},
                          {"kind": "node", "what": g.leaf, "ends": ends[1:], "routes": {}, "frr": []}])
    assert faults.dead_nics(routed, fake, nic_ports) == {"hb0-gpu0": "hb0:rail0"}


def test_a_job_whose_replay_would_last_days_is_exit_2_before_anything_runs(routed, fake, tmp_path, capsys):
    """global_batch 100,000,000 passed the job's checks and the replay started a 117-day iteration
    (10,178,935 s at the default time scale): it slept in its compute phase until interrupted."""
    import yaml

    d = yaml.safe_load(open(JOB))
    d["parallel"]["global_batch"] = 100_000_000
    bad = tmp_path / "long.yml"
    bad.write_text(yaml.safe_dump(d))
    fake.state = "running"
    out = tmp_path / "r.json"
    rc = main(["lab", "traffic", str(routed.outdir), "--runtime", "fake", "--job", str(bad), "--json", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "long.yml" in err and "more than the 21,600 s a replay may take" in err, err
    assert "fix: a smaller parallel.global_batch" in err and "Traceback" not in err
    assert not out.exists()
    assert not fake.ran("nft") and not fake.ran("iperf3")  # no counters, no traffic
    # an explicit time scale that stretches a healthy job past the bound says which to lower
    rc = main(["lab", "traffic", str(routed.outdir), "--runtime", "fake", "--job", JOB, "--time-scale", "1e7",
               "--iterations", "2"])
    err = capsys.readouterr().err
    assert rc == 2 and "fix: --time-scale" in err and "fewer --iterations" in err, err
