"""Fault injection on a deployed lab: a link down, a switch down, and restore.

Every fault is recorded (intent first) in the lab's state directory
(``/run/railonly/<lab>/state/faults.json``, runtime/rundir.py) with what
restore needs: the devices set down, the static routes the kernel flushes
when a link goes down (re-added on restore; routes of FRR come back by
themselves), and the argv of FRR daemons stopped (restarted with the same
argv, so the runtime's destroy still recognises them). Commands go through
``Runtime.exec``; FRR daemons are stopped by their pid files.

The file is root's, read and written without following a symlink, and still
checked as if hostile: restore acts only on what the lab itself would have
recorded (its own nodes, namespaces and devices, routes of exactly the forms
:func:`_route_problem` allows, and FRR argv equal to the daemons the lab plans
for that switch); anything else is exit 2 naming the file, before any
command runs. No route word can load code (``encap bpf obj FILE`` would make
iproute2 load a BPF object into the kernel).
"""

from __future__ import annotations

import json
import re

from railonly import proc
from railonly.fabric.design.physical import naming
from railonly.fabric.outputs.clab_exec import CIDR, V4

from ..lab import Lab, LabError, run_dir
from ..runtime import rundir
from ..runtime.protocol import Runtime

FAULTS = "faults.json"  # in the lab's state directory


def _file(lab: Lab) -> str:
    return str(lab.faults_file)


# Every form below is matched whole (fullmatch: `$` would let a trailing newline by).
_WORD = re.compile(r"[A-Za-z0-9_.:/@-]{1,64}")  # a device name, as ip prints them
_DEST = re.compile(rf"default|{CIDR}|{V4}")
_IFNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,14}")
# key -> value form: the only keys `ip -4 route show` prints for the single-line
# routes _static_routes records (no encap, no nexthop groups, nothing that loads code)
_ROUTE_KEYS = {
    "via": re.compile(V4), "dev": _IFNAME, "src": re.compile(V4),
    "proto": re.compile(r"boot|dhcp|ra|redirect|[0-9]{1,3}"),
    "scope": re.compile(r"global|link|host|site|[0-9]{1,3}"), "metric": re.compile(r"[0-9]{1,10}"),
    "table": re.compile(r"main|[0-9]{1,10}"),
}
_ROUTE_FLAGS = {"onlink", "linkdown"}


def _route_problem(words: object) -> str | None:
    """None when ``words`` is a route exactly as _static_routes records it: a destination,
    then key/value pairs of _ROUTE_KEYS (each once) and the flags ip prints."""
    if not isinstance(words, list) or not 1 <= len(words) <= 24 or not all(isinstance(w, str) for w in words):
        return "not a list of route words"
    if not _DEST.fullmatch(words[0]):
        return f"destination {words[0][:40]!r} is not an IPv4 prefix or default"
    seen, i = set(), 1
    while i < len(words):
        w = words[i]
        if w in _ROUTE_FLAGS:
            i += 1
            continue
        form = _ROUTE_KEYS.get(w)
        if form is None or w in seen:
            return f"word {w[:40]!r} is not one railonly records (allowed: {', '.join(sorted(_ROUTE_KEYS))})"
        if i + 1 >= len(words) or not form.fullmatch(words[i + 1]):
            return f"{w} {words[i + 1][:40] if i + 1 < len(words) else ''!r} is not of the form railonly records"
        seen.add(w)
        i += 2
    return None


def _load(lab: Lab, rt: Runtime) -> list[dict]:
    sd = rundir.open_state(lab.name, create=False)
    data = sd.read_json(FAULTS, limit=16 * 1024 * 1024) if sd else None  # exit 2 naming it if malformed
    if data is None:
        return []
    problems = _problems(lab, rt, data)
    if problems:
        raise LabError(_file(lab), "holds what railonly never records:\n  " + "\n  ".join(problems[:10]),
                       "remove the file and redeploy the lab; nothing was run")
    return data


