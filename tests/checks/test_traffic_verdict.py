"""Traffic verdicts that mean something (pure and fake-runtime): NCCL's streams per transfer,
persistent agents, the placement-aware model from link counters, ECMP imbalance as a
finding, and an honest host (a saturated CPU is inconclusive, exit 3). The real lab runs
are in test_traffic.py and tests/replay/test_replay_lab.py."""

from __future__ import annotations

import json
import os

import pytest

from railonly.cli import main
from railonly.emulation import lab as lab_facts
from railonly.emulation.checks import check_plan as checks_plan
from railonly.emulation.checks import checker as checks_run
from railonly.emulation.lab import load_lab
from railonly.emulation.runtime.registry import RUNTIMES
from railonly.emulation.traffic import host, iperf3, patterns
from railonly.emulation.traffic.completion_time import hb_bytes, host_step, nic_bytes, placed_step
from railonly.emulation.traffic.patterns import Flow

from ..conftest import FakeRuntime, compile_to, cpu_sampler, design_text

NIC_BPS = 100e6 / 8


def test_nccl_streams_follow_ncclTopoGetNchannels():
    # at least one channel per NIC, enough at 14 GB/s a channel, a power of two
    assert [iperf3.nccl_streams(g) for g in (100, 200, 400, 800)] == [1, 2, 4, 8]
    assert iperf3.nccl_streams(100, nics_per_gpu=2) == 2


def test_slot_ports_reuse_a_server_per_destination_slot():
    f = patterns.Flow
    steps = [[f("a", "b", None, 1), f("c", "b", None, 1), f("b", "a", None, 1)], [f("a", "b", None, 1)],
             [f("a", "b", None, 1, pair_class="staged"), f("c", "b", None, 1, pair_class="staged")]]
    ports = [[x.port for x in st] for st in iperf3.slot_ports(steps)]
    assert ports == [[5201, 5202, 5201], [5201], [23000, 23001]]


def test_placed_step_takes_the_busiest_link_and_names_the_imbalance():
    rated = {"l0->s0": (1000.0, (0, 1, 2)), "l0->s1": (1000.0, (0, 1, 2)), "s0->l1": (1000.0, (0, 2, 1))}
    # two flows of 1,000 bytes hashed onto one uplink, none on the other: twice the ideal
    out = placed_step(1.0, {"l0->s0": 2000, "l0->s1": 0, "s0->l1": 2000}, rated)
    assert out["placed_s"] == 2.0
    assert out["ecmp"]["busiest"] == "l0->s0" and out["ecmp"]["imbalance"] == 2.0
    assert out["bound"] == {"link": "l0->s0", "bytes": 2000, "seconds": 2.0, "kind": "switch"}
    # balanced: the ideal holds
    even = placed_step(1.0, {"l0->s0": 1000, "l0->s1": 1000}, rated)
    assert even["placed_s"] == 1.0 and even["ecmp"]["imbalance"] == 1.0
    # nothing above the NICs (one-tier rails): no finding, the ideal
    assert placed_step(1.0, {}, rated) == {"placed_s": 1.0, "ecmp": None, "bound": None}


# a rail-only ring hop a -> c crosses rails: a's HB sibling b forwards it (a:hb in to b, out of b's
# NIC) while b sends its own hop b -> d on the same NIC; 1,000 bytes a hop, NIC 1,000 B/s, HB 9,000 B/s
GPU_LINKS = {"a:eth1->leaf0": (1000.0, None), "b:eth1->leaf0": (1000.0, None), "leaf1:e0->c": (1000.0, None),
             "leaf1:e1->d": (1000.0, None), "a:hb0->hb0": (9000.0, None), "hb0:gpu1->b": (9000.0, None),
             "leaf0:e8->spine0": (1000.0, ("up", "leaf0")), "leaf0:e9->spine1": (1000.0, ("up", "leaf0"))}


