"""The change plan between two compiles: what a design change does on the floor.

`railonly diff OLD NEW` reads both OUTDIRs (:func:`read_snapshot`: one pass over each tree
by :mod:`railonly.fabric.outdir.scan`, by the hostile-input reader's rules) and :func:`plan`
compares them, purely:

* cables by their two ends: a cable whose ends are in both is kept (relabelled
  when its id changed; changed when its optic or length did, since another
  cable or optic must be fitted); an old and a new cable that share one end
  are one cable moved (its other end changes); the rest are added or removed;
* devices (configs/<switch>/) and hosts (hosts/<hb-domain>/): added, removed,
  changed, with a unified diff per device;
* the BOM: quantity, cost and power per item and in total;
* every other file its MANIFEST.json lists (the clab file, fabric.json, the
  clabernetes manifest, docs...): added, removed or changed by its content
  (read and hashed: an edited file shows even when MANIFEST.json was left as
  it was), and every file present but not listed, named as unknown.

Output is sorted and contains no paths or times: the same two OUTDIRs give
byte-identical plans. The text plan escapes every non-printable character
(a hostile OUTDIR cannot send terminal escapes through it).
"""

from __future__ import annotations

import csv
import difflib
import functools
import gc
import hashlib
import json
import operator
import re
import stat
from dataclasses import dataclass, field
from typing import NamedTuple

from ..outdir_layout import BOM_CSV, CABLING_CSV, CONFIGS, FABRIC_JSON, HOSTS, MANIFEST
from ..graph import fabric_json
from ..parallel import Background, jobs
from ..graph.model import Node
from ..safe_text import natural, printable, whole
from .reader import ENTRY_NAME, OutdirReader, UntrustedFile, manifest_files, parse_json
from .scan import refuse_kind

FILE_LIMIT = 64 << 20  # cabling.csv, bom.csv, MANIFEST.json (cabling.csv of 65,536 GPUs is about 30 MiB)
CONFIG_LIMIT = 16 << 20  # one switch or host file
TOTAL_LIMIT = 2 << 30  # bytes read from one OUTDIR
FORK_DIFFS_AT = 64  # changed devices from which half their unified diffs are made in a forked worker
CABLE_COLUMNS = ("cable_id", "a_device", "a_port", "b_device", "b_port")
BOM_COLUMNS = ("item", "quantity", "total_cost_usd", "total_power_w")
_RECOMPILE = "recompile the design into a fresh OUTDIR with 'railonly compile'"
# From this size fabric.json is parsed in a forked process while the rest of the tree is
# read (hosts/ comes after it): at 32k GPUs (36 MB) the parse takes 0.7 s a side, which in
# line made `diff` 5x its read-and-compare floor, on one core while the other idled.
PARSE_BESIDE_MIN_BYTES = 4 << 20

End = tuple[str, str]  # (device, port)


class Cable(NamedTuple):  # a tuple, not a frozen dataclass: built 98,304 times per 32k OUTDIR
    cable_id: str
    a: End
    b: End
    media: str = ""  # cabling.csv's optic and fibre, e.g. "400G-SR8 MMF"
    length_m: str = ""  # as cabling.csv writes it (whole metres)
    rail: str = ""  # cabling.csv's rail ("" for a cable that joins rails)
    tier: str = ""  # cable tier: 1 NIC-leaf, 2 leaf-spine, 3 spine-core

    def ends(self) -> tuple[End, End]:
        return tuple(sorted((self.a, self.b)))  # a cable is its two ends, whichever is written first


@dataclass(frozen=True)
class BomItem:
    quantity: float
    cost_usd: float
    power_w: float


@dataclass
class Snapshot:
    """What a change plan compares, from one OUTDIR."""

    cables: dict[str, Cable] = field(default_factory=dict)  # cable id -> cable
    devices: dict[str, dict[str, str]] = field(default_factory=dict)  # switch -> {file: text}
    hosts: dict[str, dict[str, str]] = field(default_factory=dict)  # HB domain -> {file: text}
    bom: dict[str, BomItem] = field(default_factory=dict)  # item -> figures
    design_sha256: str = ""
    switches: dict[str, Node] = field(default_factory=dict)  # switch -> its node of fabric.json (tier, rails)
    files: dict[str, str] = field(default_factory=dict)  # every other listed file -> sha256 of its content
    missing: list[str] = field(default_factory=list)  # listed in MANIFEST.json, absent
    unknown: list[str] = field(default_factory=list)  # present, not listed in MANIFEST.json
    outdir: str = ""  # as given: messages name its files below it
    # fabric.json's parse running in a forked process (see :func:`settle`)
    checks: list = field(default_factory=list, compare=False, repr=False)


