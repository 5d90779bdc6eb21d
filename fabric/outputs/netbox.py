"""NetBox bulk-import files for the whole plant: devices, interfaces and cables.

Columns are NetBox's documented CSV import fields (DeviceImportForm,
InterfaceImportForm, CableImportForm; DCIM > Devices / Interfaces / Cables >
Import), imported in that order. Devices are named as on the floor: switches by
hostname, servers (HB domains) as the host configs name them (`hb0`), with one
NIC interface per GPU (`rail0`, labelled with the GPU it serves). Cable type
comes from the price book's cable class per tier, length from the design (the
same :func:`~railonly.fabric.design.physical.cable_length_m` every other file uses);
the label is cabling.csv's cable_id, so the files join. Status is `planned`:
the plan exists before the hardware does.

Before importing, NetBox needs the site (the design's name), the roles
(`gpu-server`, `leaf`, `spine`, `core`), the manufacturer `Generic`, the device
types named in netbox_devices.csv and the platforms `sonic`/`eos` (or edit the
columns to yours).
"""

from __future__ import annotations

import csv
import io

from ..outdir_layout import NETBOX_CABLES_CSV, NETBOX_DEVICES_CSV, NETBOX_INTERFACES_CSV
from ..cost.prices import PriceBook, default_prices
from ..design.physical import SWITCH_TIERS, cable_length_m, hosts_of, naming, nic_name
from ..devices.device import switch_view
from ..graph.model import Fabric

CABLE_COLUMNS = ["side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name",
                 "type", "status", "label", "length", "length_unit"]
DEVICE_COLUMNS = ["name", "role", "manufacturer", "device_type", "platform", "status", "site", "description"]
INTERFACE_COLUMNS = ["device", "name", "label", "type", "enabled", "mtu", "speed", "description"]

MANUFACTURER = "Generic"
SERVER_ROLE = "gpu-server"
SWITCH_ROLES = SWITCH_TIERS  # NetBox device role: the tier's name
# NetBox interface type (InterfaceTypeChoices) by port speed: the usual cage of each speed.
INTERFACE_TYPES = {100: "100gbase-x-qsfp28", 200: "200gbase-x-qsfp56", 400: "400gbase-x-osfp", 800: "800gbase-x-osfp"}
# A catalog switch's ports by (cage form, port speed): the type NetBox has for that cage at
# that speed (InterfaceTypeChoices, netbox/dcim/choices.py). A pair NetBox has no type for
# (an OSFP cage broken out to 200G or 100G) keeps the speed's usual type above.
CAGE_INTERFACE_TYPES = {
    ("OSFP", 400): "400gbase-x-osfp", ("OSFP", 800): "800gbase-x-osfp",
    ("QSFP-DD", 100): "100gbase-x-qsfpdd", ("QSFP-DD", 200): "200gbase-x-qsfpdd",
    ("QSFP-DD", 400): "400gbase-x-qsfpdd", ("QSFP-DD", 800): "800gbase-x-qsfpdd",
    ("QSFP28", 100): "100gbase-x-qsfp28", ("QSFP56", 200): "200gbase-x-qsfp56",
    ("QSFP112", 400): "400gbase-x-qsfp112",
}


def switch_type(radix: int, gbps: int) -> str:
    return f"switch-{radix}x{gbps}G"


def server_type(gpus: int, gbps: int) -> str:
    return f"gpu-server-{gpus}x{gbps}G"


def rail_runs(rails) -> str:
    """A switch's rails as NetBox's description (at most 200 characters; a longer one
    fails the row's import) holds them: runs of three or more as `a-b` (`0-127`, as the
    switch's name `rails0-127`), others listed (`0`, `0,1`)."""
    rails = sorted(rails)
    out, i = [], 0
    while i < len(rails):
        j = i
        while j + 1 < len(rails) and rails[j + 1] == rails[j] + 1:
            j += 1
        out.append(f"{rails[i]}-{rails[j]}" if j - i >= 2 else ",".join(map(str, rails[i:j + 1])))
        i = j + 1
    return ",".join(out)


def _writer():
    buf = io.StringIO()
    return buf, csv.writer(buf, lineterminator="\n")


def render_cables(fab: Fabric, book: PriceBook | None = None) -> str:
    book = book or default_prices()
    d = fab.design
    names = naming(fab)
    kinds = {}
    buf, w = _writer()
    w.writerow(CABLE_COLUMNS)
    for lk in fab.cables():
        if lk.tier not in kinds:
            # a clear error when the tier has no cable class; NIC-leaf as the NIC optic needs it
            kinds[lk.tier] = (book.fibre(lk.tier, d.nic_optic).model, cable_length_m(d, lk.tier))
        ctype, length = kinds[lk.tier]
        a_dev, a_port, _ = names.floor_end(lk.a.node, lk.a.port)
        b_dev, b_port, _ = names.floor_end(lk.b.node, lk.b.port)
        w.writerow([a_dev, "dcim.interface", a_port, b_dev, "dcim.interface", b_port,
                    ctype, "planned", lk.cable_id, length, "m"])
    return buf.getvalue()


