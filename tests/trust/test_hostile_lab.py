"""Hostile OUTDIRs against real labs, as root (run in CI under the netns lock).

Each case: the attack gets exit 2 or 3 naming the file; afterwards the
bystanders (a foreign namespace and processes, a canary file, host sysctls)
are untouched, and ``lab destroy`` leaves nothing of the lab (checked by the
``fresh`` fixture at teardown, from a clean copy of the OUTDIR).
"""

from __future__ import annotations

import json
import os
import shutil
import threading

import pytest

from railonly.cli import main
from railonly.emulation.runtime.netns import pids, setns

from .conftest import CANARY_TEXT, lab_name, lab_remains, railonly, wait_gone
from .conftest import state_file as record

pytestmark = pytest.mark.netns


def run(capsys, *args) -> tuple[int, str, str]:
    rc = main(list(args))
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err, cap.err
    return rc, cap.out, cap.err


def state_file(out) -> str:
    return record(lab_name(out))


def deploy_ok(capsys, out) -> None:
    rc, o, e = run(capsys, "lab", "deploy", str(out))
    assert rc == 0, o + e


def clab(out):
    return next(out.glob("*.clab.yml"))


# --- deploy refuses ------------------------------------------------------------------


@pytest.mark.parametrize("line", ["sysctl -w kernel.printk_ratelimit=7", "sysctl -w kernel.modprobe=/tmp/pwn",
                                  "sysctl -w vm.stat_interval=9"])
def test_exec_writing_a_host_sysctl_is_refused(fresh, bystanders, capsys, line):
    out = fresh("l2")
    f = clab(out)
    text = f.read_text()
    i = text.index("- sysctl -w")
    f.write_text(text[:i] + f"- {line}\n      " + text[i:])
    rc, o, e = run(capsys, "lab", "deploy", str(out))
    assert rc == 2 and f.name in e, o + e
    assert lab_remains(lab_name(out)) == []  # refused before anything was created
    assert bystanders.problems() == []


def test_a_symlink_anywhere_in_outdir_is_refused(fresh, bystanders, capsys):
    out = fresh()
    (out / ".lab" / "ssh").mkdir(parents=True)
    (out / ".lab" / "ssh" / "authorized_keys").symlink_to(bystanders.file)
    rc, o, e = run(capsys, "lab", "deploy", str(out))
    assert rc == 2 and "authorized_keys" in e and "symlink" in e, o + e
    assert bystanders.problems() == []


def test_lab_dir_symlink_is_refused(fresh, bystanders, capsys):
    out = fresh()
    (out / ".lab").symlink_to(bystanders.dir)
    rc, o, e = run(capsys, "lab", "deploy", str(out))
    assert rc == 2 and ".lab" in e, o + e
    assert sorted(p.name for p in bystanders.dir.iterdir()) == ["canary.txt", "keep"]
    assert bystanders.problems() == []


def test_a_config_line_frr_refuses_stops_the_deploy_and_leaves_nothing(fresh, capsys):
    """Finding: a line FRR's vtysh -b refused (it passes the allow-lists, only FRR's parser
    knows it) was exit 3 with the lab left half deployed. It is bad input: exit 2 naming the
    switch, the file and line, the refused line and a fix, and nothing of the lab is left."""
    out = fresh()
    conf = out / "configs" / "rail0-leaf0" / "frr.conf"
    conf.write_text(conf.read_text().replace(" bgp log-neighbor-changes\n", " bgp log-neighbor-changes\n bgp bogus-knob 7\n"))
    line = conf.read_text().splitlines().index(" bgp bogus-knob 7") + 1
    rc, o, e = run(capsys, "lab", "deploy", str(out))
    assert rc == 2, o + e
    assert f"{conf}:{line}: switch rail0-leaf0" in e and "'bgp bogus-knob 7' (Unknown command)" in e, e
    assert "fix:" in e and f"railonly validate {out}" in e, e
    assert lab_remains(lab_name(out)) == []


