"""What railonly last wrote into an OUTDIR, kept outside it, for incremental compiles.

The OUTDIR is untrusted (CI compiles onto trees that come from pull requests), so
nothing in it says what may be reused. After each compile railonly records, in its
own cache directory (``$RAILONLY_CACHE_DIR``, else ``$XDG_CACHE_HOME/railonly``,
else ``~/.cache/railonly``; one file per OUTDIR realpath, mode 0600 in a 0700
folder), every file it wrote with its sha256 and its stat (inode, size, mode,
link count, mtime_ns, ctime_ns), the OUTDIR directory's own (device, inode), and
each unit's digest (:mod:`railonly.fabric.devices.configs`), the digest of the
compile's inputs (design, platform files, railonly's build) and whether its
self-check ran. Like git's index, a
file counts as railonly's only when its lstat still matches: an edit, a
replacement, a new hard link, a chmod or a touch all move ctime, which no
user can set. A unit is carried over only when its digest is unchanged and every
one of its files matches; anything else is rendered and written again. Bytes
read from a carried file are checked against the recorded sha256 as well. When
the inputs are the same and OUTDIR holds exactly the recorded files, nothing
else, the compile has nothing to do (:meth:`Previous.up_to_date`).

Beside each record (``compile/<key>.json``) sit the spare (``<key>.tree``: the tree
the last compile swapped out, where the next stage starts; see outdir/writer.py) and
``<key>.owner``, the OUTDIR's path: a compile removes the record and spare of every
key whose OUTDIR is gone (:func:`note_owner`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile

from ..input.jsonsource import load_json_file
from ..version import __version__
from .removal import remove_tree

FORMAT = 2  # 2: the inputs' digest, the self-check flag and MANIFEST.json recorded
# a key's record, spare tree, and the file naming its OUTDIR
RECORD_SUFFIX, SPARE_SUFFIX, OWNER_SUFFIX = ".json", ".tree", ".owner"
PATH_MAX = 4096
RECORD_MAX_BYTES = 256 << 20


class Changed(Exception):
    """A carried file changed while the compile ran (exit 3: run it again)."""

    def __init__(self, path: str):
        super().__init__(f"{path} changed while railonly was compiling onto it; nothing was written, "
                         "run the compile again")


def cache_root() -> str:
    env = os.environ.get("RAILONLY_CACHE_DIR")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "railonly")


_KEY = re.compile(r"[0-9a-f]{40}")  # what _key gives


def _key(outdir_real: str) -> str:
    return hashlib.sha256(outdir_real.encode()).hexdigest()[:40]


def _folder(outdir_real: str) -> str | None:
    """The cache's folder of records and spares for `outdir_real`; None when the cache
    lies inside that OUTDIR (a record or spare there would be a stray file in it)."""
    cache = os.path.realpath(cache_root())
    if (cache.rstrip("/") + "/").startswith(outdir_real.rstrip("/") + "/"):
        return None
    return os.path.join(cache, "compile")


def record_path(outdir_real: str) -> str:
    return os.path.join(os.path.realpath(cache_root()), "compile", f"{_key(outdir_real)}{RECORD_SUFFIX}")


def spare_path(outdir_real: str) -> str | None:
    """Where the tree an incremental compile swapped out of `outdir_real` is kept: the
    next compile's stage starts from it (writer.stage's `spare`). Its files are hard links
    of OUTDIR's unchanged ones (no bytes), plus the replaced versions of the changed ones.
    None when the cache lies inside OUTDIR (:func:`_folder`)."""
    folder = _folder(outdir_real)
    return None if folder is None else os.path.join(folder, f"{_key(outdir_real)}{SPARE_SUFFIX}")


def note_owner(outdir_real: str) -> None:
    """Say whose record and spare sit under this OUTDIR's key, and remove every record and
    spare whose OUTDIR is gone: a spare's hard links would keep a deleted OUTDIR's bytes on
    disk, and a record at 32k GPUs is a few MB."""
    folder = _folder(outdir_real)
    if folder is None:
        return
    own = _key(outdir_real)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        _replace(os.path.join(folder, f"{own}{OWNER_SUFFIX}"), outdir_real)
        names = os.listdir(folder)
    except OSError:
        return
    # each key once, only names of the shape railonly gives (a cache folder set to one that
    # holds other files: they stay); this OUTDIR's own is left alone: it may not exist yet
    keys = {key for key, _dot, suffix in (name.partition(".") for name in names)
            if _KEY.fullmatch(key) and "." + suffix in (SPARE_SUFFIX, OWNER_SUFFIX, RECORD_SUFFIX)} - {own}
    for key in sorted(keys):
        base = os.path.join(folder, key)
        try:
            with os.fdopen(os.open(base + OWNER_SUFFIX, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)) as fh:
                said = fh.read(PATH_MAX)
        except (OSError, UnicodeDecodeError):
            # no owner said: written by a railonly from before owner files (its OUTDIR is not
            # known without reading the whole record), or its owner file went in a race; the
            # next compile into that OUTDIR is a full one
            said = ""
        if not said or not os.path.isdir(said):
            remove_tree(base + SPARE_SUFFIX)
            for gone in (base + RECORD_SUFFIX, base + OWNER_SUFFIX):
                try:
                    os.unlink(gone)
                except OSError:
                    pass


def _as_made(folder: os.stat_result, mode: int, uid: int) -> bool:
    """A folder as the writer makes it: its `mode`, owned by whoever compiles."""
    return stat.S_IMODE(folder.st_mode) == mode and folder.st_uid == uid


def stat_key(st: os.stat_result) -> list[int]:
    """What of a file's stat says it is the one recorded: device, inode, size, mode, links, mtime, ctime."""
    return [st.st_dev, st.st_ino, st.st_size, st.st_mode, st.st_nlink, st.st_mtime_ns, st.st_ctime_ns]


