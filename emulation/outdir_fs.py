"""Files inside an untrusted OUTDIR, read and written as root without following a symlink.

An OUTDIR is whatever a pull request made it, and the lab commands run as
root. So: OUTDIR itself is resolved once (the path the user gave, on
purpose); below it, :func:`check_tree` refuses any symlink or special file
(FIFO, device, socket) before a command uses the tree, and every read and
write below goes through a directory-fd walk with ``O_NOFOLLOW`` on each
component (:class:`TreeIO`), so a symlink placed later is refused too
instead of being followed. Writes are temp file + rename inside that
directory fd (a rename replaces a symlink, it never writes through one).

Every refusal is an :class:`UnsafePath` (exit 2) naming the path.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from .runtime import LabError

MAX_ENTRIES = 200_000  # a compiled OUTDIR of the largest design holds a few thousand files
MAX_READ = 256 * 1024 * 1024  # fabric.json of a 100k-GPU design is tens of MB


class UnsafePath(LabError):
    """A path inside OUTDIR that a root process must not use (exit 2)."""

    def __init__(self, path: str | os.PathLike, message: str, hint: str = ""):
        super().__init__(str(path), message, hint or "remove it: railonly never writes one there "
                         "(recompile into a fresh OUTDIR)")


def resolve_outdir(outdir: str | os.PathLike) -> Path:
    """OUTDIR made absolute with its symlinks resolved, once: every later path and
    every daemon's config is built from this (a relative OUTDIR breaks sshd)."""
    return Path(os.path.realpath(os.fspath(outdir)))


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    return "not a regular file or directory"


def check_tree(root: str | os.PathLike, skip: tuple[str, ...] = ()) -> None:
    """UnsafePath for the first symlink or special file anywhere below ``root``
    (``root`` itself must be a real directory). ``skip``: names directly under
    root not scanned (never used by the caller)."""
    root = os.fspath(root)
    st = os.lstat(root)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(root, f"is {_kind(st.st_mode)}, not a directory")
    seen = 0
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError as exc:
            raise UnsafePath(d, f"cannot be listed: {exc.strerror}") from None
        for e in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                raise UnsafePath(root, f"holds more than {MAX_ENTRIES} entries", "give the OUTDIR of railonly compile")
            if d == root and e.name in skip:
                continue
            mode = e.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                stack.append(e.path)
            elif not stat.S_ISREG(mode):
                raise UnsafePath(e.path, f"is {_kind(mode)}; a root process reading or writing the lab refuses it")


class TreeIO:
    """Reads and writes below ``root`` by relative path, never following a symlink
    (``root`` itself is trusted: resolve it with :func:`resolve_outdir`)."""

    def __init__(self, root: str | os.PathLike):
        self.root = os.fspath(root)

    def _parts(self, rel: str) -> list[str]:
        parts = [p for p in str(rel).split("/") if p not in ("", ".")]
        if not parts or ".." in parts or any("\0" in p for p in parts):
            raise UnsafePath(os.path.join(self.root, str(rel)), "is not a plain path below OUTDIR")
        return parts

    def _refuse(self, path: str, exc: OSError):
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            mode = None
        if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            return UnsafePath(path, f"is {_kind(mode)}; a root process reading or writing the lab refuses it")
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            return UnsafePath(path, "is not a directory (or is a symlink)")
        return None

    def _dir_fd(self, parts: list[str], create: bool, mode: int = 0o755) -> int:
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        path = self.root
        try:
            for p in parts:
                path = os.path.join(path, p)
                flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
                try:
                    nfd = os.open(p, flags, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(p, mode, dir_fd=fd)
                    except FileExistsError:
                        pass
                    nfd = os.open(p, flags, dir_fd=fd)
                except OSError as exc:
                    raise (self._refuse(path, exc) or exc) from None
                os.close(fd)
                fd = nfd
            return fd
        except BaseException:
            os.close(fd)
            raise

    def path(self, rel: str) -> str:
        return os.path.join(self.root, *self._parts(rel))

    def makedirs(self, rel: str, mode: int = 0o755) -> None:
        os.close(self._dir_fd(self._parts(rel), create=True, mode=mode))

    def chmod_dir(self, rel: str, mode: int) -> None:
        fd = self._dir_fd(self._parts(rel), create=False)
        try:
            os.fchmod(fd, mode)
        finally:
            os.close(fd)

    def exists(self, rel: str) -> bool:
        parts = self._parts(rel)
        try:
            fd = self._dir_fd(parts[:-1], create=False)
        except FileNotFoundError:
            return False
        try:
            os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
            return True
        except FileNotFoundError:
            return False
        finally:
            os.close(fd)

    def read_bytes(self, rel: str, limit: int = MAX_READ) -> bytes:
        """The file's bytes; FileNotFoundError when it (or a parent) is missing."""
        parts = self._parts(rel)
        path = os.path.join(self.root, *parts)
        dfd = self._dir_fd(parts[:-1], create=False)
        try:
            try:
                fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
            except FileNotFoundError:
                raise
            except OSError as exc:  # ELOOP: a symlink
                raise (self._refuse(path, exc) or exc) from None
        finally:
            os.close(dfd)
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise UnsafePath(path, f"is {_kind(st.st_mode)}, not a regular file")
            if st.st_size > limit:
                raise UnsafePath(path, f"is {st.st_size} bytes, more than the limit of {limit}")
            data = f.read(limit + 1)
        if len(data) > limit:
            raise UnsafePath(path, f"is more than the limit of {limit} bytes")
        return data

    def read_text(self, rel: str, limit: int = MAX_READ) -> str:
        data = self.read_bytes(rel, limit)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LabError(self.path(rel), f"is not UTF-8 text (byte {exc.start})", "recompile the design") from None

    def write_bytes(self, rel: str, data: bytes, mode: int = 0o644) -> None:
        """Atomically replace ``rel`` (parents created): temp file + rename in the directory fd."""
        parts = self._parts(rel)
        dfd = self._dir_fd(parts[:-1], create=True)
        tmp = f".{parts[-1]}.tmp{os.getpid()}"
        try:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except FileNotFoundError:
                pass
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dfd)
            with os.fdopen(fd, "wb") as f:
                os.fchmod(f.fileno(), mode)  # exactly mode, whatever the umask
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, parts[-1], src_dir_fd=dfd, dst_dir_fd=dfd)
        finally:
            os.close(dfd)

    def write_text(self, rel: str, text: str, mode: int = 0o644) -> None:
        self.write_bytes(rel, text.encode("utf-8"), mode)

    def open_append(self, rel: str, mode: int = 0o644) -> int:
        """An fd appending to ``rel`` (created if missing; a symlink is refused)."""
        parts = self._parts(rel)
        path = os.path.join(self.root, *parts)
        dfd = self._dir_fd(parts[:-1], create=True)
        try:
            return os.open(parts[-1], os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                           mode, dir_fd=dfd)
        except OSError as exc:
            raise (self._refuse(path, exc) or exc) from None
        finally:
            os.close(dfd)

    def unlink(self, rel: str) -> bool:
        """Remove a file (a symlink is removed, never followed); False if it was not there."""
        parts = self._parts(rel)
        try:
            dfd = self._dir_fd(parts[:-1], create=False)
        except FileNotFoundError:
            return False
        try:
            os.unlink(parts[-1], dir_fd=dfd)
            return True
        except FileNotFoundError:
            return False
        finally:
            os.close(dfd)
