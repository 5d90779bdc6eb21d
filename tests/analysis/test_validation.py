"""The model against published measurements it was not fitted to, and issue 26's behaviours.

The GEMM constants (gpus.yaml: a100) are fitted on Korthikanti et al. Table 5 alone
(test_reference.py); every point here is held out (published.py, docs/analyze-validation.md).
"""

from __future__ import annotations

import json
import statistics

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from railonly.cli import main
from railonly.fabric.analysis import Cluster, Rates, evaluate, parse_job, place, place_auto
from railonly.fabric.analysis.autoplace import auto_order
from railonly.fabric.analysis.analysis_report import _t
from railonly.fabric.analysis.timing import iteration
from railonly.fabric.analysis.traffic import collectives

from .conftest import JOBS, LABS, job_of
from .published import HELDOUT, OTHER_SOFTWARE, SELENE, published_seconds


def _error(name: str, unit: str, value: float) -> tuple[float, int]:
    job = job_of(f"heldout/{name}.yml")
    predicted = evaluate(job, place(job, SELENE, problems=False), Rates.of(SELENE), ("rail-only",))["rail-only"].iteration_s
    return predicted / published_seconds(job, unit, value) - 1, job.parallel.tp


def test_held_out_points_mean_8_worst_15_tp8_spread_2_5_percent():
    errors = {name: _error(name, unit, value) for name, _, unit, value in HELDOUT}
    report = ", ".join(f"{k} {e:+.1%}" for k, (e, _) in errors.items())
    absolute = [abs(e) for e, _ in errors.values()]
    tp8 = [e for e, tp in errors.values() if tp == 8]
    assert len(errors) == 16 and len(tp8) == 13
    assert sum(absolute) / len(absolute) <= 0.08, report
    assert max(absolute) <= 0.15, report
    assert statistics.pstdev(tp8) <= 0.025, report


def test_narrow_models_no_longer_miss_by_a_quarter():
    # the issue's -37% and -25% on 1.7B and 3.6B (compute efficiency from h / tp alone)
    for name, _, unit, value in HELDOUT[:2]:
        e, _ = _error(name, unit, value)
        assert abs(e) <= 0.10, (name, e)


def test_other_software_points_are_listed_and_predicted_fast():
    # DeepSpeed's pipeline (MT-NLG) runs slower than Megatron's schedule the model describes:
    # the table says so; this pins the sign and size so a change is noticed
    for name, _, unit, value in OTHER_SOFTWARE:
        e, _ = _error(name, unit, value)
        assert -0.30 < e < -0.15, (name, e)


def test_every_held_out_job_fits_its_gpus():
    from railonly.fabric.analysis.memory import estimate

    for name, *_ in HELDOUT + OTHER_SOFTWARE:
        assert estimate(job_of(f"heldout/{name}.yml"))["fits"], name


LLAMA3_70B = ("name: llama\nmodel: {layers: 80, hidden: 8192, heads: 64, kv_heads: 8, mlp: swiglu, ffn: 28672, "
              "vocab: 128256, seq: 8192, tied_embeddings: false}\n"
              "parallel: {tp: 8, pp: 4, dp: 8, cp: 2, global_batch: 64, distributed_optimizer: true, flash_attention: true}\ngpu: {preset: h100}\n")


def test_llama3_70b_counts_70_6b_parameters():
    job = parse_job(LLAMA3_70B)
    assert job.model.params == pytest.approx(70.6e9, rel=0.01)
    # by hand: 80 x (q, o 2 h^2 + k, v 2 h 1024 + SwiGLU 3 h 28672) + 2 V h (untied)
    h = 8192
    by_hand = 80 * (2 * h * h + 2 * h * 1024 + 3 * h * 28672) + 2 * 128256 * h
    assert job.model.params == pytest.approx(by_hand, rel=1e-3)


def test_json_states_model_parameters(tmp_path, capsys):
    job = tmp_path / "llama.yml"
    job.write_text(LLAMA3_70B)
    rc = main(["analyze", str(LABS / "dgx-h100-1k.yml"), str(job), "--json", str(tmp_path / "a.json"), "-q"])
    assert rc == 0, capsys.readouterr().err
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["model"]["parameters"] == pytest.approx(70.6e9, rel=0.01)
    assert doc["model"]["kv_heads"] == 8 and doc["model"]["mlp"] == "swiglu" and not doc["model"]["tied_embeddings"]
    assert doc["networks"]["rail-only"]["breakdown_s"]["cp"] > 0


def test_gqa_and_swiglu_change_what_a_layer_costs():
    base = "name: t\nmodel: {layers: 8, hidden: 4096, heads: 32, seq: 4096, vocab: 32000%s}\nparallel: {tp: 8, global_batch: 8}\ngpu: {preset: h100}\n"
    mha, gqa = parse_job(base % ""), parse_job(base % ", kv_heads: 8")
    h = 4096
    assert mha.model.attention_params - gqa.model.attention_params == 2 * h * (h - 8 * 128) + 2 * (h - 8 * 128)
    gelu, swiglu = parse_job(base % ", ffn: 11008"), parse_job(base % ", mlp: swiglu, ffn: 11008")
    assert swiglu.model.mlp_params - gelu.model.mlp_params == h * 11008 + 11008
    assert parse_job(base % ", mlp: swiglu").model.ffn == 11008  # 8/3 h rounded up to 256 (Llama)


