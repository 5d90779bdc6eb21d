"""`railonly analyze`: human output first, the analysis JSON (docs/reference/outdir.md), files that are byte-identical run to run."""

from __future__ import annotations

import csv
import json

import pytest

from railonly.cli import main

from ..conftest import REPO

LABS = REPO / "labs"


def run(capsys, *argv) -> tuple[int, str, str]:
    rc = main(["analyze", *map(str, argv)])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_human_output_table_and_verdict(capsys):
    rc, out, err = run(capsys, LABS / "dgx-a100.yml", LABS / "jobs" / "table5" / "175b-sel.yml")
    assert rc == 0 and err == ""
    assert out.splitlines()[0].startswith("t5-175b-sel on dgx-a100: 64 GPUs (K = 8), tp 8 x pp 8 x dp 1")
    assert "placement: ok" in out
    for net in ("rail-only", "rail-optimized", "ideal"):
        assert f"  {net} " in out
    assert "rail-only runs at 100.0% of rail-optimized" in out
    assert "network cost:" in out and "equal budget:" in out


def test_json_contract_6(tmp_path, capsys):
    path = tmp_path / "a.json"
    rc, out, _ = run(capsys, LABS / "dgx-h100-1k.yml", LABS / "jobs" / "moe-h100.yml", "--json", path)
    assert rc == 0 and f"wrote {path}" in out
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == 1 and doc["job"] == "moe-h100" and doc["design"] == "dgx1k" and doc["gpus"] == 1024
    assert set(doc["placement"]) >= {"ok", "problems"}
    assert set(doc["traffic"]) >= {"bytes", "silent_pair_share", "collectives"}
    assert set(doc["traffic"]["bytes"]) == {"hb", "rail", "cross_rail"}
    for c in doc["traffic"]["collectives"]:
        assert set(c) >= {"parallelism", "op", "class", "group_size", "bytes_per_gpu"}
        assert c["class"] in ("hb", "rail", "cross-rail")
    parts = {"compute", "bubble", "tp", "pp", "dp", "ep"}
    for net in ("rail-only", "rail-optimized", "ideal"):
        r = doc["networks"][net]
        assert set(r) >= {"iteration_s", "mfu", "hfu", "tokens_per_s", "breakdown_s"}
        assert set(r["breakdown_s"]) >= parts  # cp and optimizer follow (more keys may follow)
        assert sum(r["breakdown_s"].values()) == pytest.approx(r["iteration_s"], rel=1e-5)
    assert doc["moe_all_to_all_overhead"] == pytest.approx(0.112, abs=0.003)
    for net in ("rail-only", "rail-optimized"):
        assert set(doc["cost"][net]) >= {"network_usd", "usd_per_token_per_s"}
    # collectives' bytes add up to the class totals (all GPUs = bytes per GPU x GPUs)
    for cls in ("hb", "rail", "cross_rail"):
        per_gpu = sum(c["bytes_per_gpu"] for c in doc["traffic"]["collectives"] if c["class"] == cls.replace("_", "-"))
        assert per_gpu * doc["gpus"] == pytest.approx(doc["traffic"]["bytes"][cls], rel=1e-6)
        assert isinstance(doc["traffic"]["bytes"][cls], int)


