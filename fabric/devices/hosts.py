"""Per-host host configuration: rail NICs, per-rail routing, NCCL.

A host is a server that is a whole HB domain (DGX: `hb<d>`), or one compute tray
of a rack-scale domain (`hb_domain.gpus_per_host`; GB200 NVL72: `hb<d>-tray<t>`
with the NICs of GPUs 4t..4t+3). Names come from design/physical.py.

Each GPU's NIC is named `rail<r>` on the server (rename with a udev/netplan
match on your NIC's MAC or PCI path; the files here key everything by it).
Routing keeps a rail's traffic on its own NIC:

* table 100+r holds rail r's routes, and `ip rule from <GPU r's address>
  lookup 100+r`, so anything sourced from NIC r leaves through NIC r;
* the main table reaches rail s's address block through NIC s. In rail-only
  there is no path between rails in the network: traffic for a GPU of rank s
  goes through this HB domain's GPU of rank s (the sibling on the
  destination's rail; NCCL's PXN moves the data over NVLink first), and on a
  server that GPU's NIC is local, so the route is simply "via NIC s";
* routed rails reach their block via the leaf's SVI gateway; L2 rails are one
  subnet (connected); the rail-optimized baseline also has a default route
  via the leaf gateway, because its spine joins the rails. On a tray the
  other rails' GPUs sit in sibling trays of the same NVLink domain: the
  main table still routes rail s's block via NIC s only where NIC s is local.

Outputs per host: `netplan.yaml` (for /etc/netplan/), `rails.sh` (the
same with `ip`, for hosts without netplan), `nccl.env`, and `roce-qos.sh`, the
NIC side of the fabric's RoCE QoS (docs/qos.md).
"""

from __future__ import annotations

import math

import yaml

from ..outdir_layout import NCCL_ENV, NETPLAN, RAILS_SH, ROCE_QOS_SH, host_file
from . import qos
from ..design.physical import hosts_of, nic_name
from ..graph.model import Fabric
from .render import template

HOST_FILES = sorted([NCCL_ENV, NETPLAN, RAILS_SH, ROCE_QOS_SH])  # per host, in the order the unit lists them
TABLE_BASE = 100  # rail r uses routing table and rule priority 100 + r


def rail_block(design, rail: int) -> str:
    """Rail r's share of the GPU pool (the pool is cut into equal per-rail blocks)."""
    pool = design.pools.gpu
    bits = math.ceil(math.log2(design.hb_size)) if design.hb_size > 1 else 0
    plen = pool.prefixlen + bits
    base = int(pool.network_address) + rail * (1 << (32 - plen))
    return f"{base >> 24}.{(base >> 16) & 255}.{(base >> 8) & 255}.{base & 255}/{plen}"


def _vlan_by_port(fab: Fabric) -> dict[tuple[str, str], object]:
    out = {}
    for sw in fab.switches:
        for v in sw.vlans:
            for p in v.ports:
                out[(sw.name, p)] = v
    return out


def host_views(fab: Fabric, shard: int = 0, shards: int = 1) -> list[dict]:
    """Structured host config per host (what the templates print), every host of
    every `shards`-th HB domain from `shard` on."""
    d = fab.design
    baseline = d.topology == "rail-optimized"
    routed = d.rail_mode == "routed"
    blocks = [rail_block(d, r) for r in range(d.hb_size)]
    vlan_at = _vlan_by_port(fab)
    nic_of = {}
    for lk in fab.links:
        if lk.kind == "rail":
            nic_of[lk.a.node] = (lk.a.ip, vlan_at[(lk.b.node, lk.b.port)], lk.b)
    views = []
    for hb in fab.hbs[shard::shards]:
        for host, ranks in hosts_of(hb.name, d.hb_size, d.gpus_per_host):
            views.append(_host_view(d, host, ranks, hb.name, nic_of, blocks, routed, baseline))
    return views


def _host_view(d, host: str, ranks: range, domain: str, nic_of: dict, blocks: list[str], routed: bool, baseline: bool) -> dict:
    nics = []
    for r in ranks:
        gpu = f"{domain}-gpu{r}"
        if gpu not in nic_of:
            continue
        cidr, vlan, sw = nic_of[gpu]
        gw = vlan.gateway.split("/")[0] if vlan.gateway else None
        table = TABLE_BASE + r
        main = []  # routes in the main table: rail r's block through NIC r
        tab = [{"to": vlan.subnet, "via": None}]
        if routed:
            main.append({"to": blocks[r], "via": gw})
            tab.append({"to": blocks[r], "via": gw})
        if baseline:
            tab.append({"to": "default", "via": gw})
        nics.append({
            "name": nic_name(r), "rail": r, "gpu": gpu, "address": cidr, "ip": cidr.split("/")[0],
            "subnet": vlan.subnet, "gateway": gw, "table": table, "priority": table,
            "main_routes": main, "table_routes": tab, "switch": f"{sw.node}:{sw.port}",
        })
    default = None
    if baseline and nics:
        default = {"via": nics[0]["gateway"], "dev": nics[0]["name"]}
    return {"name": host, "mtu": d.nic_mtu, "nics": nics, "default": default,
            "rail_mode": d.rail_mode, "topology": d.topology}