class Previous:
    """The verified part of the last compile into `outdir` (a realpath)."""

    def __init__(self, outdir: str, units: dict[str, str], sha: dict[str, str], stats: dict[str, list[int]],
                 paths: "dict[str, list[str]] | None" = None, inputs: str = "", checked: bool = False,
                 recorded: int = -1):
        self.outdir = outdir
        self.units = units  # unit -> digest, only units whose every file is intact
        self.paths = paths or {}  # unit -> its files, for the same units
        self.sha = sha  # path -> sha256 of intact files
        self._stats = stats
        self.inputs = inputs  # configs.inputs_key of the compile that wrote them
        self.checked = checked  # its self-check ran (not --no-check)
        self.recorded = recorded  # files in the record, intact or not

    def up_to_date(self, inputs: str, check: bool, folder_mode: int) -> bool:
        """The compile of `inputs` would write exactly what OUTDIR holds: the same inputs
        (self-checked then, when `check` asks for it), every recorded file intact, in real
        folders of `folder_mode` owned by whoever compiles, and nothing else in the tree (a
        stray file, folder or link, a chmod'ed or chown'ed folder: compile again)."""
        if inputs != self.inputs or (check and not self.checked) or len(self.sha) != self.recorded:
            return False
        folders = {""}
        for path in self.sha:
            while "/" in path:
                path = path.rsplit("/", 1)[0]
                if path in folders:
                    break
                folders.add(path)
        found = 0
        todo = [""]
        uid = os.geteuid()
        try:
            if not _as_made(os.lstat(self.outdir), folder_mode, uid):
                return False
        except OSError:
            return False
        while todo:
            rel = todo.pop()
            try:
                with os.scandir(os.path.join(self.outdir, rel)) as entries:
                    for e in entries:
                        path = f"{rel}/{e.name}" if rel else e.name
                        if e.is_dir(follow_symlinks=False) and path in folders:
                            if not _as_made(e.stat(follow_symlinks=False), folder_mode, uid):
                                return False  # a folder's mode or owner changed: compile sets it again
                            todo.append(path)
                        elif e.is_file(follow_symlinks=False) and e.inode() == self._stats.get(path, (0, 0))[1]:
                            found += 1
                        else:
                            return False
            except OSError:
                return False
            folders.discard(rel)
        return found == len(self.sha) and not folders

    def same_file(self, path: str, st: os.stat_result) -> bool:
        """`st` is the file recorded at `path` (its link count and ctime aside: a stage's
        hard link moves them)."""
        now, then = stat_key(st), self._stats[path]
        return now[:4] + now[5:6] == then[:4] + then[5:6]

    def unchanged(self, path: str, st: os.stat_result) -> bool:
        """`st` is the file recorded at `path`, untouched since: ctime included, which an
        edit that puts size and mtime back still moves. Checked before a file is linked on."""
        return stat_key(st) == self._stats[path]

    def recorded_stat(self, path: str) -> list[int]:
        """The stat key recorded for an intact file (:func:`stat_key`)."""
        return self._stats[path]

    def read(self, path: str) -> bytes:
        """A carried file's bytes, from the previous OUTDIR, checked again (stat and sha256)."""
        full = os.path.join(self.outdir, path)
        try:
            fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            raise Changed(full) from None
        try:
            if not self.same_file(path, os.fstat(fd)):
                raise Changed(full)
            with os.fdopen(os.dup(fd), "rb") as fh:
                data = fh.read()
        finally:
            os.close(fd)
        if hashlib.sha256(data).hexdigest() != self.sha[path]:
            raise Changed(full)
        return data

    def read_checked(self, path: str) -> str | None:
        """A file of the previous compile as text, when its self-check judged it and it is
        intact (None otherwise): the base an incremental self-check judges changes against."""
        if not self.checked or path not in self.sha:
            return None
        try:
            return self.read(path).decode()
        except (Changed, UnicodeDecodeError):
            return None