def settle(*snapshots: "Snapshot | None") -> None:
    """Wait for each snapshot's fabric.json parse to end; its error (UntrustedFile, InputError:
    exit 2 naming the field) is raised here. Call it before any output."""
    for snap in snapshots:
        while snap is not None and snap.checks:
            snap.checks.pop(0).result()


def abandon(*snapshots: "Snapshot | None") -> None:
    """Stop the parses still running (on the way out after an error): no child left behind."""
    for snap in snapshots:
        while snap is not None and snap.checks:
            snap.checks.pop().cancel()


# -- reading (hostile input) ---------------------------------------------------------

class _Budget:
    """Bytes read from one OUTDIR, bounded (each file is bounded by the reader)."""

    def __init__(self, reader: OutdirReader):
        self.reader, self.used = reader, 0

    def text(self, rel: str, limit: int) -> str:
        text = self.reader.read_text(rel, limit)
        if text is None:
            raise UntrustedFile(self.reader.where(rel), "is missing", _RECOMPILE)
        self.used += len(text)
        if self.used > TOTAL_LIMIT:
            raise UntrustedFile(self.reader.given, f"holds more than {TOTAL_LIMIT:,} bytes of artifacts", _RECOMPILE)
        return text

    def listdir(self, rel: str) -> list[str]:
        names = self.reader.listdir(rel)
        if names is None:
            raise UntrustedFile(self.reader.where(rel), "is missing", _RECOMPILE)
        return names


def read_configs(budget: _Budget, folder: str) -> dict[str, dict[str, str]]:
    """{device: {file: text}} of a configs/ or hosts/ folder."""
    return {name: {f: budget.text(f"{folder}/{name}/{f}", CONFIG_LIMIT) for f in budget.listdir(f"{folder}/{name}")}
            for name in budget.listdir(folder)}


def _acyclic(fn):
    """Run `fn` with the cyclic garbage collector paused: reading and planning make a few
    hundred thousand small acyclic objects (texts, cables, their ends) that the collector
    would only rescan, again and again as they pile up (it doubled a 32k read). Reference
    counting frees them as usual."""
    @functools.wraps(fn)
    def paused(*args, **kwargs):
        enabled = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()
    return paused


@_acyclic
def read_snapshot(outdir: str, switches: bool = False) -> Snapshot:
    """Everything a plan compares, read from OUTDIR by the hostile-input rules of
    :mod:`railonly.fabric.outdir.reader` (UntrustedFile, exit 2, names the file), in one
    pass over the tree (:func:`railonly.fabric.outdir.scan.scan`: one open per file).
    fabric.json is parsed as every reader parses it (a truncated, NaN or too deep one is
    exit 2 as in validate and the lab, not a changed file). `switches`: keep its switches
    (the runbook groups by them), parsed here; else a big one is parsed in a forked process
    while the rest is read and compared, and :func:`settle` waits for it (its error)."""
    from .scan import scan

    reader = OutdirReader(outdir)
    manifest = reader.read_text(MANIFEST, FILE_LIMIT)
    if manifest is None:
        raise UntrustedFile(reader.where(MANIFEST), "is missing", _RECOMPILE)
    design, listed = _manifest(manifest, reader.where(MANIFEST))
    snap = Snapshot(design_sha256=design, outdir=outdir)
    tables = {CABLING_CSV: b"", BOM_CSV: b"", FABRIC_JSON: b""}
    modes: dict[str, int] = {}  # every entry but MANIFEST.json: its own type (lstat's)

    def limit_of(rel: str) -> int | None:
        if rel.startswith((f"{CONFIGS}/", f"{HOSTS}/")):
            return CONFIG_LIMIT if rel.count("/") == 2 else None  # <folder>/<device>/<file>; deeper is refused below
        return FILE_LIMIT if rel in listed or rel in tables else None

    below: dict[str, dict[str, list[str]]] = {CONFIGS: {}, HOSTS: {}}  # folder -> device -> its entries
    texts = {CONFIGS: snap.devices, HOSTS: snap.hosts}

    def fabric_arrived(data: bytes) -> None:
        if not switches and jobs() > 1 and len(data) >= PARSE_BESIDE_MIN_BYTES:
            # its result, the switches, stays there: 2,560 nodes pickled back cost more than the parse
            snap.checks.append(Background(_check_fabric, _utf8(data, reader, FABRIC_JSON), reader.where(FABRIC_JSON)))

    try:
        _read_tree(reader, scan(reader, limit_of, TOTAL_LIMIT), snap, listed, tables, modes, below, texts,
                   fabric_arrived)
        if not snap.checks:
            found = _switches(_utf8(tables[FABRIC_JSON], reader, FABRIC_JSON), reader.where(FABRIC_JSON))
            snap.switches = found if switches else {}
    except BaseException:
        abandon(snap)
        raise
    snap.unknown = sorted(p for p, mode in modes.items() if not stat.S_ISDIR(mode) and p not in listed)
    for rel in sorted(listed):
        if rel.startswith((f"{CONFIGS}/", f"{HOSTS}/")):
            continue  # compared file by file above
        if rel not in snap.files:  # absent, or not a regular file
            snap.missing.append(rel)
    return snap