def test_every_example_job_validates_against_the_contract_6_schema(tmp_path, capsys):
    import jsonschema

    schema = json.loads((REPO / "fabric" / "analysis" / "data" / "analysis.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    designs = {"table5": "dgx-a100", "moe-a100": "dgx-a100", "nvl72": "nvl72", "gpt-small": "mini-routed",
               "gpt-1t-32k": "dgx-h100-32k", "heldout": "dgx-h100-32k",
               "gpt-1t-gh200-32k": "gh200-32k"}
    for job in sorted((LABS / "jobs").rglob("*.yml")):
        design = next((d for k, d in designs.items() if k in str(job)), "dgx-h100-1k")
        rc, out, _ = run(capsys, LABS / f"{design}.yml", job, "--json", "-")
        assert rc == 0, job
        jsonschema.validate(json.loads(out), schema)
    bad = json.loads(out)
    bad["networks"]["ideal"]["breakdown_s"].pop("bubble")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_json_to_stdout_is_only_json(capsys):
    rc, out, _ = run(capsys, LABS / "mini-routed.yml", LABS / "jobs" / "gpt-small.yml", "--json", "-")
    assert rc == 0
    assert json.loads(out)["job"] == "gpt-small"


def test_traffic_csv_and_heatmap_are_deterministic(tmp_path, capsys):
    outs = []
    for i in range(2):
        f = tmp_path / f"run{i}" / "traffic.csv"
        f.parent.mkdir()
        rc, _, _ = run(capsys, LABS / "nvl72.yml", LABS / "jobs" / "nvl72-pp18.yml", "--traffic", f)
        assert rc == 0
        outs.append((f.read_bytes(), f.with_suffix(".png").read_bytes()))
    assert outs[0] == outs[1]
    csv_bytes, png = outs[0]
    assert png.startswith(b"\x89PNG")
    rows = list(csv.DictReader(csv_bytes.decode().splitlines()))
    assert rows[0].keys() >= {"src_domain", "dst_domain", "hb_bytes", "rail_bytes", "cross_rail_bytes", "total_bytes"}
    assert all(int(r["src_domain"]) < 8 and int(r["dst_domain"]) < 8 for r in rows)
    assert any(int(r["cross_rail_bytes"]) > 0 for r in rows)  # this placement crosses rails


def test_place_auto_and_launcher(tmp_path, capsys):
    launcher = tmp_path / "ranks.csv"
    js = tmp_path / "a.json"
    rc, out, _ = run(capsys, LABS / "nvl72.yml", LABS / "jobs" / "nvl72-tp-pp-dp.yml", "--place", "auto",
                     "--launcher", launcher, "--json", js)
    assert rc == 0 and "placement: ok" in out
    doc = json.loads(js.read_text())
    assert doc["placement"]["ok"] and doc["traffic"]["bytes"]["cross_rail"] == 0
    assert doc["placement"]["order"] == "tp-cp-ep-dp-pp"
    assert doc["launcher"]["env"]["NCCL_CROSS_NIC"] == "0"
    rows = list(csv.DictReader(launcher.read_text().splitlines()))
    assert len(rows) == 576
    env = launcher.with_suffix(".env").read_text()
    assert "export NCCL_CROSS_NIC=0\n" in env and "# rails share no switch" in env
    assert "launcher: NCCL_CROSS_NIC=0" in out
    assert rows[73] == {"rank": "73", "gpu": "73", "node": "hb1-gpu1", "hb_domain": "1", "local_rank": "1", "tp_rank": "1", "cp_rank": "0",
                        "pp_rank": "1", "dp_rank": "0", "ep_rank": "0"}  # 73 = tp 1 + 8 x (dp 0 + 9 x pp 1)


def test_given_order_problems_in_json(tmp_path, capsys):
    js = tmp_path / "a.json"
    rc, out, _ = run(capsys, LABS / "nvl72.yml", LABS / "jobs" / "nvl72-pp18.yml", "--json", js)
    assert rc == 0 and "placement: 2 problems" in out and "fix:" in out
    doc = json.loads(js.read_text())
    assert not doc["placement"]["ok"]
    assert {p["group"] for p in doc["placement"]["problems"]} == {"pp", "dp"}
    assert doc["launcher"]["env"]["NCCL_P2P_PXN_LEVEL"] == "2"


def test_oversubscribed_spine_slows_cross_rail_bytes_only(tmp_path, capsys):
    docs = {}
    for job in ("nvl72-pp18.yml", "nvl72-tp-pp-dp.yml"):
        js = tmp_path / f"{job}.json"
        args = ["--oversub", "2", "--json", js] + (["--place", "auto"] if job == "nvl72-tp-pp-dp.yml" else [])
        assert run(capsys, LABS / "nvl72.yml", LABS / "jobs" / job, *args)[0] == 0
        docs[job] = json.loads(js.read_text())["networks"]
    crossing = docs["nvl72-pp18.yml"]
    assert crossing["rail-optimized"]["iteration_s"] > crossing["rail-only"]["iteration_s"]
    aligned = docs["nvl72-tp-pp-dp.yml"]
    assert aligned["rail-optimized"]["iteration_s"] == aligned["rail-only"]["iteration_s"]


def test_sweep_png_deterministic(tmp_path, capsys):
    pngs = []
    for i in range(2):
        plot = tmp_path / f"s{i}.png"
        rc, out, _ = run(capsys, LABS / "dgx-h100-1k.yml", LABS / "jobs" / "gpt3-175b-1k.yml", "--sweep", "k=8,16,32", "--plot", plot)
        assert rc == 0
        pngs.append(plot.read_bytes())
        assert plot.with_suffix(".csv").read_text().count("\n") == 4
    assert pngs[0] == pngs[1] and pngs[0].startswith(b"\x89PNG")


def test_default_sweep_plot_never_replaces_a_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = (LABS / "dgx-a100.yml", LABS / "jobs" / "table5/22b-sel.yml", "--sweep", "nic=100,200")
    assert run(capsys, *argv)[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.csv", "sweep.png"]
    rc, _, err = run(capsys, *argv)
    assert rc == 2 and "sweep.png exists" in err and "--plot" in err
    assert run(capsys, *argv, "--plot", "sweep.png")[0] == 0


@pytest.mark.parametrize("argv,needle", [
    (["--sweep", "q=1,2"], "--sweep: must be AXIS=V1,V2"),
    (["--sweep", "k=8,x"], "k values must be whole numbers"),
    (["--sweep", "k=1000"], "up to 512"),
    (["--sweep", "nic=100,nan"], "nic values must be numbers above 0"),  # NaN compares false with every bound
    (["--sweep", "hb=NaN"], "hb values must be numbers above 0"),
    (["--oversub", "0.5"], "--oversub: must be from 1 to 64"),
    (["--traffic", "t.png"], "--traffic: names the CSV"),
    (["--sweep", "k=8", "--plot", "s.csv"], "--plot: names the PNG"),
    (["--sweep", "batch=" + ",".join(str(i) for i in range(1, 70))], "at most 64 values"),
    (["--plot", "s.png"], "--plot: draws a --sweep, and none is given"),  # was exit 0, no file, no word
])
def test_bad_options_exit_2_nothing_written(tmp_path, capsys, argv, needle):
    js = tmp_path / "a.json"
    rc, out, err = run(capsys, LABS / "dgx-a100.yml", LABS / "jobs" / "moe-a100.yml", "--json", js, *argv)
    assert rc == 2 and needle in err and "fix:" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("values", ["3", "3,5"])
def test_sweep_where_no_value_runs_exits_2_nothing_written(tmp_path, capsys, values):
    # every batch value skipped (not a multiple of micro_batch x dp): a matplotlib traceback, exit 1
    js, plot = tmp_path / "a.json", tmp_path / "s.png"
    rc, out, err = run(capsys, LABS / "mini-routed.yml", LABS / "jobs" / "gpt-small.yml", "--sweep", f"batch={values}",
                       "--plot", plot, "--json", js)
    assert rc == 2 and "Traceback" not in err, err
    assert "--sweep: no batch value gives a job to time (3: global batch 3 is not a multiple of micro_batch x dp (2)" in err
    assert "fix:" in err and list(tmp_path.iterdir()) == []


def test_job_larger_than_the_fabric_exits_2(tmp_path, capsys):
    rc, _, err = run(capsys, LABS / "mini-routed.yml", LABS / "jobs" / "moe-a100.yml", "--json", tmp_path / "a.json")
    assert rc == 2 and "needs tp x pp x dp" in err and "lower dp" in err
    assert list(tmp_path.iterdir()) == []


def test_design_and_job_problems_reported_together(tmp_path, capsys):
    bad_design = tmp_path / "d.yml"
    bad_design.write_text("name: d\nhb_domain: {size: 0, count: 1}\n")
    bad_job = tmp_path / "j.yml"
    bad_job.write_text("name: j\nmodel: {preset: nope}\nparallel: {global_batch: 1}\ngpu: {preset: a100}\n")
    rc, _, err = run(capsys, bad_design, bad_job)
    assert rc == 2 and "hb_domain.size" in err and "model.preset" in err and "2 problems found" in err


def test_output_at_a_symlink_is_refused_neither_followed_nor_replaced(tmp_path, capsys):
    target = tmp_path / "precious.txt"
    target.write_text("keep")
    link = tmp_path / "a.json"
    link.symlink_to(target)
    rc, _, err = run(capsys, LABS / "mini-routed.yml", LABS / "jobs" / "gpt-small.yml", "--json", link)
    assert rc == 2 and "is a symbolic link" in err
    assert target.read_text() == "keep" and link.is_symlink()


def test_hostile_design_file_refused(tmp_path, capsys):
    link = tmp_path / "d.yml"
    link.symlink_to(LABS / "dgx-a100.yml")
    rc, _, err = run(capsys, link, LABS / "jobs" / "moe-a100.yml")
    assert rc == 2 and "symbolic link" in err
    bomb = tmp_path / "a.yml"
    bomb.write_text("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefg", "bcdefgh")))
    rc, _, err = run(capsys, bomb, LABS / "jobs" / "gpt-small.yml")
    assert rc == 2 and "expands to more than" in err


