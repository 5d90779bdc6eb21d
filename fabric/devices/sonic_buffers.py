"""SONiC buffer tables of a catalog switch: what its hwsku's published buffer templates render.

`config reload` (how `railonly push` loads config_db.json) loads init_cfg.json and the file
and renders no buffers; only `config load_minigraph` and `config qos reload` render the
hwsku's buffers.json.j2. So config_db.json carries them itself, equal to what
``sonic-cfggen -d -t buffers.json.j2`` gives on that switch (docs/qos.md):

* the topology: files/build_templates/buffers_config.j2 picks buffers_defaults_<postfix>.j2
  from DEVICE_METADATA type: a type containing ``ToRRouter`` -> t0, ``LeafRouter`` -> t1.
  For ``SpineRouter`` (railonly's core tier) it would import buffers_defaults_t2.j2,
  which no catalog hwsku publishes (the render fails there); railonly uses the t1 file;
* BUFFER_POOL and BUFFER_PROFILE: the hwsku's generate_buffer_pool_and_profiles() entries,
  facts in the platform catalog (fabric/platforms/data/switches/*.yaml, ``sonic.buffers``),
  with references in the plain form (``ingress_lossless_pool``): some Dell templates still
  publish the pre-202012 form ``[BUFFER_POOL|ingress_lossless_pool]``, which orchagent
  rejects (sonic-net/sonic-swss orchagent/orch.cpp Orch::parseReference, "Must not be
  surrounded by [ ]") and db_migrator rewrites only when migrating from version_3_0_1;
* BUFFER_PG and BUFFER_QUEUE: buffers_config.j2's defaults for the active ports (those in
  DEVICE_NEIGHBOR, or every port when it is empty): PG 0 ingress_lossy_profile, queues
  3-4 egress_lossless_profile, 0-2 and 5-6 egress_lossy_profile; none where the hwsku's
  file renders them empty (port_buffers: false).

* NVIDIA hwskus (buffers_defaults_objects.j2 macros, ``ports`` in the catalog): per-port
  BUFFER_PG, BUFFER_QUEUE and BUFFER_PORT_INGRESS/EGRESS_PROFILE_LIST rows for the active
  ports and for the inactive ones (PORT's other ports): in the dynamic model the same rows,
  in the traditional one zero profiles (``zero_pools``/``zero_profiles``, rendered only when
  some port is inactive); in the dynamic model also DEFAULT_LOSSLESS_BUFFER_PARAMETER and
  LOSSLESS_TRAFFIC_PATTERN (buffers_config.j2), and DEVICE_METADATA
  create_only_config_db_buffers, which swss's start script sets when the hwsku ships
  create_only_config_db_buffers.json (files/build_templates/docker_image_ctl.j2).

The model is the hwsku's (``model`` in the catalog): NVIDIA images default to the dynamic one
(platform/mellanox/rules.mk), but `config reload` runs db_migrator, which, config_db.json
having no VERSIONS table, migrates from version_unknown and sets buffer_model traditional on
every ``Mellanox-*`` hwsku but Mellanox-SN5600-O128 (sonic-net/sonic-utilities
scripts/mellanox_buffer_migrator.py, is_default_traditional_model): Mellanox-SN5600-V256
runs the traditional model, ACS-SN5600 and Mellanox-SN5600-O128 the dynamic one.

The lossless PGs are not in the file. With the traditional buffer model buffermgrd creates
``pg_lossless_<speed>_<cable>_profile`` and ``BUFFER_PG|<port>|<pfc_enable>`` itself from
pg_profile_lookup.ini, the port's speed and its CABLE_LENGTH (sonic-net/sonic-swss
cfgmgr/buffermgr.cpp, BufferMgr::doSpeedUpdateTask), once ingress_lossless_pool exists:
:func:`lossless_profile` says what it will create. With the dynamic one the file holds
``BUFFER_PG|<port>|3-4`` with profile ``NULL`` and buffermgrdyn computes the headroom from
the port's speed, MTU and exact CABLE_LENGTH (cfgmgr/buffermgrdyn.cpp, the ASIC's
buffer_headroom_mellanox.lua reads any ``<n>m``). Hwskus without published buffer facts
(generic, Arista 7060DX5-64S) get no buffer tables.
"""

from __future__ import annotations

import functools
import re

# PG_DEFAULT/QUEUE_DEFAULT: buffers_config.j2's default rows, beside the catalog check that
# each topology has the profiles they name
from ..platforms.catalog import BUFFER_TOPOLOGIES, PG_DEFAULT, QUEUE_DEFAULT, HwskuBuffers, PgProfile, buffer_ref

BUFFER_TABLES = ("BUFFER_POOL", "BUFFER_PROFILE", "BUFFER_PG", "BUFFER_QUEUE", "BUFFER_PORT_INGRESS_PROFILE_LIST",
                 "BUFFER_PORT_EGRESS_PROFILE_LIST", "DEFAULT_LOSSLESS_BUFFER_PARAMETER", "LOSSLESS_TRAFFIC_PATTERN")


def topology(switch_type: str) -> str:
    """buffers_config.j2's file postfix for a DEVICE_METADATA type railonly writes, t1 in
    place of the t2 no catalog hwsku publishes (module docstring)."""
    # LeafRouter is t1; SpineRouter asks for t2, which no catalog hwsku publishes: t1 too
    return "t0" if "torrouter" in switch_type.lower() else "t1"


def hwsku_buffers(model, breakout: str) -> HwskuBuffers | None:
    """The published buffer facts of a catalog switch's hwsku (either buffer model); None for
    generic or an hwsku without published buffer facts."""
    if model is None:
        return None
    return model.buffers.get(model.breakouts[breakout].hwsku)


