"""The job file: every problem at once (key path, line, fix), exit 2, nothing written;
hostile files refused before any YAML is built; presets users can extend."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from railonly.cli import main
from railonly.fabric.analysis import load_job, load_presets, parse_job
from railonly.fabric.input.problems import InputError

from ..conftest import GOLDEN, REPO, assert_golden

BAD = Path(__file__).parent / "bad_jobs"
DESIGN = str(REPO / "labs" / "dgx-a100.yml")


@pytest.mark.parametrize("path", sorted(BAD.glob("*.yml")), ids=lambda p: p.stem)
def test_bad_job_exits_2_with_golden_message(path, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(BAD)
    out = tmp_path / "out.json"
    rc = main(["analyze", DESIGN, path.name, "--json", str(out), "--traffic", str(tmp_path / "t.csv")])
    err = capsys.readouterr().err
    assert rc == 2
    assert list(tmp_path.iterdir()) == [], "nothing may be written for a bad job"
    assert "Traceback" not in err and "fix:" in err
    assert_golden(GOLDEN / "analysis" / "errors" / f"{path.stem}.txt", err.replace(DESIGN, "DESIGN"))


def test_every_problem_at_once_with_lines():
    with pytest.raises(InputError) as exc:
        load_job(str(BAD / "bad-values.yml"))
    where = {(p.path, p.line) for p in exc.value.problems}
    for expected in [("name", 1), ("model.hidden", 4), ("model.moe.experts", 5), ("model.moe.evry", 5), ("parallel.tp", 7),
                     ("parallel.order", 10), ("parallel.recompute", 11), ("parallel.dp_overlap", 12),
                     ("parallel.global_batch", 6), ("gpu.preset", 13)]:
        assert expected in where, (expected, sorted(where))


def test_cross_key_problems_name_a_working_value():
    with pytest.raises(InputError) as exc:
        load_job(str(BAD / "cross-keys.yml"))
    msgs = {p.path: (p.message, p.hint) for p in exc.value.problems if p.path not in {"parallel.ep"}}
    ep = [p.message for p in exc.value.problems if p.path == "parallel.ep"]
    assert "must divide model.heads (96)" in msgs["parallel.tp"][0] and "8" in msgs["parallel.tp"][1]
    assert "must divide model.layers (96)" in msgs["parallel.pp"][0]
    assert "micro_batch x dp" in msgs["parallel.global_batch"][0]
    assert any("must divide dp (6)" in m for m in ep) and any("needs an MoE model" in m for m in ep)


def test_missing_file_symlink_fifo_directory_and_size(tmp_path):
    good = REPO / "labs" / "jobs" / "gpt-small.yml"
    with pytest.raises(InputError, match="file not found"):
        load_job(str(tmp_path / "nope.yml"))
    link = tmp_path / "link.yml"
    link.symlink_to(good)
    with pytest.raises(InputError, match="symbolic link"):
        load_job(str(link))
    fifo = tmp_path / "fifo.yml"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        load_job(str(fifo))  # must not block on the FIFO
    with pytest.raises(InputError, match="not a regular file"):
        load_job(str(tmp_path))
    big = tmp_path / "big.yml"
    big.write_text("name: x\n" + "# padding\n" * 40000)
    with pytest.raises(InputError, match="more than the limit of 262,144"):
        load_job(str(big))
    binary = tmp_path / "bin.yml"
    binary.write_bytes(b"name: \xff\xfe\n")
    with pytest.raises(InputError, match="not UTF-8"):
        load_job(str(binary))


def test_bounded_yaml():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefg", "bcdefgh"))
    with pytest.raises(InputError, match="expands to more than"):
        parse_job(bomb)
    with pytest.raises(InputError, match="nesting deeper"):
        parse_job("a: " + "[" * 40 + "]" * 40 + "\n")
    with pytest.raises(InputError, match="expands to more than"):
        parse_job("a: [" + ", ".join("1" for _ in range(60000)) + "]\n")


def test_presets_ship_every_named_gpu_and_model():
    p = load_presets()
    assert {"a100", "h100", "h200", "gh200", "b200"} <= set(p.gpus)
    assert {"gpt-3-175b", "mt-nlg-530b", "gpt-1t", "mixtral-style", "deepseek-style"} <= set(p.models)
    assert p.gpus["a100"]["tflops"] == 312 and p.gpus["h100"]["tflops"] == 989


def test_user_presets_extend_and_are_validated(tmp_path):
    f = tmp_path / "mine.yml"
    f.write_text("gpus:\n  mi300x: {tflops: 1307, memory_gb: 192}\nmodels:\n  tiny: {layers: 2, hidden: 128, heads: 2, seq: 64, vocab: 100}\n")
    presets = load_presets(str(f))
    job = parse_job("name: t\nmodel: {preset: tiny}\nparallel: {tp: 2, global_batch: 4}\ngpu: {preset: mi300x}\n", presets=presets)
    assert job.gpu.tflops == 1307 and job.model.hidden == 128 and job.model.ffn == 512
    bad = tmp_path / "bad.yml"
    bad.write_text("gpus:\n  Bad Name: {tflops: -1}\nmodels:\n  m: {layers: 2}\n")
    with pytest.raises(InputError) as exc:
        load_presets(str(bad))
    paths = {p.path for p in exc.value.problems}
    assert {"gpus.Bad Name.tflops", "gpus.Bad Name.memory_gb", "gpus.Bad Name", "models.m.hidden"} <= paths


def test_job_keys_override_the_preset():
    job = parse_job("name: t\nmodel: {preset: gpt-1t, layers: 64}\nparallel: {tp: 8, pp: 8, global_batch: 8}\n"
                    "gpu: {preset: a100, tflops: 300}\n")
    assert job.model.layers == 64 and job.model.hidden == 25600
    assert job.gpu.tflops == 300 and job.gpu.memory_gb == 80


def test_order_defaults_and_ep_inserted_before_dp():
    job = parse_job("name: t\nmodel: {preset: gpt-1t}\nparallel: {tp: 8, pp: 8, global_batch: 8, order: tp-pp-dp}\ngpu: {preset: a100}\n")
    assert job.parallel.order == ("tp", "pp", "ep", "dp")
    job = parse_job("name: t\nmodel: {preset: gpt-1t}\nparallel: {global_batch: 8}\ngpu: {preset: a100}\n")
    assert job.parallel.order == ("tp", "cp", "ep", "dp", "pp") and job.parallel.recompute == "selective"


def test_every_example_job_loads():
    for path in sorted((REPO / "labs" / "jobs").rglob("*.yml")):
        load_job(str(path))


def test_job_size_is_bounded():
    """The analysis' arrays grow with GPUs and all-to-all groups: both are capped, with a fix."""
    with pytest.raises(InputError) as exc:
        parse_job("name: t\nmodel: {preset: gpt-1t}\nparallel: {tp: 8, pp: 128, dp: 2048, global_batch: 2048}\ngpu: {preset: a100}\n")
    assert any(p.path == "parallel.dp" and "1,048,576" in p.message for p in exc.value.problems)
    with pytest.raises(InputError) as exc:
        parse_job("name: t\nmodel: {preset: deepseek-style}\nparallel: {ep: 2048, dp: 2048, global_batch: 2048}\ngpu: {preset: a100}\n")
    assert any(p.path == "parallel.ep" and "1,024" in p.message for p in exc.value.problems)