def test_quiet_prints_nothing_on_success_and_small_jobs_get_readable_units(capsys):
    rc, out, err = run(capsys, LABS / "mini-routed.yml", LABS / "jobs" / "gpt-small.yml", "-q")
    assert rc == 0 and out == "" and err == ""
    rc, out, _ = run(capsys, LABS / "mini-routed.yml", LABS / "jobs" / "gpt-small.yml")
    assert rc == 0 and "HB 2.01 GB" in out and "cross-rail 0 B" in out


def test_equal_budget_of_one_gpu_is_singular(capsys):
    # the spine's $30,480 "buys 1 more GPUs"
    rc, out, _ = run(capsys, LABS / "mini-routed.yml", LABS / "jobs" / "gpt-small.yml")
    assert rc == 0 and "equal budget: the spine's $30,480 buys 1 more GPU: rail-only " in out, out


def test_equal_budget_where_rail_only_costs_more_says_fewer(capsys, tmp_path):
    # 64 domains of 8 at radix 256 without share_rails: a switch per rail against a packed baseline,
    # rail-only's network costs $235,520 more; the line read "the spine's $-235,520 buys -8 more GPUs"
    d = tmp_path / "d.yml"
    d.write_text("name: t\ntopology: rail-only\nhb_domain: {size: 8, count: 64}\n"
                 "switch: {radix: 256, share_rails: false}\nrail: {mode: routed}\n")
    j = tmp_path / "j.yml"
    j.write_text("name: j\nmodel: {layers: 12, hidden: 1024, heads: 16, seq: 1024, vocab: 32000}\n"
                 "parallel: {tp: 8, pp: 1, dp: 64, micro_batch: 1, global_batch: 64}\ngpu: {preset: h100}\n")
    rc, out, _ = run(capsys, d, j)
    line = next(ln for ln in out.splitlines() if ln.startswith("equal budget:"))
    assert rc == 0 and line.startswith("equal budget: rail-only's network costs $235,520 more, 8 fewer GPUs for the same money: "), line
    assert "-" not in line.replace("rail-only", "").replace("rail-optimized", ""), line
