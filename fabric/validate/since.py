"""The plant files judged by what changed since the previous self-checked compile.

An incremental compile's self-check judged every line of the previous compile's
fabric.json and plant files; growth within `planned` adds lines to them (the new HB
domains' nodes and cables, a leaf's newly cabled ports) and rewrites a few NetBox
interface rows in place. The line multisets of the old and new files tell which lines
came and went. A plant row's verdict reads only its own line, its cable's link in
fabric.json and the floor names of the cable's ends (:class:`~..design.physical.Naming`:
a GPU's host is named from its own HB domain). So when fabric.json lost no line (its
head aside, where only the HB domain count may change), its new GPUs and servers make
whole new HB domains, and the plant files lost no row but NetBox interface rows
written again, every old row keeps its verdict and only the new rows are judged, with
plant's own rules (:mod:`.plant`). Anything else, and any problem (so that it is named
exactly, with its line), sends the caller to the whole files.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from typing import Callable, NamedTuple

from ..outdir_layout import (BOM_CSV, CABLING_CSV, FABRIC_JSON, NETBOX_CABLES_CSV, NETBOX_DEVICES_CSV,
                             NETBOX_INTERFACES_CSV)
from ..graph import fabric_json
from ..graph.model import Fabric
from . import plant as p
from .validate_report import Result

Reader = Callable[[str], "str | None"]


def _changed(old: list[str], new: list[str]) -> tuple[list[str], list[str]] | None:
    """(lines gone, lines come) between two files' lines (order aside: no plant rule reads
    it); None when either file repeats a line, where sets would miscount."""
    old_set, new_set = set(old), set(new)
    if len(old_set) != len(old) or len(new_set) != len(new):
        return None
    return [line for line in old if line not in new_set], [line for line in new if line not in old_set]


def _head(line: str) -> dict | None:
    """fabric.json's first line (its head, the object opened) without the HB domain count."""
    head = fabric_json.line_object(line)
    if head is None:
        return None
    head.pop("hb_domain_count", None)
    return head


def _rows(header: str, lines: list[str], need: list[str]) -> list[tuple] | None:
    """The `need` columns of each line, read as a CSV row under `header`; None unless
    every line is one whole row with those columns."""
    if any(line.count('"') % 2 or "\r" in line for line in lines):
        return None  # a quoted field running over a line break: not one row a line
    reader = csv.reader(io.StringIO("\n".join([header, *lines])))
    try:
        columns = next(reader)
        idx = [columns.index(c) for c in need]
        rows = [tuple(row[i] for i in idx) for row in reader]
    except (csv.Error, ValueError, IndexError, StopIteration):
        return None
    return rows if len(rows) == len(lines) else None


def _csv_change(read: Reader, base: Reader, path: str, need: list[str]) -> tuple[list[tuple], list[tuple]] | None:
    """(rows gone, rows come) of a plant file since `base`, or None (no base, a new header, not one row a line)."""
    old, new = base(path), read(path)
    if old is None or new is None:
        return None
    old_lines, new_lines = old.split("\n"), new.split("\n")
    if old_lines[0] != new_lines[0]:
        return None
    change = _changed(old_lines[1:], new_lines[1:])
    if change is None:
        return None
    gone, came = change
    gone_rows, came_rows = _rows(new_lines[0], gone, need), _rows(new_lines[0], came, need)
    if gone_rows is None or came_rows is None:
        return None
    return gone_rows, came_rows


def _fabric_json_came(read: Reader, base: Reader) -> list[dict] | None:
    """The items fabric.json gained since `base`, decoded, when it gained lines only (a
    list's last line may gain its comma, the head only its HB domain count); else None."""
    old, new = base(FABRIC_JSON), read(FABRIC_JSON)
    if old is None or new is None:
        return None
    old_lines, new_lines = old.split("\n"), new.split("\n")
    head = _head(new_lines[0])
    if head is None or head != _head(old_lines[0]):
        return None
    change = _changed(old_lines[1:], new_lines[1:])
    if change is None:
        return None
    gone, came = change
    # a list's old last line, followed by new items now, has gained its comma
    gone_set = set(gone)
    comma = {line for line in came if line.endswith(",") and line[:-1] in gone_set}
    if len(gone) != len(comma):
        return None
    items = [fabric_json.line_object(line.rstrip(",")) for line in came if line not in comma]
    return None if any(item is None for item in items) else items


class Changes(NamedTuple):
    """What the files' text says changed since the base: the part of the judgement that
    needs no fabric graph, so it can run while fabric.json is parsed."""
    fabric_items: list[dict] | None  # fabric.json's new nodes and links (_fabric_json_came)
    rows: dict[str, tuple[list[tuple], list[tuple]] | None]  # plant file -> (rows gone, rows come), its columns


