"""Read a compiled OUTDIR as hostile input: bounded, allow-listed, no symlink followed.

Every open is relative to a directory descriptor with O_NOFOLLOW, so a
symlink anywhere (the OUTDIR itself, a folder, a file) is refused rather than
followed; only regular files are read, each up to a size limit, and folder
listings are bounded. A problem raises :class:`OutdirProblem` naming the file,
what is wrong and how to fix it (the commands exit 2).
"""

from __future__ import annotations

import errno
import os
import re
import stat

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")  # what the compiler ever names a file or folder
FILE_LIMIT = 64 << 20  # bytes of one file (cabling.csv of a 65,536-GPU design is about 30 MiB)
TOTAL_LIMIT = 2 << 30  # bytes read from one OUTDIR
ENTRIES_LIMIT = 1_000_000  # names listed in one OUTDIR


class OutdirProblem(Exception):
    """An OUTDIR (or a file in it) that is not what `railonly compile` writes."""

    def __init__(self, path: str, message: str, hint: str = ""):
        self.path, self.message, self.hint = path, message, hint
        super().__init__(f"{path}: {message}")

    def format(self) -> str:
        return f"error: {self.path}: {self.message}" + (f"\n  fix: {self.hint}" if self.hint else "")


_RECOMPILE = "recompile the design into a fresh OUTDIR with 'railonly compile'"


class OutdirReader:
    """Files of one OUTDIR by relative path ('configs/rail0-leaf0/frr.conf')."""

    def __init__(self, root: str):
        self.root = root
        self.read_bytes = 0
        self.entries = 0
        try:
            self.fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise OutdirProblem(root, _why(exc, "directory", _is_link(root)),
                                "give the OUTDIR of 'railonly compile' (its real path)") from None

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> "OutdirReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _where(self, rel: str) -> str:
        return os.path.join(self.root, rel)

    def _open(self, rel: str, flags: int) -> int:
        """Walk `rel` one component at a time from the OUTDIR, never through a symlink."""
        parts = rel.split("/")
        for part in parts:
            if not NAME.fullmatch(part):
                raise OutdirProblem(self._where(rel), f"unexpected name {part!r}", _RECOMPILE)
        fd = os.dup(self.fd)
        try:
            for i, part in enumerate(parts):
                last = i == len(parts) - 1
                f = (flags if last else os.O_RDONLY | os.O_DIRECTORY) | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
                try:
                    nfd = os.open(part, f, dir_fd=fd)
                except OSError as exc:
                    what = "directory" if (not last or flags & os.O_DIRECTORY) else "file"
                    raise OutdirProblem(self._where("/".join(parts[:i + 1])), _why(exc, what, _is_link(part, fd)),
                                        _RECOMPILE) from None
                os.close(fd)
                fd = nfd
            return fd
        except BaseException:
            os.close(fd)
            raise

    def text(self, rel: str, limit: int = FILE_LIMIT) -> str:
        """A regular file's UTF-8 text, at most `limit` bytes."""
        fd = self._open(rel, os.O_RDONLY)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OutdirProblem(self._where(rel), "is not a regular file", _RECOMPILE)
            if st.st_size > limit:
                raise OutdirProblem(self._where(rel), f"is {st.st_size:,} bytes, more than the {limit:,} a compiled file can have", _RECOMPILE)
            chunks, got = [], 0
            while got <= limit:
                chunk = os.read(fd, min(1 << 20, limit + 1 - got))
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
            if got > limit:
                raise OutdirProblem(self._where(rel), f"grew past {limit:,} bytes while being read", _RECOMPILE)
        finally:
            os.close(fd)
        self.read_bytes += got
        if self.read_bytes > TOTAL_LIMIT:
            raise OutdirProblem(self.root, f"holds more than {TOTAL_LIMIT:,} bytes of artifacts", _RECOMPILE)
        try:
            return b"".join(chunks).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise OutdirProblem(self._where(rel), f"is not UTF-8 text (byte {exc.start})", _RECOMPILE) from None

    def listdir(self, rel: str) -> list[str]:
        """Sorted names in a folder of the OUTDIR (each checked against the allow-list)."""
        fd = self._open(rel, os.O_RDONLY | os.O_DIRECTORY)
        try:
            names = []
            with os.scandir(fd) as it:
                for entry in it:
                    self.entries += 1
                    if self.entries > ENTRIES_LIMIT:
                        raise OutdirProblem(self.root, f"has more than {ENTRIES_LIMIT:,} files", _RECOMPILE)
                    if not NAME.fullmatch(entry.name):
                        raise OutdirProblem(self._where(f"{rel}/{entry.name}"), "unexpected name", _RECOMPILE)
                    names.append(entry.name)
        finally:
            os.close(fd)
        return sorted(names)

    def is_dir(self, rel: str) -> bool:
        try:
            st = os.stat(rel, dir_fd=self.fd, follow_symlinks=False)
        except OSError:
            return False
        return stat.S_ISDIR(st.st_mode)


def _is_link(path: str, dir_fd: int | None = None) -> bool:
    try:
        return stat.S_ISLNK(os.stat(path, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _why(exc: OSError, what: str, link: bool = False) -> str:
    if exc.errno == errno.ENOENT:
        return f"no such {what}"
    if link or exc.errno in (errno.ELOOP, errno.EMLINK):
        return "is a symlink (not followed)"
    if exc.errno == errno.ENOTDIR:
        return "is not a directory" if what == "directory" else "a folder on its path is not a directory"
    if exc.errno == errno.EISDIR:
        return "is a directory, not a file"
    return f"cannot be read: {exc.strerror}"
