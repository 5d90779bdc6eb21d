"""`cabling.csv`: one row per physical cable, named as on the floor, with its optic and length.

The documented columns (docs/reference/outdir.md) come first; then `length_m` (the cable's one length, see
:mod:`railonly.fabric.design.physical`) and `a_gpu`: for a NIC cable, the GPU whose NIC
the a end is (the fabric.json node, and the lab's namespace); empty otherwise.
The a end of a NIC cable is the server and its NIC (`hb0`, `rail0`), as the host
configs name them.
"""

from __future__ import annotations

import csv
import io

from ..design.physical import cable_length_m, cable_media, naming
from ..graph.model import Fabric
from ..platforms.ports import GPU_RAIL_PORT

COLUMNS = ["cable_id", "a_device", "a_port", "b_device", "b_port", "rail", "tier", "gbps", "media",
           "length_m", "a_gpu"]


def rows(fab: Fabric) -> list[list]:
    names = naming(fab)
    d = fab.design
    out = []
    kinds: dict[tuple, tuple] = {}  # (gbps, tier) -> its columns: a handful for 100,000 cables
    for lk in fab.cables():
        a_dev, a_port, gpu = names.floor_end(lk.a.node, lk.a.port)
        b_dev, b_port, _ = names.floor_end(lk.b.node, lk.b.port)
        kind = kinds.get((lk.gbps, lk.tier))
        if kind is None:
            kind = kinds[(lk.gbps, lk.tier)] = (_num(lk.gbps), cable_media(d, lk.gbps, lk.tier), cable_length_m(d, lk.tier))
        out.append([lk.cable_id, a_dev, a_port, b_dev, b_port, "" if lk.rail is None else lk.rail, lk.tier, *kind, gpu])
    return out


def graph_ends(row: dict) -> tuple[tuple[str, str], tuple[str, str]]:
    """The fabric.json ends (node, port) of a cabling.csv row: the a end of a NIC cable
    is its `a_gpu`'s NIC; switch ends are named alike in both."""
    a = (row["a_gpu"], GPU_RAIL_PORT) if row.get("a_gpu") else (row["a_device"], row["a_port"])
    return a, (row["b_device"], row["b_port"])


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def render(fab: Fabric) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    w.writerows(rows(fab))
    return buf.getvalue()
