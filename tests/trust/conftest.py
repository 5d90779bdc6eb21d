"""Hostile-OUTDIR suite: fixtures.

Every case edits a freshly compiled OUTDIR the way a pull request could and
runs a root command on it. :class:`Bystanders` is what must survive: a
foreign network namespace ``railonly-canary-<pid>`` with a sleep inside, a
foreign sleep in the root namespace, a canary file outside the lab, and the
host sysctls an attack would aim at (read from /proc/sys before and after).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from railonly import proc
from railonly.cli import main
from railonly.emulation.runtime.netns import pids, setns

RUN = os.getpid() % 10000

# site: "" (the single-cluster opt-out, docs/reference/design.md) keeps switch names bare, so the
# hostile cases can spell out the namespaces they aim at (clab-<lab>-rail0-leaf0); the other suites
# run the default, where the design's name prefixes every switch.
# sonic switches: every switch has FRR (routed) and an sshd, so the run dir, pid
# files and the lab's state dir (ssh/) all exist; 2 rails x 2 servers keeps a deploy ~1 s
ROUTED = "name: {name}\nsite: \"\"\nhb_domain: {{size: 2, count: 2}}\nswitch: {{radix: 4, platform: sonic}}\nrail: {{mode: routed}}\n"
L2 = "name: {name}\nsite: \"\"\nhb_domain: {{size: 2, count: 2}}\nswitch: {{radix: 4, platform: sonic}}\nrail: {{mode: l2}}\n"

# host-global settings an OUTDIR could aim at; none may change
CANARY_TEXT = "railonly-canary-secret-4711\n"  # never in any output: the file is never read
HOST_SYSCTLS = ("kernel.printk_ratelimit", "kernel.modprobe", "kernel.core_pattern", "vm.stat_interval",
                "net.ipv4.ip_forward", "net.ipv4.conf.all.rp_filter")


def unique(tag: str) -> str:
    return f"rt{RUN}{tag}"[:20]


def skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "tc", "vtysh", "ssh-keygen", "/usr/sbin/sshd"):
        if shutil.which(tool) is None:
            return f"'{tool}' is not installed"
    return None


def compile_lab(text: str, name: str, outdir: Path) -> Path:
    design = outdir.parent / f"{name}.yml"
    design.write_text(text.format(name=name))
    assert main(["compile", str(design), "-o", str(outdir)]) == 0
    return outdir


def railonly(*args: str, cwd: str | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    """The real CLI in a process of its own (as CI runs it)."""
    return subprocess.run([sys.executable, "-m", "railonly", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def lab_remains(name: str) -> list[str]:
    """Anything of the lab still on the machine: namespaces, processes in them, run dir, locks."""
    prefix = f"clab-{name}-"
    mine = [n for n in setns.list_netns() if n.startswith(prefix)]
    inodes = {setns.inode(n) for n in mine} - {None}
    out = mine + [f"pid {p.pid} {' '.join(p.cmdline)[:60]}" for p in (pids.in_netns(inodes) if inodes else [])]
    out += [p for p in (f"/run/railonly/{name}", f"/run/railonly/{name}.lock", f"/run/railonly/{name}.reload.lock")
            if os.path.lexists(p)]
    # a process of the lab whose namespace is gone would still carry the lab's paths
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            pi = pids.info(int(entry))
            if pi and any(f"/run/railonly/{name}/" in a or f"{name}.clab" in a for a in pi.cmdline):
                out.append(f"pid {pi.pid} {' '.join(pi.cmdline)[:60]}")
    return out


def sysctls() -> dict[str, str]:
    return {k: setns.read_sysctl(k) for k in HOST_SYSCTLS if os.path.exists(setns.proc_sys_path(k))}


class Bystanders:
    """What a hostile OUTDIR must not touch; created before the attack, checked after."""

    def __init__(self, tmp: Path):
        self.ns = f"railonly-canary-{os.getpid()}"
        self.dir = tmp / "outside"
        self.dir.mkdir()
        self.file = self.dir / "canary.txt"
        self.file.write_text(CANARY_TEXT)
        self.sub = self.dir / "keep"
        self.sub.mkdir()
        (self.sub / "inside.txt").write_text("keep\n")
        res = proc.run(["ip", "netns", "add", self.ns])
        assert res.ok, res.stderr
        self.sleep = proc.spawn(["sleep", "601"])
        self.ns_sleep = proc.spawn(["sleep", "602"], netns=self.ns)
        self.sysctls = sysctls()
        self.mtime = self.file.stat().st_mtime_ns

    def problems(self) -> list[str]:
        out = []
        if not setns.exists(self.ns):
            out.append(f"foreign namespace {self.ns} was deleted")
        for pid in (self.sleep, self.ns_sleep):
            if pids.info(pid) is None:
                out.append(f"foreign process {pid} was killed")
        if not self.file.exists() or self.file.read_text() != CANARY_TEXT or self.file.stat().st_mtime_ns != self.mtime:
            out.append(f"canary file {self.file} was changed")
        if not (self.sub / "inside.txt").exists():
            out.append(f"directory {self.sub} was removed")
        now = sysctls()
        out += [f"host sysctl {k}: {v} -> {now[k]}" for k, v in self.sysctls.items() if now[k] != v]
        return out

    def cleanup(self) -> None:
        for pid in (self.sleep, self.ns_sleep):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.reap(pid)
        proc.run(["ip", "netns", "del", self.ns])
        for k, v in self.sysctls.items():  # undo a failed test's damage, never leave it
            if setns.read_sysctl(k) != v:
                setns.write_sysctls([(k, v)])


@pytest.fixture
def bystanders(tmp_path):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    b = Bystanders(tmp_path)
    try:
        yield b
    finally:
        b.cleanup()


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Compile once per module; each test copies (shutil.copytree) what it attacks."""
    tmp = tmp_path_factory.mktemp("compiled")
    os.chmod(tmp, 0o755)
    return {
        "routed": compile_lab(ROUTED, unique("r"), tmp / "routed"),
        "l2": compile_lab(L2, unique("l"), tmp / "l2"),
    }