def test_a_deploy_writes_nothing_into_the_outdir(fresh, bystanders, capsys):
    """Finding: the sshd seeding removed and copied under OUTDIR/.lab/ssh/<switch> on plain
    paths, so a folder swapped for a symlink made root write outside the lab. Now every
    record is in the lab's root-owned run dir: the OUTDIR is byte for byte what compile
    wrote, before and after deploy, push and destroy."""
    out = fresh()

    def snapshot():
        return {str(p.relative_to(out)): (p.is_symlink(), p.read_bytes() if p.is_file() else b"")
                for p in sorted(out.rglob("*"))}

    before = snapshot()
    deploy_ok(capsys, out)
    assert snapshot() == before and not (out / ".lab").exists()
    st = os.stat(f"/run/railonly/{lab_name(out)}/state")
    assert st.st_uid == 0 and st.st_mode & 0o777 == 0o700
    for rel in ("identity.json", "netns-state.json", "ssh/known_hosts", "ssh/client_ed25519"):
        assert os.path.isfile(record(lab_name(out), rel)), rel
    rc, o, e = run(capsys, "lab", "destroy", str(out))
    assert rc == 0 and snapshot() == before, o + e
    assert bystanders.problems() == []


def test_an_old_state_file_in_the_outdir_is_never_read(fresh, bystanders, capsys):
    out = fresh()
    (out / ".lab").mkdir()
    (out / ".lab" / "netns-state.json").write_text(json.dumps({
        "version": 1, "lab": lab_name(out), "prefix": f"clab-{lab_name(out)}-", "phase": "deployed",
        "namespaces": [bystanders.ns], "processes": [], "root_sysctls": [], "dirs": [str(bystanders.sub)]}))
    deploy_ok(capsys, out)
    rc, o, e = run(capsys, "lab", "destroy", str(out))
    assert rc == 0 and bystanders.ns not in o + e, o + e
    assert lab_remains(lab_name(out)) == [] and bystanders.problems() == []


def test_config_symlink_is_refused_and_not_disclosed(fresh, bystanders, capsys):
    out = fresh()
    conf = out / "configs" / "rail0-leaf0" / "frr.conf"
    conf.unlink()
    conf.symlink_to(bystanders.file)
    rc, o, e = run(capsys, "lab", "deploy", str(out))
    assert rc == 2 and "frr.conf" in e and CANARY_TEXT.strip() not in o + e
    assert bystanders.problems() == []


def test_a_hostile_state_file_before_deploy_is_refused(fresh, bystanders, capsys):
    """Defence in depth: a record in the run dir (root's) is still checked before use."""
    out = fresh()
    os.makedirs(os.path.dirname(state_file(out)), mode=0o700)
    os.chmod(f"/run/railonly/{lab_name(out)}", 0o755)
    open(state_file(out), "w").write(json.dumps({
        "version": 1, "lab": lab_name(out), "prefix": f"clab-{lab_name(out)}-", "phase": "deployed",
        "namespaces": [bystanders.ns], "processes": [], "root_sysctls": [], "dirs": [str(bystanders.sub)]}))
    rc, o, e = run(capsys, "lab", "deploy", str(out))
    assert rc == 2 and "netns-state.json" in e and bystanders.ns in e, o + e
    assert bystanders.problems() == []


# --- destroy acts only on what is provably the lab's ----------------------------------------


def test_a_hostile_state_file_destroys_only_the_lab(fresh, bystanders, capsys):
    out = fresh()
    deploy_ok(capsys, out)
    st = json.loads(open(state_file(out)).read())
    p0 = st["processes"][0]
    st["namespaces"].append(bystanders.ns)
    st["processes"] += [
        {**p0, "name": "evil/sleep", "pid": bystanders.sleep, "starttime": pids.info(bystanders.sleep).starttime,
         "argv": list(pids.info(bystanders.sleep).cmdline)},  # a recorded foreign pid, right argv
        {**p0, "name": "evil/ns", "netns": bystanders.ns, "pid": bystanders.ns_sleep,
         "argv": list(pids.info(bystanders.ns_sleep).cmdline)},
        {**p0, "name": "evil/pidfile", "pidfile": str(bystanders.file)},
        {**p0, "name": "evil/dirs", "dirs": [str(bystanders.sub)]},
    ]
    st["dirs"].append(str(bystanders.sub))
    st["root_sysctls"].append({"key": "kernel.printk_ratelimit", "original": "99", "set":
                               open("/proc/sys/kernel/printk_ratelimit").read().strip()})
    with open(state_file(out), "w") as f:
        json.dump(st, f)
    rc, o, e = run(capsys, "lab", "destroy", str(out))
    assert rc == 2, o + e
    for named in (bystanders.ns, "evil/ns", "evil/pidfile", "evil/dirs", str(bystanders.sub), "kernel.printk_ratelimit"):
        assert named in e, (named, e)
    assert lab_remains(lab_name(out)) == []
    assert not os.path.exists(state_file(out))
    assert bystanders.problems() == []