def tables(hb: HwskuBuffers | None, switch_type: str, active_ports: list[str],
           all_ports: list[str] | None = None) -> dict[str, dict]:
    """The buffer tables as the hwsku's templates render them (empty tables left out).
    `active_ports`: DEVICE_NEIGHBOR's ports (every port when it is empty); `all_ports`: PORT's
    (the rest are the template's inactive ports, which an hwsku's objects file may give rows
    and zero profiles too)."""
    if hb is None:
        return {}
    t = hb.topologies[topology(switch_type)]
    active = set(active_ports)
    inactive = [p for p in (all_ports or []) if p not in active]
    zero = bool(inactive) and hb.inactive_rows is not None  # buffers_defaults_objects.j2: only with inactive ports
    out: dict[str, dict] = {}
    pools = {**(t.zero_pools if zero else {}), **t.pools}
    profiles = {**(t.zero_profiles if zero else {}), **t.profiles}
    if pools:
        out["BUFFER_POOL"] = {name: dict(f) for name, f in pools.items()}
    if profiles:
        out["BUFFER_PROFILE"] = {name: {k: (buffer_ref(v) if k == "pool" else v) for k, v in f.items()}
                                 for name, f in profiles.items()}
    if not t.port_buffers or not (active_ports or inactive):
        return out
    if hb.active_rows is None:  # buffers_config.j2's defaults, active ports only
        rows = [(active_ports, {"BUFFER_PG": {f"*|{n}": {"profile": p} for n, p in PG_DEFAULT.items()},
                                "BUFFER_QUEUE": {f"*|{n}": {"profile": p} for n, p in QUEUE_DEFAULT.items()}})]
    else:
        rows = [(active_ports, hb.active_rows), (inactive, hb.inactive_rows or {})]
    for ports, by_table in rows:
        for table, entries in by_table.items():
            t_out = out.setdefault(table, {})
            for key, fields in entries.items():
                row = dict(fields)  # shared by every port: encoded once
                for port in ports:
                    t_out[key.replace("*", port, 1)] = row
    for table, entries in hb.globals.items():
        out[table] = {k: dict(v) for k, v in entries.items()}
    return out


def metadata(hb: HwskuBuffers | None) -> dict[str, str]:
    """DEVICE_METADATA|localhost fields the image sets for the hwsku (NVIDIA's swss start
    script sets create_only_config_db_buffers when the hwsku ships
    create_only_config_db_buffers.json: sonic-buildimage files/build_templates/docker_image_ctl.j2)."""
    return dict(hb.metadata) if hb is not None else {}


def cable_lengths(hb: HwskuBuffers | None, speed: str) -> tuple[int, ...]:
    """The cable lengths (metres, ascending) pg_profile_lookup.ini lists for `speed`."""
    if hb is None:
        return ()
    return tuple(sorted(int(r.cable[:-1]) for r in hb.pg_profiles if r.speed == speed))


def published_cable_lengths(hwsku: str | None, speed_gbps: float | None) -> tuple[int, ...]:
    """:func:`cable_lengths` of a shipped catalog hwsku by name (validate reads a config, not
    the design); () for an hwsku the shipped catalog has no buffer facts for."""
    if not hwsku or not speed_gbps:
        return ()
    from ..platforms.catalog import shipped
    for p in shipped().values():
        if hwsku in p.buffers:
            return cable_lengths(p.buffers[hwsku], str(int(speed_gbps * 1000)))
    return ()


@functools.lru_cache(maxsize=256)  # validate asks per port; the answer parses the shipped catalog
def railonly_knows_lengths(hwsku: str | None) -> bool:
    """Whether validate knows which CABLE_LENGTH values `hwsku` has lossless profiles for:
    a shipped catalog hwsku (its pg_profile_lookup.ini facts, or SONiC's usual without
    them), a generic switch's `railonly-<radix>x<speed>G` (SONiC's usual), or none (EOS). A
    user's own platform file may list other lengths, which an OUTDIR does not carry."""
    if not hwsku or re.fullmatch(r"railonly-\d+x\d+G", hwsku):
        return True
    from ..platforms.catalog import shipped
    return any(b.hwsku == hwsku for p in shipped().values() for b in p.breakouts.values())


def lossless_profile(hb: HwskuBuffers | None, switch_type: str, speed: str, cable: str) -> tuple[str, dict[str, str]] | None:
    """(name, fields) of the lossless PG profile buffermgrd creates for a port of `speed` and
    CABLE_LENGTH `cable` (cfgmgr/buffermgr.cpp doSpeedUpdateTask: threshold field named
    after ingress_lossless_pool's mode); None when it creates none (buffermgrdyn, the dynamic
    model, computes its profiles from the cable length instead)."""
    if hb is None or hb.model != "traditional":
        return None
    row: PgProfile | None = next((r for r in hb.pg_profiles if r.speed == speed and r.cable == cable), None)
    pool = hb.topologies[topology(switch_type)].pools.get("ingress_lossless_pool")
    if row is None or pool is None or "mode" not in pool:
        return None
    fields = {"pool": "ingress_lossless_pool", "xon": row.xon, "xoff": row.xoff, "size": row.size,
              f"{pool['mode']}_th": row.threshold}
    if row.xon_offset:
        fields["xon_offset"] = row.xon_offset
    return f"pg_lossless_{speed}_{cable}_profile", fields


__all__ = ["BUFFER_TABLES", "BUFFER_TOPOLOGIES", "cable_lengths", "hwsku_buffers", "lossless_profile", "metadata",
           "published_cable_lengths", "railonly_knows_lengths", "tables", "topology"]
