"""Process identity and bounded termination, for killing only what a lab started.

A pid alone is not an identity (pids are reused), so a recorded process is
only signalled when /proc still shows the same start time (when known), the
same command line and, when given, the same network namespace. There is no
lookup by name or pattern anywhere.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

from railonly import proc


@dataclass(frozen=True)
class ProcInfo:
    pid: int
    cmdline: tuple[str, ...]
    starttime: int  # clock ticks since boot (field 22 of /proc/PID/stat)
    state: str
    netns_inode: int | None


def info(pid: int) -> ProcInfo | None:
    """What /proc says about pid, or None if it is gone or a zombie."""
    base = f"/proc/{pid}"
    try:
        with open(f"{base}/stat") as f:
            stat = f.read()
        with open(f"{base}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # comm may contain spaces
    state, start = fields[0], int(fields[19])
    if state in ("Z", "X"):
        proc.reap(pid)
        return None
    try:
        ns = os.stat(f"{base}/ns/net").st_ino
    except OSError:
        ns = None
    cmd = tuple(a.decode(errors="replace") for a in raw.split(b"\0")[:-1])
    return ProcInfo(pid, cmd, start, state, ns)


def read_pidfile(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def same_program(cmdline: tuple[str, ...], argv: tuple[str, ...] | list[str]) -> bool:
    """cmdline is argv, or argv retitled the way sshd does with setproctitle
    ("sshd: /usr/sbin/sshd -D -f X [listener] ..." in one string)."""
    argv = tuple(argv)
    if cmdline == argv:
        return True
    if len(cmdline) != 1 or not argv:
        return False
    title = f"{os.path.basename(argv[0])}: {' '.join(argv)}"
    return cmdline[0] == title or cmdline[0].startswith(title + " ")


def matches(
    pid: int,
    argv: tuple[str, ...] | list[str],
    *,
    starttime: int | None = None,
    netns_inode: int | None = None,
) -> ProcInfo | None:
    """The live process pid if it is the recorded one, else None."""
    pi = info(pid)
    if pi is None or not same_program(pi.cmdline, argv):
        return None
    if starttime is not None and pi.starttime != starttime:
        return None
    if netns_inode is not None and pi.netns_inode != netns_inode:
        return None
    return pi


def alive(pi: ProcInfo) -> bool:
    now = info(pi.pid)
    return now is not None and now.starttime == pi.starttime


def terminate(targets: list[ProcInfo], timeout: float = 5.0) -> list[ProcInfo]:
    """SIGTERM all, wait up to timeout, SIGKILL the rest, wait 2 s more.
    Returns the processes still alive afterwards."""

    def signal_all(sig: int, procs: list[ProcInfo]) -> None:
        for p in procs:
            if alive(p):  # re-check right before signalling: no reused pids
                try:
                    os.kill(p.pid, sig)
                except ProcessLookupError:
                    pass

    def wait(procs: list[ProcInfo], limit: float) -> list[ProcInfo]:
        deadline = time.monotonic() + limit
        left = [p for p in procs if alive(p)]
        while left and time.monotonic() < deadline:
            time.sleep(0.02)
            left = [p for p in left if alive(p)]
        return left

    signal_all(signal.SIGTERM, targets)
    left = wait(targets, timeout)
    if left:
        signal_all(signal.SIGKILL, left)
        left = wait(left, 2.0)
    return left


def in_netns(inodes: set[int]) -> list[ProcInfo]:
    """Live processes whose network namespace is one of inodes."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ino = os.stat(f"/proc/{entry}/ns/net").st_ino
        except OSError:
            continue
        if ino in inodes:
            pi = info(int(entry))
            if pi is not None:
                out.append(pi)
    return out