@pytest.mark.parametrize("damage", ["delete", "empty", "garbage", "list", "other-lab", "symlink", "lab-dir-symlink"])
def test_a_lab_with_a_lost_or_corrupt_state_file_is_still_destroyed(fresh, bystanders, capsys, damage):
    out = fresh()
    deploy_ok(capsys, out)
    name = lab_name(out)
    assert lab_remains(name)  # there is a lab
    daemons = [p for n in setns.list_netns() if n.startswith(f"clab-{name}-")
               for p in pids.in_netns({setns.inode(n)})]
    assert daemons
    path = state_file(out)
    if damage == "delete":
        os.unlink(path)
    elif damage == "empty":
        open(path, "w").close()
    elif damage == "garbage":
        open(path, "w").write('{"version": 1, "lab": ')
    elif damage == "list":
        open(path, "w").write("[]")
    elif damage == "other-lab":
        open(path, "w").write(json.dumps({"version": 1, "lab": "someone-else", "namespaces": [bystanders.ns]}))
    elif damage == "symlink":
        os.unlink(path)
        os.symlink(bystanders.file, path)
    elif damage == "lab-dir-symlink":
        state = os.path.dirname(path)
        shutil.move(state, state + "-moved")
        os.symlink(bystanders.dir, state)
    rc, o, e = run(capsys, "lab", "destroy", str(out))
    assert rc in (0, 2), o + e
    if damage not in ("delete",):
        assert rc == 2 and ("netns-state.json" in e or "state" in e), e
    assert "removed" in o
    assert lab_remains(name) == []
    assert all(wait_gone(p.pid, 1) for p in daemons)
    assert bystanders.problems() == []
    assert bystanders.file.read_text() == CANARY_TEXT


def test_faults_json_cannot_run_a_command(fresh, bystanders, capsys):
    out = fresh()
    deploy_ok(capsys, out)
    pwn = bystanders.dir / "pwned"
    sw = "rail0-leaf0"
    open(record(lab_name(out), "faults.json"), "w").write(json.dumps(
        [{"kind": "node", "what": sw, "ends": [], "routes": {}, "frr": [["/usr/bin/touch", str(pwn)]]}]))
    rc, o, e = run(capsys, "lab", "fault", str(out), "--restore")
    assert rc == 2 and "faults.json" in e, o + e
    assert not pwn.exists()
    assert bystanders.problems() == []


# --- one lock per lab --------------------------------------------------------------------------


def test_concurrent_deploys_of_one_outdir_leave_no_orphans(fresh, bystanders):
    out = fresh()
    name = lab_name(out)
    results = []

    def deploy():
        results.append(railonly("lab", "deploy", str(out)))

    threads = [threading.Thread(target=deploy) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.returncode for r in results] == [0, 0, 0], [r.stderr for r in results]
    assert sum("already deployed" in r.stdout for r in results) == 2, [r.stdout for r in results]
    inodes = {setns.inode(n) for n in setns.list_netns() if n.startswith(f"clab-{name}-")}
    daemons = pids.in_netns(inodes)
    res = railonly("lab", "destroy", str(out))
    assert res.returncode == 0, res.stderr
    assert lab_remains(name) == []
    assert all(wait_gone(p.pid, 1) for p in daemons)
    assert bystanders.problems() == []


def test_destroy_waits_for_a_deploy_in_progress(fresh):
    out = fresh()
    name = lab_name(out)
    dep = threading.Thread(target=lambda: railonly("lab", "deploy", str(out)))
    dep.start()
    res = railonly("lab", "destroy", str(out))  # either before or after the deploy, never in its middle
    dep.join()
    assert res.returncode == 0, res.stderr
    res = railonly("lab", "destroy", str(out))
    assert res.returncode == 0, res.stderr
    assert lab_remains(name) == []


# --- relative OUTDIR -----------------------------------------------------------------------------


def test_push_to_a_lab_deployed_from_a_relative_outdir(fresh, bystanders):
    out = fresh()
    cwd, rel = str(out.parent), out.name
    res = railonly("lab", "deploy", rel, cwd=cwd)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "warning" not in res.stdout, res.stdout  # every switch sshd answered
    res = railonly("push", rel, "--dry-run", cwd=cwd)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 failed" in res.stdout
    res = railonly("lab", "destroy", rel, cwd=cwd)
    assert res.returncode == 0, res.stderr
    assert lab_remains(lab_name(out)) == []


# --- more: status, push, another lab's namespaces ---------------------------------------------


