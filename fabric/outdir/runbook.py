"""The runbook of a change between two compiles (`railonly diff OLD NEW --runbook FILE.md`), pure.

From the change plan (:mod:`railonly.fabric.outdir.changeplan`) and both snapshots:

1. a summary naming each fabric-wide effect in one line;
2. the cable work, grouped by rail and then by rack (the rack of the
   cable's lower switch: a NIC cable and an uplink by their leaf; the design
   has no floor plan), each cable with its label and both ends: add, move
   (the end that stays, the end unplugged, the end plugged), remove;
3. the push waves in the order `railonly push` runs them
   (:func:`railonly.fabric.outdir.rollout_rules.waves`), each switch marked hitless or
   disruptive by the rules of docs/push.md, with how it is applied and the
   checks that must pass before the next wave.
"""

from __future__ import annotations

import os
import re

from ..input import jsonsource
from ..outdir_layout import CONFIG_DB, CONFIGS, STARTUP_CONFIG
from ..safe_text import natural
from .rollout_rules import VERIFY_CHECKS, bgp_asn, classify, target_of, waves

_RACK_OF_NIC = re.compile(r"hb[0-9]+")


def _platform(files: dict[str, str]) -> str:
    return "eos" if STARTUP_CONFIG in files else "sonic"


def _rack(c: dict) -> str:
    """The rack a cable is worked from: its lower switch's (a NIC cable and an uplink by
    their leaf, a spine-core cable by its spine); the design has no floor plan."""
    switches = [e["device"] for e in (c["a"], c["b"]) if not _RACK_OF_NIC.fullmatch(e["device"])]
    return min(switches, key=lambda d: ("core" in d, "spine" in d, natural(d))) if switches else c["a"]["device"]


def _rail(c: dict) -> str:
    return c.get("rail", "") or "cross-rail"


def _end(e: dict) -> str:
    return f"{e['device']}:{e['port']}"


def cable_work(cables: dict) -> list[dict]:
    """[{rail, rack, add, move, remove}] in rail, then rack order."""
    groups: dict[tuple[str, str], dict] = {}

    def group(c: dict) -> dict:
        k = (_rail(c), _rack(c))
        return groups.setdefault(k, {"rail": k[0], "rack": k[1], "add": [], "move": [], "remove": []})

    for c in cables["added"]:
        group(c)["add"].append({"label": c["cable_id"], "a": _end(c["a"]), "b": _end(c["b"])})
    for c in cables["removed"]:
        group(c)["remove"].append({"label": c["cable_id"], "a": _end(c["a"]), "b": _end(c["b"])})
    for m in cables["moved"]:
        o, n = m["old"], m["new"]
        stays = next(e for e in (o["a"], o["b"]) if e in (n["a"], n["b"]))
        unplug = o["b"] if stays == o["a"] else o["a"]
        plug = n["b"] if stays == n["a"] else n["a"]
        group(n)["move"].append({"label": n["cable_id"], "old_label": o["cable_id"], "stays": _end(stays),
                                 "from": _end(unplug), "to": _end(plug)})
    return [groups[k] for k in sorted(groups, key=lambda k: (natural(k[0]), natural(k[1])))]


def rollout_waves(old, new, max_per_group: int = 1) -> list[dict]:
    """The push waves for the switches whose configs are new or change."""
    changes = {}
    for name in sorted(new.devices):
        if new.devices[name] == old.devices.get(name):
            continue
        files = new.devices[name]
        ch = classify(name, _platform(files), old.devices.get(name, {}), files,
                      tuple(os.path.join(s.outdir, CONFIGS, name, CONFIG_DB) for s in (old, new)))
        fresh = name not in old.devices
        changes[name] = {"device": name, "mark": "hitless" if fresh else ch.mark,
                         "apply": ("new switch, not yet in service: its whole config" if fresh else ch.apply_method()),
                         "drain": (not fresh) and ch.disruptive, "changes": len(ch.items),
                         "reload_why": [] if fresh else ch.reload_why}
    targets = [target_of(n, new.switches.get(n)) for n in changes]
    out = []
    for i, w in enumerate(waves(targets, max_per_group)):
        out.append({"wave": i, "name": "canary" if i == 0 else f"wave {i}",
                    "switches": [changes[t.device] for t in w], "checks": list(VERIFY_CHECKS)})
    return out


def _asn(files: dict[str, str]) -> str | None:
    if CONFIG_DB in files:
        try:
            return str(jsonsource.loads(files[CONFIG_DB])["DEVICE_METADATA"]["localhost"]["bgp_asn"])
        except (ValueError, KeyError, TypeError):
            return None
    return bgp_asn(files.get(STARTUP_CONFIG, ""))