def test_grad_reduce_fp32_by_default_doubles_dp_bytes():
    text = "name: t\nmodel: {preset: gpt-22b}\nparallel: {tp: 8, dp: 4, global_batch: 8%s}\ngpu: {preset: a100}\n"
    c = Cluster(8, 4, 200, 2400)

    def dp_payload(extra):
        j = parse_job(text % extra)
        return sum(x.payload for x in collectives(j, place(j, c)) if x.parallelism == "dp")

    fp32, bf16 = dp_payload(""), dp_payload(", grad_reduce: bf16")
    assert fp32 == pytest.approx(2 * bf16)
    # distributed optimizer: reduce-scatter of fp32 gradients + all-gather of bf16 parameters
    assert dp_payload(", distributed_optimizer: true") == pytest.approx(fp32 + bf16)


def test_overlap_hides_communication_but_never_more_than_compute():
    text = "name: t\nmodel: {preset: gpt-22b}\nparallel: {tp: 8, dp: 4, global_batch: 8%s}\ngpu: {preset: a100}\n"
    c = Cluster(8, 4, 200, 2400)
    r = {}
    for key, extra in (("none", ""), ("tp", ", tp_overlap: 1"), ("dp", ", dp_overlap: 1")):
        j = parse_job(text % extra)
        r[key] = iteration(j, collectives(j, place(j, c)), "rail-only", Rates.of(c))
    assert r["tp"].breakdown_s["tp"] == 0 < r["none"].breakdown_s["tp"]
    assert r["dp"].breakdown_s["dp"] < r["none"].breakdown_s["dp"]
    assert r["tp"].breakdown_s["compute"] == r["none"].breakdown_s["compute"]


def test_context_parallel_ring_moves_every_other_ranks_keys_and_values():
    text = ("name: t\nmodel: {layers: 4, hidden: 4096, heads: 32, kv_heads: 8, seq: 8192, vocab: 32000}\n"
            "parallel: {tp: 4, cp: 4, dp: 1, global_batch: 2, recompute: selective}\ngpu: {preset: h100}\n")
    j = parse_job(text)
    (cp,) = [c for c in collectives(j, place(j, Cluster(8, 2, 400, 3600))) if c.parallelism == "cp"]
    chunk = 2 * 2 * 8192 / 4 * (8 * 128) / 4  # keys and values (bf16) of a rank's 2,048 tokens, its tp share of 8 kv heads
    assert cp.bytes_per_gpu().sum() == pytest.approx(3 * chunk)  # cp - 1 = 3 hops a pass
    assert cp.calls == 2 * 4 * 4  # micro-batches x layers x (forward, backward keys/values and gradients, recompute)


def test_fp8_runs_the_linear_layers_faster():
    text = "name: t\nmodel: {preset: gpt-22b}\nparallel: {tp: 8, global_batch: 8%s}\ngpu: {preset: h100}\n"
    c = Cluster(8, 1, 400, 3600)
    times = {}
    for p in ("bf16", "fp8"):
        j = parse_job(text % f", precision: {p}")
        times[p] = iteration(j, collectives(j, place(j, c)), "rail-only", Rates.of(c)).breakdown_s["compute"]
    assert 0.5 < times["fp8"] / times["bf16"] < 0.9


def test_job_that_does_not_fit_exits_1_with_what_would_fit(tmp_path, capsys):
    job = tmp_path / "big.yml"
    job.write_text("name: big\nmodel: {preset: gpt-3-175b}\nparallel: {tp: 8, pp: 1, dp: 8, global_batch: 64}\ngpu: {preset: a100}\n")
    rc = main(["analyze", str(LABS / "dgx-a100.yml"), str(job), "--json", str(tmp_path / "a.json")])
    out, err = capsys.readouterr()
    assert rc == 1
    assert "DOES NOT FIT" in out and "would fit: tp" in out
    assert "error: big needs" in err and "would fit: tp" in err
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["memory"]["fits"] is False and doc["would_fit"]["parallel"]["pp"] > 1


def test_search_with_nothing_feasible_says_why(tmp_path, capsys):
    job = tmp_path / "huge.yml"
    job.write_text("name: huge\nmodel: {preset: gpt-1t}\nparallel: {tp: 8, pp: 1, dp: 1, global_batch: 8}\ngpu: {preset: a100}\n")
    rc = main(["analyze", str(LABS / "dgx-a100.yml"), str(job), "--search"])
    out, err = capsys.readouterr()
    assert rc == 1
    assert "search: nothing feasible: none of the" in out and "the smallest needs" in out
    assert "--search found nothing feasible" in err


