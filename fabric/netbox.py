"""`netbox_cables.csv`: the cabling plan in NetBox's cable bulk-import format.

Columns are those of NetBox's CableImportForm (DCIM > Cables > Import). Both
ends are interfaces (dcim.interface) named as the fabric graph names them:
switches by their OS port name, GPUs as devices of their own with the NIC
port `eth1` (rename the device to the server's name if GPUs live in servers
in your NetBox). Cable type and length come from the price book's cable class
per tier; the label is the cable_id of cabling.csv, so the two files join.
Status is `planned`: the plan exists before the cable does.
"""

from __future__ import annotations

import csv
import io

from .model import Fabric
from .prices import PriceBook, default_prices

COLUMNS = ["side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name",
           "type", "status", "label", "length", "length_unit"]


def render(fab: Fabric, book: PriceBook | None = None) -> str:
    book = book or default_prices()
    kinds = {}
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for lk in fab.cables():
        if lk.tier not in kinds:
            book.cable(lk.tier)  # a clear error when the tier has no cable class
            v = book.values["cables"][lk.tier]
            kinds[lk.tier] = (v["type"], _num(v["length_m"]))
        ctype, length = kinds[lk.tier]
        w.writerow([lk.a.node, "dcim.interface", lk.a.port, lk.b.node, "dcim.interface", lk.b.port,
                    ctype, "planned", lk.cable_id, length, "m"])
    return buf.getvalue()


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def produce(fab: Fabric, progress) -> dict[str, str]:
    return {"netbox_cables.csv": render(fab)}