def nccl_env(fab: Fabric, first_rail: int = 0) -> list[tuple[str, str, str]]:
    """(variable, value, why): NCCL settings that keep collectives rail-aligned, for a host
    whose NICs are rails first_rail .. first_rail + gpus_per_host - 1."""
    d = fab.design
    q = d.qos
    hcas = ",".join(f"mlx5_{i}:1" for i in range(d.gpus_per_host))
    if d.gpus_per_host < d.hb_size:  # a tray: its own NICs, and no rail reaches every tray
        hca_why = (f"RDMA device of this tray's i-th NIC (rail {first_rail}+i) is mlx5_i (exact match); "
                   "reorder if your NICs enumerate differently")
        boot = (f"=rail{first_rail}", f"bootstrap over this tray's first NIC, rail {first_rail}, which reaches only the trays "
                "in the same slot of other racks; use the front-end NIC so every tray is reached")
    else:
        hca_why = "RDMA device of rail r is mlx5_r (exact match); reorder if your NICs enumerate differently"
        boot = ("=rail0", "bootstrap over rail 0, which reaches every server; use the front-end NIC if there is one")
    return [
        ("NCCL_CROSS_NIC", "0", "a channel uses the same NIC index (rail) on every server: rails are not connected"),
        ("NCCL_P2P_PXN_LEVEL", "2", "always use PXN: data for rank s moves over NVLink to the local GPU s, then out on rail s"),
        ("NCCL_PXN_DISABLE", "0", "keep PXN on (older NCCL releases read this one)"),
        ("NCCL_IB_HCA", f"={hcas}", hca_why),
        ("NCCL_IB_GID_INDEX", "3", "RoCEv2 over IPv4 GID"),
        ("NCCL_IB_TC", str(q["roce_dscp"] << 2), f"traffic class = DSCP {q['roce_dscp']} << 2, the lossless class of the fabric"),
        ("NCCL_SOCKET_IFNAME", *boot),
    ]


def roce_qos_view(fab: Fabric, view: dict) -> dict:
    """The NIC side of the fabric's RoCE QoS plan (fabric/qos.py) for one server: DSCP
    trust, PFC on the lossless priority only, the RoCE and CNP code points, ECN on."""
    q = qos.plan(fab.design)
    return {
        "server": view["name"], "roce_dscp": q.roce_dscp, "roce_priority": q.roce_priority,
        "cnp_dscp": q.cnp_dscp, "cnp_priority": q.cnp_priority,
        "pfc": ",".join("1" if p in q.lossless else "0" for p in range(8)),
        "tos": q.roce_dscp << 2,  # the IP ToS byte of RoCE traffic: DSCP in its upper six bits (as NCCL_IB_TC)
        "nics": [{"name": n["name"], "rail": n["rail"]} for n in view["nics"]],
    }


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parse_back(text: str) -> None:
    """Parse a rendered netplan file before it is written. The event stream of
    libyang's C parser catches every syntax error (bad indentation, quoting)
    at a quarter of the cost of building the Python objects; the goldens pin
    the structure."""
    for _ in yaml.parse(text, Loader=_YAML_LOADER):
        pass


def render_hosts(fab: Fabric, shard: int = 0, shards: int = 1, skip: "set[str] | None" = None,
                 views: "list[dict] | None" = None) -> dict[str, str]:
    """HOST_FILES of every host of the shard (`views`: its host_views, if made) except those named in `skip`."""
    files = {}
    netplan = template("hosts/netplan.yaml.j2")
    script = template("hosts/rails.sh.j2")
    roce = template("hosts/roce-qos.sh.j2")
    env_tpl = template("hosts/nccl.env.j2")
    envs: dict[int, str] = {}  # first rail of a host -> its nccl.env (the same for every server)
    for h in host_views(fab, shard, shards) if views is None else views:
        if skip and h["name"] in skip:
            continue
        first = h["nics"][0]["rail"] if h["nics"] else 0
        if first not in envs:
            envs[first] = env_tpl.render(vars=nccl_env(fab, first), name=fab.design.name)
        env = envs[first]
        text = netplan.render(h=h)
        _parse_back(text)
        files[host_file(h['name'], NETPLAN)] = text
        files[host_file(h['name'], RAILS_SH)] = script.render(h=h)
        files[host_file(h['name'], NCCL_ENV)] = env
        files[host_file(h['name'], ROCE_QOS_SH)] = roce.render(q=roce_qos_view(fab, h))
    return files