def test_placed_step_prices_the_forwarding_siblings_nic():
    # the counters as the kernel moves the bytes: the sibling's NIC carries both hops (+ headers)
    counted = {"a:hb0->hb0": 1030, "hb0:gpu1->b": 1030, "b:eth1->leaf0": 2060, "leaf1:e0->c": 1030,
               "leaf1:e1->d": 1030, "leaf0:e8->spine0": 1030, "leaf0:e9->spine1": 1030}
    out = placed_step(1.0, counted, GPU_LINKS)  # ideal: each GPU's own hop, 1 s
    assert out["placed_s"] == pytest.approx(2.06)
    assert out["bound"] == {"link": "b:eth1->leaf0", "bytes": 2060, "seconds": 2.06, "kind": "gpu"}
    assert out["ecmp"]["imbalance"] == 1.0  # the uplinks shared the two hops evenly: ECMP did not slow it
    # the HB leg is pipelined with the NIC (per-packet forwarding), not added to it
    assert out["placed_s"] < 2.06 + 1030 / 9000
    # the same hops with no forwarding (rail-optimized: a reaches c on its own NIC): the ideal again
    direct = {"a:eth1->leaf0": 1030, "b:eth1->leaf0": 1030, "leaf1:e0->c": 1030, "leaf1:e1->d": 1030}
    assert placed_step(1.0, direct, GPU_LINKS)["placed_s"] == pytest.approx(1.03)


def test_placed_step_leaves_unshaped_links_out_and_keeps_the_ideal_floor():
    rated = dict(GPU_LINKS, **{"leaf0:e8->spine0": (0.0, ("up", "leaf0"))})  # an ideal (unshaped) tier
    out = placed_step(3.0, {"leaf0:e8->spine0": 10_000, "b:eth1->leaf0": 2000}, rated)
    assert out["placed_s"] == 3.0 and out["bound"]["link"] == "b:eth1->leaf0" and out["ecmp"] is None


def test_why_names_a_gpu_link_not_ecmp_when_a_nic_bounds_the_placement():
    bound = {"link": "b:eth1->leaf0", "bytes": 105_600_000, "seconds": 8.45, "kind": "gpu", "step": 0}
    ecmp = {"max": 1.5, "mean": 1.4, "step": 0, "busiest_link": "x", "steps_over_1_25": 1}
    line = iperf3.why(9.0, 5.0, 8.9, ecmp, {"busy_share": 0.3}, 0, bound=bound)
    assert "a GPU's: b:eth1->leaf0 carried 105.6 MB in step 0 (8.45 s at its shaped rate; +78% over" in line
    assert "ECMP" not in line
    assert "ECMP put up to 1.50x" in iperf3.why(9.0, 5.0, 8.9, ecmp, {"busy_share": 0.3}, 0,
                                                bound=dict(bound, kind="switch"))
    steps = [{"step": 0, "model_placed_s": 2.0, "bound": dict(bound, link="s")},
             {"step": 1, "model_placed_s": 8.5, "bound": bound}, {"step": 2, "model_placed_s": 9.0, "bound": None}]
    assert iperf3.bound_finding(steps) == dict(bound, step=1)  # the longest step with counted links
    assert iperf3.bound_finding(steps[2:]) is None


@pytest.mark.parametrize("measured, failed, busy, want", [
    (1.05, False, 0.3, "pass"), (1.25, False, 0.3, "fail"), (0.80, False, 0.3, "fail"),
    (1.05, True, 0.3, "fail"),  # a failed flow is not a timing matter
    (1.05, False, 0.97, "inconclusive"), (3.0, False, 1.0, "inconclusive"),
])
def test_judge(measured, failed, busy, want):
    cpu = {"busy_share": busy, "saturated": host.saturated(busy)}
    assert iperf3.judge(measured, 1.0, 0.10, failed, cpu) == want


@pytest.mark.parametrize("measured, host_s, want", [
    (3.0, 3.2, "inconclusive"),  # the host forwards HB slower than the model asks: the host is judged, not the fabric
    (1.05, 1.08, "pass"),  # within the tolerance of the placed model: the host delivered it
    (1.30, 1.08, "fail"), (1.05, None, "pass"),
])
def test_judge_host_bound(measured, host_s, want):
    cpu = {"busy_share": 0.3, "saturated": False}
    assert iperf3.judge(measured, 1.0, 0.10, False, cpu, host_s) == want