_PLANT_COLUMNS = {CABLING_CSV: p.CABLING_COLUMNS, NETBOX_CABLES_CSV: p.NETBOX_CABLE_COLUMNS,
                  NETBOX_DEVICES_CSV: p.DEVICE_COLUMNS, NETBOX_INTERFACES_CSV: p.INTERFACE_COLUMNS}


def text_changes(read: Reader, base: Reader) -> Changes:
    """The files' :class:`Changes` since `base` (no rows when fabric.json did not only gain lines)."""
    items = _fabric_json_came(read, base)
    if items is None:  # the whole files are judged: their rows are not needed
        return Changes(None, {})
    return Changes(items, {path: _csv_change(read, base, path, columns) for path, columns in _PLANT_COLUMNS.items()})


def _new_cables(fabric: Fabric, came: list[dict] | None) -> set[str] | None:
    """The cable ids of the links among fabric.json's new items, when its new GPUs and
    servers make whole HB domains (and nothing else but switches and links came)."""
    if came is None:
        return None
    cables: set[str] = set()
    domains: Counter = Counter()
    for item in came:
        if "kind" in item:  # a link; the parse of the whole file judged its form
            if item.get("cable_id") is not None:
                cables.add(item["cable_id"])
        elif item.get("role") in ("gpu", "hb"):
            domains[item.get("hb_domain")] += 1
        elif item.get("role") != "switch":
            return None
    # a GPU's host is named by the GPUs of its domain together: only whole new domains
    have = Counter(n.hb_domain for n in (*fabric.gpus, *fabric.hbs))
    if any(have[d] != k for d, k in domains.items()):
        return None
    return cables


def judged_since(fabric: Fabric, read: Reader, base: Reader, changes: Changes | None = None) -> list[Result] | None:
    """Plant's results from the lines that changed since `base` (all passing), or None:
    judge the whole files. `fabric` is the new fabric.json, parsed whole; `changes`, the
    files' text_changes when they were taken already."""
    changes = changes or text_changes(read, base)
    new = _new_cables(fabric, changes.fabric_items)
    if new is None:
        return None
    cables = {lk.cable_id: lk for lk in fabric.links if lk.cable_id}
    if not new <= cables.keys() or len(cables) != sum(1 for lk in fabric.links if lk.cable_id):
        return None  # a cable id twice in fabric.json: the whole files say where
    wanted = {cid: cables[cid] for cid in new}
    ends = p.floor_ends(fabric, wanted)

    # cabling.csv and netbox_cables.csv: no row gone, one new row for each new cable and none else
    for path, judge in ((CABLING_CSV, p.judge_cabling_row), (NETBOX_CABLES_CSV, p.judge_netbox_cable_row)):
        change = changes.rows[path]
        if change is None or change[0]:
            return None
        came = change[1]
        if len(came) != len(wanted) or {row[0] for row in came} != new:
            return None
        probs: list[str] = []
        for row in came:
            judge(probs, 0, row, wanted[row[0]], ends[row[0]])
        if probs:
            return None

    # netbox_devices.csv gains rows only; netbox_interfaces.csv's rows come on known devices
    # (new ones, or ones with rows gone: written again) and every new cable's ends are among them
    devices, ports = changes.rows[NETBOX_DEVICES_CSV], changes.rows[NETBOX_INTERFACES_CSV]
    if devices is None or ports is None or devices[0]:
        return None
    known = {row[0] for row in devices[1]} | {row[0] for row in ports[0]}
    came_ports = {(device, name) for device, name, _type in ports[1]}
    if len(came_ports) != len(ports[1]) or any(device not in known for device, _n in came_ports):
        return None
    if not {(device, name) for device, name, _type in ports[0]} <= came_ports:
        return None  # an interface row gone for good: a cable end of before may have lost it
    if any(want not in came_ports for _, a, b in ends.values() for want in (a, b)):
        return None

    bom = p.bom_result(read, cables)  # a small file: judged whole
    if not bom.passed:
        return None
    since = "the rows added or written again since the last checked compile agree with fabric.json"
    return [Result(f"plant/{CABLING_CSV}", "plant", True, since),
            Result(f"plant/{NETBOX_CABLES_CSV}", "plant", True, since),
            bom,
            Result(f"plant/{NETBOX_INTERFACES_CSV}", "plant", True, since)]


def plant_since(fabric: Fabric, read: Reader, base: "Reader | None", changes: Changes | None = None) -> list[Result]:
    """Plant's results: from what changed since `base` (the previous compile's files, read
    only where it self-checked them and they are intact) when that settles it, else whole."""
    return (judged_since(fabric, read, base, changes) if base is not None else None) or p.plant(fabric, read)
