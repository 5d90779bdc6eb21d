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

The lossless PGs are not in the file: with the traditional buffer model buffermgrd creates
``pg_lossless_<speed>_<cable>_profile`` and ``BUFFER_PG|<port>|<pfc_enable>`` itself from
pg_profile_lookup.ini, the port's speed and its CABLE_LENGTH (sonic-net/sonic-swss
cfgmgr/buffermgr.cpp, BufferMgr::doSpeedUpdateTask), once ingress_lossless_pool exists.
:func:`lossless_profile` says what it will create. Switches on the dynamic buffer model
(NVIDIA images) and hwskus without published buffer facts (generic, Arista 7060DX5-64S)
get no buffer tables.
"""

from __future__ import annotations

from ..platforms.catalog import BUFFER_TOPOLOGIES, HwskuBuffers, PgProfile, buffer_ref

COMMIT = "086b03bd70f9e211aaaf5f6aefe0790b508d2a94"  # sonic-net/sonic-buildimage, as the catalog
# files/build_templates/buffers_config.j2 at COMMIT: the default BUFFER_PG and BUFFER_QUEUE rows
PG_DEFAULT = {"0": "ingress_lossy_profile"}
QUEUE_DEFAULT = {"3-4": "egress_lossless_profile", "0-2": "egress_lossy_profile", "5-6": "egress_lossy_profile"}
BUFFER_TABLES = ("BUFFER_POOL", "BUFFER_PROFILE", "BUFFER_PG", "BUFFER_QUEUE")


def topology(switch_type: str) -> str:
    """buffers_config.j2's file postfix for a DEVICE_METADATA type railonly writes, t1 in
    place of the t2 no catalog hwsku publishes (module docstring)."""
    # LeafRouter is t1; SpineRouter asks for t2, which no catalog hwsku publishes: t1 too
    return "t0" if "torrouter" in switch_type.lower() else "t1"


def hwsku_buffers(model, breakout: str) -> HwskuBuffers | None:
    """The published buffer facts of a catalog switch's hwsku; None for generic, an hwsku
    without published buffer templates, or a dynamic-buffer-model platform."""
    if model is None:
        return None
    return model.buffers.get(model.breakouts[breakout].hwsku)


def tables(hb: HwskuBuffers | None, switch_type: str, active_ports: list[str]) -> dict[str, dict]:
    """BUFFER_POOL/PROFILE/PG/QUEUE as the hwsku's templates render them (empty tables left out)."""
    if hb is None:
        return {}
    t = hb.topologies[topology(switch_type)]
    out: dict[str, dict] = {}
    if t.pools:
        out["BUFFER_POOL"] = {name: dict(f) for name, f in t.pools.items()}
    if t.profiles:
        out["BUFFER_PROFILE"] = {name: {k: (buffer_ref(v) if k == "pool" else v) for k, v in f.items()}
                                 for name, f in t.profiles.items()}
    if t.port_buffers and active_ports:
        pg = {n: {"profile": p} for n, p in PG_DEFAULT.items()}  # shared rows: encoded once
        queue = {n: {"profile": p} for n, p in QUEUE_DEFAULT.items()}
        out["BUFFER_PG"] = {f"{port}|{n}": row for port in active_ports for n, row in pg.items()}
        out["BUFFER_QUEUE"] = {f"{port}|{n}": row for port in active_ports for n, row in queue.items()}
    return out


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


def lossless_profile(hb: HwskuBuffers | None, switch_type: str, speed: str, cable: str) -> tuple[str, dict[str, str]] | None:
    """(name, fields) of the lossless PG profile buffermgrd creates for a port of `speed` and
    CABLE_LENGTH `cable` (cfgmgr/buffermgr.cpp doSpeedUpdateTask: threshold field named
    after ingress_lossless_pool's mode); None when it creates none."""
    if hb is None:
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


__all__ = ["BUFFER_TABLES", "BUFFER_TOPOLOGIES", "cable_lengths", "hwsku_buffers", "lossless_profile", "published_cable_lengths", "tables", "topology"]
