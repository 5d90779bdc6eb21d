"""Artifacts checked as a whole: rendered again, or found inert.

The clabernetes manifest (``<name>.clabernetes.yaml``) carries the whole lab to
a Kubernetes cluster: its Topology holds the containerlab file, its ConfigMaps
the switch files. Checked on its own it could carry anything a cluster runs
(an exec line, a ``/:/host`` bind, a foreign image, a ClusterRoleBinding), so
it is not checked on its own: it must be byte for byte what
:func:`railonly.fabric.outputs.clabernetes.render` makes of the topology and switch
files in the same OUTDIR, which `validate` checks line by line.

The drawing and the tables a person opens (``topology.svg``, the CSVs) must be
inert: only the SVG elements and attributes railonly draws (no script, event
handler or link), no CSV cell a spreadsheet would run as a formula.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Iterator

import yaml

from ..outdir_layout import CLAB_SUFFIX
from ..outputs import clabernetes
from .validate_report import Result
from ..outdir.reader import OutdirReader, UntrustedFile, lab_files


class _Files(Mapping):
    """The OUTDIR as the {relative path: bytes} mapping clabernetes.render reads, read
    lazily through the untrusted reader (no symlink, bounded)."""

    def __init__(self, reader: OutdirReader):
        self.reader = reader
        self.cache: dict[str, bytes | None] = {}

    def _get(self, rel: str) -> bytes | None:
        if rel not in self.cache:
            ok = isinstance(rel, str) and not rel.startswith("/") and ".." not in rel.split("/")
            self.cache[rel] = self.reader.read_bytes(rel) if ok else None
        return self.cache[rel]

    def __contains__(self, rel: object) -> bool:
        return isinstance(rel, str) and self._get(rel) is not None

    def __getitem__(self, rel: str) -> bytes:
        data = self._get(rel)
        if data is None:
            raise KeyError(rel)
        return data

    def __iter__(self) -> Iterator[str]:
        return iter([k for k, v in self.cache.items() if v is not None])

    def __len__(self) -> int:
        return sum(v is not None for v in self.cache.values())


def check_clabernetes(outdir: str) -> list[Result]:
    """One result: the manifest is exactly what railonly renders from this OUTDIR's topology
    and switch files (absent: nothing to check; MANIFEST.json says whether it should be there)."""
    reader = OutdirReader(outdir)
    _, clab_rel = lab_files(reader)
    name = clab_rel[: -len(CLAB_SUFFIX)]
    rel = clabernetes.filename(name)
    rid = f"trust/{rel}"
    on_disk = reader.read_bytes(rel)
    if on_disk is None:
        return []
    try:
        files = _Files(reader)
        want = clabernetes.produce(name, files)[rel].encode()
    # The renderer trusts the compiler's shapes: a hostile topology (a bind that is not text,
    # a node that is a list, YAML it cannot read) can break it anywhere, and is this failure.
    except (UntrustedFile, AssertionError, KeyError, ValueError, UnicodeDecodeError, TypeError, AttributeError,
            RecursionError, yaml.YAMLError) as exc:
        return [Result(rid, "trust", False, f"{rel}: cannot be rendered from {clab_rel} and its files"
                       f" ({str(exc)[:200]}); recompile the design")]
    if on_disk == want:
        return [Result(rid, "trust", True, f"{rel}: exactly what railonly renders from {clab_rel}")]
    at = next((i for i, (a, b) in enumerate(zip(on_disk, want)) if a != b), min(len(on_disk), len(want)))
    line = on_disk.count(b"\n", 0, at) + 1
    return [Result(rid, "trust", False, f"{rel}: line {line}: differs from what railonly renders from {clab_rel} and"
                   " its switch files (edited after compile?): a cluster would run what no check has seen;"
                   " recompile the design")]


# --- artifacts a person opens: nothing in them may run -----------------------------------------------

# What fabric/diagram.py writes: these elements and attributes only (no script, no event
# handler, no link, no external resource, no DOCTYPE/entity).
SVG_ELEMENTS = frozenset({"svg", "rect", "text", "line", "circle"})
SVG_ATTRIBUTES = frozenset({"xmlns", "width", "height", "viewBox", "font-family", "font-size", "font-weight", "x",
                            "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "fill", "fill-opacity", "stroke",
                            "stroke-opacity", "stroke-width", "stroke-dasharray", "text-anchor"})
_TAG = re.compile(r"<(/?)([^\s/>]*)([^>]*)>")
_ATTR = re.compile(r'\s([^\s=]+)="[^"<]*"')
# a cell a spreadsheet would run as a formula (CSV injection: = + - @ tab CR first): the
# compiler writes none; a '-' begins only a plain negative number
_FORMULA = re.compile(r'(?:^|,)"?(?:[=+@\t\r]|-(?![0-9]+(?:\.[0-9]+)?(?:,|"|\r?$)))', re.M)


def _dash_first(text: str) -> bool:
    """Some cell may start with '-' (names hold dashes everywhere: only a cell's first
    character counts, found by substring scans at C speed before the regex looks)."""
    return text.startswith(("-", '"-')) or any(s in text for s in (",-", '\n-', ',"-', '\n"-'))


def svg_problem(text: str) -> str | None:
    """Why ``text`` is not an SVG of the form railonly draws (None: it is)."""
    if "<!" in text or "<?" in text:
        return "holds a DOCTYPE, entity, comment or processing instruction"
    for m in _TAG.finditer(text):
        name, attrs = m.group(2), m.group(3).rstrip("/")
        if name not in SVG_ELEMENTS:
            return f"element <{name[:40]}> is not one railonly draws (script, link, foreignObject...)"
        rest = _ATTR.sub("", attrs).strip()
        bad = [a for a in _ATTR.findall(attrs) if a not in SVG_ATTRIBUTES]
        if bad or rest:
            return f"<{name}> has attribute {(bad or [rest])[0][:40]!r}, not one railonly writes (on*, href...)"
    return None


def check_inert(outdir: str, found: dict[str, str] | None = None) -> list[Result]:
    """A failed trust result for each drawing or table railonly writes that holds what
    could run when a person opens it: a script in topology.svg, a formula cell in a CSV.
    `found`: the tree as `walk` names it, from the caller's walk (else walked here)."""
    from ..outdir.reader import walk

    reader = OutdirReader(outdir)
    out = []
    for rel, kind in sorted((walk(reader.root) if found is None else found).items()):
        if kind != "file" or not rel.endswith((".svg", ".csv")):
            continue
        text = reader.read_text(rel)
        if text is None:
            continue
        if rel.endswith(".svg"):
            why = svg_problem(text)
        else:
            # most tables hold none of the characters at all: str scans, far faster than the regex
            m = _FORMULA.search(text) if any(c in text for c in "=+@\t\r") or _dash_first(text) else None
            first = m.group(0).lstrip(',"')[:1] if m else ""
            why = (f"line {text.count(chr(10), 0, m.start()) + 1}: a cell starts with {first!r}, "
                   "which a spreadsheet runs as a formula") if m else None
        if why:
            out.append(Result(f"trust/{rel}", "trust", False, f"{rel}: {why}; recompile the design"))
    return out
