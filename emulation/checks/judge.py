"""Judging: a CheckPlan and collected evidence in, Results out (pure).

Every function here takes plain data (what checks_plan planned, what the
probe agent and the switches' own tables showed) and returns one
:class:`Result` per planned item; a failure's detail names the nodes and
ports involved. No function looks at the system.
"""

from __future__ import annotations

import bisect
import functools
import ipaddress

from railonly.fabric.results import Result

from .check_plan import CheckPlan, Gpu, PathSpec


def _end(g: Gpu) -> str:
    return f"{g.name}:{g.port} ({g.ip}, cabled to {g.leaf}:{g.leaf_port})"


# --- reachability ---------------------------------------------------------------------


def reachability(cp: CheckPlan, seen: set[tuple[str, str]]) -> list[Result]:
    pairs = cp.reach_pairs()
    sent_ok = {a for a, _ in seen}
    got_ok = {b for _, b in seen}
    out = []
    # per GPU once: this loop makes a Result per same-rail pair (130,048 at 1,024 GPUs)
    label = {n: f"{n} {g.ip}" for n, g in cp.gpus.items()}
    prefix = {n: f"reachability/rail{g.rail}/{n}->" for n, g in cp.gpus.items()}
    for a, b in pairs:
        if (a, b) in seen:
            out.append(Result(prefix[a] + b, "reachability", True, f"{label[a]} -> {label[b]} (UDP 4791 BTH probe)"))
            continue
        ga, gb = cp.gpus[a], cp.gpus[b]
        rid = prefix[a] + b
        why = []
        if a not in sent_ok:
            why.append(f"nothing {a} sent reached any GPU")
        if b not in got_ok:
            why.append(f"{b} received nothing")
        out.append(Result(rid, "reachability", False,
                          f"no probe from {_end(ga)} arrived at {_end(gb)}" + (f": {'; '.join(why)}" if why else "")))
    return out


# --- isolation --------------------------------------------------------------------------


def isolation_probes(cp: CheckPlan, seen: dict[int, set[tuple[str, str]]],
                     probes: list[tuple[int, str, str, str]], unsent: dict[str, str] | None = None) -> list[Result]:
    """probes: (idx, src GPU, what, target description). A probe must not be seen
    at the rail NIC of a GPU of any other rail; unsent: {src GPU: why its probes
    could not be sent}: such a GPU fails (no frame proves nothing)."""
    unsent = unsent or {}
    by_src: dict[str, list[tuple[int, str, str]]] = {}
    for idx, src, what, tgt in probes:
        by_src.setdefault(src, []).append((idx, what, tgt))
    out = []
    for src in sorted(by_src, key=lambda n: (cp.gpus[n].rail, cp.gpus[n].hb, n)):
        g = cp.gpus[src]
        leaks, same = [], 0
        for idx, what, tgt in by_src[src]:
            for node, port in sorted(seen.get(idx, ())):
                other = cp.gpus.get(node)
                if other is None:
                    continue
                if other.rail != g.rail:
                    leaks.append(f"{what} {tgt} sent on {src}:{g.port} (rail {g.rail}) arrived at {node}:{port} (rail {other.rail})")
                else:
                    same += 1
        rid = f"isolation/rail{g.rail}/{src}"
        kinds = ", ".join(sorted({w for _, w, _ in by_src[src]}))
        if src in unsent:
            out.append(Result(rid, "isolation", False, f"no {kinds} could be sent from {src}:{g.port} (rail {g.rail}): "
                              f"{unsent[src]}" + ("; " + "; ".join(leaks[:5]) if leaks else "")))
        elif leaks:
            out.append(Result(rid, "isolation", False, "; ".join(leaks[:5]) + (f" (+{len(leaks) - 5} more)" if len(leaks) > 5 else "")))
        else:
            out.append(Result(rid, "isolation", True, f"{kinds} from {src}:{g.port} stayed on rail {g.rail} ({same} receipts on the rail)"))
    return out


