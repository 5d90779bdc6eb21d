"""One pass over a whole OUTDIR by directory descriptors, by the reader's rules.

:class:`~railonly.fabric.outdir.reader.OutdirReader` opens a path one component at a
time (four opens for ``configs/<switch>/frr.conf``), which is right for a few files and
slow for all of them: a 32,768-GPU OUTDIR holds about 22,000. :func:`scan` opens each
folder once, relative to its parent's descriptor with ``O_NOFOLLOW|O_DIRECTORY``, and
each wanted file once, relative to its folder, with ``O_NOFOLLOW|O_NONBLOCK``; the
descriptor's own ``fstat`` then decides (a regular file within its limit), so nothing
swapped in between a listing and an open is ever followed or blocked on.

``scan(reader, limit_of, total)`` yields ``(rel, mode, data)`` for every entry below
OUTDIR (folders before their contents, names sorted): ``mode`` is the entry's own
type (``lstat``'s: a symlink is a symlink, never descended into), ``data`` the bytes of
a regular file for which ``limit_of(rel)`` gives a byte limit (``None``: not read). A file
over its limit, more than `total` bytes read in all, more than ``limits.FILES`` entries
or folders nested deeper than :data:`MAX_DEPTH` raise :class:`UntrustedFile` naming the
file or OUTDIR (exit 2). :func:`refuse_kind` words a refusal of an entry of the wrong
kind as the reader does.
"""

from __future__ import annotations

import errno
import operator
import os
import stat
from collections.abc import Callable, Iterator

from ..input import limits
from ..input.jsonsource import UntrustedFile
from ..input.yamlsource import file_kind, read_at_most
from .reader import LINK_HINT, OutdirReader

MAX_DEPTH = 32  # the compiler writes four levels (lab/configs/<switch>/<file>)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_NAME = operator.attrgetter("name")
_RECOMPILE = "recompile the design"


def refuse_kind(where: str, mode: int, wanted: str = "a regular file") -> UntrustedFile:
    """The reader's refusal of an entry that is not `wanted` ("a regular file", "a directory")."""
    if stat.S_ISLNK(mode):
        return UntrustedFile(where, "is a symbolic link; refused, not followed", LINK_HINT)
    return UntrustedFile(where, f"is {file_kind(mode)}, not {wanted}", _RECOMPILE)


def scan(reader: OutdirReader, limit_of: Callable[[str], int | None], total: int) -> Iterator[tuple[str, int, bytes | None]]:
    """Every entry below OUTDIR as (rel, mode, data); see the module doc."""
    state = {"entries": 0, "bytes": 0, "cap": limits.FILES.value}
    fd = os.open(reader.root, _DIR_FLAGS)
    try:
        yield from _folder(reader, fd, "", 0, limit_of, total, state)
    finally:
        os.close(fd)


def _folder(reader: OutdirReader, fd: int, rel: str, depth: int, limit_of, total: int, state: dict):
    if depth > MAX_DEPTH:
        raise UntrustedFile(reader.where(rel), f"is nested more than {MAX_DEPTH} folders deep; the compiler never writes that",
                            _RECOMPILE)
    try:
        with os.scandir(fd) as it:
            entries = sorted(it, key=_NAME)
    except OSError as exc:
        raise UntrustedFile(reader.where(rel) if rel else reader.given, f"cannot be listed: {exc.strerror}", "") from None
    state["entries"] += len(entries)
    if state["entries"] > state["cap"]:  # a tree no compile writes
        raise UntrustedFile(reader.given, f"holds more than {state['cap']:,} files and folders, the cap of an OUTDIR ({limits.FILES.env})",
                            f"recompile the design into a fresh OUTDIR, or raise the cap: {limits.FILES.env}={state['entries'] * 2}")
    for e in entries:
        sub = f"{rel}/{e.name}" if rel else e.name
        mode = _mode(e)
        if stat.S_ISDIR(mode):
            yield sub, mode, None
            try:
                child = os.open(e.name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:  # swapped for a link or a file since it was listed
                raise _refusal(reader, fd, e.name, sub, exc) from None
            try:
                yield from _folder(reader, child, sub, depth + 1, limit_of, total, state)
            finally:
                os.close(child)
            continue
        limit = limit_of(sub) if stat.S_ISREG(mode) else None
        if limit is None:
            yield sub, mode, None
            continue
        data = _read(reader, fd, e.name, sub, limit)
        state["bytes"] += len(data)
        if state["bytes"] > total:
            raise UntrustedFile(reader.given, f"holds more than {total:,} bytes of artifacts", f"{_RECOMPILE} into a fresh OUTDIR")
        yield sub, mode, data


def _mode(e: os.DirEntry) -> int:
    """The entry's own type from the listing (d_type); lstat only for the rare other kinds."""
    if e.is_symlink():
        return stat.S_IFLNK
    if e.is_dir(follow_symlinks=False):
        return stat.S_IFDIR
    if e.is_file(follow_symlinks=False):
        return stat.S_IFREG
    try:
        return e.stat(follow_symlinks=False).st_mode
    except FileNotFoundError:
        return stat.S_IFREG  # gone since it was listed: opening it says so
    except OSError:
        return 0


def _read(reader: OutdirReader, dir_fd: int, name: str, rel: str, limit: int) -> bytes:
    """The bytes of the regular file `name` in `dir_fd`: one open, one fstat on that descriptor."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise _refusal(reader, dir_fd, name, rel, exc) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise refuse_kind(reader.where(rel), st.st_mode)
        if st.st_size > limit:
            raise UntrustedFile(reader.where(rel), f"is larger than the limit of {limit:,} bytes", _RECOMPILE)
        data = os.read(fd, st.st_size + 1)  # one read: a regular file returns all it has
        if len(data) != st.st_size:  # grew or shrank since fstat: read on, bounded
            data += read_at_most(fd, limit - len(data)) if len(data) <= limit else b""
    except OSError as exc:
        raise UntrustedFile(reader.where(rel), f"cannot be read: {exc.strerror}", "") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise UntrustedFile(reader.where(rel), f"is larger than the limit of {limit:,} bytes", _RECOMPILE)
    return data


def _refusal(reader: OutdirReader, dir_fd: int, name: str, rel: str, exc: OSError) -> UntrustedFile:
    if exc.errno == errno.ENOENT:
        return UntrustedFile(reader.where(rel), "vanished while OUTDIR was read", "read it again once nothing writes to it")
    try:
        mode = os.lstat(name, dir_fd=dir_fd).st_mode
    except OSError:
        return UntrustedFile(reader.where(rel), f"cannot be read: {exc.strerror}", "")
    if stat.S_ISLNK(mode) or exc.errno == errno.ENOTDIR:
        return refuse_kind(reader.where(rel), mode, "a directory")
    return UntrustedFile(reader.where(rel), f"cannot be read: {exc.strerror}", "")
