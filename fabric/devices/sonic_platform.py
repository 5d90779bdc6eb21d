"""SONiC facts of a catalog platform (fabric/platforms/catalog.py): the PORT rows, hwsku,
platform string and BREAKOUT_CFG that a switch of that model and breakout runs.

Kept apart from the SONiC renderer (fabric/devices/sonic_render.py), which asks here first and
falls back to its radix-only defaults for a `generic` switch. Every PORT row is
the platform's published port map row (name, lanes, alias, index, speed and,
where published, fec); railonly adds only what it decides: mtu, admin_status
and the cable description.
"""

from __future__ import annotations

from ..design import physical
from . import qos, sonic_buffers


def port_rows(design, tier: int) -> dict[str, dict[str, str]] | None:
    """PORT name -> the published fields of every port of the platform (cages and the
    rest, e.g. the SFP ports past the cages), in published order; None for generic."""
    model = design.model_of_tier(tier)
    if model is None:
        return None
    out = {}
    for r in model.breakouts[design.breakout].rows:
        row = {"lanes": r.lanes, "alias": r.alias, "index": str(r.index), "speed": r.speed}
        if r.fec is not None:
            row["fec"] = r.fec
        out[r.name] = row
    return out


def metadata(design, tier: int) -> dict[str, str] | None:
    """DEVICE_METADATA hwsku and platform of a catalog switch; None for generic."""
    model = design.model_of_tier(tier)
    if model is None:
        return None
    meta = {"hwsku": model.breakouts[design.breakout].hwsku}
    if model.sonic_platform:
        meta["platform"] = model.sonic_platform
    return meta


def breakout_cfg(design, tier: int) -> dict[str, dict[str, str]] | None:
    """BREAKOUT_CFG (each cage's parent port -> its breakout mode, as SONiC derives it
    from hwsku.json), None when generic or the platform publishes no breakout modes."""
    model = design.model_of_tier(tier)
    if model is None:
        return None
    b = model.breakouts[design.breakout]
    if not b.breakout_mode:
        return None
    first = b.sonic_names[:: b.ports_per_cage]  # the first subport of a cage carries the parent's name
    return {name: {"brkout_mode": b.breakout_mode} for name in first}


# ASIC vendors whose SONiC images default to the dynamic buffer model (sonic-net/sonic-buildimage
# platform/mellanox/rules.mk and platform/barefoot/rules.mk: SONIC_BUFFER_MODEL=dynamic, written to
# init_cfg.json's DEVICE_METADATA buffer_model, which `config reload` loads under config_db.json).
# Every other image runs the traditional model (buffermgrd with the hwsku's pg_profile_lookup.ini).
# Of these the catalog has NVIDIA (Mellanox) platforms only.
DYNAMIC_BUFFER_PLATFORMS = ("x86_64-mlnx_", "x86_64-nvidia_")


def dynamic_buffers(design, tier: int) -> bool:
    """True when the switch's image sizes lossless headroom from any cable length (the
    dynamic buffer model); False for a traditional-model or generic switch. A catalog hwsku
    with buffer facts says its own model (`sonic.buffers.<hwsku>.model`: NVIDIA's
    Mellanox-SN5600-V256 runs the traditional one once config reload's db_migrator has run,
    fabric/devices/sonic_buffers.py); any other hwsku follows its platform's image."""
    model = design.model_of_tier(tier)
    if model is None:
        return False
    hb = model.buffers.get(model.breakouts[design.breakout].hwsku)
    if hb is not None:
        return hb.model == "dynamic"
    return bool(model.sonic_platform and model.sonic_platform.startswith(DYNAMIC_BUFFER_PLATFORMS))


def profile_lengths(design, tier: int, speed: str) -> tuple[int, ...] | None:
    """The cable lengths (metres, ascending) a tier's SONiC switches have a lossless PG
    profile for at port speed `speed` (Mb/s, as PORT says it): the hwsku's own
    pg_profile_lookup.ini rows (none: Arista-7060X6-64PE's BALANCED file lists no row),
    else SONiC's usual where railonly has no buffer facts for it; None when any length
    has one (the dynamic buffer model)."""
    if dynamic_buffers(design, tier):
        return None
    buffers = sonic_buffers.hwsku_buffers(design.model_of_tier(tier), design.breakout)
    return sonic_buffers.cable_lengths(buffers, speed) if buffers is not None else qos.PG_PROFILE_CABLE_M


def port_speed(design, tier: int) -> str:
    """PORT's speed (Mb/s) of a tier's cabled ports: the catalog breakout's, or the design's NIC rate."""
    model = design.model_of_tier(tier)
    gbps = model.breakouts[design.breakout].gbps if model is not None else design.nic_gbps
    return str(gbps * 1000)


def unprotected_cable_tiers(design, tiers: int) -> list[str]:
    """One sentence per cable tier longer than every lossless PG profile its SONiC switches'
    buffer model lists: buffermgrd creates no lossless priority group for such a port
    (sonic-swss cfgmgr/buffermgr.cpp, doSpeedUpdateTask), so PFC does not protect RoCE on it.
    A cable tier t joins switch tiers t-1 and t (tier 1: GPU and leaf)."""
    out = []
    for cable_tier in range(1, tiers + 1):
        metres = physical.cable_length_m(design, cable_tier)
        short: dict[int, int] = {}  # switch tier -> the longest length it has a profile for (0: none)
        for sw_tier in (cable_tier - 1, cable_tier):
            if sw_tier < 1 or design.platform_of_tier(sw_tier) != "sonic":
                continue
            lengths = profile_lengths(design, sw_tier, port_speed(design, sw_tier))
            if lengths is not None and metres > (lengths[-1] if lengths else 0):
                short[sw_tier] = lengths[-1] if lengths else 0
        if not short:
            continue
        by_length: dict[int, list[str]] = {}
        for t, m in short.items():
            by_length.setdefault(m, []).append(physical.SWITCH_TIERS[t])
        ends = "; ".join(f"{' and '.join(ts)} switches: " + (f"up to {m} m" if m else "none at this speed")
                         for m, ts in by_length.items())
        fix = (f"Set {physical.key_of(cable_tier)} to at most {min(short.values())} if the runs allow, or add a "
               if min(short.values()) else "Add a ")
        out.append(f"{physical.tier_name(cable_tier)} cables are {metres:,} m ({physical.key_of(cable_tier)}), longer than "
                   f"any lossless PG profile their SONiC buffer model lists ({ends}): buffermgrd creates no lossless "
                   f"priority group on those ports, so PFC does not protect RoCE there. {fix}"
                   f"{metres}m row to the hwsku's pg_profile_lookup.ini on the switches (docs/configs.md)")
    return out
