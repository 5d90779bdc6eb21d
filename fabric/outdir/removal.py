"""Removing trees railonly owns (staging dirs, spares, swapped-out OUTDIRs) whatever their shape.

``shutil.rmtree`` recurses once per folder level: a tree some thousand folders deep (a
hostile OUTDIR, or a leftover stage someone filled) raises RecursionError, a traceback,
and a stale stage that stays would lock every later compile out of its parent folder.
These walks are iterative and hold two descriptors at most whatever the depth: they
descend by ``openat(name, O_NOFOLLOW)`` and climb back by ``..``, checking they arrived
at the folder they left (a folder moved meanwhile ends the walk: nothing outside the
tree is touched). A symlink is unlinked, never followed. Errors are skipped: what cannot
be removed stays, as with ``rmtree(ignore_errors=True)``.

It imports only the standard library: the detached reaper runs this file with
``python -I -S`` (``python -I -S removal.py TOP MARKER``).
"""

from __future__ import annotations

import os
import stat
import sys

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _clear_level(fd: int, skip: "str | None") -> list[str]:
    """Unlink every non-folder in the open folder `fd` but `skip`; return its folders' names."""
    folders = []
    try:
        with os.scandir(fd) as listing:
            entries = list(listing)
    except OSError:
        return folders
    for e in entries:
        try:
            is_dir = e.is_dir(follow_symlinks=False)
        except OSError:
            is_dir = False
        if is_dir:
            folders.append(e.name)
        elif e.name != skip:
            try:
                os.unlink(e.name, dir_fd=fd)
            except OSError:
                pass
    return folders


def empty(top_fd: int, remove_folders: bool = True, skip: "str | None" = None) -> None:
    """Unlink everything below the open folder `top_fd` but its own entry `skip`; its
    sub-folders too when `remove_folders` (else they stay, emptied of files)."""
    fd = os.dup(top_fd)
    here = os.fstat(fd)
    stack: list[tuple[str, list[str], tuple[int, int]]] = []  # (name, parent's pending folders, parent's identity)
    pending = _clear_level(fd, skip)
    try:
        while True:
            if pending:
                name = pending.pop()
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError:
                    continue
                stack.append((name, pending, (here.st_dev, here.st_ino)))
                os.close(fd)
                fd = child
                here = os.fstat(fd)
                pending = _clear_level(fd, None)
                continue
            if not stack:
                return
            name, pending, identity = stack.pop()
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
            here = os.fstat(fd)
            if (here.st_dev, here.st_ino) != identity:
                return  # the folder was moved while we were in it: stop rather than climb elsewhere
            if remove_folders:
                try:
                    os.rmdir(name, dir_fd=fd)
                except OSError:
                    pass
    except OSError:
        return
    finally:
        os.close(fd)


def remove_tree(path: str, dir_fd: "int | None" = None) -> None:
    """Remove `path` (relative to `dir_fd` if given): a folder with everything below it,
    anything else (a symlink included: never followed) by unlinking it."""
    try:
        mode = os.lstat(path, dir_fd=dir_fd).st_mode
    except OSError:
        return
    try:
        if not stat.S_ISDIR(mode):
            os.unlink(path, dir_fd=dir_fd)
            return
        fd = os.open(path, _DIR_FLAGS, dir_fd=dir_fd)
        try:
            empty(fd)
        finally:
            os.close(fd)
        os.rmdir(path, dir_fd=dir_fd)
    except OSError:
        pass


def reap(top: str, marker: str) -> None:
    """The detached removal of a swapped-out tree: everything but the `marker` its
    flock'ed staging lock lives in, then the marker and `top` last, so a reaper killed
    halfway leaves a stale stage the next compile recognises and removes."""
    try:
        fd = os.open(top, _DIR_FLAGS)
    except OSError:
        return
    try:
        empty(fd, skip=marker)
    finally:
        os.close(fd)
    remove_tree(top)


if __name__ == "__main__":
    reap(sys.argv[1], sys.argv[2])