def _read_tree(reader: OutdirReader, entries, snap: Snapshot, listed: set[str], tables: dict[str, bytes],
               modes: dict[str, int], below: dict, texts: dict, fabric_arrived) -> None:
    """The one pass over the tree (each entry's type; device and host texts; listed files'
    hashes; the whole-fabric files' bytes, fabric.json's handed to `fabric_arrived` at once),
    then the whole-fabric files and folders judged."""
    for rel, mode, data in entries:
        if rel == MANIFEST:
            continue  # read above; never listed as an artifact of itself
        modes[rel] = mode
        folder, _, rest = rel.partition("/")
        if folder in below and rest:  # names come sorted, each folder before its entries
            name, _, file = rest.partition("/")
            if not file:
                below[folder][name] = []
                texts[folder][name] = {}
            elif "/" not in file:
                below[folder][name].append(file)
                if data is not None:
                    texts[folder][name][file] = _utf8(data, reader, rel)
            continue
        if data is None:
            continue
        if rel in tables:
            tables[rel] = data
            if rel == FABRIC_JSON:
                fabric_arrived(data)
        if rel in listed:
            snap.files[rel] = hashlib.sha256(data).hexdigest()
    for rel in (CABLING_CSV, BOM_CSV, FABRIC_JSON):
        if modes.get(rel) is None:
            raise UntrustedFile(reader.where(rel), "is missing", _RECOMPILE)
        if not stat.S_ISREG(modes[rel]):
            raise refuse_kind(reader.where(rel), modes[rel])
    snap.cables = parse_cabling(_utf8(tables[CABLING_CSV], reader, CABLING_CSV), reader.where(CABLING_CSV))
    snap.bom = parse_bom(_utf8(tables[BOM_CSV], reader, BOM_CSV), reader.where(BOM_CSV))
    for folder in (CONFIGS, HOSTS):
        _check_folder(reader, modes, folder, below[folder])