def load(outdir: str) -> Previous | None:
    """The previous compile into `outdir` (a realpath), or None when there is none to trust
    (a record inside OUTDIR, where a cache inside it would put one, is never read)."""
    if _folder(outdir) is None:
        return None
    doc = load_json_file(record_path(outdir), RECORD_MAX_BYTES, owner_uid=os.geteuid())
    if doc is None:
        return None
    try:
        if (doc["format"], doc["generator"], doc["outdir"]) != (FORMAT, __version__, outdir):
            return None
        inputs, checked = str(doc["inputs"]), doc["checked"] is True
        top = os.lstat(outdir)
        if not stat.S_ISDIR(top.st_mode) or [top.st_dev, top.st_ino] != doc["dir"]:
            return None  # another directory now stands at this path
        sha: dict[str, str] = {}
        stats: dict[str, list[int]] = {}
        for path, (digest, key) in doc["files"].items():
            if not isinstance(path, str) or "\0" in path or path.startswith("/") or ".." in path.split("/"):
                return None
            try:
                now = stat_key(os.lstat(os.path.join(outdir, path)))
            except OSError:
                continue
            if now == key and stat.S_ISREG(now[3]):
                sha[path], stats[path] = str(digest), now
        intact = {str(u): (str(d), list(paths)) for u, (d, paths) in doc["units"].items()
                  if isinstance(paths, list) and all(p in sha for p in paths)}
    except (KeyError, TypeError, ValueError, AttributeError, OSError):  # a damaged record: compile in full
        return None
    return Previous(outdir, {u: d for u, (d, _p) in intact.items()}, sha, stats, {u: p for u, (_d, p) in intact.items()},
                    inputs, checked, len(doc["files"]))


def save(outdir: str, units: dict[str, tuple[str, list[str]]], sha: dict[str, str], inputs: str = "",
         checked: bool = False, tree: "tuple[int, int] | None" = None,
         staged: "dict[str, list[int]] | None" = None) -> None:
    """Record what railonly just wrote into `outdir` (a realpath; called after the swap):
    `sha` every file's, `inputs` the compile's configs.inputs_key, `checked` whether its
    self-check ran, `tree` the (device, inode) of the folder it swapped in. Another
    compile may have swapped its own in since: then no record (its files' stats beside
    this compile's sha256 would carry wrong bytes next time), and the files are stat'ed
    through a descriptor of that very folder. Best effort: without a writable cache the
    next compile is a full one, and so it is with a cache inside OUTDIR (a record there
    would be a stray file in it). `staged`: each file's stat key when the stage made it
    (writer.stage's); a file whose stat moved since is recorded only if its bytes are still
    `sha`'s (an edit that put size and mtime back moves ctime), else left out: the next
    compile writes it again."""
    if _folder(outdir) is None:
        return
    try:
        dfd = os.open(outdir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            top = os.fstat(dfd)
            if tree is not None and (top.st_dev, top.st_ino) != tuple(tree):
                raise FileNotFoundError(outdir)  # replaced by another compile's tree
            files = {}
            for path, digest in sha.items():
                now = stat_key(os.lstat(path, dir_fd=dfd))
                if staged is None or staged.get(path) == now or _holds(dfd, path, digest, now):
                    files[path] = [digest, now]
        finally:
            os.close(dfd)
        doc = {"format": FORMAT, "generator": __version__, "outdir": outdir, "dir": [top.st_dev, top.st_ino],
               "units": {u: [d, paths] for u, (d, paths) in units.items()}, "files": files,
               "inputs": inputs, "checked": checked}
        path = record_path(outdir)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        _replace(path, json.dumps(doc, separators=(",", ":")))  # one C encode: json.dump writes in Python-sized chunks
    except OSError:
        forget(outdir)


def _holds(dfd: int, path: str, digest: str, key: list[int]) -> bool:
    """The file at `path` (below `dfd`) holds the bytes of `digest` and is still the file of `key`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return False
    try:
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read()
        return hashlib.sha256(data).hexdigest() == digest and stat_key(os.fstat(fd)) == key
    finally:
        os.close(fd)


def _replace(path: str, text: str) -> None:
    """Write `path` whole by a rename over it: whatever stood there (a FIFO, a link) is
    replaced, never opened."""
    fd, tmp = tempfile.mkstemp(prefix=".record-", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def forget(outdir: str) -> None:
    """Drop the record (before a write that may fail half way, and when saving fails)."""
    try:
        os.unlink(record_path(outdir))
    except OSError:
        pass


__all__ = ["Changed", "Previous", "cache_root", "forget", "load", "note_owner", "record_path", "stat_key",
           "save", "spare_path"]
