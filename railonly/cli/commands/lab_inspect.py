"""`railonly lab status|exec|vtysh`: look into a running lab, for any runtime.

Each command is `(args, runtime, lab)`; railonly.cli.commands.lab opens the lab.

Everything goes through the Runtime protocol: `status` for node states,
`exec` for addresses (`ip -j addr`), processes and BGP sessions (vtysh in
the switch), so the same rows come from network namespaces or containers.
A lab that is not deployed is exit 3 with a message that says so.
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor

from railonly import console
from railonly.cli.commands import positive

EXIT_NOT_DEPLOYED = 3
COLUMNS = ("NAME", "ROLE", "NAMESPACE", "STATE", "ADDRESSES", "PROCESSES", "BGP")


def _addresses(rt, node) -> list[str]:
    rc, out = rt.exec(node.netns, ["ip", "-j", "addr", "show"], timeout=15)
    if rc != 0:
        return []
    try:
        links = json.loads(out or "[]")
    except ValueError:
        return []
    return [f"{link['ifname']} {a['local']}/{a['prefixlen']}" for link in links if link.get("ifname") != "lo"
            for a in link.get("addr_info") or () if a.get("family") == "inet" and a.get("scope") != "host"]


def _processes(rt, recorded, node) -> list[dict]:
    """Processes of a node: the runtime's record where it keeps one (netns), else `ps` in the node."""
    if recorded is not None:
        return [{"name": name.split("/", 1)[1], "pid": pid} for name, pid in sorted(recorded.items())
                if name.split("/", 1)[0] == node.name]
    rc, out = rt.exec(node.netns, ["ps", "-eo", "pid=,comm="], timeout=15)
    if rc != 0:
        return []
    rows = [line.split(None, 1) for line in out.splitlines() if line.strip()]
    return [{"name": r[1].strip(), "pid": int(r[0])} for r in rows if len(r) == 2 and r[0].isdigit()]


def _bgp(rt, lab, node) -> dict | None:
    from railonly.emulation.checks.checker import bgp_peers

    if node.role != "switch" or node.fabric_node.asn is None:
        return None
    peers = bgp_peers(rt, lab, node.name)
    if peers is None:
        return {"up": 0, "total": None}
    return {"up": sum(1 for p in peers.values() if p.get("state") == "Established"), "total": len(peers)}


def rows(rt, lab, st) -> list[dict]:
    recorded = st.processes

    def row(node):
        state = st.nodes.get(node.name, "missing")
        up = state != "missing"
        return {"name": node.name, "role": node.role, "namespace": node.netns, "state": state,
                "addresses": _addresses(rt, node) if up else [],
                "processes": _processes(rt, recorded, node) if up else [],
                "bgp": _bgp(rt, lab, node) if up else None}

    nodes = sorted(lab.nodes.values(), key=lambda n: ({"switch": 0, "hb": 1, "gpu": 2}.get(n.role, 3), n.name))
    with ThreadPoolExecutor(max_workers=8) as ex:
        return list(ex.map(row, nodes))


def table(doc: dict) -> str:
    def cells(r):
        procs = " ".join(f"{p['name']}:{p['pid'] if p['pid'] is not None else 'DEAD'}" for p in r["processes"])
        bgp = "" if r["bgp"] is None else f"{r['bgp']['up']}/{r['bgp']['total'] if r['bgp']['total'] is not None else '?'}"
        return (r["name"], r["role"], r["namespace"], r["state"], ", ".join(r["addresses"]), procs, bgp)

    body = [cells(r) for r in doc["nodes"]]
    widths = [max(len(c[i]) for c in [COLUMNS, *body]) for i in range(len(COLUMNS))]
    lines = [f"lab {doc['lab']}: {doc['state']} ({doc['detail']})"]
    if doc.get("faults"):
        lines.append(f"  faults set: {', '.join(doc['faults'])} (undo: railonly lab fault OUTDIR --restore)")
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [COLUMNS, *body]]
    return "\n".join(lines)


# --- the commands ------------------------------------------------------------------------------


def status_args(p) -> None:
    p.add_argument("--json", action="store_true", help="print the rows as JSON (the same fields)")


def status(args, rt, lab) -> int:
    st = rt.status(lab)
    doc = {"lab": lab.name, "runtime": rt.name, "state": st.state, "detail": st.detail,
           "nodes": rows(rt, lab, st) if st.state != "absent" else []}
    if st.state == "absent":
        print(json.dumps(doc, indent=1) if args.json else
              f"lab {lab.name}: not deployed ({st.detail}); deploy it: railonly lab deploy {args.outdir}")
        return EXIT_NOT_DEPLOYED
    from railonly.emulation.traffic import faults

    doc["faults"] = faults.active(lab, rt)  # a link set down is "running" in every row: say it here
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        console.out(table(doc))
    return 1 if st.state == "partial" else 0


def exec_args(p) -> None:
    p.add_argument("node", metavar="NODE", help="a node of the lab (GPU, HB domain or switch name)")
    p.add_argument("cmd", nargs="+", metavar="CMD", help="the command and its arguments, after --; run as argv, no shell")
    p.add_argument("--timeout", type=positive(float), default=60.0, help="seconds before the command is stopped (default 60)")


def _node(lab, name: str, role: str | None = None):
    from railonly.fabric.input.problems import InputError, Problem, did_you_mean

    names = lab.names(role)
    if name not in names:
        what = "switch" if role == "switch" else "node"
        raise InputError([Problem("", f"no {what} {name!r} in lab {lab.name}", did_you_mean(name, names, "switches" if role == "switch" else "nodes"),
                                  None, "command line")])
    return lab.node(name)


def _run(rt, lab, node, argv: list[str], timeout: float) -> int:
    from railonly.emulation.runtime.protocol import deployed_status

    deployed_status(rt, lab)  # NotDeployed: exit 3
    rc, out = rt.exec(node.netns, argv, timeout=timeout)
    sys.stdout.write(out if not out or out.endswith("\n") else out + "\n")
    return rc


def exec_(args, rt, lab) -> int:
    node = _node(lab, args.node)
    argv = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    return _run(rt, lab, node, argv, args.timeout)


def vtysh_args(p) -> None:
    p.add_argument("switch", metavar="SWITCH", help="a routed switch of the lab")
    p.add_argument("-c", "--command", action="append", metavar="CMD",
                   help="a vtysh command (repeatable); without one: a vtysh shell on a terminal, "
                        "else 'show bgp summary'")


def vtysh(args, rt, lab) -> int:
    from railonly.emulation.checks.checker import vtysh_argv
    from railonly.fabric.input.problems import InputError, Problem

    node = _node(lab, args.switch, "switch")
    if node.fabric_node.asn is None:
        raise InputError([Problem("", f"{node.name} runs no FRR (an L2 rail switch has no routing)",
                                  "use lab exec for its bridge: railonly lab exec OUTDIR SWITCH -- bridge fdb show",
                                  None, "command line")])
    argv = vtysh_argv(rt, lab, node.name)
    if not args.command and sys.stdin.isatty() and sys.stdout.isatty():  # an engineer at a terminal: the shell
        from railonly.emulation.runtime.protocol import deployed_status

        deployed_status(rt, lab)  # NotDeployed: exit 3
        return rt.interactive(node.netns, argv)
    for cmd in args.command or ["show bgp summary"]:
        argv += ["-c", cmd]
    return _run(rt, lab, node, argv, 30.0)