def _utf8(data: bytes, reader: OutdirReader, rel: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UntrustedFile(reader.where(rel), f"is not UTF-8 text (byte {exc.start:,})", _RECOMPILE) from None


def _check_folder(reader: OutdirReader, modes: dict[str, int], folder: str, below: dict[str, list[str]]) -> None:
    """configs/ or hosts/ holds only folders of regular files (at least one), each with a name the compiler
    writes (the scan read every regular file below them; this refuses everything else)."""
    if folder not in modes:
        raise UntrustedFile(reader.where(folder), "is missing", _RECOMPILE)
    if not stat.S_ISDIR(modes[folder]):
        raise refuse_kind(reader.where(folder), modes[folder], "a directory")
    for name in below:
        _entry_name(reader, folder, name)
    for name, files in below.items():
        device = f"{folder}/{name}"
        if not stat.S_ISDIR(modes[device]):
            raise refuse_kind(reader.where(device), modes[device], "a directory")
        if not files:  # else a device or HB domain of no files, which compile never writes
            raise UntrustedFile(reader.where(device), "is an empty folder, which compile never writes", _RECOMPILE)
        for f in files:
            _entry_name(reader, device, f)
        for f in files:
            if not stat.S_ISREG(modes[f"{device}/{f}"]):
                raise refuse_kind(reader.where(f"{device}/{f}"), modes[f"{device}/{f}"])


def _entry_name(reader: OutdirReader, folder: str, name: str) -> None:
    if not ENTRY_NAME.fullmatch(name):
        raise UntrustedFile(reader.where(f"{folder}/{name!r}"), "has a name the compiler never writes", _RECOMPILE)


def _check_fabric(text: str, where: str) -> None:
    _switches(text, where)


def _switches(text: str, where: str) -> dict[str, Node]:
    """Every switch of fabric.json by name (their tier and rails: what the rollout groups by)."""
    fab = fabric_json.parse(text, where)
    for i, sw in enumerate(fab.switches):
        if not (sw.name.isprintable() and len(sw.name) <= 200) or sw.tier is None:
            raise UntrustedFile(where, f"switch {i}: a switch needs a printable name and an integer tier", _RECOMPILE)
    return {sw.name: sw for sw in fab.switches}


def _manifest(text: str, where: str) -> tuple[str, set[str]]:
    doc = parse_json(text, where)
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict) or not isinstance(doc.get("design_sha256"), str):
        raise UntrustedFile(where, "is not a railonly manifest (needs 'files' and 'design_sha256')", _RECOMPILE)
    listed, why = manifest_files(doc)  # validate's rule: a hash that is not text is refused, not ignored
    if listed is None:
        raise UntrustedFile(where, why, _RECOMPILE)
    if not all(isinstance(k, str) and len(k) <= 1024 for k in listed):
        raise UntrustedFile(where, "lists a path that is not a string of at most 1024 characters", _RECOMPILE)
    return doc["design_sha256"], set(listed)


def _table(text: str, where: str, required: tuple[str, ...]) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of a CSV file; every row has the header's number of fields."""
    try:
        rows = list(csv.reader(text.splitlines()))
    except csv.Error as exc:
        raise UntrustedFile(where, f"is not CSV: {exc}", _RECOMPILE) from None
    if not rows:
        raise UntrustedFile(where, "is empty (no header line)", _RECOMPILE)
    head = rows[0]
    missing = [c for c in required if c not in head]
    if missing:
        raise UntrustedFile(where, f"line 1: header lacks column(s) {', '.join(missing)}", _RECOMPILE)
    width = len(head)
    for i, row in enumerate(rows[1:], start=2):
        if len(row) != width:
            raise UntrustedFile(where, f"line {i}: {len(row)} fields, the header has {width}", _RECOMPILE)
    return head, rows[1:]


def _rows(text: str, where: str, required: tuple[str, ...]) -> list[dict[str, str]]:
    head, rows = _table(text, where, required)
    return [dict(zip(head, row), _line=str(i)) for i, row in enumerate(rows, start=2)]


# No quote (so no field spans lines), printable ASCII only and short lines: every field of
# such a file is printable and at most 200 characters without looking at each one.
_PLAIN_CSV = re.compile(r"[\x20\x21\x23-\x7e\r\n]*")
_PLAIN_LINE = 200


def _plain(text: str) -> bool:
    return bool(_PLAIN_CSV.fullmatch(text)) and max(map(len, text.splitlines()), default=0) <= _PLAIN_LINE


