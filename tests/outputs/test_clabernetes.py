"""The clabernetes manifest: valid against the Topology CRD schema, ConfigMaps that
carry exactly the files the containerlab definition references, goldens.

What is checked here (no Kubernetes on this machine): the Topology document
against the CRD's openAPIV3Schema (jsonschema, draft 7), the ConfigMaps'
names and keys against Kubernetes' naming rules and size limit, every mount
against a ConfigMap key and a file the definition references, and the
definition against the OUTDIR's `<name>.clab.yml`. Not checked: that a
cluster admits the objects or that clabernetes deploys them.
"""

from __future__ import annotations

import copy
import re

import pytest
import yaml

from railonly.fabric.compiler import compile_design
from railonly.fabric.design.design import load_design
from railonly.fabric.outputs import clabernetes
from railonly.fabric.validate import lab_schemas

from ..conftest import GOLDEN, REPO, assert_golden

LABS = sorted((REPO / "labs").glob("*.yml"))
DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DATA_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


@pytest.fixture(scope="module")
def topology_schema():
    return lab_schemas.topology_validator()  # the CRD shipped in the package


_compiled: dict = {}


def compiled(path):
    if path not in _compiled:
        fab, files = compile_design(load_design(str(path)))
        _compiled[path] = (fab.design.name, files)
    return _compiled[path]


def _problems(validator, doc) -> list[str]:
    return [f"{list(e.path)}: {e.message}" for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.path))]


def check_manifest(name: str, files: dict[str, bytes], validator) -> list[str]:
    """Every problem of OUTDIR's clabernetes file (empty when it is right)."""
    docs = list(yaml.safe_load_all(files[clabernetes.filename(name)]))
    topologies = [d for d in docs if d.get("kind") == "Topology"]
    maps = {d["metadata"]["name"]: d for d in docs if d.get("kind") == "ConfigMap"}
    out = []
    if len(topologies) != 1 or len(maps) + 1 != len(docs):
        return [f"expected ConfigMaps and one Topology, got kinds {[d.get('kind') for d in docs]}"]
    topo = topologies[0]
    out += _problems(validator, topo)
    if out:  # the rest assumes a document of the schema's shape
        return out
    if topo.get("apiVersion") != clabernetes.API_VERSION or topo["metadata"]["name"] != name:
        out.append(f"Topology apiVersion/name: {topo.get('apiVersion')} {topo['metadata']['name']}")
    definition = topo["spec"]["definition"]["containerlab"]
    if definition.encode() != files[f"{name}.clab.yml"]:
        out.append("definition differs from the OUTDIR's containerlab file")
    clab_nodes = yaml.safe_load(files[f"{name}.clab.yml"])["topology"]["nodes"]
    for cm_name, cm in maps.items():
        if cm.get("apiVersion") != "v1" or not DNS1123.match(cm_name) or len(cm_name) > 253:
            out.append(f"ConfigMap {cm_name!r}: bad apiVersion or name")
        if sum(len(k) + len(v.encode()) for k, v in cm["data"].items()) >= 1024 * 1024:
            out.append(f"ConfigMap {cm_name!r} is larger than 1 MiB")
        out += [f"ConfigMap {cm_name!r}: bad key {k!r}" for k in cm["data"] if not DATA_KEY.match(k)]
    mounted = set()
    for node, entries in topo["spec"]["deployment"]["filesFromConfigMap"].items():
        spec = clab_nodes.get(node)
        if spec is None:
            out.append(f"mounts for unknown node {node!r}")
            continue
        wanted = {b.split(":", 1)[0] for b in spec.get("binds", [])} | ({spec["startup-config"]} if "startup-config" in spec else set())
        got = {e["filePath"] for e in entries}
        if got != wanted:
            out.append(f"{node}: mounts {sorted(got)}, the definition references {sorted(wanted)}")
        for e in entries:
            cm = maps.get(e["configMapName"])
            if cm is None or e["configMapPath"] not in cm["data"]:
                out.append(f"{node}: {e['configMapName']}/{e['configMapPath']} does not exist")
            elif cm["data"][e["configMapPath"]].encode() != files.get(e["filePath"]):
                out.append(f"{node}: {e['filePath']} in the ConfigMap differs from the OUTDIR's file")
            mounted.add(e["configMapName"])
    out += [f"ConfigMap {n!r} is never mounted" for n in sorted(set(maps) - mounted)]
    with_files = {n for n, s in clab_nodes.items() if s.get("binds") or s.get("startup-config")}
    out += [f"{n}: references files but has no mounts" for n in sorted(with_files - set(topo["spec"]["deployment"]["filesFromConfigMap"]))]
    return out


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if "32k" in p.name or "nvl72" in p.name else p for p in LABS],
                         ids=[p.stem for p in LABS])
