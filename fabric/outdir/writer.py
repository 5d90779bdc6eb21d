"""The one writer: a whole OUTDIR appears at once or not at all, and only where
railonly may write.

Artifacts are rendered into a sibling staging directory, then swapped into
place with renameat2(RENAME_EXCHANGE) so readers never see a half-written
OUTDIR, and a failed or interrupted compile leaves the previous one intact.
The OUTDIR holds only what the compiler wrote: a lab's runtime records live
in its root-owned run directory (/run/railonly/<lab>), which names the
OUTDIR's path, so recompiling a deployed lab does not orphan it.

Never destroy what railonly did not write (:func:`prepare`): an existing
directory is replaced only when it is empty or a railonly OUTDIR, which its
MANIFEST.json says: a regular JSON file whose ``generator`` is
``railonly <version>`` (:func:`is_railonly_outdir`), holding nothing that MANIFEST.json
does not list (:func:`not_written`), and no file it lists changed since
(:func:`refuse_changed`: an edit by hand would be thrown away). Anything else is refused
(exit 2) unless the caller forces it. ``''``, the current directory or one of
its parents, ``/``, a file, a path under a file and a directory holding the
design being compiled are always refused. A symlinked OUTDIR is resolved once,
on purpose, and the command says so; the swap happens at its target (a link to
nothing is refused: its target could be anywhere).

The previous tree, swapped out to the staging name, is kept as the spare in railonly's
cache when the caller asks (the next stage starts from it: :func:`stage`'s `spare`).
Otherwise it is removed before the command returns; for a big OUTDIR only its files
are (cheap, and it settles the link counts of files hard-linked into the new tree),
and its thousands of folders go in a detached process that keeps the staging lock
until they are gone.

Staging directories are named ``.railonly-stage-<outdir>-XXXX`` and hold a
marker file that the writing process keeps flock'ed; the next write into the
same parent removes those whose lock is free (their writer died), and only
those. Disk full, permission denied, a read-only file system: :class:`WriteFailed`
(exit 3) with the path; the previous OUTDIR stays as it was. Files are 0644,
folders 0755, whatever the umask.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import hashlib
import json
import os
import re
import stat
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from collections.abc import Container
from typing import Callable

from ..outdir_layout import FABRIC_JSON, MANIFEST, folders_of
from ..input.jsonsource import load_json_file
from ..input.problems import InputError, Problem, short
from ..version import __version__
from .previous import Previous, stat_key
from . import removal
from .removal import empty, remove_tree

FILE_MODE, DIR_MODE = 0o644, 0o755  # of every file and folder written, whatever the umask
GENERATOR = "railonly"  # MANIFEST.json "generator" is "railonly <version>": the marker of our OUTDIRs
_GENERATOR_RE = re.compile(r"railonly( [^\s]{1,40})?")
STAGE_PREFIX = ".railonly-stage-"
STAGE_MARKER = ".railonly-staging"  # inside a staging dir, flock'ed by its writer
MANIFEST_MAX_BYTES = 64 << 20
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
# The staging folder beside OUTDIR is named STAGE_PREFIX + its name + "-" + 8 random
# characters (mkdtemp), and must fit NAME_MAX; its files' paths (configs/<node>/...) must fit
# PATH_MAX, with room for the longest of them.
_NAME_MAX, _PATH_MAX, _LONGEST_INSIDE = 255, 4096, 256
LONGEST_NAME = _NAME_MAX - len(STAGE_PREFIX) - 9
BACKGROUND_REMOVAL_FILES = 2048  # from this size the old tree's folders are removed after the command returns


class OutdirRefused(InputError):
    """OUTDIR may not be replaced (exit 2); nothing was written."""

    def __init__(self, outdir: str, message: str, hint: str, more: "list[Problem] | tuple" = ()):
        super().__init__([Problem("", message, hint, None, outdir or "''"), *more])


class WriteFailed(Exception):
    """The file system refused a write (disk full, permission, read-only): exit 3."""

    def __init__(self, path: str, exc: OSError, outdir: str):
        self.path = path
        self.errno = exc.errno
        super().__init__(f"cannot write {path}: {exc.strerror or exc}; "
                         f"{outdir} was not changed")


@dataclass
class Target:
    """Where an OUTDIR goes: `path` resolved once, `given` as the user wrote it."""

    given: str
    path: str
    notes: list[str] = field(default_factory=list)  # said to the user (symlink resolved, --force ...)
    # path -> sha256 its MANIFEST.json lists, of the railonly OUTDIR standing there (not with --force)
    listed: dict = field(default_factory=dict)


def _exchange(a: str, b: str) -> bool:
    """Atomically swap two paths; False where the kernel or libc cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return fn(_AT_FDCWD, a.encode(), _AT_FDCWD, b.encode(), _RENAME_EXCHANGE) == 0