@pytest.fixture
def fresh(compiled, tmp_path):
    """fresh(kind) -> a copy of the compiled OUTDIR, whose lab is destroyed at the end
    (through the CLI; the test fails if anything of the lab remains)."""
    made: list[Path] = []

    def make(kind: str = "routed") -> Path:
        dst = tmp_path / f"{kind}-{len(made)}"
        shutil.copytree(compiled[kind], dst, symlinks=True)
        os.chmod(tmp_path, 0o755)
        made.append(dst)
        return dst

    yield make
    problems = []
    for out in made:
        name = lab_name(out)
        # the OUTDIR may be wrecked by the test: destroy by the lab's recorded identity
        main(["lab", "destroy", "--lab", name])
        problems += lab_remains(name)
    assert not problems, f"left behind: {problems}"


@pytest.fixture
def run_root(tmp_path, monkeypatch):
    """Labs' run directories under tmp (for tests that only read and write records)."""
    from railonly.emulation import lab

    root = tmp_path / "run" / "railonly"
    root.parent.mkdir()
    os.chmod(tmp_path, 0o755)
    monkeypatch.setattr(lab, "RUN_ROOT", str(root))
    return root


def state_file(name: str, what: str = "netns-state.json") -> str:
    """A record of a deployed lab: in its root-owned state directory, never the OUTDIR."""
    return f"/run/railonly/{name}/state/{what}"


def lab_name(outdir: Path) -> str:
    for p in outdir.iterdir() if outdir.is_dir() and not outdir.is_symlink() else ():
        if p.name.endswith(".clab.yml"):
            return p.name[: -len(".clab.yml")]
    return unique("r")


def wait_gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pids.info(pid) is None:
            return True
        time.sleep(0.05)
    return False