def parse_cabling(text: str, where: str = CABLING_CSV) -> dict[str, Cable]:
    checked_whole = _plain(text)
    if checked_whole:
        cables = _parse_plain_cabling(text)
        if cables is not None:
            return cables
    # row by row: names the first line that breaks a rule
    head, rows = _table(text, where, CABLE_COLUMNS)
    # by position, not a dict per row: 98,304 rows at 32k GPUs, twice per diff
    need = [head.index(c) for c in CABLE_COLUMNS]
    shown = need + [head.index(c) for c in ("media", "length_m") if c in head]  # printed to a terminal
    media, length, rail_at, tier_at = (head.index(c) if c in head else None for c in ("media", "length_m", "rail", "tier"))
    out: dict[str, Cable] = {}
    for line, row in enumerate(rows, start=2):
        cid, ad, ap, bd, bp = (row[i] for i in need)
        if not (cid and ad and ap and bd and bp):
            empty = next(c for c, i in zip(CABLE_COLUMNS, need) if not row[i])
            raise UntrustedFile(where, f"line {line}: {empty} is empty", _RECOMPILE)
        if not checked_whole:
            bad = next((head[i] for i in shown if len(row[i]) > 200 or not row[i].isprintable()), None)
            if bad:  # the plan prints these to a terminal: no control characters, no megabyte fields
                raise UntrustedFile(where, f"line {line}: {bad} has control characters or more than 200 characters", _RECOMPILE)
        if cid in out:
            raise UntrustedFile(where, f"line {line}: cable id {cid} appears twice", _RECOMPILE)
        rail = row[rail_at] if rail_at is not None else ""
        tier = row[tier_at] if tier_at is not None else ""
        if not (rail == "" or whole(rail) is not None) or not (tier == "" or whole(tier) is not None) or len(rail) > 9 or len(tier) > 9:
            raise UntrustedFile(where, f"line {line}: rail and tier must be whole numbers (rail may be empty)", _RECOMPILE)
        out[cid] = Cable(cid, (ad, ap), (bd, bp), row[media] if media is not None else "",
                         row[length] if length is not None else "", rail, tier)
    return out


def _parse_plain_cabling(text: str) -> dict[str, Cable] | None:
    """parse_cabling of a plain file (see _plain: no quotes, so a field never holds a comma
    or a line break) column by column, each rule checked over a whole column at C speed; None
    when any rule fails anywhere (the row-by-row parse then names the first bad line)."""
    lines = text.splitlines()
    if not lines:
        return None
    head, body = lines[0].split(","), lines[1:]
    width = len(head)
    if any(c not in head for c in CABLE_COLUMNS) or set(map(_count_commas, body)) - {width - 1}:
        return None
    if not body:
        return {}
    fields = ",".join(body).split(",")  # row-major: column j is fields[j::width]

    def column(name: str) -> list[str]:
        return fields[head.index(name)::width] if name in head else [""] * len(body)

    ids, ad, ap, bd, bp = (column(c) for c in CABLE_COLUMNS)
    rail, tier = column("rail"), column("tier")
    if any("" in col for col in (ids, ad, ap, bd, bp)) or len(set(ids)) != len(ids):
        return None
    if not all(v == "" or (whole(v) is not None and len(v) <= 9) for v in set(rail) | set(tier)):
        return None
    return dict(zip(ids, map(Cable, ids, zip(ad, ap), zip(bd, bp), column("media"), column("length_m"), rail, tier)))


def _count_commas(line: str) -> int:
    return line.count(",")


_WHOLE = re.compile(r"[0-9]{1,15}")
_AMOUNT = re.compile(r"-?[0-9]{1,18}(?:\.[0-9]{1,2})?")


def parse_bom(text: str, where: str = BOM_CSV) -> dict[str, BomItem]:
    out: dict[str, BomItem] = {}
    for row in _rows(text, where, BOM_COLUMNS):
        line = row["_line"]
        # as the compiler writes them: float() would also take '1e32', '1_0', ' 5', '٣', 'nan'
        if not (_WHOLE.fullmatch(row["quantity"]) and _AMOUNT.fullmatch(row["total_cost_usd"])
                and _AMOUNT.fullmatch(row["total_power_w"])):
            raise UntrustedFile(where, f"line {line}: quantity must be a whole number, total_cost_usd and total_power_w "
                                "numbers with at most two decimals (ASCII digits)", _RECOMPILE)
        q, c, p = (float(row[k]) for k in ("quantity", "total_cost_usd", "total_power_w"))
        if row["item"] in out:
            raise UntrustedFile(where, f"line {line}: item {row['item']!r} appears twice", _RECOMPILE)
        out[row["item"]] = BomItem(q, c, p)
    return out


# -- the plan (pure) ------------------------------------------------------------------

def _end(e: End) -> dict:
    return {"device": e[0], "port": e[1]}


def _cable(c: Cable) -> dict:
    out = {"cable_id": c.cable_id, "a": _end(c.a), "b": _end(c.b)}
    if c.rail or c.tier:
        out["rail"], out["tier"] = c.rail, c.tier
    return out