def manifest(files: dict[str, bytes], design_sha256: str, known: "dict[str, str] | None" = None) -> bytes:
    """MANIFEST.json of `files` plus `known` ({path: sha256} of files carried over unchanged)."""
    sums = {path: hashlib.sha256(data).hexdigest() for path, data in files.items()}
    sums.update(known or {})
    doc = {
        "generator": f"{GENERATOR} {__version__}",
        "design_sha256": design_sha256,
        "files": dict(sorted(sums.items())),
    }
    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()


def _railonly_files(path: str) -> "dict | None":
    """The files a MANIFEST.json written by railonly lists at `path` (read as untrusted:
    a regular file, bounded, never through a symlink); None when there is no such manifest."""
    doc = load_json_file(os.path.join(path, MANIFEST), MANIFEST_MAX_BYTES)
    gen = doc.get("generator") if isinstance(doc, dict) else None
    files = doc.get("files") if isinstance(doc, dict) else None
    return files if isinstance(gen, str) and _GENERATOR_RE.fullmatch(gen) and isinstance(files, dict) else None


def is_railonly_outdir(path: str) -> bool:
    """True when `path` holds a MANIFEST.json written by railonly."""
    return _railonly_files(path) is not None


def _listing(path: str, limit: int = 3) -> str:
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return ""
    shown = ", ".join(short(n, 40) for n in names[:limit])
    return f" (holds {shown}{', ...' if len(names) > limit else ''})"


def prepare(outdir: str, force: bool = False, inputs: tuple[str, ...] = (), kind: str = FABRIC_JSON) -> Target:
    """Decide where OUTDIR goes, or raise OutdirRefused (see module doc).

    `inputs` are files the command reads (the design): an OUTDIR that holds one
    is refused even with `force`, since replacing it would delete it. `kind`: the file
    every OUTDIR of the writing command holds (a compile's fabric.json, a sweep's
    sweep.csv): a railonly OUTDIR of another command is not replaced without `force`."""
    if not outdir or not outdir.strip():
        raise OutdirRefused(outdir, "OUTDIR is empty", "give a directory, e.g. -o out")
    given = outdir
    absolute = os.path.abspath(outdir)
    path = os.path.realpath(absolute)
    notes = []
    if os.path.islink(absolute):
        if not os.path.lexists(path):
            raise OutdirRefused(given, f"is a symbolic link to {path}, which does not exist; railonly follows a link "
                                "only to a directory that is there, never making its target",
                                f"create the directory first (mkdir -p {path}), or give -o a path that is not a link")
        notes.append(f"note: OUTDIR {given} is a symbolic link; writing to its target {path} (resolved once, "
                     "on purpose: the link itself stays)")
    name_bytes, path_bytes = len(os.fsencode(os.path.basename(path))), len(os.fsencode(path))
    if name_bytes > LONGEST_NAME or path_bytes > _PATH_MAX - _LONGEST_INSIDE:
        raise OutdirRefused(short(given), f"is too long ({name_bytes:,} bytes of name, {path_bytes:,} of path): its staging "
                            f"folder and files need a name of at most {LONGEST_NAME} bytes and a path of at most "
                            f"{_PATH_MAX - _LONGEST_INSIDE:,}", "give a shorter directory name, e.g. -o out")
    cwd = os.path.realpath(os.getcwd())
    if path == "/" or path == cwd or cwd.startswith(path.rstrip("/") + "/"):
        raise OutdirRefused(given, f"is {'/' if path == '/' else 'the current directory or one of its parents'} "
                            f"({path}); replacing it would delete everything in it",
                            "give a new directory for the output, e.g. -o out")
    # The nearest existing ancestor must be a directory (a path under a file can never be made).
    probe = os.path.dirname(path)
    while not os.path.lexists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        raise OutdirRefused(given, f"cannot be created: {probe} is a file, not a directory",
                            "give a path under a directory")
    for src in inputs:
        real = os.path.realpath(src)
        if real.startswith(path.rstrip("/") + "/"):
            raise OutdirRefused(given, f"holds {src}, which this command reads; replacing OUTDIR would delete it",
                                "write the output to another directory")
    if os.path.lexists(path):
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            raise OutdirRefused(given, "exists and is not a directory", "remove it or give another path")
        try:
            empty = not os.listdir(path)
        except OSError as exc:
            raise OutdirRefused(given, f"cannot be listed: {exc.strerror}", "give another directory") from None
        files = None if empty else _railonly_files(path)  # read once: a 32k OUTDIR's is megabytes
        if not empty and files is None:
            if not force:
                raise OutdirRefused(given, "exists and is not a railonly OUTDIR (no MANIFEST.json from railonly)"
                                    f"{_listing(path)}; railonly replaces only its own OUTDIRs or empty folders",
                                    "give a new directory, or add --force to replace it and everything in it")
            notes.append(f"note: replacing {given}, which is not a railonly OUTDIR (--force)")
        elif not empty and kind not in files:
            if not force:
                raise OutdirRefused(given, f"is a railonly OUTDIR of another command (its MANIFEST.json lists no {kind})"
                                    f"{_listing(path)}; this command replaces only its own OUTDIRs or empty folders",
                                    "give a new directory, or add --force to replace it and everything in it")
            notes.append(f"note: replacing {given}, a railonly OUTDIR of another command (--force)")
        elif not empty and not force:
            extra = not_written(path, files)
            if extra:
                more = f" and {len(extra) - 3:,} more" if len(extra) > 3 else ""
                # the changed files too, in the same refusal: one move-out, not two rounds of them
                changed = changed_files(Target(given, path, notes, files))
                raise OutdirRefused(given, f"holds {'at least ' if len(extra) >= EXTRA_LISTED else ''}{len(extra):,} "
                                    f"entr{'y' if len(extra) == 1 else 'ies'} railonly did not write "
                                    f"({', '.join(short(e, 60) for e in extra[:3])}{more}: not in its MANIFEST.json); "
                                    f"replacing the whole tree would delete {'it' if len(extra) == 1 else 'them'}",
                                    f"move {'it' if len(extra) == 1 else 'them'} out of OUTDIR and run the command "
                                    "again, or add --force to replace it and everything in it",
                                    [_changed_problem(given, changed)] if changed else [])
        if not empty and not force and files is not None:
            return Target(given, path, notes, files)
    return Target(given, path, notes)