def test_every_example_design_has_a_valid_manifest(path, topology_schema):
    name, files = compiled(path)
    assert check_manifest(name, files, topology_schema) == []


@pytest.mark.slow
def test_too_large_notes_exactly_the_topologies_above_the_limit():
    fits = []
    for path in LABS:
        if "32k" in path.name:
            continue  # the GH200 slices (1,024 GPUs, 256 rails) hold 20 MB; too slow to compile here
        name, files = compiled(path)
        topo = list(yaml.safe_load_all(files[clabernetes.filename(name)]))[-1]
        size = len(yaml.safe_dump(topo).encode())
        assert (size < clabernetes.OBJECT_MAX_BYTES) == (clabernetes.too_large(name, files) is None), (path.name, size)
        fits.append(size < clabernetes.OBJECT_MAX_BYTES)
    assert sum(fits) >= 5  # the mini and 1k examples fit


def test_compile_notes_a_topology_too_large_for_kubernetes(monkeypatch, tmp_path, capsys):
    from railonly import cli

    monkeypatch.setattr(clabernetes, "OBJECT_MAX_BYTES", 70 * 1024)
    assert cli.main(["compile", str(REPO / "labs" / "mini-routed.yml"), "-o", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "note      minir.clabernetes.yaml: the Topology holds a 0.0 MB" in out and "--lab-domains" in out


def test_slice_manifest_mounts_the_slice_configs(topology_schema):
    name, files = compiled(REPO / "labs" / "dgx-h100-1k.yml")  # a slice by default
    topo = list(yaml.safe_load_all(files[clabernetes.filename(name)]))[-1]
    paths = [e["filePath"] for es in topo["spec"]["deployment"]["filesFromConfigMap"].values() for e in es]
    assert paths and all(p.startswith("lab/configs/") for p in paths)


@pytest.mark.parametrize("stem", ["mini-routed", "mini-l2", "mini-baseline"])
def test_mini_manifests_match_golden(stem):
    name, files = compiled(REPO / "labs" / f"{stem}.yml")
    assert_golden(GOLDEN / "clab" / clabernetes.filename(name), files[clabernetes.filename(name)])


def test_manifest_is_deterministic():
    fab, files = compile_design(load_design(str(REPO / "labs" / "mini-l2.yml")))
    name = fab.design.name
    assert files[clabernetes.filename(name)] == compiled(REPO / "labs" / "mini-l2.yml")[1][clabernetes.filename(name)]


# --- the checks above fail on broken manifests -------------------------------------------


def _broken(files, name, edit):
    docs = list(yaml.safe_load_all(files[clabernetes.filename(name)]))
    edit(docs)
    out = dict(files)
    out[clabernetes.filename(name)] = yaml.safe_dump_all(docs).encode()
    return out


def _first_mount(docs):
    return next(iter(docs[-1]["spec"]["deployment"]["filesFromConfigMap"].values()))[0]


@pytest.mark.parametrize("edit, expect", [
    (lambda d: d[-1]["spec"].update(naming="sometimes"), "is not one of"),
    (lambda d: _first_mount(d).update(mode="write"), "is not one of"),
    (lambda d: _first_mount(d).pop("configMapName"), "'configMapName' is a required property"),
    (lambda d: d[-1]["spec"].pop("definition"), "'definition' is a required property"),
    (lambda d: _first_mount(d).update(configMapPath="nope"), "does not exist"),
    (lambda d: d[0]["data"].update({next(iter(d[0]["data"])): "changed\n"}), "differs from the OUTDIR"),
    (lambda d: d[-1]["spec"]["definition"].update(containerlab="name: x\n"), "definition differs"),
    (lambda d: d[0]["metadata"].update(name="Bad_Name"), "bad apiVersion or name"),
    (lambda d: d[0]["data"].update({"a/b": "x"}), "bad key"),
])
def test_checks_catch_broken_manifests(edit, expect, topology_schema):
    name, files = compiled(REPO / "labs" / "mini-routed.yml")
    problems = check_manifest(name, _broken(files, name, edit), topology_schema)
    assert any(expect in p for p in problems), problems


def test_producer_refuses_a_reference_to_a_missing_file():
    name, files = compiled(REPO / "labs" / "mini-l2.yml")
    partial = {p: t for p, t in files.items() if not p.endswith("startup-config")}
    with pytest.raises(AssertionError, match="references"):
        clabernetes.produce(name, partial)


def test_configmap_limit_is_enforced(monkeypatch):
    name, files = compiled(REPO / "labs" / "mini-l2.yml")
    monkeypatch.setattr(clabernetes, "CONFIGMAP_MAX_BYTES", 100)
    with pytest.raises(AssertionError, match="exceeds Kubernetes limits"):
        clabernetes.produce(name, copy.copy(files))
