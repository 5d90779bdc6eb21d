"""The one place railonly starts a subprocess.

Every external command goes through :func:`run`: an argv list (never a shell
string), a timeout, captured output. Callers get a :class:`Result` back instead
of an exception for a non-zero exit, so checks can judge failures as data.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from dataclasses import dataclass
from typing import Sequence


class ToolMissing(RuntimeError):
    """A needed program is not installed (the CLI maps this to exit 3)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill PID``, a cancelled CI job), raised where the process is, as Ctrl-C raises
    KeyboardInterrupt: every ``finally`` and ``except KeyboardInterrupt`` cleans up the same way
    (the replay's nftables table, traffic agents, a failover's switch). The CLI exits 143 for it
    (128 + 15), 130 for Ctrl-C."""


def interrupt_exit(exc: BaseException) -> int:
    """The exit code of an interrupted command: 143 for SIGTERM, 130 for Ctrl-C (128 + the signal)."""
    return 143 if isinstance(exc, Terminated) else 130


def _on_sigterm(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once, as before
    raise Terminated()


_FORK = threading.local()  # whether this thread blocked SIGTERM for the fork it is making


def _block_before_fork() -> None:
    # While the handler is held, a child must die of SIGTERM as the default action does: a
    # Python handler runs only between bytecodes, and a pool worker stuck on a lock it
    # inherited held (futex wait) never ran it, so Pool.terminate() waited on it for ever (a
    # hung compile in CI, the SIGTERM test under load). Blocked across the fork, a SIGTERM sent
    # to either side stays pending until each has the handler it should have: none is lost.
    # Unblocked by what this hook did, not by the handler then (the main thread may restore
    # the previous one while a pool's thread forks a worker).
    _FORK.blocked = signal.getsignal(signal.SIGTERM) is _on_sigterm
    if _FORK.blocked:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})


def _unblock_in_parent() -> None:
    if getattr(_FORK, "blocked", False):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def _default_in_child() -> None:
    if getattr(_FORK, "blocked", False):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


os.register_at_fork(before=_block_before_fork, after_in_parent=_unblock_in_parent, after_in_child=_default_in_child)


class terminate_as_interrupt:
    """While held, SIGTERM raises :class:`Terminated` in the main thread (a no-op elsewhere) of
    this process; a forked child dies of it. The previous handler comes back on exit."""

    def __enter__(self):
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, _on_sigterm)
        return self

    def __exit__(self, *exc) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def which(program: str) -> str | None:
    return shutil.which(program)


def require(program: str, package: str | None = None) -> str:
    path = shutil.which(program)
    if path is None:
        hint = f" (Debian package '{package}'; ./setup.sh installs it)" if package else ""
        raise ToolMissing(f"'{program}' is not installed{hint}")
    return path


def run(
    argv: Sequence[str],
    *,
    timeout: float = 60.0,
    input: str | None = None,
    check: bool = False,
    netns: str | None = None,
    until_exit: bool = False,
) -> Result:
    """Run argv, optionally inside the named network namespace.

    A timeout is reported as returncode 124 (as coreutils `timeout` does), a
    missing program as 127, so callers have one shape to judge. ``until_exit``:
    done when the program exits, with the output it wrote (see :func:`_until_exit`);
    otherwise when its output ends, which a child it left running may hold open.
    """
    full = list(argv)
    if netns is not None:
        full = ["ip", "netns", "exec", netns, *full]
    try:
        if until_exit and input is None:
            res = _until_exit(full, timeout)
        else:
            cp = subprocess.run(
                full,
                input=input,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
            res = Result(tuple(full), cp.returncode, cp.stdout, cp.stderr)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        res = Result(tuple(full), 124, out, err + f"\ntimed out after {timeout:g}s")
    except FileNotFoundError as exc:
        res = Result(tuple(full), 127, "", str(exc))
    if check and not res.ok:
        raise RuntimeError(
            f"command failed ({res.returncode}): {' '.join(full)}\n{res.stderr.strip()}"
        )
    return res


def _until_exit(full: list[str], timeout: float) -> Result:
    """Run ``full`` reading its stdout and stderr until it exits (or ``timeout``: 124, killed),
    then take what the pipes hold and stop: a child it put in the background (``sh -c 'x &'``)
    keeps the pipes open for as long as it runs, and is left running, unread."""
    import selectors
    import time

    p = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out_fd, err_fd = p.stdout.fileno(), p.stderr.fileno()
    got: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    sel = selectors.DefaultSelector()
    for fd in got:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    try:
        exited = os.pidfd_open(p.pid)  # readable once the program exits (Linux 5.3)
        sel.register(exited, selectors.EVENT_READ)
    except (AttributeError, OSError):
        exited = None  # polled every 50 ms instead

    def drain(fd: int) -> None:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                return
            if not chunk:
                sel.unregister(fd)
                return
            got[fd].append(chunk)

    deadline = time.monotonic() + timeout
    rc = None
    try:
        while rc is None:
            left = deadline - time.monotonic()
            if left <= 0:
                p.kill()
                p.wait()
                break
            for key, _ in sel.select(min(left, 0.05) if exited is None else left):
                if key.fd in got:
                    drain(key.fd)
            rc = p.poll()
        for fd in got:  # what it wrote before it exited is in the pipes
            if fd in sel.get_map():
                drain(fd)
    except BaseException:  # Ctrl-C: as subprocess.run, the program does not outlive the call
        p.kill()
        p.wait()
        raise
    finally:
        sel.close()
        if exited is not None:
            os.close(exited)
        p.stdout.close()
        p.stderr.close()
    out, err = (b"".join(got[fd]).decode(errors="replace").replace("\r\n", "\n") for fd in (out_fd, err_fd))
    if rc is None:
        return Result(tuple(full), 124, out, err + f"\ntimed out after {timeout:g}s")
    return Result(tuple(full), rc, out, err)


def attached(argv: Sequence[str]) -> int:
    """Run argv on this process's terminal (stdin, stdout and stderr its own) until it exits:
    its exit code, 127 for a program that is not there. Ctrl-C is the program's to handle
    (vtysh clears its line), so this process ignores it meanwhile."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return subprocess.call(list(argv))
    except FileNotFoundError:
        return 127
    finally:
        signal.signal(signal.SIGINT, previous)