CHANGED_LISTED = 3  # changed files a refusal names
HASH_MAX_BYTES = 4 << 30  # a file larger than this is taken as changed unread (no railonly file is)


def refuse_changed(target: Target, intact: "Container[str]" = ()) -> None:
    """OutdirRefused when a file the OUTDIR's MANIFEST.json lists no longer holds the bytes it
    lists (an edit by hand, or another kind of entry in its place): replacing the tree would
    throw the change away. `intact`: paths the caller has verified unchanged since railonly
    wrote them (a compile's record: their stat is the recorded one), not read again. A
    listed file that is gone is no change to keep."""
    changed = changed_files(target, intact)
    if changed:
        problem = _changed_problem(target.given, changed)
        raise OutdirRefused(target.given, problem.message, problem.hint)


def changed_files(target: Target, intact: "Container[str]" = ()) -> list[str]:
    """The files :func:`refuse_changed` refuses for, sorted."""
    if not target.listed:
        return []
    changed = []
    folders = _Folders(target.path)
    try:
        for rel, digest in sorted(target.listed.items(), key=lambda item: str(item[0])):
            if (isinstance(rel, str) and rel not in intact and _safe_relpath(rel) and rel != MANIFEST
                    and not _holds_bytes(folders, rel, digest)):
                changed.append(rel)
    finally:
        folders.close()
    return changed


def _changed_problem(outdir: str, changed: list[str]) -> Problem:
    more = f" and {len(changed) - CHANGED_LISTED:,} more" if len(changed) > CHANGED_LISTED else ""
    return Problem("", f"holds {len(changed):,} file{'s' if len(changed) > 1 else ''} changed since "
                   f"railonly wrote {'them' if len(changed) > 1 else 'it'} "
                   f"({', '.join(short(c, 60) for c in changed[:CHANGED_LISTED])}{more}: not what its "
                   "MANIFEST.json lists); replacing the tree would throw the changes away",
                   "copy the changed files out of OUTDIR and run the command again, or add --force to "
                   "replace them", None, outdir or "''")