def cable_changes(old: dict[str, Cable], new: dict[str, Cable]) -> dict[str, list]:
    old, new = _without_unchanged(old, new)
    old_by_ends = {c.ends(): c for c in old.values()}
    new_by_ends = {c.ends(): c for c in new.values()}
    kept = old_by_ends.keys() & new_by_ends.keys()
    relabelled = [{"old_cable_id": old_by_ends[k].cable_id, **_cable(new_by_ends[k])}
                  for k in kept if old_by_ends[k].cable_id != new_by_ends[k].cable_id]
    # same ends, another optic or length: on the floor a different cable is fitted
    changed = [{**_cable(new_by_ends[k]), "old": _fit(old_by_ends[k]), "new": _fit(new_by_ends[k])}
               for k in kept if _refitted(old_by_ends[k], new_by_ends[k])]
    gone = sorted((c for k, c in old_by_ends.items() if k not in kept), key=_order)
    fresh = [c for k, c in new_by_ends.items() if k not in kept]
    at_end: dict[End, Cable] = {}
    for c in sorted(fresh, key=_order):
        for e in (c.a, c.b):
            at_end.setdefault(e, c)
    moved, removed, paired = [], [], set()
    for c in gone:
        # one end stays where it was: the same cable, re-plugged at its other end
        match = next((m for e in (c.a, c.b) if (m := at_end.get(e)) is not None and m.cable_id not in paired), None)
        if match is None:
            removed.append(_cable(c))
            continue
        paired.add(match.cable_id)
        moved.append({"cable_id": match.cable_id, "old": _cable(c), "new": _cable(match)})
    added = [_cable(c) for c in sorted(fresh, key=_order) if c.cable_id not in paired]
    return {"added": added, "removed": removed, "moved": moved,
            "relabelled": sorted(relabelled, key=lambda x: _id_key(x["cable_id"])),
            "changed": sorted(changed, key=lambda x: _id_key(x["cable_id"]))}


def _without_unchanged(old: dict[str, Cable], new: dict[str, Cable]) -> tuple[dict[str, Cable], dict[str, Cable]]:
    """Both sides without the cables they hold alike (id, ends, optic, length, rail, tier):
    a growth keeps nearly all. When no port carries two cables on either side (a compiled
    OUTDIR never has one), such a cable is kept and pairs with no other, so leaving it out
    changes nothing of the plan; otherwise both sides are returned whole."""
    same = {k for k, c in old.items() if new.get(k) == c}
    if not same or not (_one_cable_per_port(old) and _one_cable_per_port(new)):
        return old, new
    return ({k: c for k, c in old.items() if k not in same}, {k: c for k, c in new.items() if k not in same})


_END_A, _END_B = operator.attrgetter("a"), operator.attrgetter("b")


def _one_cable_per_port(cables: dict[str, Cable]) -> bool:
    ports = set(map(_END_A, cables.values()))
    ports.update(map(_END_B, cables.values()))
    return len(ports) == 2 * len(cables)


def _fit(c: Cable) -> dict:
    return {"media": c.media, "length_m": c.length_m}


def _refitted(old: Cable, new: Cable) -> bool:
    """Optic or length differ; a column one side lacks (an OUTDIR of an older
    railonly) says nothing either way."""
    return any(x and y and x != y for x, y in ((old.media, new.media), (old.length_m, new.length_m)))


def _id_key(cable_id: str) -> tuple:
    """Natural order: R2-T1-00007 before R10-T1-00001 (numbers compare as numbers)."""
    return natural(cable_id) + (cable_id,)


def _order(c: Cable) -> tuple:
    return (_id_key(c.cable_id), c.a, c.b)


def unified(kind: str, name: str, old: dict[str, str], new: dict[str, str]) -> str:
    """One device's unified diff over all its files (git-style a/ and b/ paths)."""
    out = []
    for f in sorted(old.keys() | new.keys()):
        a, b = old.get(f), new.get(f)
        if a == b:
            continue
        path = f"{kind}/{name}/{f}"
        out.extend(difflib.unified_diff(
            (a or "").splitlines(keepends=True), (b or "").splitlines(keepends=True),
            f"a/{path}" if a is not None else "/dev/null", f"b/{path}" if b is not None else "/dev/null", n=3))
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in out)
    return text