def render_devices(fab: Fabric) -> str:
    d = fab.design
    buf, w = _writer()
    w.writerow(DEVICE_COLUMNS)
    per = d.gpus_per_host
    for hb in fab.hbs:
        for host, ranks in hosts_of(hb.name, d.hb_size, per):
            what = (f"HB domain {hb.hb_domain}: {d.hb_size} GPUs" if per >= d.hb_size else
                    f"HB domain {hb.hb_domain} tray {ranks[0] // per}: GPUs {ranks[0]}-{ranks[-1]} of {d.hb_size}")
            w.writerow([host, SERVER_ROLE, MANUFACTURER, server_type(per, d.nic_gbps), "", "planned", d.name,
                        f"{what}, NIC rail<r> for GPU r"])
    for sw in fab.switches:
        rails = rail_runs(sw.rails) if sw.rails else "all (joins rails)"
        model = d.model_of_tier(sw.tier)  # a catalog platform: its vendor and model name
        maker, kind = (model.vendor, model.model) if model else (MANUFACTURER, switch_type(d.radix, d.nic_gbps))
        w.writerow([sw.name, SWITCH_ROLES[sw.tier], maker, kind, sw.platform,
                    "planned", d.name, f"tier {sw.tier}, rails {rails}"])
    return buf.getvalue()


def render_interfaces(fab: Fabric, switch_rows: "dict[str, str] | None" = None) -> str:
    """Every server NIC, and every switch port of the radix (uncabled ones disabled);
    `switch_rows`: switch name -> its rows, made already (:func:`switch_interfaces`)."""
    d = fab.design
    kind = INTERFACE_TYPES.get(int(d.nic_gbps), "other")
    speed = int(d.nic_gbps) * 1_000_000  # NetBox speed is in kbit/s
    buf, w = _writer()
    w.writerow(INTERFACE_COLUMNS)
    names = naming(fab)
    gpus_of: dict[int, list] = {}
    for g in fab.gpus:
        gpus_of.setdefault(g.hb_domain, []).append(g)
    for hb in fab.hbs:
        for g in sorted(gpus_of.get(hb.hb_domain, []), key=lambda g: g.rank):
            w.writerow([names.server_of(g.name) or hb.name, nic_name(g.rank), f"GPU {g.rank}", kind, "true", d.nic_mtu, speed,
                        f"NIC of GPU {g.rank} (lab node {g.name}), rail {g.rail}"])
    text = buf.getvalue()
    if switch_rows is None:
        return text + "".join(switch_interfaces(fab, sw, switch_view(fab, sw)) for sw in fab.switches)
    return text + "".join(switch_rows[sw.name] for sw in fab.switches)


def switch_port_type(fab: Fabric, sw) -> str:
    """The NetBox interface type of a switch's fabric ports: its catalog platform's cage
    form at the port speed (a QSFP-DD switch's 400G port is `400gbase-x-qsfpdd`), else
    the speed's usual type."""
    gbps = int(fab.design.nic_gbps)
    model = fab.design.model_of_tier(sw.tier)
    usual = INTERFACE_TYPES.get(gbps, "other")
    return CAGE_INTERFACE_TYPES.get((model.form.upper(), gbps), usual) if model else usual


def switch_interfaces(fab: Fabric, sw, view) -> str:
    """The rows of one switch's ports (every port of its radix) from its switch_view."""
    d = fab.design
    kind = switch_port_type(fab, sw)
    speed = int(d.nic_gbps) * 1_000_000
    buf, w = _writer()
    w.writerows([sw.name, p.name, "", kind, "true" if p.cabled else "false", d.switch_mtu, speed, p.description]
                for p in view.ports)
    return buf.getvalue()


def produce(fab: Fabric, progress, switch_rows: "dict[str, str] | None" = None) -> dict[str, str]:
    """The three files; `switch_rows`: each switch's interface rows (switch_interfaces),
    made by the compiler beside its configs, where the switch's view is at hand."""
    return {**produce_from_graph(fab, progress), **produce_interfaces(fab, progress, switch_rows)}


def produce_from_graph(fab: Fabric, progress) -> dict[str, str]:
    """The two files that need nothing but the graph (devices, cables)."""
    return {NETBOX_DEVICES_CSV: render_devices(fab), NETBOX_CABLES_CSV: render_cables(fab)}


def produce_interfaces(fab: Fabric, progress, switch_rows: "dict[str, str] | None" = None) -> dict[str, str]:
    """The interfaces file (`switch_rows` as for :func:`produce`)."""
    return {NETBOX_INTERFACES_CSV: render_interfaces(fab, switch_rows)}