@functools.lru_cache(maxsize=65536)
def _net(cidr: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    # parsed once: every switch's routes meet every foreign subnet (48 switches x
    # thousands of routes x hundreds of subnets on the 1,024-GPU lab)
    try:
        return ipaddress.ip_network("0.0.0.0/0" if cidr == "default" else cidr, strict=False)
    except ValueError:
        return None


class _Subnets:
    """Which of a list of subnets a route overlaps, without comparing it with each one
    (two prefixes overlap when one holds the other's first address)."""

    def __init__(self, prefixes: tuple[str, ...]):
        self.prefixes = prefixes
        starts = []
        self.exact: dict[tuple[int, int, int], list[int]] = {}
        for i, p in enumerate(prefixes):
            n = _net(p) if p != "default" else None  # only a route's "default" means 0.0.0.0/0
            if n is None:
                continue
            lo = int(n.network_address)
            starts.append((n.version, lo, i))
            self.exact.setdefault((n.version, n.prefixlen, lo), []).append(i)
        self.starts = sorted(starts)
        self.lens = sorted({(v, ln) for v, ln, _ in self.exact})

    def hits(self, route: str) -> list[str]:
        n = _net(route)
        if n is None:
            return []
        v, lo, hi = n.version, int(n.network_address), int(n.broadcast_address)
        bits = 32 if v == 4 else 128
        found: set[int] = set()
        k = bisect.bisect_left(self.starts, (v, lo, -1))
        while k < len(self.starts) and self.starts[k][:2] <= (v, hi):  # subnets starting inside the route
            found.add(self.starts[k][2])
            k += 1
        for pv, ln in self.lens:  # subnets holding the route's first address
            if pv == v:
                mask = ((1 << ln) - 1) << (bits - ln)
                found.update(self.exact.get((v, ln, lo & mask), ()))
        return [self.prefixes[i] for i in sorted(found)]


def isolation_routes(cp: CheckPlan, routes: dict[str, list[dict] | None]) -> list[Result]:
    """No rail switch holds a route covering another rail's subnets (kernel, every table)."""
    out = []
    for sw, foreign in sorted(cp.foreign.items()):
        rid = f"isolation/{sw}/routes"
        rs = routes.get(sw)
        if rs is None:
            out.append(Result(rid, "isolation", False, f"could not read the routes of {sw}"))
            continue
        bad = []
        index = _Subnets(foreign)
        for r in rs:
            dst = r.get("dst", "")
            if r.get("type", "unicast") not in ("unicast", None) and dst != "default":
                continue
            hit = index.hits(dst)
            if hit:
                how = r.get("gateway") or r.get("dev") or "?"
                bad.append(f"{dst} via {how} (covers {', '.join(hit[:3])})")
        rails = cp.switches[sw].rails
        if bad:
            out.append(Result(rid, "isolation", False, f"{sw} (rail {rails}) routes other rails' subnets: " + "; ".join(bad[:5])))
        else:
            out.append(Result(rid, "isolation", True, f"{sw}: {len(rs)} routes, none to the {len(foreign)} subnets of other rails"))
    return out


# --- path ---------------------------------------------------------------------------------


def path(cp: CheckPlan, hops: dict[int, dict[int, str]], arrived: dict[int, int],
         fdb: dict[str, dict[str, str]] | None = None, macs: dict[tuple[str, str], str] | None = None) -> list[Result]:
    """Per PathSpec: the node answering at each TTL is one the plan allows, and the
    probe arrives at exactly TTL len(layers)+1. L2 rails: the switch learned both
    ends' MACs on their planned ports (fdb: {switch: {mac: port}})."""
    out = []
    for i, ps in enumerate(cp.paths):
        seen = hops.get(i, {})
        names = []
        problems = []
        for t, allowed in enumerate(ps.layers, start=1):
            ip = seen.get(t)
            who = cp.ip_owner.get(ip, ip) if ip else None
            if not allowed:  # a hop of another rail: it cannot route an answer to the source
                names.append("(rail hop)" if who is None else who)
                if who is not None:
                    problems.append(f"hop {t} {who} ({ip}) answered the source across rails: it routes another rail's address")
                continue
            names.append(who or "*")
            if who is None:
                problems.append(f"no answer at hop {t} (expected {'|'.join(allowed)})")
            elif who not in allowed:
                problems.append(f"hop {t} is {who} ({ip}), expected {'|'.join(allowed)}")
        want = len(ps.layers) + 1
        got = arrived.get(i)
        if got is None:
            problems.append(f"the probe never arrived at {ps.dst}")
        elif got != want:
            problems.append(f"arrived after {got - 1} routed hops, expected {want - 1}")
        if ps.l2_switches and fdb is not None:
            problems += _fdb_problems(cp, ps, fdb, macs or {})
        shown = " -> ".join([ps.src, *names, ps.dst])
        if ps.via:
            shown += f" (forwarded by {ps.via} over the HB domain)"
        if ps.l2_switches:
            shown += f" [L2 via {', '.join(ps.l2_switches)}]"
        out.append(Result(ps.id, "path", not problems, shown if not problems else f"{shown}: " + "; ".join(problems)))
    return out


def _fdb_problems(cp: CheckPlan, ps: PathSpec, fdb: dict[str, dict[str, str]], macs: dict) -> list[str]:
    probs = []
    first = ps.via or ps.src
    for gname in (first, ps.dst):
        g = cp.gpus[gname]
        mac = macs.get((g.name, g.port))
        table = fdb.get(g.leaf)
        if mac is None or table is None:
            probs.append(f"no MAC/fdb evidence for {g.name} on {g.leaf}")
            continue
        port = table.get(mac)
        if port != g.leaf_port:
            probs.append(f"{g.leaf} learned {g.name}'s MAC {mac} on {port or 'no port'}, expected {g.leaf_port}")
    return probs


# --- bgp --------------------------------------------------------------------------------------


def bgp(cp: CheckPlan, peers: dict[str, dict | None], routes: dict[str, list[dict] | None]) -> list[Result]:
    """peers: {switch: {peer: summary entry}} (None: FRR did not answer)."""
    out = []
    for s in cp.bgp:
        rid = f"bgp/{s.switch}/{s.peer}"
        table = peers.get(s.switch)
        where = f"{s.switch} -> {s.peer}" + (f" ({s.description})" if s.description else "")
        if table is None:
            out.append(Result(rid, "bgp", False, f"{where}: bgpd of {s.switch} does not answer"))
            continue
        e = table.get(s.peer)
        if e is None:
            out.append(Result(rid, "bgp", False, f"{where}: not configured in the running bgpd"))
            continue
        st = e.get("state", "?")
        ok = st == "Established"
        out.append(Result(rid, "bgp", ok, f"{where}: {st}, {e.get('pfxRcd', 0)} prefixes received"
                          + ("" if ok else f", up/down {e.get('peerUptime', '?')}")))
    for sw, want in sorted(cp.prefixes.items()):
        rid = f"bgp/{sw}/prefixes"
        rs = routes.get(sw)
        if rs is None:
            out.append(Result(rid, "bgp", False, f"could not read the routes of {sw}"))
            continue
        have = set()
        for r in rs:
            try:
                have.add(str(ipaddress.ip_network(r.get("dst", ""), strict=False)))
            except ValueError:
                pass
        missing = [p for p in want if p not in have]
        if missing:
            out.append(Result(rid, "bgp", False, f"{sw} lacks {len(missing)} of {len(want)} GPU subnets: {', '.join(missing[:6])}"))
        else:
            out.append(Result(rid, "bgp", True, f"{sw}: all {len(want)} GPU subnets installed"))
    return out


def bfd(cp: CheckPlan, sessions: dict[str, list | None]) -> list[Result]:
    """sessions: {switch: ``show bfd peers json`` list} (None: bfdd did not answer)."""
    out = []
    for s in cp.bgp:
        if not s.bfd:
            continue
        rid = f"bfd/{s.switch}/{s.peer}"
        where = f"{s.switch} -> {s.peer}" + (f" ({s.description})" if s.description else "")
        peers = sessions.get(s.switch)
        if peers is None:
            out.append(Result(rid, "bfd", False, f"{where}: bfdd of {s.switch} does not answer"))
            continue
        e = next((p for p in peers if isinstance(p, dict) and p.get("peer") == s.peer), None)
        if e is None:
            out.append(Result(rid, "bfd", False, f"{where}: no BFD session (is bfdd running and 'neighbor ... bfd' set?)"))
            continue
        st = str(e.get("status", "?"))
        out.append(Result(rid, "bfd", st == "up",
                          f"{where}: BFD {st}, detect {e.get('detect-multiplier', '?')} x {e.get('receive-interval', '?')} ms"))
    return out


# --- cabling ------------------------------------------------------------------------------------


def cabling(cp: CheckPlan, heard: dict[tuple[str, str], set[tuple[str, str]]],
            absent: set[tuple[str, str]] = frozenset()) -> list[Result]:
    """heard: {(node, port): {(neighbour node, neighbour port)}} from the neighbour frames;
    absent: ports that do not exist in their namespace."""
    out = []
    for c in cp.cables:
        rid = f"cabling/{c.cable_id}/{c.a_node}:{c.a_port}--{c.b_node}:{c.b_port}"
        probs = []
        for (n, p), (fn, fp) in (((c.b_node, c.b_port), (c.a_node, c.a_port)), ((c.a_node, c.a_port), (c.b_node, c.b_port))):
            if (n, p) in absent:
                probs.append(f"{n} has no port {p}")
                continue
            got = heard.get((n, p), set())
            if (fn, fp) not in got:
                hear = ", ".join(f"{x}:{y}" for x, y in sorted(got)) or "nothing"
                probs.append(f"{n}:{p} should hear {fn}:{fp} but hears {hear}")
            elif len(got) > 1:
                extra = ", ".join(f"{x}:{y}" for x, y in sorted(got - {(fn, fp)}))
                probs.append(f"{n}:{p} also hears {extra}")
        out.append(Result(rid, "cabling", not probs, "; ".join(probs) if probs else f"{c.a_node}:{c.a_port} <-> {c.b_node}:{c.b_port} confirmed from both ends"))
    return out


def unique(results: list[Result]) -> list[str]:
    """Ids that occur more than once (must be empty: ids are JUnit names)."""
    seen, dup = set(), []
    for r in results:
        if r.id in seen:
            dup.append(r.id)
        seen.add(r.id)
    return dup