def device_changes(kind: str, old: dict[str, dict[str, str]], new: dict[str, dict[str, str]], key: str,
                   diffs: bool = True) -> dict[str, list]:
    """Added, removed and changed devices; `diffs` adds each changed one's unified diff
    (difflib is most of a plan's time: skipped where only the names are needed, and
    spread over forked workers where thousands of devices change)."""
    changed = []
    for name in sorted(old.keys() & new.keys()):
        if old[name] != new[name]:
            files = sorted(f for f in old[name].keys() | new[name].keys() if old[name].get(f) != new[name].get(f))
            changed.append({key: name, "files": files})
    if diffs:
        state = (kind, [entry[key] for entry in changed], old, new)
        if len(changed) < FORK_DIFFS_AT or jobs() < 2:
            texts = [_unified_shard(state, 0, 1)]
        else:  # half in one forked worker (it inherits both snapshots), half here meanwhile
            other = Background(_unified_shard, state, 1, 2)
            try:
                mine = _unified_shard(state, 0, 2)
            except BaseException:
                other.cancel()
                raise
            texts = [mine, other.result()]
        for i, shard in enumerate(texts):  # shard i holds devices i, i + n, i + 2n ...
            for entry, text in zip(changed[i::len(texts)], shard):
                entry["diff"] = text
    return {
        "added": [{key: n, "files": sorted(new[n])} for n in sorted(new.keys() - old.keys())],
        "removed": [{key: n, "files": sorted(old[n])} for n in sorted(old.keys() - new.keys())],
        "changed": changed,
    }


def _unified_shard(state: tuple, i: int, n: int) -> list[str]:
    kind, names, old, new = state
    return [unified(kind, name, old[name], new[name]) for name in names[i::n]]


def _num(x: float) -> float | int:
    r = round(x, 2)
    return int(r) if float(r).is_integer() else r


def bom_changes(old: dict[str, BomItem], new: dict[str, BomItem]) -> dict:
    zero = BomItem(0, 0, 0)
    items = []
    for item in sorted(old.keys() | new.keys()):
        a, b = old.get(item, zero), new.get(item, zero)
        if a != b:
            items.append({"item": item, "quantity": {"old": _num(a.quantity), "new": _num(b.quantity), "delta": _num(b.quantity - a.quantity)},
                          "cost_usd": _num(b.cost_usd - a.cost_usd), "power_w": _num(b.power_w - a.power_w)})

    def total(attr: str) -> dict:
        o = sum(getattr(x, attr) for x in old.values())
        n = sum(getattr(x, attr) for x in new.values())
        return {"old": _num(o), "new": _num(n), "delta": _num(n - o)}

    return {"items": items, "quantity": total("quantity"), "cost_usd": total("cost_usd"), "power_w": total("power_w")}


def file_changes(old: Snapshot, new: Snapshot) -> dict[str, list[str]]:
    """Every listed file outside configs/ and hosts/ by content; files listed but absent
    (missing) and present but unlisted (unknown), each as OLD:path or NEW:path."""
    return {
        "added": sorted(new.files.keys() - old.files.keys()),
        "removed": sorted(old.files.keys() - new.files.keys()),
        "changed": sorted(f for f in old.files.keys() & new.files.keys() if old.files[f] != new.files[f]),
        "missing": [f"old:{p}" for p in old.missing] + [f"new:{p}" for p in new.missing],
        "unknown": [f"old:{p}" for p in old.unknown] + [f"new:{p}" for p in new.unknown],
    }


@_acyclic
def plan(old: Snapshot, new: Snapshot, diffs: bool = True) -> dict:
    """The change plan document (`railonly diff --json`)."""
    return {
        "design_sha256": {"old": old.design_sha256, "new": new.design_sha256},
        "cables": cable_changes(old.cables, new.cables),
        "devices": device_changes(CONFIGS, old.devices, new.devices, "device", diffs),
        "hosts": device_changes(HOSTS, old.hosts, new.hosts, "host", diffs),
        "bom": bom_changes(old.bom, new.bom),
        "files": file_changes(old, new),
    }


def has_changes(doc: dict) -> bool:
    return bool(any(doc["cables"][k] for k in ("added", "removed", "moved", "relabelled", "changed"))
                or any(doc[part][k] for part in ("devices", "hosts") for k in ("added", "removed", "changed"))
                or doc["bom"]["items"] or any(doc.get("files", {}).values()))