class _Folders:
    """Descriptors of the folders below `top`, each opened once from its parent without
    following a link (the files of one folder come together in sorted order)."""

    def __init__(self, top: str):
        self.fds = {"": os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)}

    def fd(self, folder: str) -> int:
        """The folder's descriptor; OSError when a part of it is a link or no folder."""
        if folder not in self.fds:
            parent, _, name = folder.rpartition("/")
            self.fds[folder] = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                                       dir_fd=self.fd(parent))
        return self.fds[folder]

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()


def _holds_bytes(folders: _Folders, rel: str, digest) -> bool:
    """The entry at `rel` is gone, or a regular file whose sha256 is `digest`: a link or any
    other kind of entry in a listed file's place is a change."""
    folder, _, name = rel.rpartition("/")
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
                     dir_fd=folders.fd(folder))
    except FileNotFoundError:
        return True  # nothing there to lose
    except OSError:
        return False  # a link, or what cannot be opened: not the file railonly wrote
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > HASH_MAX_BYTES:
            return False
        h = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        return h.hexdigest() == digest
    except OSError:
        return False
    finally:
        os.close(fd)


EXTRA_LISTED = 1000  # entries not_written lists at most: enough to name them, bounded on a hostile tree
OLD_RUN_DIR = ".lab"  # where railonly before the run directory (/run/railonly/<lab>) kept a lab's records


def not_written(path: str, files: dict) -> list[str]:
    """Entries below OUTDIR `path` that its MANIFEST.json (`files`: path -> sha256) does not
    account for: neither a listed file (a folder in its place is not), nor MANIFEST.json, nor
    a folder on a listed file's path, nor an older railonly's `.lab` records. Sorted, at most
    EXTRA_LISTED; a folder that is extra is named, not entered; no link is followed (a link
    is an entry like any other)."""
    folders = folders_of(rel for rel in files if isinstance(rel, str))
    extra: list[str] = []
    todo = [""]
    written = set(files) | {MANIFEST, OLD_RUN_DIR}
    while todo and len(extra) < EXTRA_LISTED:
        here = todo.pop()
        try:
            with os.scandir(os.path.join(path, here) if here else path) as entries:
                for entry in entries:
                    rel = f"{here}/{entry.name}" if here else entry.name
                    folder = entry.is_dir(follow_symlinks=False)
                    if rel in written and (rel == OLD_RUN_DIR or not folder):
                        continue
                    (todo if folder and rel in folders else extra).append(rel)
        except OSError:
            extra.append(here)  # a folder that cannot be listed: its entries are not known to be ours
    return sorted(extra)[:EXTRA_LISTED]


def _target(outdir: "str | Target") -> Target:
    if isinstance(outdir, Target):
        return outdir
    target = prepare(outdir)
    refuse_changed(target)
    return target


# --- staging -----------------------------------------------------------------------

_locks: dict[str, int] = {}  # staging dir -> fd of its flock'ed marker


def _mark(d: str) -> None:
    """Create and lock the marker that says `d` is a staging dir of a live writer."""
    fd = os.open(os.path.join(d, STAGE_MARKER), os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, f"railonly staging directory of pid {os.getpid()}\n".encode())
    _locks[d] = fd


def _unmark(d: str, unlink: bool) -> None:
    fd = _locks.pop(d, None)
    if unlink:
        try:
            os.unlink(os.path.join(d, STAGE_MARKER))
        except FileNotFoundError:
            pass
    if fd is not None:
        os.close(fd)


def remove_stale_staging(parent: str) -> list[str]:
    """Remove staging dirs in `parent` whose writer died (marker present, lock
    free); anything else, including other programs' files, is left alone."""
    removed = []
    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(STAGE_PREFIX)]
    except OSError:
        return removed
    for e in entries:
        if not e.is_dir(follow_symlinks=False):
            continue
        try:
            dfd = os.open(e.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fd = os.open(STAGE_MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
        except OSError:
            continue  # no marker: not recognisably ours
        finally:
            os.close(dfd)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its writer is alive
            remove_tree(e.path)  # never follows a symlink, whatever the depth
            removed.append(e.path)
        finally:
            os.close(fd)
    return removed


def _write_files(root: str, items: list[tuple[str, bytes]], threads: int = 4,
                 staged: "dict[str, list[int]] | None" = None) -> None:
    """Write files on a few threads: the kernel copy and ext4 allocation run
    without the GIL, so a 17,000-file OUTDIR lands in about half the time.
    `staged` gets each file's stat key as written."""
    fix_mode = (FILE_MODE & ~_umask()) != FILE_MODE

    def write(chunk: list[tuple[str, bytes]]) -> None:
        for path, data in chunk:
            full = os.path.join(root, path)
            try:
                fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
                try:
                    if fix_mode:
                        os.fchmod(fd, FILE_MODE)
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view):]
                    if staged is not None:
                        staged[path] = stat_key(os.fstat(fd))
                finally:
                    os.close(fd)
            except OSError as exc:
                exc.filename = exc.filename or full  # os.write errors carry no path
                raise

    if len(items) < 256:
        write(items)
        return
    with ThreadPoolExecutor(threads) as pool:
        for done in pool.map(write, [items[i::threads] for i in range(threads)]):
            pass  # re-raises a worker's error here