def test_host_step_bounds_hb_bytes_by_the_measured_capacity():
    flows = [Flow("a", "b", None, 1000, hb=True), Flow("c", "d", "e", 500), Flow("c", "f", None, 700)]
    assert hb_bytes(flows) == 1500  # the HB flow and the forwarded one, not the same-rail flow
    assert nic_bytes(flows) == 1200  # the forwarded flow and the same-rail one
    cap = {"hb_bytes_per_s": 1000, "share": 0.1, "nic_bytes_per_s": 600, "nic_share": 1.0}
    assert host_step(0.5, 1500, cap, 1200) == 1.5  # the host moves 1,000 B/s over HB: 1.5 s; the rails kept their rate
    assert host_step(2.0, 1500, cap) == 2.0  # the placed model is slower already
    assert host_step(0.5, 1500, None) == 0.5 and host_step(0.5, 0, cap) == 0.5
    both = dict(cap, nic_share=0.5)  # the host limited both: they share its CPU, so their times add up
    assert host_step(0.5, 1500, both, 1200) == 3.5
    assert host_step(0.5, 1500, dict(cap, share=0.95), 0) == 0.5  # HB at its shaped rate: the shaping, not the host


def test_why_names_the_host_capacity():
    cap = {"share": 0.25, "hb_bytes_per_s": 337_500_000, "hb_shaped_bytes_per_s": 1_350_000_000, "nic_share": 0.5}
    line = iperf3.why(3.3, 1.0, 1.0, None, {"busy_share": 0.5}, 0, 3.0, cap)
    assert ("HB at 25% of the shaped rate (2.70 of 10.80 Gbit/s), the rails at 50%: 3.00 s at what it delivers"
            " (+10% measured)") in line


def test_cpu_meter_counts_only_timed_windows():
    meter = host.CpuMeter(cpu_sampler(0.95))
    meter.start()
    meter.stop()
    rep = meter.report()
    assert rep["busy_share"] == 0.95 and rep["saturated"] and rep["windows"] == 1
    assert host.proc_stat_sample()[1] > 0  # the real source reads


# --- on a fake runtime ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def routed(tmp_path_factory):
    return load_lab(compile_to(design_text("labs/mini-routed.yml", "fakevd"), tmp_path_factory.mktemp("fake") / "out"))


@pytest.fixture
def lab(routed, tmp_path, monkeypatch):
    monkeypatch.setattr(lab_facts, "RUN_ROOT", str(tmp_path / "run"))
    return routed


def _fake(lab, hot: tuple[str, str] | None = None) -> FakeRuntime:
    """iperf3 at the NIC rate; every flow's bytes counted on the switch port ``hot`` (all
    flows hashed onto one uplink)."""
    tx: dict[tuple[str, str], int] = {}
    prefix = lab_facts.netns_prefix(lab.name)

    def server(ns, argv):
        with open(argv[argv.index("--pidfile") + 1], "w") as f:  # never an iperf3: stop_servers signals nobody
            f.write(f"{os.getpid()}\n")
        return 0, ""

    def client(ns, argv):
        n = int(argv[argv.index("-n") + 1])
        if hot:
            tx[hot] = tx.get(hot, 0) + n
        return 0, json.dumps({"end": {"sum_sent": {"bytes": n, "seconds": n / NIC_BPS},
                                      "sum_received": {"bytes": n, "seconds": n / NIC_BPS}}})

    def links(ns, argv):
        node = ns[len(prefix):]
        return 0, json.dumps([{"ifname": p, "stats64": {"tx": {"bytes": v}, "rx": {"bytes": 0}}}
                              for (nd, p), v in tx.items() if nd == node])

    return (FakeRuntime()
            .on(("tc", "-j", "qdisc"), (0, json.dumps([{"kind": "tbf", "options": {"rate": NIC_BPS}}])))
            .on(("tc", "-j", "class"), (0, json.dumps([{"kind": "htb", "options": {"rate": NIC_BPS * 9}}])))
            .on(("ip", "-s", "-j", "link"), links)
            .on(("iperf3", "-s"), server).on(("iperf3", "-c"), client))


def test_htb_rates_are_read_as_json_or_as_text(lab):
    cp = checks_plan.load(lab)
    text = "class htb 1:1 root prio 0 rate 900Mbit ceil 900Mbit burst 1125000b cburst 1125000b \n"
    for answer in (json.dumps([{"kind": "htb", "options": {"rate": NIC_BPS * 9}}]), text):  # iproute2 releases differ
        fake = _fake(lab).on(("tc", "-j", "class"), (0, answer))
        assert iperf3.shaped_rates(fake, lab, cp) == (100.0, 900.0)
    unreadable = _fake(lab).on(("tc", "-j", "class"), (0, "class htb 1:1 root prio 0\n"))
    assert iperf3.shaped_rates(unreadable, lab, cp) == (100.0, None)  # the caller takes the plan's rate


