"""Trust, round 2: each finding of the second adversarial review reproduced against real
labs (as root), with the safe outcome shown; then attacks of our own beyond that list.

Every case checks the bystanders (a foreign namespace and processes, a canary file,
host sysctls) and that `lab destroy` leaves nothing of the attacked lab (the ``fresh``
fixture at teardown, by the lab's recorded identity). The security model these tests
hold is docs/security.md.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import time

import pytest

from railonly.cli import main
from railonly.emulation.runtime.netns import pids, setns

from .conftest import (CANARY_TEXT, ROUTED, compile_lab, lab_name, lab_remains, railonly, skip_reason, state_file,
                       unique)

pytestmark = pytest.mark.netns


def run(capsys, *args) -> tuple[int, str, str]:
    rc = main(list(args))
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err, cap.err
    return rc, cap.out, cap.err


def deploy_ok(capsys, out, *extra) -> None:
    rc, o, e = run(capsys, "lab", "deploy", str(out), *extra)
    assert rc == 0, o + e


def lab_daemons(name: str) -> list[int]:
    """The lab's long-lived processes: those in its namespaces whose parent is not one of them
    (an sshd's per-connection child, e.g. from a readiness probe, comes and goes on its own),
    leaving out a process on its way out (no cmdline or parent left to read)."""
    nss = [n for n in setns.list_netns() if n.startswith(f"clab-{name}-")]
    procs = {p.pid: p for p in pids.in_netns({setns.inode(n) for n in nss} - {None})}
    parents = {pid: _parent(pid) for pid in procs}
    return [pid for pid, p in procs.items()
            if p.cmdline and p.state != "Z" and parents[pid] is not None and parents[pid] not in procs]


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def running(name: str, nodes: int = 8) -> bool:
    """Every namespace of the (routed, 2x2) lab exists and its daemons live."""
    nss = [n for n in setns.list_netns() if n.startswith(f"clab-{name}-")]
    return len(nss) == nodes and len(lab_daemons(name)) >= 6


# --- a lab owns exactly itself ------------------------------------------------------------------


@pytest.fixture
def prefix_pair(tmp_path):
    """Lab ``<base>-b`` (the victim) and lab ``<base>`` whose node rail0-leaf0 is renamed
    b-rail0-leaf0: its namespace clab-<base>-b-rail0-leaf0 is the victim's."""
    if skip_reason():
        pytest.skip(skip_reason())
    os.chmod(tmp_path, 0o755)
    base = unique("k")
    victim = compile_lab(ROUTED, f"{base}-b", tmp_path / "victim")
    attacker = compile_lab(ROUTED, base, tmp_path / "attacker")
    for f in (attacker / f"{base}.clab.yml", attacker / "fabric.json"):
        f.write_text(f.read_text().replace("rail0-leaf0", "b-rail0-leaf0"))
    (attacker / "configs" / "rail0-leaf0").rename(attacker / "configs" / "b-rail0-leaf0")
    yield base, victim, attacker
    for name in (base, f"{base}-b"):
        main(["lab", "destroy", "--lab", name])
    for name in (base, f"{base}-b"):  # lab_remains matches by prefix: only once both are gone
        assert lab_remains(name) == [], name


def test_a_lab_whose_node_names_another_labs_namespace_is_refused(prefix_pair, bystanders, capsys):
    """Finding: ownership was a prefix test, so lab `a` took `clab-a-b-leaf0` (lab a-b's)."""
    base, victim, attacker = prefix_pair
    deploy_ok(capsys, victim)
    daemons = lab_daemons(f"{base}-b")
    rc, o, e = run(capsys, "lab", "deploy", str(attacker))
    assert rc == 2 and f"clab-{base}-b-rail0-leaf0" in e and f"lab {base}-b" in e, o + e
    rc, o, e = run(capsys, "lab", "destroy", str(attacker))  # nothing of the attacker exists; the victim stays
    assert rc == 0, o + e
    assert running(f"{base}-b") and all(pids.info(p) for p in daemons)
    assert bystanders.problems() == []


def test_a_forged_state_file_cannot_reach_another_labs_namespaces(prefix_pair, bystanders, capsys):
    """Finding: a forged state file made destroy kill another lab's FRR and delete its namespace.
    Now the file is root's, and even a record planted there is cut to the lab's own nodes."""
    base, victim, attacker = prefix_pair
    deploy_ok(capsys, victim)
    daemons = lab_daemons(f"{base}-b")
    theirs = sorted(n for n in setns.list_netns() if n.startswith(f"clab-{base}-b-"))
    os.makedirs(os.path.dirname(state_file(base)), mode=0o700)
    os.chmod(f"/run/railonly/{base}", 0o755)
    with open(state_file(base, "identity.json"), "w") as f:
        json.dump({"lab": base, "outdir": str(attacker), "nodes": ["b-rail0-leaf0", "b-rail1-leaf0", "hb0"]}, f)
    with open(state_file(base), "w") as f:
        json.dump({"version": 1, "lab": base, "prefix": f"clab-{base}-", "phase": "deployed", "namespaces": theirs,
                   "processes": [], "root_sysctls": [], "dirs": []}, f)
    rc, o, e = run(capsys, "lab", "destroy", "--lab", base)
    assert rc == 2 and f"clab-{base}-b-rail0-leaf0" in e and "not touched" in e, o + e
    assert running(f"{base}-b") and all(pids.info(p) for p in daemons)
    assert not os.path.exists(f"/run/railonly/{base}")
    assert bystanders.problems() == []


def test_two_outdirs_of_one_design_on_one_host(fresh, bystanders, capsys):
    """Finding: deploy from a second OUTDIR said 'not ours, not touched', then its own hint
    (lab destroy) removed the first checkout's lab."""
    first, second = fresh(), fresh()
    name = lab_name(first)
    deploy_ok(capsys, first)
    daemons = lab_daemons(name)
    rc, o, e = run(capsys, "lab", "deploy", str(second))
    assert rc == 2 and f"deployed from {first}" in e and "--lab-name" in e, o + e
    for action in (("destroy",), ("check",), ("fault", "--restore"), ("status",)):
        rc, o, e = run(capsys, "lab", action[0], str(second), *action[1:])
        assert rc == 2 and f"deployed from {first}" in e, (action, o + e)
    # a destroy's fix says how to remove that lab (it said to deploy under another name)
    rc, o, e = run(capsys, "lab", "destroy", str(second), "--lab", name)
    assert rc == 2 and f"name it alone: railonly lab destroy --lab {name}" in e and "lab deploy" not in e, o + e
    assert running(name) and all(pids.info(p) for p in daemons)
    rc, o, e = run(capsys, "lab", "deploy", str(second), "--lab-name", name)  # the override cannot take a lab either
    assert rc == 2 and f"deployed from {first}" in e, o + e
    # the explicit override: the second OUTDIR under a name of its own, both labs side by side
    other = f"{name}b2"  # not {name}-...: the test helpers match lab leftovers by prefix
    deploy_ok(capsys, second, "--lab-name", other)
    assert running(name) and running(other)
    rc, o, e = run(capsys, "lab", "status", str(second))  # every command of the second OUTDIR finds its own lab
    assert rc == 0 and f"clab-{other}-rail0-leaf0" in o and f"clab-{name}-" not in o, o + e
    rc, o, e = run(capsys, "lab", "destroy", str(second))
    assert rc == 0 and f"lab {other}:" in o, o + e
    assert lab_remains(other) == [] and running(name) and all(pids.info(p) for p in daemons)
    assert bystanders.problems() == []


@pytest.mark.parametrize("change", ["edited", "recompiled-renamed", "removed", "replaced-by-a-file"])
def test_destroy_needs_only_the_labs_identity(fresh, bystanders, capsys, tmp_path, change):
    """Finding: destroy refused (exit 2, all left running) once an OUTDIR file changed after
    deploy; recompiling the OUTDIR under another design name orphaned the lab."""
    out = fresh()
    name = lab_name(out)
    deploy_ok(capsys, out)
    daemons = lab_daemons(name)
    if change == "edited":
        f = out / "configs" / "rail0-leaf0" / "frr.conf"
        f.write_text(f.read_text() + "log file /tmp/pwn.log\n")
    elif change == "recompiled-renamed":
        compile_lab(ROUTED, unique("n"), tmp_path / "scratch")
        shutil.rmtree(out)
        compile_lab(ROUTED, unique("n"), out)
    elif change == "removed":
        shutil.rmtree(out)
    else:
        shutil.rmtree(out)
        out.write_text("not a folder\n")
    rc, o, e = run(capsys, "lab", "destroy", str(out))
    assert rc == 0 and f"lab {name}: removed" in o, o + e
    count, more = re.search(r"removed (\d+) namespaces", o), re.search(r" and (\d+) more", o)
    assert more is None or 8 + int(more[1]) == int(count[1]), o  # the list named the run dir as a namespace
    assert lab_remains(name) == [] and all(not pids.info(p) for p in daemons)
    assert bystanders.problems() == []


def test_a_redeploy_after_a_recompile_that_dropped_nodes_removes_them(fresh, bystanders, capsys, tmp_path):
    out = fresh()
    name = lab_name(out)
    deploy_ok(capsys, out)
    design = tmp_path / "three.yml"  # the same lab name, a third HB domain
    design.write_text(ROUTED.format(name=name).replace("count: 2}", "count: 3}"))
    assert main(["compile", str(design), "-o", str(out), "-q"]) == 0
    deploy_ok(capsys, out)
    assert setns.exists(f"clab-{name}-hb2")
    shutil.rmtree(out)
    compile_lab(ROUTED, name, out)  # back to two: hb2 and its GPUs go
    deploy_ok(capsys, out)
    assert not [n for n in setns.list_netns() if n.startswith(f"clab-{name}-hb2")]
    assert running(name)
    assert bystanders.problems() == []


def test_a_redeploy_of_a_changed_outdir_removes_what_a_user_started_in_the_lab(fresh, bystanders, capsys):
    """A process started with `lab exec` (a daemon) made the redeploy fail after deleting the
    namespace names it still held: the process ran on in a nameless namespace, and `lab
    destroy` said "nothing to destroy". The redeploy now replaces the lab as destroy removes it."""
    out = fresh()
    name = lab_name(out)
    deploy_ok(capsys, out)
    rc, o, e = run(capsys, "lab", "exec", str(out), "hb0-gpu0", "--", "sh", "-c", "sleep 397 >/dev/null 2>&1 &")
    assert rc == 0, o + e
    ns_inode = setns.inode(f"clab-{name}-hb0-gpu0")
    # sh has exited when exec returns, but its child may not have become `sleep` yet (it failed
    # CI once on a loaded host: the child's cmdline was still sh's)
    deadline = time.monotonic() + 10
    while not (started := [p.pid for p in pids.in_netns({ns_inode}) if p.cmdline[:2] == ("sleep", "397")]) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started
    conf = sorted((out / "configs").glob("*/frr.conf"))[0]
    conf.write_text(conf.read_text() + "!\n")  # other bytes: the redeploy replaces the lab
    rc, o, e = run(capsys, "lab", "deploy", str(out))
    assert rc == 0 and "the OUTDIR changed since it was deployed: the running lab was removed" in o, o + e
    assert all(pids.info(pid) is None for pid in started)
    assert running(name)
    assert bystanders.problems() == []


# --- records: never in the OUTDIR, checked before use -----------------------------------------


def test_fault_restore_never_loads_bpf(fresh, bystanders, capsys):
    """Finding: faults.json route words accepted `encap bpf in obj FILE section lwt_in`:
    restore made iproute2 load the pull request's BPF object into the kernel as root."""
    out = fresh()
    name = lab_name(out)
    deploy_ok(capsys, out)
    obj = bystanders.dir / "prog.o"
    obj.write_bytes(b"\x7fELF not really\n")
    ns = f"clab-{name}-rail0-leaf0"
    with open(state_file(name, "faults.json"), "w") as f:
        json.dump([{"kind": "link", "what": "rail0-leaf0:Ethernet0", "ends": [],
                    "routes": {ns: [["10.99.0.0/24", "encap", "bpf", "in", "obj", str(obj), "section", "lwt_in",
                                     "dev", "lo"]]}}], f)
    rc, o, e = run(capsys, "lab", "fault", str(out), "--restore")
    assert rc == 2 and "faults.json" in e and "encap" in e, o + e
    assert "10.99.0.0" not in subprocess.run(["ip", "-n", ns, "route", "show"], capture_output=True, text=True).stdout
    assert bystanders.problems() == []


def test_gc_thresh_is_only_restored_to_what_the_deploy_raised(fresh, bystanders, capsys):
    """Finding: the state file's root_sysctls wrote any number into the host's gc_thresh."""
    out = fresh()
    name = lab_name(out)
    deploy_ok(capsys, out)
    key = "net.ipv4.neigh.default.gc_thresh3"
    before = setns.read_sysctl(key)
    st = json.load(open(state_file(name)))
    st["root_sysctls"] = [{"key": key, "original": "999999999", "set": before},
                          {"key": key, "original": "1", "set": before}]  # 'lower' is never ours: set <= original ok
    with open(state_file(name), "w") as f:
        json.dump(st, f)
    rc, o, e = run(capsys, "lab", "destroy", str(out))
    assert rc == 2 and "root_sysctls[0]" in e, o + e
    assert setns.read_sysctl(key) != "999999999"
    assert lab_remains(name) == []
    bystanders.sysctls.pop(key, None)
    assert bystanders.problems() == []
    if setns.read_sysctl(key) != before:  # entry [1] passed the allow-list and the value was ours: undo
        setns.write_sysctls([(key, before)])


def test_a_symlinked_lock_file_is_exit_3_naming_it(fresh, bystanders, capsys):
    out = fresh()
    name = lab_name(out)
    os.makedirs("/run/railonly", exist_ok=True)
    lock = f"/run/railonly/{name}.lock"
    os.symlink(bystanders.file, lock)
    try:
        rc, o, e = run(capsys, "lab", "deploy", str(out))
        assert rc == 3 and lock in e and "symlink" in e, o + e
        assert not [n for n in setns.list_netns() if n.startswith(f"clab-{name}-")]
    finally:
        os.unlink(lock)
    assert bystanders.problems() == []


def test_a_full_disk_during_deploy_is_exit_3_naming_the_path(fresh, bystanders, capsys):
    out = fresh()
    name = lab_name(out)
    rundir = f"/run/railonly/{name}"
    os.makedirs(rundir, mode=0o755)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k,mode=0755", "tmpfs", rundir], check=True)
    try:
        rc, o, e = run(capsys, "lab", "deploy", str(out))
        assert rc == 3 and rundir in e and "No space left" in e, o + e
        rc, o, e = run(capsys, "lab", "destroy", "--lab", name)
        assert "Traceback" not in e
        assert not [n for n in setns.list_netns() if n.startswith(f"clab-{name}-")]
    finally:
        subprocess.run(["umount", rundir])
    shutil.rmtree(rundir, ignore_errors=True)
    assert bystanders.problems() == []


# --- attacks of our own beyond the review's list ------------------------------------------------


@pytest.mark.parametrize("plant", ["symlink", "foreign-owner", "world-writable"])
def test_a_run_dir_planted_before_deploy_is_never_written_through(fresh, bystanders, capsys, plant):
    """Ours: the run dir is the new trust anchor, so a planted one (a link to elsewhere, or a
    directory another user can write) is refused before anything is written into it."""
    out = fresh()
    name = lab_name(out)
    rundir = f"/run/railonly/{name}"
    os.makedirs("/run/railonly", exist_ok=True)
    if plant == "symlink":
        os.symlink(bystanders.dir, rundir)
    else:
        os.mkdir(rundir)
        os.chmod(rundir, 0o777 if plant == "world-writable" else 0o755)
        if plant == "foreign-owner":
            os.chown(rundir, 65534, 65534)
    try:
        rc, o, e = run(capsys, "lab", "deploy", str(out))
        assert rc == 2 and rundir in e, o + e
        assert sorted(p.name for p in bystanders.dir.iterdir()) == ["canary.txt", "keep"]
        assert not [n for n in setns.list_netns() if n.startswith(f"clab-{name}-")]
    finally:
        if os.path.islink(rundir):
            os.unlink(rundir)
        else:
            shutil.rmtree(rundir)
    assert bystanders.problems() == []


@pytest.mark.parametrize("args", [("deploy", "--lab-name", "../../etc"), ("deploy", "--lab-name", "a/b"),
                                  ("deploy", "--lab-name", "x" * 41), ("deploy", "--lab-name=-rf"),
                                  ("destroy", "--lab", "../railonly"), ("destroy", "--lab", "")])
def test_a_hostile_lab_name_is_refused(fresh, bystanders, capsys, args):
    """Ours: --lab-name and --lab become paths under /run/railonly and namespace names."""
    out = fresh()
    action, *rest = args
    rc, o, e = run(capsys, "lab", action, str(out) if action == "deploy" else "", *rest) if action == "deploy" \
        else run(capsys, "lab", action, *rest)
    assert rc == 2, o + e
    assert not os.path.lexists("/run/etc") and not os.path.lexists("/run/railonly/a")
    assert bystanders.problems() == []


def test_a_report_path_planted_as_a_link_or_fifo_is_refused_neither_followed_nor_replaced(fresh, bystanders, capsys,
                                                                                          tmp_path):
    """Finding (validate/diff reports through a symlink) and ours (a FIFO at a report path
    would hang the writer; a rename over `--json /dev/null` replaced the device with a file):
    a report replaces only a regular file, and says so before the work."""
    out = fresh()
    link, fifo, report = tmp_path / "report.json", tmp_path / "report.xml", tmp_path / "ok.json"
    link.symlink_to(bystanders.file)
    os.mkfifo(fifo)
    for argv in (("validate", str(out), "--json", str(link)), ("validate", str(out), "--junit", str(fifo)),
                 ("diff", str(out), str(out), "--json", str(link))):
        res = railonly(*argv, timeout=120)
        assert res.returncode == 2 and ("symbolic link" in res.stderr or "FIFO" in res.stderr), res.stdout + res.stderr
    assert link.is_symlink() and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    report.write_text("an old report\n")  # a regular file is replaced, as before
    res = railonly("validate", str(out), "--json", str(report), timeout=120)
    assert res.returncode == 0 and json.loads(report.read_text())["failed"] == 0
    assert bystanders.file.read_text() == CANARY_TEXT and bystanders.problems() == []


def test_an_outdir_path_that_would_write_sshd_config_directives_is_refused(compiled, tmp_path, bystanders, capsys):
    """Ours: the lab sshd's ForceCommand names the OUTDIR; a newline in its path would end
    that line and start a directive of the pull request's choosing in a root sshd's config."""
    out = tmp_path / "o\nForceCommand /bin/sh\nPermitEmptyPasswords yes"
    shutil.copytree(compiled["routed"], out)
    rc, o, e = run(capsys, "lab", "deploy", str(out))
    assert rc == 2 and "sshd_config" in e, o + e
    assert lab_remains(lab_name(out)) == [] and bystanders.problems() == []