def devices_to_push(doc: dict) -> list[str]:
    """Switches whose configs are new or changed (removed ones have nothing to push)."""
    d = doc["devices"]
    return sorted({x["device"] for x in d["added"]} | {x["device"] for x in d["changed"]})


def changed_devices(old_outdir: str, new_outdir: str, folder: str = CONFIGS) -> list[str]:
    """`railonly push --only-changed`: devices of `folder` (configs/, or lab/configs/ of a
    lab slice) whose files are new or differ, as the change plan names them."""
    a, b = (read_configs(_Budget(OutdirReader(o)), folder) for o in (old_outdir, new_outdir))
    return devices_to_push({"devices": device_changes(CONFIGS, a, b, "device", diffs=False)})


def to_json(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=False) + "\n"


def _e(end: dict) -> str:
    return f"{end['device']}:{end['port']}"


def render_text(doc: dict, diffs: bool = True) -> str:
    """The human plan: a summary, then every cable, device and host, then the diffs."""
    c, dv, h, b = doc["cables"], doc["devices"], doc["hosts"], doc["bom"]
    out = [f"cables: {len(c['added']):,} added, {len(c['removed']):,} removed, {len(c['moved']):,} moved, "
           f"{len(c['relabelled']):,} relabelled, {len(c['changed']):,} changed",
           f"devices: {len(dv['added']):,} added, {len(dv['removed']):,} removed, {len(dv['changed']):,} changed",
           f"hosts: {len(h['added']):,} added, {len(h['removed']):,} removed, {len(h['changed']):,} changed",
           f"bom: {b['quantity']['delta']:+,} units, cost {b['cost_usd']['delta']:+,} USD, power {b['power_w']['delta']:+,} W"]
    for x in c["added"]:
        out.append(f"  + cable {x['cable_id']}  {_e(x['a'])} - {_e(x['b'])}")
    for x in c["removed"]:
        out.append(f"  - cable {x['cable_id']}  {_e(x['a'])} - {_e(x['b'])}")
    for x in c["moved"]:
        o, n = x["old"], x["new"]
        ids = o["cable_id"] if o["cable_id"] == n["cable_id"] else f"{o['cable_id']} -> {n['cable_id']}"
        out.append(f"  ~ cable {ids}  {_e(o['a'])} - {_e(o['b'])}  =>  {_e(n['a'])} - {_e(n['b'])}")
    for x in c["relabelled"]:
        out.append(f"  = cable {x['old_cable_id']} -> {x['cable_id']}  {_e(x['a'])} - {_e(x['b'])} (same ends, new id)")
    for x in c["changed"]:
        o, n = x["old"], x["new"]
        out.append(f"  * cable {x['cable_id']}  {_e(x['a'])} - {_e(x['b'])}  {o['media']} {o['length_m']} m => {n['media']} {n['length_m']} m")
    for part, key in ((dv, "device"), (h, "host")):
        for sign, k in (("+", "added"), ("-", "removed"), ("~", "changed")):
            for x in part[k]:
                out.append(f"  {sign} {key} {x[key]}  ({', '.join(x['files'])})")
    for x in b["items"]:
        q = x["quantity"]
        out.append(f"  bom {x['item']}: {q['old']:,} -> {q['new']:,} ({q['delta']:+,}), cost {x['cost_usd']:+,} USD, power {x['power_w']:+,} W")
    f = doc.get("files") or {}
    if any(f.values()):
        out.append(f"files: {len(f['added']):,} added, {len(f['removed']):,} removed, {len(f['changed']):,} changed,"
                   f" {len(f['missing']):,} missing, {len(f['unknown']):,} not in MANIFEST.json")
        for sign, k, note in (("+", "added", ""), ("-", "removed", ""), ("~", "changed", ""),
                              ("!", "missing", " (listed in MANIFEST.json, absent)"),
                              ("?", "unknown", " (not in MANIFEST.json: not written by the compiler)")):
            out += [f"  {sign} file {p}{note}" for p in f[k]]
    text = "\n".join(out) + "\n"
    if diffs:
        text += "".join(x.get("diff", "") for part in (dv, h) for x in part["changed"])
    return printable(text)
