"""Writing below an untrusted OUTDIR as root without following a symlink.

An OUTDIR is whatever a pull request made it, and the lab commands run as
root. Reading it is railonly.fabric.outdir.reader's job (OutdirReader,
unsafe_entries: the same checks `validate` runs); this is the writing half,
for the lab's runtime state in ``OUTDIR/.lab``: every path is walked one
directory fd at a time with ``O_NOFOLLOW`` (a symlink on the way is refused,
named), files are written to a temp file and renamed inside that directory
fd (a rename replaces a symlink, it never writes through one).

Every refusal is an :class:`UnsafePath` (exit 2) naming the path.
"""

from __future__ import annotations

import errno
import os
import stat

from railonly.fabric.input.yamlsource import file_kind

from ..lab import LabError


class UnsafePath(LabError):
    """A path inside OUTDIR that a root process must not use (exit 2)."""

    def __init__(self, path: str | os.PathLike, message: str, hint: str = ""):
        super().__init__(str(path), message, hint or "remove it: railonly never writes one there "
                         "(recompile into a fresh OUTDIR)")


class OutdirWriter:
    """Writes below ``root`` by relative path, never following a symlink (``root``
    itself is trusted: the OUTDIR as OutdirReader resolved it, once)."""

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
            return UnsafePath(path, f"is {file_kind(mode)}; a root process reading or writing the lab refuses it")
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
