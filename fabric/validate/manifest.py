"""MANIFEST.json against the OUTDIR on disk: every changed, missing or extra file, named.

The manifest's paths are only compared, never opened: what is read is what
the walk finds under OUTDIR, without following a symlink (a symlink is
reported, not read). Every other file is an artifact: a lab's runtime records
never live in an OUTDIR (they are in /run/railonly/<lab>), so a `.lab/` there is
an extra file like any other.
"""

from __future__ import annotations

import hashlib
import os

from ..input.jsonsource import UntrustedFile, parse_json
from ..outdir_layout import MANIFEST, folders_of
from ..outdir.reader import manifest_files, walk
from .validate_report import Result

MAX_MANIFEST_BYTES = 64 << 20  # 17,000 files take ~1.5 MB
MAX_SHOWN = 50


def _sha256(path: str) -> str:
    # os.read on the descriptor: no buffered file object per file (21,770 of them at 32k
    # GPUs; about a quarter of this check's CPU beside the hashing itself)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        h = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        return h.hexdigest()
    finally:
        os.close(fd)


def check_manifest(outdir: str, found: dict[str, str] | None = None, found_folders: set[str] | None = None
                   ) -> list[Result]:
    """One `manifest/files` result. `found` and `found_folders`: the tree as :func:`walk`
    names it, from a walk the caller made already (validate's `unsafe_entries`); walked here
    otherwise. A folder that holds no listed file is extra too (an empty `configs/x` is a
    switch to `diff`)."""
    path = os.path.join(outdir, MANIFEST)
    rid = "manifest/files"
    try:
        if os.path.islink(path):
            return [Result(rid, "manifest", False, f"{MANIFEST}: is a symlink (not read)")]
        if os.path.getsize(path) > MAX_MANIFEST_BYTES:
            return [Result(rid, "manifest", False, f"{MANIFEST}: larger than {MAX_MANIFEST_BYTES >> 20} MiB")]
        with open(path, encoding="utf-8") as fh:
            doc = parse_json(fh.read(), MANIFEST)  # the one OUTDIR JSON decode: a repeated name too
    except FileNotFoundError:
        return [Result(rid, "manifest", False, f"{MANIFEST}: missing (compile writes it; recompile the design)")]
    except UntrustedFile as exc:
        p = exc.problems[0]
        return [Result(rid, "manifest", False, f"{MANIFEST}{f':{p.line}' if p.line else ''}: {p.message}")]
    except (OSError, ValueError) as exc:
        return [Result(rid, "manifest", False, f"{MANIFEST}: not readable JSON: {type(exc).__name__}: {exc}")]
    listed, why = manifest_files(doc)
    if listed is None:
        return [Result(rid, "manifest", False, f"{MANIFEST}: {why}")]

    if found is None or found_folders is None:
        found_folders = set()
        found = walk(outdir, found_folders)
    else:
        found = {rel: kind for rel, kind in found.items() if rel != MANIFEST}
    probs = []
    probs += [f"extra: {rel}/ (folder) holds no file of {MANIFEST}" for rel in sorted(found_folders - folders_of(listed))]
    for rel in sorted(set(listed) | set(found)):
        kind = found.get(rel)
        if rel not in listed:
            probs.append(f"extra: {rel} ({kind}) is not in {MANIFEST}")
        elif kind is None:
            probs.append(f"missing: {rel} is in {MANIFEST} but not in the OUTDIR")
        elif kind != "file":
            probs.append(f"changed: {rel} is a {kind}, {MANIFEST} lists a file")
        else:
            try:
                digest = _sha256(os.path.join(outdir, rel))
            except OSError as exc:
                probs.append(f"changed: {rel} cannot be read: {exc.strerror}")
                continue
            if digest != listed[rel]:
                probs.append(f"changed: {rel} (its sha256 differs from {MANIFEST}: edited by hand?)")
    more = len(probs) - MAX_SHOWN
    detail = "\n".join(probs[:MAX_SHOWN]) + (f"\n... and {more:,} more" if more > 0 else "")
    return [Result(rid, "manifest", not probs, detail or f"{len(listed):,} files match {MANIFEST}")]