def _link_files(root: str, paths: list[str], previous: "Previous", threads: int = 4,
                staged: "dict[str, list[int]] | None" = None) -> None:
    """Hard-link carried files from the previous OUTDIR (a directory entry each, no
    bytes copied); where the file system refuses a link, or the file is no longer the
    one recorded (edited in place since the record was checked: its ctime moved; or
    replaced: links go by path), copy the checked bytes (an edited or replaced file
    fails that check: previous.Changed). `staged` gets each file's stat key as linked."""
    def link(chunk: list[str]) -> list[str]:
        refused = []
        for path in chunk:
            source, dest = os.path.join(previous.outdir, path), os.path.join(root, path)
            try:
                if not previous.unchanged(path, os.lstat(source)):
                    refused.append(path)
                    continue
                os.link(source, dest, follow_symlinks=False)
            except OSError as exc:
                if exc.errno == errno.EEXIST:
                    raise
                refused.append(path)
                continue
            st = os.lstat(dest)
            if not previous.same_file(path, st):
                os.unlink(dest)
                refused.append(path)
            elif staged is not None:
                staged[path] = stat_key(st)
        return refused

    with ThreadPoolExecutor(threads) as pool:
        refused = [p for part in pool.map(link, [paths[i::threads] for i in range(threads)]) for p in part]
    if refused:
        _write_files(root, [(p, previous.read(p)) for p in refused], staged=staged)


def _make_dirs(root: str, folders: "set[str]") -> None:
    """The `folders` below `root`, 0755 whatever the umask: one mkdir each, parents
    first (thousands of them in a big OUTDIR), a chmod only where the umask took bits away."""
    fix_mode = (DIR_MODE & ~_umask()) != DIR_MODE
    for d in sorted(folders):  # a parent sorts before its children
        full = os.path.join(root, d)
        os.mkdir(full, DIR_MODE)
        if fix_mode:
            os.chmod(full, DIR_MODE)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _safe_relpath(path: str) -> bool:
    parts = path.split("/")
    return bool(path) and not path.startswith("/") and all(p not in ("", ".", "..") for p in parts)


def _take_spare(spare: str, tmp: str) -> bool:
    """Move `spare` (an earlier tree of this OUTDIR, kept in railonly's cache) onto the
    empty staging dir `tmp`: one rename. False, and the spare gone, where it cannot move
    (another mount: EXDEV) or is not a directory of ours; then `tmp` stays empty."""
    try:
        st = os.lstat(spare)
    except OSError:
        return False
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
        try:
            os.rename(spare, tmp)  # a directory replaces an empty one
            return True
        except OSError:
            pass
    remove_tree(spare)
    return False