def test_directed_links_cover_every_shaped_link_at_its_rate(lab):
    dls = iperf3.directed_links(lab, 100)
    kinds = {}
    for lk in lab.links:
        kinds[lk.kind] = kinds.get(lk.kind, 0) + 2
    assert len(dls) == sum(kinds.values()) == 2 * len(lab.links)  # both directions of every link
    by_end = {dl.end: dl for dl in dls}
    gpu = checks_plan.load(lab).gpus
    g = gpu[sorted(gpu)[0]]
    assert by_end[(g.name, g.port)].bytes_per_s == NIC_BPS and by_end[(g.name, g.port)].group is None
    assert by_end[(g.name, g.hb_port)].bytes_per_s == NIC_BPS * 9 and by_end[(g.name, g.hb_port)].group is None
    assert all(dl.group is not None for dl in dls if ":Ethernet" in dl.name and "gpu" not in dl.name)
    assert dls[0].group is not None  # switch-to-switch links first


def test_flows_on_one_uplink_raise_the_placed_model_and_name_the_imbalance(lab):
    dl = iperf3.directed_links(lab, 100)[0]
    rep = iperf3.run(lab, _fake(lab, hot=dl.end), "ring-allreduce", 1_000_000, converge=False,
                     cpu_sampler=cpu_sampler(0.3))
    assert rep["model_placed_s"] > rep["model_ideal_s"] * 2
    assert rep["ecmp_imbalance"]["busiest_link"] == dl.name and rep["ecmp_imbalance"]["max"] > 1.5
    assert rep["verdict"] == "fail" and "ECMP put up to" in rep["why"]  # measured (fake) ignored the placement
    step = rep["steps"][0]
    assert step["link_bytes"] == {dl.name: 1_000_000 * len(rep["flows"])}
    assert {"measured_s", "model_ideal_s", "model_placed_s"} <= set(step)
    assert set(rep["overhead"]) == {"agents_start_s", "agents_stop_s", "client_start_and_barrier_s", "counter_reads_s", "other_s"}


def test_a_saturated_host_is_inconclusive_exit_3_with_the_figures(lab, monkeypatch, tmp_path, capsys):
    fake = _fake(lab)
    monkeypatch.setitem(RUNTIMES, "fake", lambda: fake)
    monkeypatch.setattr(host, "proc_stat_sample", cpu_sampler(1.0))  # both CPUs pinned
    monkeypatch.setattr(checks_run, "run", lambda *a, **k: type("R", (), {"failed": 0, "results": []})())
    out = tmp_path / "t.json"
    rc = main(["lab", "traffic", str(lab.outdir), "--runtime", "fake", "--pattern", "all-to-all",
               "--bytes", "100000", "--json", str(out)])
    rep = json.loads(out.read_text())
    assert rc == 3 and rep["verdict"] == "inconclusive" and rep["host_cpu"]["saturated"]
    assert rep["network_s"] > 0 and rep["model_placed_s"] > 0  # the figures are there
    text = capsys.readouterr().out
    assert "verdict: inconclusive" in text and "host CPU 100% busy" in text
    # the same run on an idle host passes
    monkeypatch.setattr(host, "proc_stat_sample", cpu_sampler(0.2))
    assert main(["lab", "traffic", str(lab.outdir), "--runtime", "fake", "--pattern", "all-to-all",
                 "--bytes", "100000", "-q"]) == 0


def test_bad_streams_and_tolerance_are_exit_2(lab, monkeypatch, capsys):
    monkeypatch.setitem(RUNTIMES, "fake", lambda: _fake(lab))
    base = ["lab", "traffic", str(lab.outdir), "--runtime", "fake", "--pattern", "all-to-all"]
    assert main([*base, "--streams", "0"]) == 2
    assert main([*base, "--tolerance", "0"]) == 2
    err = capsys.readouterr().err
    assert "--streams must be 1 to 128" in err and "--tolerance must be between 0 and 10" in err
