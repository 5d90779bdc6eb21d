"""The lab keeps the production shape at a reduced size (fabric/lab_slice.py): the
design's tiers, at least two spines per rail where the design has spines, its ASN
scheme and renderers; the compile summary says what it keeps and drops."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from railonly.fabric.design import clos, lab_slice
from railonly.fabric.compiler import compile_design
from railonly.fabric.design.design import load_design, parse_design

LABS = Path(__file__).resolve().parents[2] / "labs"


def test_clos_shape_counts_what_the_builder_wires():
    assert clos.shape("rail-only", 8, 128, 64) == {"tiers": 2, "per_rail": True, "leaves": 4, "spines": 2,
                                                   "cores": 0, "rails_per_leaf": 1}
    assert clos.shape("rail-optimized", 8, 128, 64)["spines"] == 16
    assert clos.shape("rail-only", 2, 6, 4)["tiers"] == 2
    assert clos.shape("rail-only", 1, 4, 4)["tiers"] == 1


@pytest.fixture(scope="module")
def dgx1k():
    design = load_design(str(LABS / "dgx-h100-1k.yml"))
    return design, compile_design(design)[1]


def test_default_lab_of_dgx_h100_1k_has_two_tiers_two_spines_and_bgp_on_every_leaf(dgx1k):
    design, files = dgx1k
    assert lab_slice.is_slice(design)
    lab = json.loads(files["lab/fabric.json"])
    full = json.loads(files["fabric.json"])
    switches = [n for n in lab["nodes"] if n["role"] == "switch"]
    by_rail: dict[int, dict[int, list[dict]]] = {}
    for sw in switches:
        (rail,) = sw["rails"]
        by_rail.setdefault(rail, {}).setdefault(sw["tier"], []).append(sw)
    assert sorted(by_rail) == list(range(8))  # every rail
    for rail, tiers in by_rail.items():
        assert sorted(tiers) == [1, 2], rail  # the design's two tiers
        assert len(tiers[2]) >= 2, rail  # ECMP over at least two spines
    # the ASN scheme: a leaf has the ASN of the design's leaf of that name, every switch one
    # of its rail's block (the builder's per-rail blocks of 65,536)
    full_asn = {n["name"]: n.get("asn") for n in full["nodes"] if n["role"] == "switch"}
    assert all(sw["asn"] == full_asn[sw["name"]] for sw in switches if sw["tier"] == 1)
    assert all(sw["asn"] - design.asn_base >> 16 == sw["rails"][0] for sw in switches)
    for sw in switches:
        frr = files[f"lab/configs/{sw['name']}/frr.conf"]
        frr = frr.decode() if isinstance(frr, bytes) else frr
        peers = re.findall(r"^\s*neighbor (\S+) remote-as", frr, re.M)
        if sw["tier"] == 1:
            assert len(peers) >= 2, f"{sw['name']}: a leaf with {len(peers)} BGP sessions"
        assert peers, sw["name"]
    # the same renderer (SONiC config_db.json) for the lab's switches
    assert all(f"lab/configs/{sw['name']}/config_db.json" in files for sw in switches)


def test_summary_says_what_the_lab_keeps_and_drops(dgx1k):
    design, _ = dgx1k
    text = lab_slice.describe(design)
    assert "keeps 2 tiers per rail (3 leaves, 2 spines) as the design's 2 tiers per rail (4 leaves, 2 spines)" in text
    assert "drops 122 HB domains; 60 of 64 ports per switch (radix 4" in text


def test_a_slice_too_small_for_the_shape_says_so():
    design = lab_slice.with_lab_domains(load_design(str(LABS / "dgx-h100-1k.yml")), 4)
    assert lab_slice.lab_radix(design) == 64
    assert "drops 124 HB domains; 2 of 2 spines per rail; the design's shape: the lab has 1 tier" in lab_slice.describe(design)


def test_lab_domains_32_keeps_the_exact_shape():
    design = lab_slice.with_lab_domains(load_design(str(LABS / "dgx-h100-1k.yml")), 32)
    assert lab_slice.lab_radix(design) == 16
    assert clos.shape("rail-only", 8, 32, 16) == clos.shape("rail-only", 8, 128, 64)


def test_baseline_slice_keeps_rail_pure_leaves_and_spines():
    design = load_design(str(LABS / "dgx-h100-1k-baseline.yml"))
    n, k = lab_slice.lab_domains(design), lab_slice.lab_radix(design)
    s = clos.shape("rail-optimized", design.hb_size, n, k)
    assert s["tiers"] == 2 and s["rails_per_leaf"] == 1 and s["spines"] >= 2


def test_one_tier_design_keeps_its_radix():
    d = parse_design("name: t\nhb_domain: {size: 8, count: 16}\nswitch: {radix: 64}\n", "t.yml")
    assert (lab_slice.lab_domains(d), lab_slice.lab_radix(d)) == (4, 64)


# -- BFD timers a lab host can run (routing.lab_bfd_interval_ms) ---------------------------

def test_lab_bfd_interval_doubles_until_the_lab_fits_the_packet_budget():
    from railonly.fabric.design import routing
    assert routing.lab_bfd_interval_ms(0) == routing.lab_bfd_interval_ms(24) == routing.BFD_INTERVAL_MS
    assert routing.lab_bfd_interval_ms(2048) == 1200  # 6,827 -> 3,413 -> 1,707 packets/s
    ends = routing.LAB_BFD_PACKETS_PER_S * routing.BFD_INTERVAL_MS // 1000
    assert routing.lab_bfd_interval_ms(ends) == routing.BFD_INTERVAL_MS
    assert routing.lab_bfd_interval_ms(ends + 1) == 2 * routing.BFD_INTERVAL_MS


@pytest.mark.parametrize("design_file, domains", [
    ("dgx-h100-1k.yml", 128), ("dgx-h100-1k.yml", 32), ("dgx-h100-1k-baseline.yml", None),
    ("mini-routed.yml", None), ("mini-baseline.yml", None), ("mini-l2.yml", None), ("nvl72.yml", None),
])
def test_bfd_session_ends_are_the_built_labs_switch_to_switch_links(design_file, domains):
    from railonly.fabric.graph.build import build_fabric
    design = lab_slice.with_lab_domains(load_design(str(LABS / design_file)), domains)
    lab = lab_slice.sliced(design)
    fab = build_fabric(lab)
    switches = {n.name for n in fab.switches}
    links = sum(1 for lk in fab.links if lk.a.node in switches and lk.b.node in switches)
    routed = design.rail_mode == "routed" or design.topology != "rail-only"
    assert lab_slice.bfd_session_ends(design, lab_slice.lab_domains(design), lab_slice.lab_radix(design)) == (
        2 * links if routed else 0)


def test_whole_1k_lab_runs_bfd_at_its_own_interval_in_its_own_tree():
    design = lab_slice.with_lab_domains(load_design(str(LABS / "dgx-h100-1k.yml")), 128)
    assert lab_slice.lab_domains(design) == design.hb_count and lab_slice.is_slice(design)
    assert lab_slice.sliced(design).bfd_interval_ms == 1200
    assert not lab_slice.is_slice(lab_slice.sliced(design))  # the lab's own design is its own lab
    text = lab_slice.describe(design)
    assert "whole design (1,024 GPUs) in dgx1k.clab.yml and lab/" in text
    assert "drops the design's BFD interval of 300 ms: BFD runs every 1,200 ms (x3), as 2,048 session ends" in text
    files = compile_design(design)[1]
    def text_of(path):
        t = files[path]
        return t.decode() if isinstance(t, bytes) else t
    prod, lab = text_of("configs/dgx1k-rail0-leaf0/frr.conf"), text_of("lab/configs/dgx1k-rail0-leaf0/frr.conf")
    assert "bfd profile" not in prod and "\nbfd\n" not in prod  # production keeps FRR's defaults
    assert lab.endswith("bfd\n profile FABRIC\n  transmit-interval 1200\n  receive-interval 1200\n exit\n !\nexit\n!\n")
    assert " neighbor FABRIC_UP bfd\n neighbor FABRIC_UP bfd profile FABRIC\n" in lab
    assert "lab/configs/" in text_of("dgx1k.clab.yml")


def test_small_routed_lab_keeps_production_bfd():
    design = load_design(str(LABS / "mini-routed.yml"))
    assert not lab_slice.is_slice(design) and "BFD" not in lab_slice.describe(design)


def test_the_integrated_config_reaches_the_daemons_through_vtysh_b_only():
    # a daemon reading the whole file with -f drops what follows a node it does not know
    # (bfdd and router bgp): each reads only the hostname (vtysh keeps that line to itself)
    # and vtysh -b sends each node to its daemon
    from railonly.emulation.runtime.netns import frr
    text = "frr version 8.4\nhostname s1\nlog syslog informational\nrouter bgp 1\n neighbor G bfd\nexit\n!\n" \
           "bfd\n profile FABRIC\n  transmit-interval 600\n exit\n !\nexit\n!\n"
    inst = frr.FrrInstance("s1", "ns", "/run/x/frr/s1")
    procs = frr.processes(inst, text)
    assert [f for p in procs for f in p.files] == [("/run/x/frr/s1/frr.conf", text),
                                                   ("/run/x/frr/s1/hostname.conf", "hostname s1\n"),
                                                   ("/run/x/frr/s1/zebra-own.conf", "hostname s1\nno zebra nexthop kernel enable\n"),
                                                   ("/run/x/frr/s1/vtysh.conf", "")]
    assert [p.argv[p.argv.index("-f") + 1] for p in procs] == ["/run/x/frr/s1/zebra-own.conf"] + \
        ["/run/x/frr/s1/hostname.conf"] * (len(procs) - 1)
    assert [p.then for p in procs if p.then] == [frr.boot_argv(inst)]


def test_an_eos_lab_keeps_the_designs_bfd_interval_it_cannot_print_yet():
    design = load_design(str(LABS / "h100-2k-7060x6.yml"))
    design = lab_slice.with_lab_domains(design, design.hb_count)
    assert lab_slice.bfd_session_ends(design, design.hb_count, design.radix) > 1000  # well over the budget
    assert lab_slice.lab_bfd_interval_ms(design) == design.bfd_interval_ms and "BFD" not in lab_slice.describe(design)


def test_the_design_reference_gives_the_default_slice_of_lab_slice():
    """design.md's lab.domains default comes from the schema's hint; it said "otherwise 4"
    while the default slice is the fewest domains from SLICE_DEFAULT up that keep the shape."""
    from railonly.fabric.design.design import FIELDS
    from railonly.fabric.design.lab_slice import SLICE_DEFAULT, WHOLE_MAX_GPUS

    hint = FIELDS["lab"].fields["domains"].hint
    assert f"at most {WHOLE_MAX_GPUS} GPUs" in hint and f"the fewest (from {SLICE_DEFAULT} up)" in hint