def _reconcile(root: str, folders: "set[str]", keep: "dict[str, list[int]]",
               staged: "dict[str, list[int]]") -> tuple[set[str], set[str]]:
    """Cut the tree at `root` (a spare taken by :func:`_take_spare`) down to what a new
    stage may hold: the folders among `folders`, and the files of `keep` (path -> stat
    key recorded for the previous OUTDIR's verified file of the same bytes) that it holds
    as that very file, a hard link of it untouched since (ctime too). Every other entry
    goes (a symlink is unlinked, never followed) and every folder kept is 0755 again, so
    what is left is exactly right whatever the spare went through (a folder someone else
    owns now goes too, made again). `staged` gets the stat key of each file held.
    Returns (files held, folders held)."""
    held: set[str] = set()
    present: set[str] = set()
    uid = os.geteuid()
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    todo = [("", os.open(root, flags))]
    while todo:
        rel, fd = todo.pop()
        try:
            os.fchmod(fd, DIR_MODE)  # as a made folder would be, whatever was done to it
            with os.scandir(fd) as listing:
                entries = list(listing)
            for e in entries:
                path = f"{rel}/{e.name}" if rel else e.name
                if not rel and e.name == STAGE_MARKER:
                    continue
                if e.is_dir(follow_symlinks=False):
                    if path in folders and e.stat(follow_symlinks=False).st_uid == uid:
                        present.add(path)
                        todo.append((path, os.open(e.name, flags, dir_fd=fd)))
                    else:  # not wanted, or someone else's now: made again
                        remove_tree(e.name, dir_fd=fd)
                elif (e.is_file(follow_symlinks=False) and path in keep and keep[path][1] == e.inode()
                      and stat_key(e.stat(follow_symlinks=False)) == keep[path]):
                    held.add(path)
                    staged[path] = keep[path]
                else:
                    os.unlink(e.name, dir_fd=fd)
        finally:
            os.close(fd)
    return held, present


def stage(outdir: "str | Target", files: dict[str, bytes], design_sha256: str,
          carried: "set[str] | frozenset[str]" = frozenset(), previous: "Previous | None" = None,
          sums: "dict[str, str] | None" = None, spare: "str | None" = None,
          staged: "dict[str, list[int]] | None" = None) -> str:
    """Write everything (plus MANIFEST.json) into a staging sibling of OUTDIR
    and return its path; nothing is visible at OUTDIR yet. `carried`: paths kept
    unchanged from the `previous` compile into OUTDIR, hard-linked from it (copied
    after a check of their sha256 where a link cannot be made); a rendered file with
    the bytes the previous compile wrote there is linked the same way. `spare`: where
    railonly kept an earlier tree of this OUTDIR (:func:`commit`'s `keep`); when it can
    be moved in, the stage starts from it and pays only for what differs (its folders
    stand, and its links to unchanged files are those the stage would make). `sums`,
    if given, is filled with every file's sha256, MANIFEST.json's own included, and
    `staged` with every file's stat key once it stands in the stage: previous.save
    checks nothing moved a file between then and its record."""
    target = _target(outdir)
    elsewhere = previous is not None and previous.outdir != target.path
    if elsewhere or (carried and (previous is None or carried & files.keys())):
        raise AssertionError("writer: carried files without their previous OUTDIR, or also rendered")  # a compiler bug
    bad = [p for p in list(files) + sorted(carried) if not _safe_relpath(p) or p == STAGE_MARKER]
    if bad:
        raise AssertionError(f"writer: unsafe artifact paths {bad[:5]}")  # a compiler bug
    parent = os.path.dirname(target.path)
    tmp = None
    try:
        os.makedirs(parent, mode=DIR_MODE, exist_ok=True)
        target.notes += [f"note: removed {p}, a staging directory left by a killed compile"
                         for p in remove_stale_staging(parent)]
        tmp = tempfile.mkdtemp(prefix=f"{STAGE_PREFIX}{os.path.basename(target.path)}-", dir=parent)
        reused = spare is not None and _take_spare(spare, tmp)
        if reused:
            remove_tree(os.path.join(tmp, STAGE_MARKER))  # ours to make: whatever stands there goes
        os.chmod(tmp, DIR_MODE)
        _mark(tmp)
        known = {p: previous.sha[p] for p in carried}
        for path, data in files.items():
            known[path] = hashlib.sha256(data).hexdigest()
        # a rendered file whose bytes the previous compile wrote already is linked, not rewritten
        same = {p for p in files if previous is not None and previous.sha.get(p) == known[p]}
        folders = folders_of(known)
        held: set[str] = set()
        stats: dict[str, list[int]] = {} if staged is None else staged
        if reused:
            keep = {p: previous.recorded_stat(p) for p in carried | same} if previous is not None else {}
            held, present = _reconcile(tmp, folders, keep, stats)
            folders -= present
        _make_dirs(tmp, folders)
        _write_files(tmp, sorted(item for item in files.items() if item[0] not in same), staged=stats)
        unlinked = (carried | same) - held
        if unlinked:
            _link_files(tmp, sorted(unlinked), previous, staged=stats)
        text = manifest({}, design_sha256, known)
        _write_files(tmp, [(MANIFEST, text)], staged=stats)
        if sums is not None:
            sums.update(known)
            sums[MANIFEST] = hashlib.sha256(text).hexdigest()  # recorded too: a no-op compile checks it
    except OSError as exc:
        if tmp:
            discard(tmp)
        raise WriteFailed(exc.filename or tmp or parent, exc, target.given) from None
    except BaseException:
        if tmp:
            discard(tmp)
        raise
    return tmp


