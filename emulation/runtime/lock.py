"""One lock per lab: deploy, destroy, fault and push of one lab run one at a time.

The lock is an flock on ``/run/railonly/<lab>.lock``: outside OUTDIR (which
is untrusted and may be shared by two checkouts of one lab) and outside the
lab's run directory (which destroy removes). Exclusive for what changes the
lab (deploy, destroy, fault), shared for what only uses it (push, check,
traffic, a switch shell's ``config reload``), so a push's reloads run while
the push holds its shared lock, and a destroy waits for both.

Destroy removes the lock file while it holds it; a waiter that then gets the
lock on the removed file notices (its inode is no longer the path's) and
takes the lock again on the new file, so two holders never coexist.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import sys
from contextlib import contextmanager
from typing import Callable, Iterator

from ..lab import lock_path
from .protocol import RuntimeProblem


def path_of(lab: str, what: str = "lock") -> str:
    if "/" in lab or lab.startswith("."):  # load_lab checked the name (check_clab); never a path
        raise ValueError(f"not a lab name: {lab!r}")
    return lock_path(lab, what)


def _open_locked(path: str, shared: bool, wait_note: str | None) -> int | None:
    """The locked fd; None for a shared lock on a lab with no lock file (nothing
    deployed: a deploy creates the file and leaves it while the lab exists)."""
    if not shared:
        from .rundir import ensure_root

        ensure_root()  # /run/railonly: a real directory, root's, writable by root only
    op = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    while True:
        try:
            fd = os.open(path, os.O_RDWR | (0 if shared else os.O_CREAT) | os.O_NOFOLLOW | os.O_NONBLOCK
                         | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:
            return None
        except OSError as exc:  # a symlink (ELOOP), a directory, no room...: never followed, never a traceback
            raise RuntimeProblem(f"lab lock {path}: {_why(path, exc)}; remove it (as root) once no railonly"
                                 " command runs on the lab") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise RuntimeProblem(f"lab lock {path}: is not a regular file; remove it (as root) once no railonly"
                                 " command runs on the lab")
        try:
            try:
                fcntl.flock(fd, op | fcntl.LOCK_NB)
            except BlockingIOError:
                if wait_note:
                    print(wait_note, file=sys.stderr)
                    wait_note = None
                fcntl.flock(fd, op)
            try:
                same = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # removed by a destroy while we waited: lock the new file


def _why(path: str, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "is a symlink (a lock is never taken through one)"
    return exc.strerror or str(exc)


@contextmanager
def hold(lab: str, *, shared: bool = False, remove: "bool | Callable[[], bool]" = False,
         what: str = "lock") -> Iterator[None]:
    """Hold the lab's lock for the block. ``remove`` (exclusive only; a bool, or a
    function asked at release): delete the lock file before releasing it, so
    nothing of an absent lab stays behind."""
    path = path_of(lab, what)
    fd = _open_locked(path, shared, f"lab {lab}: waiting for another railonly command on it ({path})")
    try:
        yield
    finally:
        if fd is not None:
            try:
                if not shared and (remove() if callable(remove) else remove):
                    os.unlink(path)
            except FileNotFoundError:
                pass
            finally:
                os.close(fd)


LOCKS = ("lock", "reload.lock")  # the lab lock, and the one that serialises a switch's config reloads


def remove_unheld(lab: str) -> list[str]:
    """After a destroy: remove the lab's lock files that nobody holds (one held, by the
    caller's command or anyone else, stays: its holder removes it). Returns those removed."""
    gone = []
    for what in LOCKS:
        path = path_of(lab, what)
        try:
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino:
                os.unlink(path)
                gone.append(path)
        except OSError:
            pass  # held (or already replaced): not ours to remove now
        finally:
            os.close(fd)
    return gone
