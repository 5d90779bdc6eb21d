"""Fixtures for push tests: a deployed routed SONiC lab (one per module, always
destroyed, asserting nothing remains) and an sshd whose ForceCommand is a
scripted EOS-like responder, inside a namespace of its own (no EOS device here)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from railonly import proc
from railonly.emulation.lab import load_lab
from railonly.emulation.runtime.netns import engine, pids, setns
from railonly.emulation.runtime.netns import ns_plan as nsplan
from railonly.emulation.runtime.netns import sshd as lab_sshd
from railonly.emulation.runtime.netns.runtime import NetnsRuntime

from ..conftest import compile_to, skip_reason
from ..conftest import unique as shared_unique

HERE = Path(__file__).resolve().parent

# 2 rails x (3 leaves + 2 spines) of SONiC running eBGP: leaves have spine neighbours.
ROUTED = """\
name: {name}
topology: rail-only
hb_domain: {{size: 2, count: 6, gbps: 3600}}
nic: {{gbps: 400}}
switch: {{radix: 4, platform: sonic}}
rail: {{mode: routed}}
"""


def root_skip_reason() -> str | None:
    return skip_reason("ip", "tc", "vtysh", "ssh-keygen", lab_sshd.SSHD, why="network namespaces, sshd")


def unique(tag: str) -> str:
    # under the rotest prefix (test labs), unique per run: never someone else's lab
    return shared_unique(tag, prefix="rotest")


def settle_sessions(namespaces: list[str], timeout: float = 5.0) -> None:
    """Wait until no SSH session process is left in the namespaces. A
    session (sshd's per-login child and its shell) ends a few ms after the
    client disconnects; destroy treats a process it did not start as not
    ours and, rightly, does not kill it."""
    inodes = {setns.inode(n) for n in namespaces} - {None}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        live = [p for p in pids.in_netns(inodes) if _is_session(p.cmdline)]
        if not live:
            return
        time.sleep(0.05)


def _is_session(cmdline: tuple[str, ...]) -> bool:
    if not cmdline:  # a process on its way out (its cmdline is gone first): a session ending
        return True
    text = " ".join(cmdline)
    # "sshd: ... [listener] ..." is the recorded daemon itself (sshd retitles itself)
    if "[listener]" in text:
        return False
    return text.startswith("sshd: ") or "switch_shell" in text or "eos_responder" in text


def compile_lab(name: str, outdir: Path) -> Path:
    return compile_to(ROUTED.format(name=name), outdir, "push-test.yml")


@pytest.fixture(scope="module")
def pushlab(tmp_path_factory):
    """(outdir, lab) of a deployed lab; destroyed at module end, whatever happened."""
    reason = root_skip_reason()
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("pushlab")
    name = unique("p" + Path(str(tmp)).name[-2:].replace("_", "").replace("-", ""))[:20]
    outdir = compile_lab(name, tmp / "out")
    lab = load_lab(outdir)
    rt = NetnsRuntime(wait_bgp=60)
    try:
        res = rt.deploy(lab)
        assert res.bgp_converged, res.bgp
        yield outdir, lab
    finally:
        settle_sessions([n.netns for n in lab.switches])
        rt.destroy(lab)
        left = [n.netns for n in lab.nodes.values() if setns.exists(n.netns)]
        assert not left, f"namespaces left behind: {left}"


# --- the EOS-like device ------------------------------------------------------------


class EosDevice:
    def __init__(self, base: Path, netns: str, log: Path, running: Path, configs: Path, key: Path, known_hosts: Path):
        self.base, self.netns, self.log, self.running = base, netns, log, running
        self.configs, self.key, self.known_hosts = configs, key, known_hosts

    def commands(self) -> list[str]:
        import json

        return [json.loads(l) for l in self.log.read_text().splitlines()] if self.log.exists() else []


@pytest.fixture
def eos_device(tmp_path):
    reason = root_skip_reason()
    if reason:
        pytest.skip(reason)
    lab = unique("eos")
    ns = f"clab-{lab}-eos1"
    base = tmp_path / "eos"
    base.mkdir()
    for k in ("host", "client"):
        res = proc.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(base / k)], timeout=30)
        assert res.ok, res.stderr
    (base / "authorized_keys").write_text("restrict,pty " + (base / "client.pub").read_text())
    host_pub = (base / "host.pub").read_text().split()
    (base / "known_hosts").write_text(f"{ns} {host_pub[0]} {host_pub[1]}\n")
    log, running = base / "commands.jsonl", base / "running-config"
    running.write_text("hostname eos1\ninterface Ethernet1\n   mtu 1500\n   no switchport\n")
    force = f"{sys.executable} {HERE / 'eos_responder.py'} {log} {running}"
    (base / "sshd_config").write_text("\n".join([
        "Port 22", "ListenAddress 127.0.0.1", f"HostKey {base / 'host'}", "PidFile none",
        f"AuthorizedKeysFile {base / 'authorized_keys'}", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "UsePAM no", "PermitRootLogin prohibit-password",
        "StrictModes no", "LogLevel ERROR", f"ForceCommand {force}", ""]))
    os.makedirs("/run/sshd", exist_ok=True)
    b = nsplan.PlanBuilder(lab)
    b.ns("eos1")
    b.add(nsplan.Process(name="eos1/sshd", netns=ns, argv=(lab_sshd.SSHD, "-D", "-e", "-f", str(base / "sshd_config")),
                    pidfile=str(base / "sshd.pid"), log=str(base / "sshd.log")))
    state = str(tmp_path / "eos-state.json")
    try:
        engine.deploy(b.build(), state, wait_links=0)
        deadline = time.monotonic() + 10
        while True:
            try:
                lab_sshd.connect_socket(ns, "127.0.0.1", 22, 1.0).close()
                break
            except OSError:
                assert time.monotonic() < deadline, (base / "sshd.log").read_text()
                time.sleep(0.05)
        configs = tmp_path / "configs"
        (configs / "eos1").mkdir(parents=True)
        yield EosDevice(base, ns, log, running, configs, base / "client", base / "known_hosts")
    finally:
        settle_sessions([ns])
        rep = engine.destroy(state)
        assert rep.ok, rep.leftovers
        assert not setns.exists(ns)