def test_ideal_network_does_not_depend_on_k():
    job = job_of("table5/1t-sel.yml")
    ideal = set()
    for K in (1, 2, 8, 64):
        c = Cluster(K, 512 // K, 200, 2400)
        r = evaluate(job, place(job, c, problems=False), Rates.of(c), ("ideal",))["ideal"]
        ideal.add(round(r.iteration_s, 9))
    assert len(ideal) == 1


def test_searched_ideal_does_not_depend_on_k():
    # the ideal is every GPU in one HB domain: its best configuration is searched there, not
    # under the design's K (issue 26: K = 1 gave an "ideal" eight times slower)
    from railonly.fabric.analysis.search import sweep

    job = parse_job("name: t\nmodel: {preset: gpt-22b}\nparallel: {tp: 8, pp: 2, dp: 4, global_batch: 64}\ngpu: {preset: a100}\n")
    points = sweep(job, Cluster(8, 8, 200, 2400), "k", [1, 2, 8, 64], do_search=True)
    ideal = {round(pt["networks"]["ideal"]["iteration_s"], 9) for pt in points if "networks" in pt}
    assert len(points) == 4 and len(ideal) == 1


def test_times_below_a_millisecond_print_in_ms():
    assert _t(0.000466) == "0.466 ms" and _t(0.0123) == "0.012 s" and _t(12.3456) == "12.346 s" and _t(1234.5) == "1,234.5 s"


def test_sweep_plot_axes_start_at_zero():
    from railonly.fabric.analysis.plots import sweep_figure

    net = {"iteration_s": 10.0, "mfu": 0.5}
    points = [{"value": k, "networks": {"rail-only": {**net, "iteration_s": 10.0 + k / 100},
                                         "rail-optimized": net, "ideal": {**net, "iteration_s": 9.9}}} for k in (8, 16, 32)]
    top, low = sweep_figure(points, "K", "t", True).axes
    assert top.get_ylim()[0] == 0 and low.get_ylim()[0] == 0


# --- --place auto is never slower than the job's own order (MoE jobs) -------------------------

ORDERS = ["tp-ep-dp-pp", "tp-dp-ep-pp", "tp-pp-ep-dp", "pp-tp-ep-dp", "ep-dp-tp-pp", "dp-ep-pp-tp", "tp-ep-pp-dp", "ep-tp-dp-pp"]


@st.composite
def moe_jobs(draw):
    K = draw(st.sampled_from([2, 4, 8]))
    tp = draw(st.sampled_from([1, 2]))
    pp = draw(st.sampled_from([1, 2]))
    ep = draw(st.sampled_from([2, 4]))
    dp = ep * draw(st.sampled_from([1, 2]))
    experts = ep * draw(st.sampled_from([1, 2]))
    gpus = tp * pp * dp
    count = -(-gpus // K) + draw(st.integers(0, 1))
    micro = pp * draw(st.integers(1, 2))
    text = (f"name: m\nmodel: {{layers: {pp * 2}, hidden: {256 * tp}, heads: {tp * 4}, seq: 512, vocab: 1000, "
            f"moe: {{experts: {experts}, top_k: {draw(st.sampled_from([1, 2]))}, every: {draw(st.sampled_from([1, 2]))}, "
            f"shared_experts: {draw(st.sampled_from([0, 1]))}}}}}\n"
            f"parallel: {{tp: {tp}, pp: {pp}, dp: {dp}, ep: {ep}, global_batch: {micro * dp}, order: {draw(st.sampled_from(ORDERS))}, "
            f"distributed_optimizer: {str(draw(st.booleans())).lower()}}}\n"
            "gpu: {preset: h100}\n")
    cluster = Cluster(K, count, draw(st.sampled_from([100, 400])), draw(st.sampled_from([800, 3600])))
    return parse_job(text), cluster


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moe_jobs())
def test_place_auto_never_slower_than_the_jobs_order(case):
    job, cluster = case
    rates = Rates.of(cluster)
    own = evaluate(job, place(job, cluster, problems=False), rates, ("rail-only",))["rail-only"].iteration_s
    auto = evaluate(job, place_auto(job, cluster, rates), rates, ("rail-only",))["rail-only"].iteration_s
    assert auto <= own * (1 + 1e-9), (auto_order(job, cluster, rates), job.parallel.order)


def test_place_auto_on_the_examples_is_never_slower():
    for design, name in (("dgx-h100-1k", "moe-h100.yml"), ("dgx-a100", "moe-a100.yml"), ("dgx-h100-1k", "mixtral-h100.yml"),
                         ("dgx-h100-1k", "deepseek-h100.yml"), ("nvl72", "nvl72-pp18.yml")):
        from .conftest import cluster_of

        c = cluster_of(design)
        job = job_of(name)
        rates = Rates.of(c)
        own = evaluate(job, place(job, c), rates, ("rail-only",))["rail-only"].iteration_s
        auto = evaluate(job, place_auto(job, c, rates), rates, ("rail-only",))["rail-only"].iteration_s
        assert auto <= own * (1 + 1e-9), name
    assert JOBS.exists()
