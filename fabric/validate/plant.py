"""The plant files against fabric.json: every cable's ends, names and one length.

cabling.csv, netbox_cables.csv and bom.csv's fibre lines are read back (as
text, like every artifact: a hand-edited file is judged like a generated one)
and compared with the cables of fabric.json; netbox_devices.csv and
netbox_interfaces.csv must hold every device and port a cable ends on. One
result per file; each problem names the file, the line and the column.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from typing import Callable

from ..cabling import graph_ends
from ..physical import Naming
from .report import Result

MAX_SHOWN = 20  # problems listed per file; the rest are counted


class _Problems(list):
    def detail(self, ok: str) -> str:
        if not self:
            return ok
        more = len(self) - MAX_SHOWN
        return "\n".join(self[:MAX_SHOWN]) + (f"\n... and {more:,} more" if more > 0 else "")


def _rows(read: Callable[[str], "str | None"], path: str, need: list[str], probs: list[str]):
    """(line, row) of a CSV artifact; problems for a missing file or missing columns."""
    text = read(path)
    if text is None:
        probs.append(f"{path}: missing (compile writes it; recompile the design)")
        return []
    reader = csv.DictReader(io.StringIO(text))
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        probs.append(f"{path}: line 1: not CSV: {exc}")
        return []
    absent = [c for c in need if c not in header]
    if absent:
        probs.append(f"{path}: line 1: missing column(s) {', '.join(absent)}")
        return []
    out = []
    try:
        for row in reader:
            out.append((reader.line_num, row))
    except csv.Error as exc:
        probs.append(f"{path}: line {reader.line_num}: not CSV: {exc}")
    return out


def _int(text) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def plant(fabric: dict, read: Callable[[str], "str | None"]) -> list[Result]:
    names = Naming(fabric["nodes"])
    cables = {lk["cable_id"]: lk for lk in fabric["links"] if lk.get("cable_id")}

    def floor(e: dict) -> tuple[str, str]:
        return names.floor_end(e["node"], e["port"])[:2]

    results = []

    # cabling.csv: every cable once, ends named as on the floor, its GPU, its length
    probs = _Problems()
    seen: set[str] = set()
    rows = _rows(read, "cabling.csv", ["cable_id", "a_device", "a_port", "b_device", "b_port", "tier", "length_m", "a_gpu"], probs)
    for line, r in rows:
        where = f"cabling.csv: line {line}"
        lk = cables.get(r["cable_id"])
        if lk is None:
            probs.append(f"{where}: cable_id {r['cable_id']!r} is not a cable of fabric.json")
            continue
        if r["cable_id"] in seen:
            probs.append(f"{where}: cable_id {r['cable_id']} is listed twice")
        seen.add(r["cable_id"])
        want_a, want_b = floor(lk["a"]), floor(lk["b"])
        for col, got, want in (("a_device,a_port", (r["a_device"], r["a_port"]), want_a),
                               ("b_device,b_port", (r["b_device"], r["b_port"]), want_b)):
            if got != want:
                probs.append(f"{where}: {col} is {':'.join(got)}, fabric.json's cable {r['cable_id']} ends at {':'.join(want)}")
        if graph_ends(r)[0] != (lk["a"]["node"], lk["a"]["port"]):
            probs.append(f"{where}: a_gpu {r['a_gpu']!r} does not map to fabric.json's {lk['a']['node']}:{lk['a']['port']}")
        if _int(r["length_m"]) != lk.get("length_m"):
            probs.append(f"{where}: length_m is {r['length_m']!r}, fabric.json's cable {r['cable_id']} is {lk.get('length_m')} m")
    for cid in sorted(set(cables) - seen) if rows else ():
        probs.append(f"cabling.csv: cable {cid} of fabric.json is missing")
    results.append(Result("plant/cabling.csv", "plant", not probs, probs.detail(f"{len(cables):,} cables agree with fabric.json")))

    # netbox_cables.csv: the same cables, labelled by cable_id, with the same length in metres
    probs = _Problems()
    seen = set()
    rows = _rows(read, "netbox_cables.csv", ["side_a_device", "side_a_name", "side_b_device", "side_b_name",
                                             "label", "length", "length_unit"], probs)
    for line, r in rows:
        where = f"netbox_cables.csv: line {line}"
        lk = cables.get(r["label"])
        if lk is None:
            probs.append(f"{where}: label {r['label']!r} is not a cable of fabric.json")
            continue
        seen.add(r["label"])
        for side, e in (("a", lk["a"]), ("b", lk["b"])):
            got, want = (r[f"side_{side}_device"], r[f"side_{side}_name"]), floor(e)
            if got != want:
                probs.append(f"{where}: side {side} is {':'.join(got)}, fabric.json's cable {r['label']} ends at {':'.join(want)}")
        if _int(r["length"]) != lk.get("length_m") or r["length_unit"] != "m":
            probs.append(f"{where}: length is {r['length']} {r['length_unit']}, fabric.json's cable {r['label']} is {lk.get('length_m')} m")
    for cid in sorted(set(cables) - seen) if rows else ():
        probs.append(f"netbox_cables.csv: cable {cid} of fabric.json is missing")
    results.append(Result("plant/netbox_cables.csv", "plant", not probs, probs.detail(f"{len(cables):,} cables agree with fabric.json")))

    # bom.csv: fibre lines count exactly the cables of each length
    probs = _Problems()
    want_len = Counter(lk.get("length_m") for lk in cables.values())
    got_len: Counter = Counter()
    for line, r in _rows(read, "bom.csv", ["category", "quantity", "length_m"], probs):
        if r["category"] != "cable":
            continue
        n, length = _int(r["quantity"]), _int(r["length_m"])
        if n is None or length is None:
            probs.append(f"bom.csv: line {line}: quantity {r['quantity']!r} and length_m {r['length_m']!r} must be whole numbers")
            continue
        got_len[length] += n
    if not probs:
        for length in sorted(set(want_len) | set(got_len), key=lambda x: (x is None, x or 0)):
            if got_len[length] != want_len[length]:
                probs.append(f"bom.csv: fibre of {length} m: {got_len[length]:,} cables, fabric.json has {want_len[length]:,}")
    results.append(Result("plant/bom.csv", "plant", not probs,
                          probs.detail(", ".join(f"{n:,} x {m} m" for m, n in sorted(want_len.items(), key=lambda x: x[0] or 0)))))

    # netbox_devices.csv / netbox_interfaces.csv: every cable end can be imported
    probs = _Problems()
    devices = {r["name"] for _, r in _rows(read, "netbox_devices.csv", ["name", "role", "device_type", "site"], probs)}
    ports = set()
    for line, r in _rows(read, "netbox_interfaces.csv", ["device", "name", "type"], probs):
        if r["device"] not in devices:
            probs.append(f"netbox_interfaces.csv: line {line}: device {r['device']!r} is not in netbox_devices.csv")
        ports.add((r["device"], r["name"]))
    if not probs:
        for cid, lk in sorted(cables.items()):
            for e in (lk["a"], lk["b"]):
                if floor(e) not in ports:
                    probs.append(f"netbox_interfaces.csv: no interface {':'.join(floor(e))} (an end of cable {cid})")
    results.append(Result("plant/netbox_interfaces.csv", "plant", not probs,
                          probs.detail(f"{len(devices):,} devices, {len(ports):,} interfaces; every cable end is one")))
    return results
