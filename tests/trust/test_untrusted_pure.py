"""Hostile OUTDIRs judged without root: the state file schema and ownership,
symlink-free reads and writes, malformed files (exit 2 naming the file, never
a traceback), and exec lines that would write a host-global sysctl."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from railonly.cli import main
from railonly.emulation.lab import load_lab
from railonly.emulation.runtime.netns import sshd as lab_sshd
from railonly.emulation.runtime.netns import statefile
from railonly.emulation.runtime.netns.runtime import NetnsRuntime
from railonly.emulation.runtime.outdir_writer import OutdirWriter, UnsafePath
from railonly.emulation.traffic import faults
from railonly.fabric.input.problems import InputError
from railonly.fabric.outdir.reader import OutdirReader, UntrustedFile, unsafe_entries

from .conftest import ROUTED, compile_lab, unique

LAB = "demo"
OWNER = statefile.Owner.for_lab(LAB, {"clab-demo-leaf0", "clab-demo-gpu0"})


def good_state(**over) -> dict:
    st = {
        "version": 1, "lab": LAB, "prefix": "clab-demo-", "fingerprint": "ab", "phase": "deployed",
        "namespaces": ["clab-demo-leaf0", "clab-demo-gpu0"],
        "processes": [{"name": "leaf0/zebra", "netns": "clab-demo-leaf0", "argv": ["/usr/lib/frr/zebra", "-d"],
                       "pidfile": "/run/railonly/demo/frr/leaf0/zebra.pid", "pid": 4242, "starttime": 7,
                       "dirs": ["/run/railonly/demo/frr/leaf0"]}],
        "root_sysctls": [{"key": "net.ipv4.neigh.default.gc_thresh3", "original": "1024", "set": "4096"}],
        "dirs": ["/run/railonly", "/run/railonly/demo", "/run/railonly/demo/frr/leaf0"],
    }
    st.update(over)
    return st


# --- the state file ------------------------------------------------------------------


def test_a_state_file_of_the_lab_is_kept_whole():
    ck = statefile.check(good_state(), "s.json", OWNER)
    assert ck.problems == []
    assert ck.state["namespaces"] == ["clab-demo-leaf0", "clab-demo-gpu0"]
    assert len(ck.state["processes"]) == 1 and len(ck.state["root_sysctls"]) == 1
    assert ck.state["dirs"] == good_state()["dirs"]


@pytest.mark.parametrize("key, value, named", [
    ("namespaces", ["clab-demo-leaf0", "railonly-canary-1", "clab-demo-", "clab-demo-x\nnetns del y"], "namespaces[1]"),
    ("processes", [{**good_state()["processes"][0], "netns": "railonly-canary-1"}], "not one of the lab's"),
    ("processes", [{**good_state()["processes"][0], "pidfile": "/etc/passwd"}], "pid file '/etc/passwd'"),
    ("processes", [{**good_state()["processes"][0], "dirs": ["/home"]}], "dirs ['/home']"),
    ("processes", [{**good_state()["processes"][0], "pid": 1}], "pid 1"),
    ("processes", [{**good_state()["processes"][0], "argv": "sh -c x"}], "argv"),
    ("processes", [{**good_state()["processes"][0], "pidfile": "/run/railonly/demo/../../../etc/x"}], "pid file"),
    ("root_sysctls", [{"key": "kernel.modprobe", "original": "/tmp/x", "set": "/sbin/modprobe"}], "kernel.modprobe"),
    ("root_sysctls", [{"key": "net.ipv4.neigh.default.gc_thresh3", "original": "1; x", "set": "2"}], "root_sysctls[0]"),
    ("dirs", ["/run/railonly/demo/frr", "/var/lib", "/run/railonly/other/x", "/run/railonly/demox"], "'/var/lib'"),
])
def test_what_is_not_the_labs_is_refused_and_named(key, value, named):
    ck = statefile.check(good_state(**{key: value}), "s.json", OWNER)
    assert any(named in r and r.startswith("s.json:") for r in ck.refused), ck.refused
    st = ck.state
    assert "railonly-canary-1" not in st["namespaces"]
    assert all(p["pidfile"].startswith("/run/railonly/demo/") for p in st["processes"])
    assert all(r["key"].startswith("net.ipv") for r in st["root_sysctls"])
    assert all(d in ("/run/railonly", "/run/railonly/demo") or d.startswith("/run/railonly/demo/") for d in st["dirs"])


def test_other_dirs_of_other_labs_are_refused():
    ck = statefile.check(good_state(dirs=["/run/railonly/other/x", "/run/railonly/demox"]), "s.json", OWNER)
    assert ck.state["dirs"] == [] and len(ck.refused) == 2


@pytest.mark.parametrize("data, why", [
    ([], "not a JSON object"),
    ({"lab": "../x"}, "not a lab name"),
    (good_state(lab="other"), "belongs to lab 'other'"),
    (good_state(version=7), "version 7"),
])
def test_a_state_file_that_is_not_this_labs_is_set_aside(data, why):
    ck = statefile.check(data, "s.json", OWNER)
    assert ck.state is None and why in ck.corrupt


def test_state_parse_errors_are_values_not_tracebacks():
    for text in ("{", "", "[" * 100000, "\x00"):
        with pytest.raises(ValueError):
            statefile.parse(text)


# --- OUTDIR files without symlinks ----------------------------------------------------


def test_writes_below_outdir_never_follow_a_symlink(tmp_path):
    out, outside = tmp_path / "out", tmp_path / "outside.txt"
    out.mkdir()
    outside.write_text("secret\n")
    (out / "link").symlink_to(outside)
    (out / "dirlink").symlink_to(tmp_path)
    tree = OutdirWriter(out)
    with pytest.raises(UnsafePath) as exc:
        tree.write_text("dirlink/new.txt", "x")
    assert str(out / "dirlink") in str(exc.value)
    with pytest.raises(UnsafePath):
        tree.makedirs("dirlink/sub")
    with pytest.raises(UnsafePath):
        tree.write_text("../outside.txt", "x")
    tree.write_text("link", "mine\n")  # replaces the symlink itself
    assert outside.read_text() == "secret\n" and not (out / "link").is_symlink()
    assert not (tmp_path / "new.txt").exists() and not (tmp_path / "sub").exists()
    assert tree.unlink("dirlink") and tmp_path.is_dir()  # the link goes, not its target
    with pytest.raises(UntrustedFile):  # and the reading half (trust-core's) refuses it too
        (out / "l2").symlink_to(outside)
        OutdirReader(str(out)).read_text("l2")


def test_a_fifo_is_named_fast_not_opened(tmp_path):
    d = tmp_path / "t"
    (d / ".lab" / "ssh").mkdir(parents=True)
    os.mkfifo(d / ".lab" / "ssh" / "fifo")
    t = time.perf_counter()
    bad = unsafe_entries(str(d), under=".lab")
    assert bad and "fifo" in bad[0].file and time.perf_counter() - t < 1



def test_the_safety_scan_lists_the_files_walk_names(tmp_path):
    """validate walks the tree once: unsafe_entries' listing stands in for walk() (MANIFEST,
    inert check), so on a tree it finds nothing in, the two must name the same files."""
    from railonly.fabric.outdir.reader import walk

    d = tmp_path / "t"
    for rel in ("a.csv", "MANIFEST.json", "configs/s1/config_db.json", "configs/s1/frr.conf",
                "hosts/h1/nccl.env", ".lab/x", "deep/er/still/f.txt"):
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text("x")
    (d / "empty").mkdir()
    files: dict[str, str] = {}
    assert unsafe_entries(str(d), files=files) == []
    assert {r: k for r, k in files.items() if r != "MANIFEST.json"} == walk(str(d))
    assert "MANIFEST.json" in files  # walk() leaves it out; check_manifest does the same with it

# --- a compiled OUTDIR, edited -------------------------------------------------------------


@pytest.fixture(scope="module")
def outdir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pure")
    return compile_lab(ROUTED, unique("p"), tmp / "out")


@pytest.fixture
def copy(outdir, tmp_path):
    dst = tmp_path / "o"
    shutil.copytree(outdir, dst)
    return dst


def clab(out: Path) -> Path:
    return next(out.glob("*.clab.yml"))


def dry_run(out, capsys) -> tuple[int, str]:
    rc = main(["lab", "deploy", str(out), "--dry-run"])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err
    return rc, cap.err


@pytest.mark.parametrize("line", [
    "sysctl -w kernel.printk_ratelimit=7",
    "sysctl -w kernel.modprobe=/tmp/pwn",
    "sysctl -w vm.stat_interval=9",
    "sh -c 'touch /tmp/pwn'",
    "ip netns del railonly-canary-1",
])
def test_exec_lines_the_compiler_never_emits_are_exit_2(copy, capsys, line):
    f = clab(copy)
    text = f.read_text()
    first = text.index("- sysctl -w net.ipv4.ip_forward=1")
    f.write_text(text[:first] + f"- {line}\n      " + text[first:])
    rc, err = dry_run(copy, capsys)
    assert rc == 2, err
    assert f.name in err


@pytest.mark.parametrize("edit, named", [
    (lambda o: (o / "fabric.json").write_text("{\"nodes\": ["), "fabric.json"),
    (lambda o: (o / "fabric.json").write_text("[1, 2]"), "fabric.json"),
    (lambda o: (o / "fabric.json").write_text(json.dumps({**json.loads((o / "fabric.json").read_text()), "nodes": {"a": 1}})), "fabric.json"),
    (lambda o: (o / "fabric.json").write_text(json.dumps({**json.loads((o / "fabric.json").read_text()), "links": [{"a": 1}]})), "fabric.json"),
    (lambda o: clab(o).write_text("name: [unclosed\n"), ".clab.yml"),
    (lambda o: clab(o).write_text("- a\n- b\n"), ".clab.yml"),
    (lambda o: clab(o).write_text(clab(o).read_text().replace("  nodes:\n", "  nodes: [a, b]\n  oldnodes:\n", 1)), ".clab.yml"),
    (lambda o: clab(o).write_text("a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
                                  "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c]\n"), "alias"),
    (lambda o: clab(o).write_text(clab(o).read_text().replace("exec:\n", "exec: 7\n  x:\n", 1)), ".clab.yml"),
    (lambda o: clab(o).write_bytes(b"\xff\xfe" + clab(o).read_bytes()), ".clab.yml"),
    (lambda o: (o / "fabric.json").write_text("[" * 200000), "fabric.json"),
])
def test_malformed_files_are_exit_2_naming_the_file(copy, capsys, edit, named):
    edit(copy)
    rc, err = dry_run(copy, capsys)
    assert rc == 2, err
    assert named in err


@pytest.mark.parametrize("target", ["fabric.json", "configs/rail0-leaf0/frr.conf", "CLAB"])
def test_symlinked_input_files_are_refused_naming_them(copy, capsys, tmp_path, target):
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$secret\n")
    rel = clab(copy).name if target == "CLAB" else target
    (copy / rel).unlink()
    (copy / rel).symlink_to(secret)
    rc, err = dry_run(copy, capsys)
    assert rc == 2 and rel in err and "symlink" in err, err
    assert "secret" not in err


def test_a_fifo_in_outdir_is_refused_at_once(copy, capsys):
    os.unlink(copy / "configs" / "rail0-leaf0" / "frr.conf")
    os.mkfifo(copy / "configs" / "rail0-leaf0" / "frr.conf")
    t = time.perf_counter()
    rc, err = dry_run(copy, capsys)
    assert rc == 2 and "FIFO" in err and time.perf_counter() - t < 2


def test_a_relative_outdir_becomes_absolute_before_any_daemon_sees_it(outdir, monkeypatch):
    monkeypatch.chdir(outdir.parent)
    lab = load_lab(outdir.name)
    assert lab.outdir.is_absolute() and lab.state_dir.is_absolute()
    conf = lab_sshd.sshd_config(lab, lab_sshd.sonic_switches(lab)[0].name)
    for word in ("HostKey", "AuthorizedKeysFile"):
        line = next(ln for ln in conf.splitlines() if ln.startswith(word))
        assert line.split()[1].startswith("/"), line


def test_a_node_name_that_is_a_path_is_refused(copy, capsys):
    f = clab(copy)
    f.write_text(f.read_text().replace("    rail0-leaf0:\n", "    ../../etc:\n", 1))
    rc, err = dry_run(copy, capsys)
    assert rc == 2 and "../../etc" in err and f.name in err


@pytest.mark.parametrize("ip, says", [
    (None, "has no address on its rail NIC"),
    ("10.0.0.999/29", "is not an IPv4 address with its prefix length"),
    ("10.0.0.2", "is not an IPv4 address with its prefix length"),  # ipaddress took it: a /32
    (7, "is not a string"),  # fabric_json.parse already
])
def test_a_gpu_rail_address_that_is_missing_or_no_address_is_refused(copy, capsys, ip, says):
    f = copy / "fabric.json"
    doc = json.loads(f.read_text())
    i = next(i for i, lk in enumerate(doc["links"]) if lk["kind"] == "rail")
    end = "a" if doc["links"][i]["a"]["node"].startswith("hb") else "b"
    doc["links"][i][end]["ip"] = ip
    f.write_text(json.dumps(doc))
    rc, err = dry_run(copy, capsys)
    assert rc == 2 and f"links[{i}].{end}.ip" in err and says in err, err


# --- faults.json ---------------------------------------------------------------------


def test_faults_restore_refuses_what_the_lab_never_records(outdir):
    lab = load_lab(outdir)
    sw = lab.switches[0]
    good = {"kind": "node", "what": sw.name, "ends": [], "routes": {}, "frr": []}
    assert faults._problems(lab, NetnsRuntime(), [good]) == []
    cases = [
        {**good, "frr": [["/bin/sh", "-c", "touch /tmp/pwn"]]},
        {**good, "what": lab.gpus[0].name, "frr": [["/usr/lib/frr/zebra"]]},
        {**good, "ends": [{"node": sw.name, "netns": "railonly-canary-1", "dev": "eth0"}]},
        {**good, "ends": [{"node": sw.name, "netns": sw.netns, "dev": "eth0 down; x"}]},
        {**good, "routes": {"railonly-canary-1": [["default"]]}},
        {**good, "routes": {sw.netns: [["default", "via", "1.2.3.4; reboot"]]}},
        # iproute2 would load this BPF object into the kernel as root
        {**good, "routes": {sw.netns: [["10.9.0.0/24", "encap", "bpf", "in", "obj", "/tmp/x.o", "section", "lwt_in",
                                        "dev", "eth1"]]}},
        {**good, "routes": {sw.netns: [["10.9.0.0/24", "dev", "eth1", "encap", "seg6local", "action", "End"]]}},
        {**good, "routes": {sw.netns: [["10.9.0.0/24", "nhid", "7"]]}},
        {**good, "routes": {sw.netns: [["10.9.0.0/24", "via", "10.0.0.1", "via", "10.0.0.2"]]}},
        {**good, "routes": {sw.netns: [["10.9.0.0/24", "dev"]]}},
        # a newline `$` lets by, and other scripts' digits (Arabic-Indic 1) that Python's \d takes
        {**good, "routes": {sw.netns: [["10.9.0.0/24\n", "dev", "eth1"]]}},
        {**good, "routes": {sw.netns: [["10.9.0.0/24", "via", "10.0.0.1\n"]]}},
        {**good, "routes": {sw.netns: [["10.9.0.\u0661/24", "dev", "eth1"]]}},
        {**good, "routes": {sw.netns: [["10.9.0.0/24", "dev", "eth1\n"]]}},
        # wrong shapes are problems, not TypeErrors (an unhashable node name, ends or frr not lists)
        {**good, "ends": [{"node": [sw.name], "netns": sw.netns, "dev": "eth0"}]},
        {**good, "ends": 7},
        {**good, "frr": {"a": 1}},
        "not a fault",
    ]
    for c in cases:
        assert faults._problems(lab, NetnsRuntime(), [c]), c
    assert faults._problems(lab, NetnsRuntime(), {"a": 1})
    # the forms _static_routes records pass
    ok = {**good, "routes": {sw.netns: [["10.9.0.0/24", "via", "10.0.0.1", "dev", "eth1", "proto", "boot", "metric",
                                         "20", "onlink"], ["default", "dev", "eth1", "scope", "link"]]}}
    assert faults._problems(lab, NetnsRuntime(), [ok]) == []


def test_lab_ssh_json_cannot_point_push_elsewhere(copy, run_root):
    from railonly.emulation.runtime import rundir

    lab = load_lab(copy)
    tree = rundir.state(lab.name)
    tree.write_text("ssh/lab-ssh.json", json.dumps({
        "lab": lab.name, "user": "root", "client_key": "/etc/ssh/ssh_host_ed25519_key",
        "known_hosts": "/etc/passwd", "switches": {sw.name: {"host": "192.0.2.1", "port": 2222}
                                                   for sw in lab.switches}}))
    info = lab_sshd.load_info(lab)
    assert info["client_key"] == str(lab.state_dir / "ssh" / "client_ed25519")
    assert info["known_hosts"] == str(lab.state_dir / "ssh" / "known_hosts")
    assert {s["host"] for s in info["switches"].values()} == {"127.0.0.1"}
    tree.write_text("ssh/lab-ssh.json", "{")
    with pytest.raises(InputError, match="lab-ssh.json"):
        lab_sshd.load_info(lab)


# --- switch configs pass the same checks as `validate` before a deploy or push --------------


@pytest.mark.parametrize("rel, line", [
    ("configs/rail0-leaf0/frr.conf", "log file /tmp/pwn.log"),
    ("configs/rail0-leaf0/frr.conf", "hostname x\nmatch script pwn"),
    ("configs/rail0-leaf0/bgpd.conf", "log file /etc/cron.d/pwn"),  # a split file the reader would also read
])
def test_frr_lines_the_compiler_never_emits_stop_a_deploy(copy, capsys, rel, line):
    f = copy / rel
    if rel.endswith("bgpd.conf"):
        (copy / "configs/rail0-leaf0/frr.conf").unlink()
        f.write_text("hostname rail0-leaf0\n" + line + "\n")
    else:
        f.write_text(f.read_text() + line + "\n")
    rc, err = dry_run(copy, capsys)
    assert rc == 2 and f.name in err, err


def test_a_config_db_hostname_with_a_newline_stops_a_deploy(copy, capsys):
    f = copy / "configs/rail0-leaf0/config_db.json"
    db = json.loads(f.read_text())
    db["DEVICE_METADATA"]["localhost"]["hostname"] = "leaf\nlog file /tmp/x"
    f.write_text(json.dumps(db))
    rc, err = dry_run(copy, capsys)
    assert rc == 2 and "config_db.json" in err


@pytest.fixture(scope="module")
def eos_outdir(tmp_path_factory):
    from .conftest import L2

    tmp = tmp_path_factory.mktemp("eos")
    return compile_lab(L2.replace("platform: sonic", "platform: eos"), unique("e"), tmp / "out")


@pytest.mark.parametrize("line", ["bash timeout 10 touch /tmp/pwn", "event-handler pwn\n   action bash touch /x"])
def test_eos_lines_the_compiler_never_emits_stop_a_deploy(eos_outdir, tmp_path, capsys, line):
    out = tmp_path / "o"
    shutil.copytree(eos_outdir, out)
    f = next(out.glob("configs/*/startup-config"))
    f.write_text(f.read_text().replace("\nend", f"\n{line}\nend"))
    rc, err = dry_run(out, capsys)
    assert rc == 2 and "startup-config" in err, err


def test_push_sends_only_the_files_a_switch_reads(outdir):
    from railonly.emulation.push import pusher as push
    from railonly.emulation.push.targets import Device

    d = outdir / "configs" / "rail0-leaf0"
    (d / "evil.sh").write_text("#!/bin/sh\n")
    try:
        files = push.candidate(outdir / "configs", Device("rail0-leaf0", "127.0.0.1", 22, "sonic"))
    finally:
        (d / "evil.sh").unlink()
    assert sorted(files) == ["config_db.json", "frr.conf"]


def test_push_refuses_a_hostile_outdir_before_connecting(copy, tmp_path, capsys):
    inv = tmp_path / "inv.yml"
    inv.write_text("devices:\n  rail0-leaf0: {host: 192.0.2.1, platform: sonic}\n")  # TEST-NET: never reached
    f = copy / "configs/rail0-leaf0/frr.conf"
    f.write_text(f.read_text() + "log file /tmp/pwn.log\n")
    pytest.importorskip("netmiko")
    rc = main(["push", str(copy), "--inventory", str(inv), "--timeout", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and "frr.conf" in err and "Traceback" not in err


def test_a_lab_name_with_a_trailing_newline_is_refused():
    """`$` matches before a final newline: every name form is matched whole."""
    from railonly.emulation.lab import LabError
    from railonly.emulation.runtime import rundir as lab_rundir

    with pytest.raises(LabError, match="is not a lab name"):
        lab_rundir.open_state("demo\n", create=False)


def test_traffic_json_cannot_name_foreign_pids_or_files(copy, tmp_path, run_root):
    from railonly.emulation.lab import LabError, run_dir
    from railonly.emulation.runtime import rundir as lab_rundir
    from railonly.emulation.traffic import iperf3

    lab = load_lab(copy)
    victim = tmp_path / "victim.pid"
    victim.write_text("1\n")  # pid 1
    rundir = f"{run_dir(lab.name)}/iperf3"
    cases = [
        {"lab": lab.name, "servers": [{"netns": lab.gpus[0].netns, "argv": ["/sbin/init"], "pidfile": str(victim)}]},
        {"lab": lab.name, "servers": [{"netns": "railonly-canary-1", "argv": ["iperf3", "-s", "-1"],
                                       "pidfile": f"{rundir}/x.pid"}]},
        {"lab": lab.name, "servers": [{"netns": lab.gpus[0].netns, "argv": ["iperf3", "-s", "-1"],
                                       "pidfile": f"{rundir}/../../../../etc/x.pid"}]},
        {"lab": "other", "servers": []},
        [],
    ]
    for rec in cases:
        lab_rundir.state(lab.name).write_text("traffic.json", json.dumps(rec))
        with pytest.raises(LabError, match="traffic.json"):
            iperf3.stop_servers(lab)
        assert victim.exists()
    lab_rundir.state(lab.name).write_text("traffic.json", "{")
    with pytest.raises(InputError, match="traffic.json"):
        iperf3.stop_servers(lab)