def _problems(lab: Lab, rt: Runtime, data: object) -> list[str]:
    """Why restore must not act on ``data`` (empty: every entry is one the lab would write)."""
    if not isinstance(data, list):
        return ["not a list of faults"]
    out = []
    for i, f in enumerate(data):
        where = f"[{i}]"
        if not isinstance(f, dict) or f.get("kind") not in ("link", "node") or not isinstance(f.get("what"), str):
            out.append(f"{where}: not a fault {{kind: link|node, what}}")
            continue
        ends = f.get("ends") or []
        if not isinstance(ends, list):
            out.append(f"{where}.ends: not a list of ports")
            ends = []
        for j, e in enumerate(ends):
            if not (isinstance(e, dict) and isinstance(e.get("node"), str) and e["node"] in lab.nodes
                    and e.get("netns") == lab.netns(e["node"])
                    and isinstance(e.get("dev"), str) and _WORD.fullmatch(e["dev"])):
                out.append(f"{where}.ends[{j}]: not a port of a node of lab {lab.name}")
        routes = f.get("routes") or {}
        nss = {n.netns for n in lab.nodes.values()}
        if not isinstance(routes, dict) or not all(ns in nss and isinstance(ws, list) for ns, ws in routes.items()):
            out.append(f"{where}.routes: not routes of the lab's namespaces")
        else:
            for ns, ws in routes.items():
                for j, w in enumerate(ws):
                    why = _route_problem(w)
                    if why:
                        out.append(f"{where}.routes[{ns}][{j}]: {why}")
        argvs = f.get("frr") or []
        if not isinstance(argvs, list):
            out.append(f"{where}.frr: not a list of daemon command lines")
            continue
        if argvs:
            node = lab.nodes.get(f["what"])
            if f["kind"] != "node" or node is None or node.role != "switch":
                out.append(f"{where}.frr: FRR daemons of {f['what'][:40]!r}, which is not a switch of the lab")
                continue
            allowed = rt.frr_daemons(lab, node.name)
            bad = [a for a in argvs if a not in allowed]
            if bad:
                out.append(f"{where}.frr: {str(bad[0])[:80]} is not a daemon the lab runs on {node.name}")
    return out


def _save(lab: Lab, faults: list[dict]) -> None:
    rundir.state(lab.name).write_text(FAULTS, json.dumps(faults, indent=1), mode=0o600)


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
        if _route_problem(w) is None:  # a form restore would refuse is not recorded (and not flushed by us)
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
    faults = _load(lab, rt) + [fault]
    _save(lab, faults)  # intent first
    for e in fault["ends"]:
        rt.exec(e["netns"], ["ip", "link", "set", "dev", e["dev"], "down"], timeout=10)


def link_down(lab: Lab, rt: Runtime, spec: str) -> str:
    node, _, port = spec.partition(":")
    if not port:
        raise LabError(spec, "expected NODE:PORT", f"e.g. hb0:rail0 (a server NIC, as in cabling.csv) or {min(lab.names('switch'), default='SWITCH')}:Ethernet0 (a switch port)")
    node, port = naming(lab.fabric).graph_end(node, port)  # a server NIC is its GPU's namespace
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
    # the runtime's own FRR daemons (none where the node's image runs them) stop after the ports
    fault["frr"] = rt.frr_daemons(lab, switch, running=True)
    _down(rt, lab, ends, fault)
    left = rt.stop_frr(lab, switch)
    if left:
        return f"switch {switch}: ports down, but FRR daemons survived: {', '.join(left)}"
    return f"switch {switch} down: {len(ends)} ports down" + (", FRR stopped" if fault["frr"] else "")


def active(lab: Lab, rt: Runtime) -> list[str]:
    """The faults set and not restored, as `kind what` (what `restore` would undo)."""
    return [f"{f['kind']} {f['what']}" for f in _load(lab, rt)]


def restore(lab: Lab, rt: Runtime) -> list[str]:
    done = []
    faults = _load(lab, rt)
    for f in reversed(faults):
        for e in f.get("ends", []):
            rt.exec(e["netns"], ["ip", "link", "set", "dev", e["dev"], "up"], timeout=10)
        for ns, routes in f.get("routes", {}).items():
            for w in routes:
                rt.exec(ns, ["ip", "route", "replace", *w], timeout=10)
        for argv in f.get("frr", []):  # zebra first, as planned, then the config load (vtysh -b)
            proc.run(argv, netns=lab.netns(f["what"]), timeout=20)
        done.append(f"{f['kind']} {f['what']}")
    sd = rundir.open_state(lab.name, create=False)
    if sd is not None:
        sd.unlink(FAULTS)
    return done


def dead_nics(lab: Lab, rt: Runtime, nic_ports: dict[str, str]) -> dict[str, str]:
    """{GPU: the recorded fault} for every GPU whose rail NIC a recorded fault set down
    (``nic_ports``: GPU node -> its rail NIC port, as check_plan names them). A switch
    fault takes GPUs off their rail with no detour; it is not a dead NIC."""
    out: dict[str, str] = {}
    for f in _load(lab, rt):
        if f.get("kind") != "link":
            continue
        for e in f.get("ends") or []:
            if nic_ports.get(e["node"]) in (e.get("port"), e.get("dev")):
                out.setdefault(e["node"], f["what"])
    return out