# Popen objects of background processes, kept so they can be reaped (no zombies,
# no "still running" warnings when the object would be collected).
_spawned: dict[int, subprocess.Popen] = {}


def spawn(
    argv: Sequence[str],
    *,
    netns: str | None = None,
    log: str | None = None,
    pass_fds: Sequence[int] = (),
) -> int:
    """Start argv in the background (own session, so the caller's Ctrl-C does not
    reach it) and return its pid. Through `ip netns exec`, which execs the
    program in place: the pid is the program's own. Output goes to `log` (or
    /dev/null); `pass_fds` stay open in it (a lock it goes on holding). Raises
    OSError if the program cannot be started.
    """
    full = list(argv)
    if netns is not None:
        full = ["ip", "netns", "exec", netns, *full]
    # O_NOFOLLOW: a log path inside an untrusted OUTDIR must not write through a symlink
    out = (os.fdopen(os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644), "ab")
           if log else subprocess.DEVNULL)
    try:
        p = subprocess.Popen(
            full,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            pass_fds=tuple(pass_fds),
        )
    finally:
        if log:
            out.close()
    _spawned[p.pid] = p
    return p.pid


def wait(pid: int) -> None:
    """Wait for a process started by spawn() to end (no-op otherwise)."""
    p = _spawned.pop(pid, None)
    if p is not None:
        p.wait()


def reap(pid: int) -> None:
    """Collect the exit status of a process started by spawn() (no-op otherwise)."""
    p = _spawned.get(pid)
    if p is not None and p.poll() is not None:
        del _spawned[pid]