def summary(doc: dict, old, new, wave_list: list[dict]) -> list[str]:
    """Fabric-wide effects, one line each."""
    c, dv = doc["cables"], doc["devices"]
    lines = [f"cables: {len(c['added']):,} to add, {len(c['moved']):,} to move, {len(c['removed']):,} to remove, "
             f"{len(c['relabelled']):,} relabelled, {len(c['changed']):,} refitted"]
    kept = sorted(set(old.devices) & set(new.devices))
    asn_changed = [n for n in kept if _asn(old.devices[n]) != _asn(new.devices[n])]
    spines = [n for n in kept if n in new.switches and new.switches[n].tier >= 2]
    if asn_changed:
        if spines and set(spines) <= set(asn_changed):
            lines.append("every spine's ASN changes: all fabric BGP sessions reset")
        else:
            lines.append(f"{len(asn_changed):,} existing switch(es) change ASN, their BGP sessions reset: "
                         + ", ".join(asn_changed[:6]) + (" ..." if len(asn_changed) > 6 else ""))
    else:
        lines.append("no existing switch changes its ASN or name: BGP sessions of unchanged links stay up")
    if c["moved"]:
        leaves = sorted({m["new"]["a"]["device"] for m in c["moved"]} | {m["new"]["b"]["device"] for m in c["moved"]},
                        key=natural)
        lines.append(f"{len(c['moved']):,} uplinks move: ECMP re-balances across the spines of "
                     f"{len({m['new'].get('rail', '') for m in c['moved']})} rail(s) ({len(leaves)} switches re-cabled)")
    if dv["added"]:
        names = [d["device"] for d in dv["added"]]
        lines.append(f"{len(names):,} switch(es) added: " + ", ".join(names[:8]) + (" ..." if len(names) > 8 else ""))
    if dv["removed"]:
        lines.append(f"{len(dv['removed']):,} switch(es) removed: " + ", ".join(d["device"] for d in dv["removed"][:8]))
    pushed = [s for w in wave_list for s in w["switches"]]
    disruptive = sum(1 for s in pushed if s["mark"] == "disruptive")
    if pushed:
        lines.append(f"{len(pushed):,} switch(es) pushed in {len(wave_list)} wave(s): {len(pushed) - disruptive:,} hitless, "
                     f"{disruptive:,} disruptive (drained first)")
    reloads = [s for s in pushed if s["reload_why"]]
    if reloads:
        why = sorted({w for s in reloads for w in s["reload_why"]})
        lines.append(f"{len(reloads):,} switch(es) need a full config reload: " + "; ".join(why))
    h = doc["hosts"]
    if h["added"] or h["removed"] or h["changed"]:
        lines.append(f"hosts: {len(h['added']):,} added, {len(h['removed']):,} removed, {len(h['changed']):,} changed")
    b = doc["bom"]
    if b["items"]:
        lines.append(f"bill of materials: {b['quantity']['delta']:+,} units, {b['cost_usd']['delta']:+,} USD, "
                     f"{b['power_w']['delta']:+,} W")
    return lines


def runbook(doc: dict, old, new, max_per_group: int = 1) -> dict:
    wave_list = rollout_waves(old, new, max_per_group)
    return {"summary": summary(doc, old, new, wave_list), "cable_work": cable_work(doc["cables"]), "waves": wave_list}


def render_markdown(rb: dict) -> str:
    out = ["# Runbook", "", "Generated by `railonly diff --runbook` from two compiles; every mark (hitless,",
           "disruptive) follows the rules of docs/push.md.", "", "## Summary", ""]
    out += [f"- {line}" for line in rb["summary"]]
    out += ["", "## 1. Cable work", "", "By rail, then by rack. Labels are the cable ids of cabling.csv.", ""]
    if not rb["cable_work"]:
        out.append("No cable work.")
    for g in rb["cable_work"]:
        rail = g["rail"] if g["rail"] == "cross-rail" else f"rail {g['rail']}"
        out += [f"### {rail}, rack {g['rack']}", ""]
        for x in g["add"]:
            out.append(f"- [ ] add `{x['label']}`: {x['a']} to {x['b']}")
        for x in g["move"]:
            relabel = f" (relabel from `{x['old_label']}`)" if x["old_label"] != x["label"] else ""
            out.append(f"- [ ] move `{x['label']}`{relabel}: end at {x['stays']} stays; unplug {x['from']}, plug into {x['to']}")
        for x in g["remove"]:
            out.append(f"- [ ] remove `{x['label']}`: {x['a']} to {x['b']}")
        out.append("")
    out += ["## 2. Push waves", "", "`railonly push OUTDIR` runs these in order and stops at the first failure.",
            "A disruptive switch is drained before and undrained after; each wave's checks pass before the next.", ""]
    if not rb["waves"]:
        out.append("No switch config changes.")
    for w in rb["waves"]:
        out += [f"### {w['name'].capitalize()}", ""]
        for s in w["switches"]:
            drain = "drain, " if s["drain"] else ""
            out.append(f"- [ ] `{s['device']}` ({s['mark']}, {s['changes']} change(s)): {drain}apply by {s['apply']}, "
                       f"verify{', undrain' if s['drain'] else ''}")
        out.append("- checks: " + "; ".join(w["checks"]))
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
