"""A config DB patch applied live to a lab switch (the switch shell's ``config apply-patch``).

Pure: :func:`apply_ops` applies RFC 6902 add/replace/remove operations to a
config DB (JSON pointers of one or two levels, table and key, as
railonly.fabric.outdir.rollout_rules.db_patch writes them); :func:`live_commands` turns the
difference into ``ip`` commands for the switch's namespace, and :func:`undo_command`
each back, so a patch whose command fails partway is undone (all or nothing, like the
running DB, which only a whole patch changes). Tables that change no forwarding state are
DB-only; a table the lab cannot change live raises :class:`PatchError` before anything is
applied.
"""

from __future__ import annotations

import copy

# no forwarding state, or state the lab does not emulate (QoS maps, buffers, PFC watchdog)
DB_ONLY = {"CABLE_LENGTH", "DEVICE_NEIGHBOR", "DEVICE_NEIGHBOR_METADATA", "LLDP", "DSCP_TO_TC_MAP",
           "MAP_PFC_PRIORITY_TO_QUEUE", "PFC_WD", "PORT_QOS_MAP", "QUEUE", "SCHEDULER", "TC_TO_PRIORITY_GROUP_MAP",
           "TC_TO_QUEUE_MAP", "WRED_PROFILE", "BUFFER_POOL", "BUFFER_PROFILE", "BUFFER_PG", "BUFFER_QUEUE",
           "BUFFER_PORT_INGRESS_PROFILE_LIST", "BUFFER_PORT_EGRESS_PROFILE_LIST", "DEFAULT_LOSSLESS_BUFFER_PARAMETER",
           "LOSSLESS_TRAFFIC_PATTERN",
           # management services the lab does not run
           "NTP_SERVER", "DNS_NAMESERVER", "SYSLOG_SERVER", "TACPLUS_SERVER", "GNMI"}
LIVE = {"PORT", "INTERFACE", "LOOPBACK_INTERFACE", "VLAN"}  # VLAN: its mtu only (members and ids need a reload)
MAX_OPS = 100_000


class PatchError(ValueError):
    pass


def _unescape(p: str) -> str:
    return p.replace("~1", "/").replace("~0", "~")


def apply_ops(db: dict, ops: object) -> dict:
    if not isinstance(ops, list) or len(ops) > MAX_OPS:
        raise PatchError("a patch is a JSON list of operations")
    new = copy.deepcopy(db)
    for i, op in enumerate(ops):
        if not isinstance(op, dict) or op.get("op") not in ("add", "replace", "remove") or not isinstance(op.get("path"), str):
            raise PatchError(f"operation {i}: needs op add/replace/remove and a path")
        parts = [_unescape(p) for p in op["path"].split("/")[1:]]
        if not 1 <= len(parts) <= 2 or not all(parts):
            raise PatchError(f"operation {i}: path {op['path']!r} must name a table or a table's key")
        if op["op"] != "remove" and not isinstance(op.get("value"), dict):
            raise PatchError(f"operation {i}: value must be an object")
        parent = new
        if len(parts) == 2:
            parent = new.setdefault(parts[0], {}) if op["op"] == "add" else new.get(parts[0])
            if not isinstance(parent, dict):
                raise PatchError(f"operation {i}: no table {parts[0]}")
        if op["op"] == "remove":
            if parts[-1] not in parent:
                raise PatchError(f"operation {i}: {op['path']} does not exist")
            del parent[parts[-1]]
        else:
            if op["op"] == "replace" and parts[-1] not in parent:
                raise PatchError(f"operation {i}: {op['path']} does not exist (use add)")
            parent[parts[-1]] = copy.deepcopy(op["value"])
    return new


def _dev(name: str) -> str:
    return "lo" if name.startswith("Loopback") else name


def live_commands(old: dict, new: dict, present: set[str] | None = None) -> list[list[str]]:
    """`ip` argument lists that take the namespace from `old` to `new` (removals first).
    A port not in `present` (the namespace's devices: a port not cabled in the lab, or
    cabled only by a compile newer than the deploy, has none) changes in the DB only, its
    addresses too."""
    dels, adds = [], []
    for table in sorted(old.keys() | new.keys()):
        a, b = old.get(table) or {}, new.get(table) or {}
        if a == b or table in DB_ONLY:
            continue
        if table not in LIVE:
            raise PatchError(f"table {table} cannot be applied live on a lab switch: use config reload")
        for key in sorted(a.keys() | b.keys()):
            fa, fb = a.get(key), b.get(key)
            if fa == fb:
                continue
            if table == "PORT":
                if present is not None and key not in present:
                    continue
                fa, fb = fa or {}, fb or {}
                if fa.get("mtu") != fb.get("mtu") and fb.get("mtu"):
                    adds.append(["link", "set", "dev", key, "mtu", str(fb["mtu"])])
                if fa.get("admin_status") != fb.get("admin_status") and fb.get("admin_status") in ("up", "down"):
                    adds.append(["link", "set", "dev", key, fb["admin_status"]])
            elif table == "VLAN":  # a VLAN interface's MTU (switch.mtu), as a port's; nothing else of it live
                if not isinstance(fa, dict) or not isinstance(fb, dict) or not fb.get("mtu") or \
                        {k: v for k, v in fa.items() if k != "mtu"} != {k: v for k, v in fb.items() if k != "mtu"}:
                    raise PatchError(f"VLAN {key}: only its mtu can be applied live on a lab switch: use config reload")
                if present is not None and key not in present:
                    continue
                adds.append(["link", "set", "dev", key, "mtu", str(fb["mtu"])])
            elif "|" in key:  # INTERFACE|Ethernet0|10.0.0.0/31: an address
                dev, addr = key.split("|", 1)
                if present is not None and _dev(dev) != "lo" and dev not in present:
                    continue
                if fa is None:
                    adds.append(["addr", "add", addr, "dev", _dev(dev)])
                elif fb is None:
                    dels.append(["addr", "del", addr, "dev", _dev(dev)])
    return dels + adds


def undo_command(argv: list[str], old: dict) -> list[str] | None:
    """The `ip` arguments that undo `argv` (one of :func:`live_commands`' from `old`), back to
    what `old` says; None when `old` says nothing to go back to (an MTU it does not give)."""
    if argv[:2] in (["addr", "add"], ["addr", "del"]):
        return ["addr", "del" if argv[1] == "add" else "add", *argv[2:]]
    if argv[:3] == ["link", "set", "dev"] and len(argv) == 6 and argv[4] == "mtu":
        was = ((old.get("PORT") or {}).get(argv[3]) or (old.get("VLAN") or {}).get(argv[3]) or {}).get("mtu")
        return ["link", "set", "dev", argv[3], "mtu", str(was)] if was else None
    if argv[:3] == ["link", "set", "dev"] and len(argv) == 5 and argv[4] in ("up", "down"):
        return [*argv[:4], "down" if argv[4] == "up" else "up"]
    return None
