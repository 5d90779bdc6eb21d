"""The containerlab topology producer: schema, endpoint rules, routes, slices, goldens."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest
import yaml

from railonly import cli
from railonly.emulation.lab import load_lab
from railonly.fabric import compiler
from railonly.fabric.compiler import compile_design
from railonly.fabric.design import lab_slice
from railonly.fabric.design.design import load_design, parse_design
from railonly.fabric.graph.build import build_fabric
from railonly.fabric.outdir.writer import write_outdir
from railonly.fabric.outputs import clab
from railonly.fabric.validate import lab_schemas

from ..conftest import assert_golden

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "clab"
LABS = REPO / "labs"


def design(name="t", k=2, count=4, radix=8, platform="sonic", mode="routed", topo="rail-only", extra=""):
    return parse_design(
        f"name: {name}\ntopology: {topo}\nhb_domain: {{size: {k}, count: {count}}}\n"
        f"switch: {{radix: {radix}, platform: {platform}}}\nrail: {{mode: {mode}}}\n{extra}", "t.yml")


DESIGNS = {
    "sonic-routed-2tier": lambda: design(k=2, count=6, radix=4),
    "sonic-l2": lambda: design(mode="l2"),
    "eos-routed": lambda: design(platform="eos"),
    "eos-l2": lambda: design(platform="eos", mode="l2"),
    "baseline": lambda: design(topo="rail-optimized", k=2, count=6, radix=4),
    "shared-rails": lambda: parse_design(
        "name: t\nhb_domain: {size: 4, count: 2}\nswitch: {radix: 8, share_rails: true}\nrail: {mode: l2}\n", "t.yml"),
    "slice-explicit": lambda: design(count=8, extra="lab: {domains: 2}\n"),
    "slice-default": lambda: load_design(str(LABS / "dgx-h100-1k.yml")),
}


@pytest.fixture(scope="module")
def validator():
    return lab_schemas.clab_validator()  # the schema shipped in the package


def lab_topology(d):
    """The topology the producer emits for design d (slices included)."""
    fab = build_fabric(d)
    out = compiler.produce_lab(fab, _Quiet())
    return yaml.safe_load(out[f"{d.name}.clab.yml"]), out


class _Quiet:
    def step(self, *a, **k):
        pass

    def __getattr__(self, name):
        return lambda *a, **k: None


@pytest.mark.parametrize("key", sorted(DESIGNS))
def test_schema_valid_and_endpoints_clean(key, validator):
    topo, _ = lab_topology(DESIGNS[key]())
    errors = sorted(validator.iter_errors(topo), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])
    assert clab.endpoint_problems(topo) == []


def test_kinds_binds_and_startup_configs():
    topo, _ = lab_topology(design(k=2, count=6, radix=4))
    leaf = topo["topology"]["nodes"]["t-rail0-leaf0"]
    assert leaf == {"kind": "sonic-vs", "binds": [
        "configs/t-rail0-leaf0/config_db.json:/var/sonic/config_db.json",
        "configs/t-rail0-leaf0/frr.conf:/etc/frr/frr.conf"]}
    l2, _ = lab_topology(design(mode="l2"))
    assert l2["topology"]["nodes"]["t-rail0-leaf0"]["binds"] == ["configs/t-rail0-leaf0/config_db.json:/var/sonic/config_db.json"]
    eos, _ = lab_topology(design(platform="eos"))
    assert eos["topology"]["nodes"]["t-rail1-leaf0"] == {"kind": "arista_ceos", "startup-config": "configs/t-rail1-leaf0/startup-config"}
    assert set(eos["topology"]["kinds"]) == {"linux", "arista_ceos"}
    assert eos["prefix"] == "clab"


def test_hb_node_is_a_bridge_over_its_gpu_ports():
    topo, _ = lab_topology(design(k=2))
    hb = topo["topology"]["nodes"]["hb0"]
    assert hb["kind"] == "linux"
    assert hb["exec"] == ["ip link add name br0 type bridge", "ip link set dev br0 up",
                          "ip link set dev gpu0 master br0", "ip link set dev gpu1 master br0"]
    assert {"endpoints": ["hb0-gpu1:hb0", "hb0:gpu1"]} in topo["topology"]["links"]


def _routes(node):
    return [c.split()[3:] for c in node["exec"] if c.startswith("ip route add")]


def test_rail_only_routes_go_through_the_sibling_of_the_destination_rank():
    d = design(k=2, count=6, radix=4)
    fab = build_fabric(d)
    topo = clab.topology(fab)
    node = topo["topology"]["nodes"]["hb2-gpu0"]
    sib_hb = fab.node("hb2-gpu1").ports["hb0"].ip.split("/")[0]
    own = fab.node("hb2-gpu0").ports["eth1"].ip.split("/")[0]
    routes = _routes(node)
    assert routes[0][:1] == ["10.0.0.0/10"] and routes[0][3:] == ["dev", "eth1"]  # own rail via the leaf gateway
    assert routes[1] == ["10.64.0.0/10", "via", sib_hb, "dev", "hb0", "src", own]
    assert "sysctl -w net.ipv4.ip_forward=1" in node["exec"]
    # every other rail's block is routed, and the blocks partition the pool
    blocks = [ipaddress.ip_network(b) for b in clab._rail_blocks(fab)]
    assert sum(b.num_addresses for b in blocks) == d.pools.gpu.num_addresses


def test_l2_rails_have_no_gateway_route():
    topo, _ = lab_topology(design(k=4, mode="l2"))
    routes = _routes(topo["topology"]["nodes"]["hb0-gpu0"])
    assert len(routes) == 3 and all(r[3:5] == ["dev", "hb0"] for r in routes)


def test_baseline_routes_cross_rail_traffic_through_the_fabric():
    topo, _ = lab_topology(design(topo="rail-optimized", k=2, count=6, radix=4))
    routes = _routes(topo["topology"]["nodes"]["hb0-gpu1"])
    assert len(routes) == 1 and routes[0][0] == "10.0.0.0/9" and routes[0][3:] == ["dev", "eth1"]


# --- endpoint rules the schema misses ------------------------------------------------


def _good():
    return {"name": "x", "topology": {"nodes": {"a": {"kind": "linux"}, "b": {"kind": "linux"}},
                                      "links": [{"endpoints": ["a:eth1", "b:eth1"]}]}}


@pytest.mark.parametrize("endpoints, expect", [
    (["a-eth2", "b:eth2"], "not of the form node:interface"),
    (["a:eth2\n", "b:eth2"], "not of the form node:interface"),  # `$` would let the newline by
    (["a:eth2", "c:eth2"], "unknown node 'c'"),
    (["a:eth1", "b:eth2"], "already used by topology.links[0]"),
    (["a:averyveryverylongname", "b:eth2"], "longer than 15 characters"),
    (["a:eth0", "b:eth2"], "management interface"),
    (["a:eth2"], "exactly two endpoints"),
])
def test_endpoint_checks_catch_bad_endpoints(endpoints, expect, validator):
    topo = _good()
    topo["topology"]["links"].append({"endpoints": endpoints})
    problems = clab.endpoint_problems(topo)
    assert any(expect in p for p in problems), problems
    if endpoints == ["a-eth2", "b:eth2"]:
        # the draft-07 gotcha: the schema alone accepts this malformed endpoint
        assert not list(validator.iter_errors(topo))


def test_render_refuses_a_topology_with_bad_endpoints(monkeypatch):
    fab = build_fabric(design())
    real = clab.topology

    def broken(*a, **k):
        t = real(*a, **k)
        t["topology"]["links"].append(dict(t["topology"]["links"][0]))
        return t

    monkeypatch.setattr(clab, "topology", broken)
    with pytest.raises(AssertionError, match="already used"):
        clab.render(fab)


# --- slices ----------------------------------------------------------------------------


def test_default_lab_domains():
    small = design(k=8, count=8)  # 64 GPUs: the whole design
    assert lab_slice.lab_domains(small) == 8 and not lab_slice.is_slice(small)
    big = design(k=8, count=9, radix=64)  # 72 GPUs, one switch per rail: a slice of 4
    assert lab_slice.lab_domains(big) == 4 and lab_slice.is_slice(big)
    tiered = design(k=8, count=9)  # radix 8: two tiers (3 leaves, 2 spines) per rail
    # the fewest domains with full leaves that keep two tiers and two spines: 6 at radix 4
    assert (lab_slice.lab_domains(tiered), lab_slice.lab_radix(tiered)) == (6, 4)
    assert lab_slice.lab_domains(design(k=8, count=9, extra="lab: {domains: 9}\n")) == 9


def test_slice_layout_and_references():
    d = design(count=8, extra="lab: {domains: 2}\n")
    _, files = compile_design(d)
    topo = yaml.safe_load(files["t.clab.yml"])
    assert "lab/fabric.json" in files and "fabric.json" in files
    sliced = json.loads(files["lab/fabric.json"])
    assert sliced["hb_domain_count"] == 2 and json.loads(files["fabric.json"])["hb_domain_count"] == 8
    gpus = {n for n, s in topo["topology"]["nodes"].items() if "-gpu" in n}
    assert gpus == {f"hb{h}-gpu{r}" for h in range(2) for r in range(2)}
    refs = [b.split(":")[0] for n in topo["topology"]["nodes"].values() for b in n.get("binds", [])]
    refs += [n["startup-config"] for n in topo["topology"]["nodes"].values() if "startup-config" in n]
    assert refs and all(r.startswith("lab/configs/") for r in refs)
    if not any(p.startswith("lab/configs/") for p in files):
        pytest.skip("no switch-config producer is registered yet, so referenced configs cannot be checked")
    assert [r for r in refs if r.encode() and r not in files] == []


def test_whole_design_references_top_level_configs():
    d = design(platform="eos")
    _, files = compile_design(d)
    assert not any(p.startswith("lab/") for p in files)
    topo = yaml.safe_load(files["t.clab.yml"])
    refs = [n["startup-config"] for n in topo["topology"]["nodes"].values() if "startup-config" in n]
    assert refs and all(r.startswith("configs/") for r in refs)
    if any(p.startswith("configs/") for p in files):
        assert all(r in files for r in refs)


def test_lab_loader_reads_the_slice(tmp_path):
    d = design(count=8, extra="lab: {domains: 2}\n")
    _, files = compile_design(d)
    write_outdir(str(tmp_path / "o"), files, d.sha256)
    lab = load_lab(tmp_path / "o")
    assert lab.sliced and lab.fabric_file == tmp_path / "o" / "lab" / "fabric.json"
    assert lab.netns("hb1-gpu0") == "clab-t-hb1-gpu0"
    assert len(lab.gpus) == 4 and len(lab.hbs) == 2
    sw = lab.switches[0]
    assert lab.port_of(sw.name, "eth1") == "Ethernet0" and lab.iface_of(sw.name, "Ethernet8") == "eth2"
    assert str(lab.node("hb0-gpu0").exec[1]).startswith("ip addr add ")


def test_cli_lab_domains(tmp_path, capsys):
    path = tmp_path / "d.yml"
    path.write_text("name: big\nhb_domain: {size: 2, count: 40}\nswitch: {radix: 128}\n")
    assert cli.main(["compile", str(path), "-o", str(tmp_path / "o"), "--lab-domains", "3"]) == 0
    out = capsys.readouterr().out
    assert "a slice: 3 of 40 HB domains" in out
    assert json.loads((tmp_path / "o" / "lab" / "fabric.json").read_text())["hb_domain_count"] == 3
    assert cli.main(["compile", str(path), "-o", str(tmp_path / "p"), "--lab-domains", "41"]) == 2
    err = capsys.readouterr().err
    assert f"error: command line: --lab-domains: must be between 1 and hb_domain.count of {path} (40), got 41" in err
    assert "lab.domains" not in err  # the flag's fault, not a key of the design file
    assert not (tmp_path / "p").exists()
    assert cli.main(["compile", str(path), "-o", str(tmp_path / "q")]) == 0
    assert "a slice: 4 of 40 HB domains" in capsys.readouterr().out  # 80 GPUs > 64: the default slice


# --- determinism and goldens -------------------------------------------------------------


def test_deterministic():
    d = load_design(str(LABS / "dgx-h100-1k.yml"))
    a = compile_design(d)[1]
    b = compile_design(d)[1]
    assert a["dgx1k.clab.yml"] == b["dgx1k.clab.yml"] and a.keys() == b.keys()


@pytest.mark.parametrize("lab", ["mini-l2", "mini-routed", "mini-baseline"])
def test_golden(lab):
    d = load_design(str(LABS / f"{lab}.yml"))
    assert_golden(GOLDEN / f"{d.name}.clab.yml", clab.render(build_fabric(d)))