def discard(tmp: str) -> None:
    _unmark(tmp, unlink=False)
    remove_tree(tmp)


def _unlink_files(top: str) -> None:
    """Unlink every file below `top` (never following a symlink), leaving its folders
    and the top-level marker: cheap directory entries, and it settles the link
    count and ctime of files hard-linked into the new OUTDIR before they are recorded."""
    try:
        fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return  # left to the reaper
    try:
        empty(fd, remove_folders=False, skip=STAGE_MARKER)
    finally:
        os.close(fd)


def reaper_argv(tmp: str) -> list[str]:
    """The detached removal of a swapped-out tree, for the caller to start (processes
    start in railonly.proc): it must inherit the staging lock."""
    return [sys.executable, "-I", "-S", removal.__file__, tmp, STAGE_MARKER]


def _hand_off(tmp: str, remove_later: "Callable[[str, int], None]") -> bool:
    """Remove `tmp` (marked and flock'ed by us): its files now, its folders (the slow
    part: thousands of rmdirs) by `remove_later(tmp, lock_fd)`, a detached process that
    inherits the lock. The command returns once the swap is done, and the skeleton stays
    recognisably a live writer's staging directory until it is gone (a killed reaper
    leaves it to :func:`remove_stale_staging`). False when that cannot start (then the
    caller removes it)."""
    fd = _locks.get(tmp)
    if fd is None or not sys.executable:
        return False
    try:
        _unlink_files(tmp)  # the swap is done: nothing here may fail the command
    except OSError:
        pass
    try:
        remove_later(tmp, fd)
    except OSError:
        return False
    _unmark(tmp, unlink=False)  # our copy of the lock goes; the reaper's holds it
    return True


def commit(tmp: str, outdir: "str | Target", remove_later: "Callable[[str, int], None] | None" = None,
           keep: "str | None" = None) -> tuple[int, int]:
    """Swap a staged tree into OUTDIR; returns its (device, inode). The previous tree,
    swapped out to the staging name, is moved to `keep` when given (railonly's cache: the
    next compile's stage starts from it, :func:`stage`'s `spare`); else, or where it
    cannot move there, it is removed before returning or, given `remove_later` (a big
    tree: thousands of folders to unlink), by the detached process it starts after the
    swap (_hand_off)."""
    target = _target(outdir)
    path = target.path
    try:
        staged = os.lstat(tmp)
        tree = staged.st_dev, staged.st_ino
        _unmark(tmp, unlink=True)  # the marker must not land in OUTDIR
        if os.path.isdir(path) and not os.path.islink(path):
            if not _exchange(tmp, path):
                # Fallback: two renames; a crash between them leaves the old tree in tmp.
                aside = tmp + ".old"
                os.rename(path, aside)
                os.rename(tmp, path)
                tmp = aside
            if keep is not None and _keep(tmp, keep):
                return tree
            try:
                _mark(tmp)  # now holds the previous OUTDIR: recognisably ours while it is removed
            except OSError:
                pass
            if not (remove_later and _hand_off(tmp, remove_later)):
                discard(tmp)
        else:
            os.rename(tmp, path)
    except OSError as exc:
        discard(tmp)
        raise WriteFailed(exc.filename or path, exc, target.given) from None
    except BaseException:
        discard(tmp)
        raise
    return tree


def _keep(tree: str, keep: str) -> bool:
    """Move the swapped-out `tree` to `keep`; False where it cannot go (another mount,
    or a spare already there that a concurrent compile left)."""
    try:
        os.makedirs(os.path.dirname(keep), mode=0o700, exist_ok=True)
        os.rename(tree, keep)
    except OSError:
        return False
    return True


def write_outdir(outdir: "str | Target", files: dict[str, bytes], design_sha256: str) -> Target:
    target = _target(outdir)
    commit(stage(target, files, design_sha256), target)
    return target


__all__ = ["OutdirRefused", "Target", "WriteFailed", "commit", "discard", "is_railonly_outdir", "manifest",
           "prepare", "reaper_argv", "remove_stale_staging", "stage", "write_outdir"]