def test_status_names_a_corrupt_state_file_without_a_traceback(fresh, capsys):
    out = fresh()
    deploy_ok(capsys, out)
    open(state_file(out), "w").write("{not json")
    rc, o, e = run(capsys, "lab", "status", str(out))
    assert "netns-state.json" in o + e and rc in (1, 2), o + e
    rc, o, e = run(capsys, "lab", "destroy", str(out))
    assert rc == 2 and lab_remains(lab_name(out)) == []


def test_push_refuses_a_symlink_planted_in_the_outdir_after_deploy(fresh, bystanders, capsys):
    pytest.importorskip("netmiko")
    out = fresh()
    deploy_ok(capsys, out)
    (out / ".lab" / "ssh").mkdir(parents=True)
    (out / ".lab" / "ssh" / "known_hosts").symlink_to(bystanders.file)
    rc, o, e = run(capsys, "push", str(out), "-q")
    assert rc == 2 and "known_hosts" in e, o + e
    assert bystanders.problems() == []


def test_a_symlink_planted_after_deploy_leaves_the_running_lab_manageable(fresh, bystanders, capsys):
    """Finding: a symlink planted in the OUTDIR of a running lab made status, check and
    fault --restore exit 2 (load_lab refuses any link below OUTDIR), so a fault could not
    be undone. They act on the lab as deployed, from railonly's record: the OUTDIR is not
    read, so nothing of it is followed; deploy (which reads it) still refuses."""
    out = fresh()
    deploy_ok(capsys, out)
    rc, o, e = run(capsys, "lab", "fault", str(out), "--link", "hb0:rail0")
    assert rc == 0, o + e
    (out / "evil").symlink_to(bystanders.file)
    (out / "fabric.json").unlink()
    (out / "fabric.json").symlink_to(bystanders.file)
    rc, o, e = run(capsys, "lab", "status", str(out))
    assert rc == 0 and "faults set: link hb0:rail0" in o, o + e
    rc, o, e = run(capsys, "lab", "check", str(out), "--only", "bgp", "--timeout", "5")
    assert rc in (0, 1) and "bgp" in o, o + e
    rc, o, e = run(capsys, "lab", "fault", str(out), "--restore")
    assert rc == 0 and "restored 1 fault" in o, o + e
    rc, o, e = run(capsys, "lab", "status", str(out))
    assert rc == 0 and "faults set" not in o, o + e
    rc, o, e = run(capsys, "lab", "deploy", str(out))
    assert rc == 2 and "evil" in e and "symbolic link" in e, o + e
    assert CANARY_TEXT.strip() not in capsys.readouterr().out
    assert bystanders.problems() == []


def test_destroy_leaves_the_namespaces_of_a_lab_with_a_longer_name(fresh, bystanders, capsys):
    out = fresh()
    deploy_ok(capsys, out)
    other = f"{lab_name(out)}-x"  # a lab whose prefix clab-<lab>-x- extends ours
    ns = f"clab-{other}-n1"
    marker = f"/run/railonly/{other}.lock"
    assert setns.exists(ns) is False
    import subprocess

    subprocess.run(["ip", "netns", "add", ns], check=True)
    open(marker, "w").close()
    try:
        rc, o, e = run(capsys, "lab", "destroy", str(out))
        assert rc == 0, o + e
        assert setns.exists(ns), "destroy took the namespace of another lab"
    finally:
        subprocess.run(["ip", "netns", "del", ns])
        os.unlink(marker)
    assert lab_remains(lab_name(out)) == []


def test_a_push_then_destroy_through_the_api_leaves_no_lock(fresh, capsys):
    pytest.importorskip("netmiko")
    from railonly.emulation.lab import load_lab
    from railonly.emulation.runtime.netns.runtime import NetnsRuntime

    out = fresh()
    deploy_ok(capsys, out)
    conf = out / "configs" / "rail0-leaf0" / "config_db.json"
    db = json.loads(conf.read_text())
    db["PORT"][next(iter(db["PORT"]))]["mtu"] = "4000"
    db["DEVICE_METADATA"]["localhost"]["mac"] = "02:00:00:00:00:42"  # read at start-up: a full reload
    conf.write_text(json.dumps(db, indent=4, sort_keys=True) + "\n")
    rc, o, e = run(capsys, "push", str(out), "--device", "rail0-leaf0", "-q")
    assert rc == 0, o + e
    assert os.path.exists(f"/run/railonly/{lab_name(out)}.reload.lock")  # the reload took it
    NetnsRuntime().destroy(load_lab(out))  # no CLI around it: the runtime removes the unheld locks
    assert lab_remains(lab_name(out)) == []
