"""`cabling.csv`: one row per physical cable, with the optics its tier needs."""

from __future__ import annotations

import csv
import io

from .model import Fabric

COLUMNS = ["cable_id", "a_device", "a_port", "b_device", "b_port", "rail", "tier", "gbps", "media"]

# Reach class per cable tier: NIC-leaf stays in the row (multimode), leaf-spine
# crosses the hall (single-mode, 500 m), spine-core may cross buildings (2 km).
_REACH = {1: ("SR", "MMF", "50m"), 2: ("DR", "SMF", "500m"), 3: ("FR", "SMF", "2km")}


def media(gbps: float, tier: int) -> str:
    """Optic type of a cable: speed, IEEE-style reach code, fibre, e.g. '400G-DR4 SMF 500m'."""
    code, fibre, reach = _REACH.get(tier, _REACH[3])
    lanes = {100: 4, 200: 4, 400: 4, 800: 8}.get(int(gbps), 4)
    if code == "SR" and int(gbps) == 400:
        lanes = 8  # 400G-SR8: eight multimode pairs
    return f"{int(gbps)}G-{code}{lanes} {fibre} {reach}"


def rows(fab: Fabric) -> list[list]:
    out = []
    for lk in fab.cables():
        out.append([lk.cable_id, lk.a.node, lk.a.port, lk.b.node, lk.b.port,
                    "" if lk.rail is None else lk.rail, lk.tier, _num(lk.gbps), media(lk.gbps, lk.tier)])
    return out


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def render(fab: Fabric) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    w.writerows(rows(fab))
    return buf.getvalue()
