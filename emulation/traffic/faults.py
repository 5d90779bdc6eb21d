"""Fault injection on a deployed lab: a link down, a switch down, and restore.

Every fault is recorded (intent first) in ``OUTDIR/.lab/faults.json`` with what
restore needs: the devices set down, the static routes the kernel flushes
when a link goes down (re-added on restore; routes of FRR come back by
themselves), and the argv of FRR daemons stopped (restarted with the same
argv, so the runtime's destroy still recognises them). Commands go through
``Runtime.exec``; FRR daemons are stopped by their pid files.
"""

from __future__ import annotations

import json
import os

from railonly import proc

from ..lab import Lab, LabError, run_dir
from ..netns import frr
from ..runtime.protocol import Runtime


def _file(lab: Lab) -> str:
    return str(lab.faults_file)


def _load(lab: Lab) -> list[dict]:
    try:
        with open(_file(lab)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return []


def _save(lab: Lab, faults: list[dict]) -> None:
    lab.state_dir.mkdir(parents=True, exist_ok=True)
    tmp = _file(lab) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(faults, f, indent=1)
    os.replace(tmp, _file(lab))


def _dev(rt: Runtime, lab: Lab, node: str, port: str) -> str:
    ns = lab.netns(node)
    for cand in (port, lab.iface_of(node, port)):
        rc, _ = rt.exec(ns, ["ip", "link", "show", "dev", cand], timeout=10)
        if rc == 0:
            return cand
    raise LabError(f"{node}:{port}", f"no device for port {port} in {ns}", "is the lab deployed?")


def _static_routes(rt: Runtime, ns: str) -> list[list[str]]:
    """Single-line routes not made by the kernel or FRR (the ones a link-down flushes for good)."""
    rc, out = rt.exec(ns, ["ip", "-4", "route", "show"], timeout=10)
    keep = []
    for line in out.splitlines() if rc == 0 else []:
        w = line.split()
        if not w or line.startswith((" ", "\t")) or "nexthop" in w:
            continue
        if "proto" in w and w[w.index("proto") + 1] in ("kernel", "bgp", "zebra", "static"):
            continue
        keep.append(w)
    return keep


def _ends(lab: Lab, node: str, port: str):
    for lk in lab.links:
        for me, far in ((lk.a, lk.b), (lk.b, lk.a)):
            if me.node == node and me.port == port:
                return [(me.node, me.port), (far.node, far.port)]
    raise LabError(f"{node}:{port}", f"no link at {node}:{port} in lab {lab.name}", "give NODE:PORT as in cabling.csv")


def _down(rt: Runtime, lab: Lab, ends: list[tuple[str, str]], fault: dict) -> None:
    nss = sorted({lab.netns(n) for n, _ in ends})
    fault["routes"] = {ns: _static_routes(rt, ns) for ns in nss}
    fault["ends"] = [{"node": n, "port": p, "netns": lab.netns(n), "dev": _dev(rt, lab, n, p)} for n, p in ends]
    faults = _load(lab) + [fault]
    _save(lab, faults)  # intent first
    for e in fault["ends"]:
        rt.exec(e["netns"], ["ip", "link", "set", "dev", e["dev"], "down"], timeout=10)


def link_down(lab: Lab, rt: Runtime, spec: str) -> str:
    node, _, port = spec.partition(":")
    if not port:
        raise LabError(spec, "expected NODE:PORT", "e.g. hb0-gpu0:eth1")
    lab.node(node)
    ends = _ends(lab, node, port)
    _down(rt, lab, ends, {"kind": "link", "what": spec})
    return f"link {ends[0][0]}:{ends[0][1]} -- {ends[1][0]}:{ends[1][1]} down"


def node_down(lab: Lab, rt: Runtime, switch: str) -> str:
    n = lab.node(switch)
    if n.role != "switch":
        raise LabError(switch, f"{switch} is a {n.role}, not a switch", "--node takes a switch")
    fault = {"kind": "node", "what": switch, "frr": []}
    ends = [(p.node, p.port) for p in lab.ports(switch)]
    if rt.name == "netns":
        inst = frr.instance(run_dir(lab.name), switch, n.netns)
        live = frr.running(inst)
        fault["frr"] = [list(p.argv) for p in frr.daemon_processes(inst) if live.get(p.name.split("/")[-1])]
        _down(rt, lab, ends, fault)
        left = frr.stop(inst)
        if left:
            return f"switch {switch}: ports down, but FRR daemons survived: {', '.join(left)}"
    else:
        _down(rt, lab, ends, fault)
    return f"switch {switch} down: {len(ends)} ports down" + (", FRR stopped" if fault["frr"] else "")


def restore(lab: Lab, rt: Runtime) -> list[str]:
    done = []
    faults = _load(lab)
    for f in reversed(faults):
        for e in f.get("ends", []):
            rt.exec(e["netns"], ["ip", "link", "set", "dev", e["dev"], "up"], timeout=10)
        for ns, routes in f.get("routes", {}).items():
            for w in routes:
                rt.exec(ns, ["ip", "route", "replace", *w], timeout=10)
        for argv in f.get("frr", []):  # zebra first: the order they were planned in
            proc.run(argv, netns=lab.netns(f["what"]), timeout=20)
        done.append(f"{f['kind']} {f['what']}")
    if os.path.exists(_file(lab)):
        os.unlink(_file(lab))
    return done
