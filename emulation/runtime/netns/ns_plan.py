"""A network-namespace deploy plan as pure data, and its rendering to commands.

The plan knows nothing about the fabric compiler: a runtime translates a lab
into these frozen dataclasses, :func:`validate` judges them, :func:`render`
turns them into ordered :class:`Step` objects (batch scripts and process
starts) and :func:`dump` prints them for ``--dry-run``. Nothing here touches
the system, so all of it is testable without root.

Every name is checked before it reaches a batch script: ``ip -batch`` splits
lines on whitespace, so a space or newline in a name would inject a command.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Iterable

from railonly.fabric.safe_text import whole

from ...lab import netns_prefix

LAB_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
TOKEN_RE = re.compile(r"^[A-Za-z0-9_.:@/+=,-]+$")  # one safe batch-script word
IFNAME_MAX = 15  # IFNAMSIZ - 1
# the only host-global settings a deploy may change (raised, restored on destroy)
ROOT_SYSCTL_RE = re.compile(r"^net\.ipv[46]\.neigh\.default\.gc_thresh[123]$")


# --- the plan -----------------------------------------------------------------


@dataclass(frozen=True)
class Namespace:
    name: str  # full name, e.g. clab-demo-hb0-gpu3
    sysctls: tuple[tuple[str, str], ...] = ()  # ("net.ipv4.ip_forward", "1"), applied in the ns


@dataclass(frozen=True)
class Veth:
    """A veth pair created directly in both target namespaces (never moved)."""

    a_ns: str
    a_dev: str
    b_ns: str
    b_dev: str
    mtu: int | None = None


@dataclass(frozen=True)
class Bridge:
    netns: str
    name: str
    ports: tuple[str, ...] = ()
    mtu: int | None = None
    stp: bool = False


@dataclass(frozen=True)
class Link:
    """Explicit settings for a device (veths, bridges and lo come up by default)."""

    netns: str
    dev: str
    mtu: int | None = None
    up: bool = True


@dataclass(frozen=True)
class Address:
    netns: str
    dev: str
    cidr: str  # "10.0.0.1/31" or "2001:db8::1/64"


@dataclass(frozen=True)
class Nexthop:
    via: str | None = None
    dev: str | None = None
    weight: int = 1
    onlink: bool = False


@dataclass(frozen=True)
class Route:
    netns: str
    dst: str  # "default" or a prefix
    via: str | None = None
    dev: str | None = None
    table: int | None = None
    onlink: bool = False
    metric: int | None = None
    src: str | None = None
    nexthops: tuple[Nexthop, ...] = ()  # non-empty: a multipath route, via/dev unused


@dataclass(frozen=True)
class Rule:
    netns: str
    table: int
    priority: int | None = None
    src: str | None = None
    dst: str | None = None
    iif: str | None = None
    oif: str | None = None
    fwmark: int | None = None


@dataclass(frozen=True)
class Shaping:
    """Egress rate limit on one device; tbf and htb are the qdiscs this kernel has."""

    netns: str
    dev: str
    rate_mbit: float
    kind: str = "tbf"  # "tbf" | "htb"
    burst_bytes: int | None = None  # None: max(128 KiB, 10 ms at rate)


@dataclass(frozen=True)
class Process:
    """A long-running program inside a namespace.

    ``daemonizes=False``: the engine starts it in the background and writes
    ``pidfile`` itself. ``daemonizes=True``: the program forks away and writes
    ``pidfile`` (FRR ``-d -i``); the engine waits for the file. ``dirs`` are
    created first (owned by ``owner``, "user:group") for sockets and logs,
    then ``files`` written (configs travel inside the plan, so its
    fingerprint changes when a config does). ``then``: a command run once in
    the namespace when the process is ready (FRR's integrated config loaded by
    ``vtysh -b`` after an instance's last daemon); it must exit 0 or the deploy fails.
    """

    name: str  # unique in the plan, e.g. "spine1/bgpd"
    netns: str
    argv: tuple[str, ...]
    pidfile: str
    daemonizes: bool = False
    dirs: tuple[str, ...] = ()
    owner: str | None = None
    log: str | None = None  # stdout+stderr of a non-daemonizing process
    ready_timeout: float = 15.0
    files: tuple[tuple[str, str], ...] = ()  # (path, text), mode 0640, owned by owner
    then: tuple[str, ...] = ()  # argv, run to its end after the process is ready


@dataclass(frozen=True)
class Plan:
    lab: str
    namespaces: tuple[Namespace, ...] = ()
    veths: tuple[Veth, ...] = ()
    bridges: tuple[Bridge, ...] = ()
    links: tuple[Link, ...] = ()
    addresses: tuple[Address, ...] = ()
    routes: tuple[Route, ...] = ()
    rules: tuple[Rule, ...] = ()
    shaping: tuple[Shaping, ...] = ()
    processes: tuple[Process, ...] = ()
    # Root-namespace sysctls (neighbour gc_thresh): shared by every lab, so the
    # engine only ever raises them and restores what it changed.
    root_sysctls: tuple[tuple[str, str], ...] = ()

    @property
    def prefix(self) -> str:
        return netns_prefix(self.lab)

    def fingerprint(self) -> str:
        blob = json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


# --- sysctl presets -------------------------------------------------------------


def router_sysctls(multipath_hash_policy: int = 1) -> tuple[tuple[str, str], ...]:
    """What a forwarding namespace needs (docs/lab/index.md: new namespaces start with forwarding off)."""
    return (
        ("net.ipv4.ip_forward", "1"),
        ("net.ipv6.conf.all.forwarding", "1"),
        ("net.ipv4.icmp_ratelimit", "0"),
        ("net.ipv6.icmp.ratelimit", "0"),
        ("net.ipv4.conf.all.rp_filter", "0"),
        ("net.ipv4.conf.default.rp_filter", "0"),
        ("net.ipv4.fib_multipath_hash_policy", str(multipath_hash_policy)),
        ("net.ipv6.fib_multipath_hash_policy", str(multipath_hash_policy)),
        # a nexthop whose link lost carrier leaves ECMP at once, as an ASIC drops a port that
        # goes down from its groups: routes carry their nexthops inline (frr.py, LAB_ZEBRA), and
        # the kernel kept hashing flows onto a dead one until BFD and BGP withdrew it
        ("net.ipv4.conf.all.ignore_routes_with_linkdown", "1"),
        ("net.ipv6.conf.all.ignore_routes_with_linkdown", "1"),
    )


def host_sysctls() -> tuple[tuple[str, str], ...]:
    return (
        ("net.ipv4.icmp_ratelimit", "0"),
        ("net.ipv4.conf.all.rp_filter", "0"),
        ("net.ipv4.conf.default.rp_filter", "0"),
    )


def neigh_gc_sysctls(routers: int, entries: int = 0, entries6: int | None = None) -> tuple[tuple[str, str], ...]:
    """Root-ns neighbour table sizes (the table is shared by every namespace).

    Past ~100 routers the defaults overflow (docs/lab/index.md), and an L2 rail
    probed all-pairs needs n*(n-1) entries at once (1,024 GPUs: ~130k).
    ``entries``/``entries6``: what the lab can need at the same time (see
    :func:`neighbour_need`). gc_thresh2 stays above the need, since forced GC
    past it drops entries older than 5 s in the middle of a check; gc_thresh3
    leaves room for other labs."""
    out = []
    for fam, n in (("ipv4", entries), ("ipv6", entries if entries6 is None else entries6)):
        if routers <= 100 and n <= 256:  # the defaults (128/512/1024) hold it
            continue
        t3 = max(4096, 64 * routers if routers > 100 else 0, -(-2 * n // 1024) * 1024)
        t2 = max(t3 // 2, -(-5 * n // 4 // 1024) * 1024)
        out += [
            (f"net.{fam}.neigh.default.gc_thresh1", str(t3 // 4)),
            (f"net.{fam}.neigh.default.gc_thresh2", str(t2)),
            (f"net.{fam}.neigh.default.gc_thresh3", str(t3)),
        ]
    return tuple(out)


def neighbour_need(plan: Plan) -> tuple[int, int]:
    """(IPv4, IPv6) neighbour entries the plan's endpoints can hold at once:
    every address can learn every other address of its subnet (an L2 rail is
    one subnet: n*(n-1)), and every veth end its peer's IPv6 link-local
    address (BGP unnumbered)."""
    count: dict = {}
    for a in plan.addresses:
        net = ipaddress.ip_interface(a.cidr).network
        if net.prefixlen < net.max_prefixlen:  # /32 and /128 (loopbacks) have no neighbours
            count[net] = count.get(net, 0) + 1
    v4 = sum(n * (n - 1) for net, n in count.items() if net.version == 4)
    v6 = sum(n * (n - 1) for net, n in count.items() if net.version == 6) + 2 * len(plan.veths)
    return v4, v6


# --- a small builder, so callers need not assemble tuples by hand ---------------


@dataclass
class PlanBuilder:
    lab: str
    _ns: dict[str, Namespace] = field(default_factory=dict)
    _parts: dict[str, list] = field(default_factory=dict)

    def ns(self, node: str, sysctls: Iterable[tuple[str, str]] = ()) -> str:
        """Add namespace clab-<lab>-<node>; returns its full name."""
        name = netns_prefix(self.lab) + node
        self._ns[name] = Namespace(name, tuple(sysctls))
        return name

    def add(self, item) -> PlanBuilder:
        key = {
            Veth: "veths", Bridge: "bridges", Link: "links", Address: "addresses",
            Route: "routes", Rule: "rules", Shaping: "shaping", Process: "processes",
        }[type(item)]
        self._parts.setdefault(key, []).append(item)
        return self

    def build(self, root_sysctls: Iterable[tuple[str, str]] = ()) -> Plan:
        return Plan(
            lab=self.lab,
            namespaces=tuple(self._ns.values()),
            root_sysctls=tuple(root_sysctls),
            **{k: tuple(v) for k, v in self._parts.items()},
        )


# --- validation -------------------------------------------------------------------


class _Problems:
    """The problems found in one plan, and its devices per namespace as the checks meet them."""

    def __init__(self, plan: Plan):
        self.errs: list[str] = []
        self.known = {n.name for n in plan.namespaces}
        self.devs: dict[str, set[str]] = {n: {"lo"} for n in self.known}

    def add(self, message: str) -> None:
        self.errs.append(message)

    def tok(self, what: str, value: object) -> None:
        if not isinstance(value, str) or not TOKEN_RE.fullmatch(value):
            self.add(f"{what}: {value!r} is not a safe single word")

    def ns_ok(self, what: str, ns: str) -> bool:
        if ns not in self.known:
            self.add(f"{what}: namespace {ns!r} is not in the plan")
            return False
        return True

    def new_dev(self, what: str, ns: str, dev: str) -> None:
        self.tok(what, dev)
        if len(dev) > IFNAME_MAX:
            self.add(f"{what}: interface name {dev!r} longer than {IFNAME_MAX}")
        if "/" in dev:  # an EOS breakout name (Ethernet1/5): Linux refuses it
            self.add(f"{what}: interface name {dev!r} contains '/'")
        if ns in self.devs:
            if dev in self.devs[ns]:
                self.add(f"{what}: {dev} defined twice in {ns}")
            self.devs[ns].add(dev)

    def has_dev(self, what: str, ns: str, dev: str | None) -> None:
        if dev is not None and ns in self.devs and dev not in self.devs[ns]:
            self.add(f"{what}: no device {dev!r} in {ns}")

    def net(self, what: str, value: str | None, prefix: bool) -> None:
        if value is None or (prefix and value == "default"):
            return
        try:
            ipaddress.ip_interface(value) if prefix else ipaddress.ip_address(value)
        except ValueError:
            self.add(f"{what}: {value!r} is not an IP {'prefix' if prefix else 'address'}")


def validate(plan: Plan) -> list[str]:
    """All problems of the plan (empty when it can be deployed), in plan order:
    namespaces, devices, addressing and routing, shaping, processes, root sysctls."""
    found = _Problems(plan)
    for check in (_check_namespaces, _check_devices, _check_routing, _check_shaping, _check_processes,
                  _check_root_sysctls):
        check(plan, found)
    return found.errs


def _check_namespaces(plan: Plan, p: _Problems) -> None:
    if not LAB_RE.fullmatch(plan.lab):
        p.add(f"lab name {plan.lab!r}: lowercase letters, digits, '-', at most 40")
    if len(p.known) != len(plan.namespaces):
        p.add("duplicate namespace names")
    for n in plan.namespaces:
        p.tok("namespace", n.name)
        if not n.name.startswith(plan.prefix) or n.name == plan.prefix:
            p.add(f"namespace {n.name!r} does not carry the lab prefix {plan.prefix!r}")
        for k, v in n.sysctls:
            if not re.fullmatch(r"[a-z0-9_]+(\.[A-Za-z0-9_-]+)+", k) or ".." in k:
                p.add(f"{n.name}: bad sysctl key {k!r}")
            elif not k.startswith("net."):  # kernel.*, vm.*, fs.* are one for the whole host
                p.add(f"{n.name}: sysctl {k!r} is not per-namespace (only net.* may be set in a lab)")
            p.tok(f"{n.name} sysctl {k}", v)


def _check_devices(plan: Plan, p: _Problems) -> None:
    """Veths and bridges make the devices; bridge ports and links must name one."""
    for v in plan.veths:
        what = f"veth {v.a_ns}:{v.a_dev}--{v.b_ns}:{v.b_dev}"
        if p.ns_ok(what, v.a_ns) & p.ns_ok(what, v.b_ns):
            p.new_dev(what, v.a_ns, v.a_dev)
            p.new_dev(what, v.b_ns, v.b_dev)
    for b in plan.bridges:
        if p.ns_ok(f"bridge {b.name}", b.netns):
            p.new_dev(f"bridge {b.name}", b.netns, b.name)
    for b in plan.bridges:
        for port in b.ports:
            p.has_dev(f"bridge {b.netns}:{b.name} port", b.netns, port)
            if port == b.name or port == "lo":
                p.add(f"bridge {b.netns}:{b.name}: {port} cannot be a port")
    ports = [(b.netns, port) for b in plan.bridges for port in b.ports]
    if len(set(ports)) != len(ports):
        p.add("a device is a port of two bridges")
    for x in plan.links:
        if p.ns_ok(f"link {x.dev}", x.netns):
            p.has_dev(f"link {x.netns}:{x.dev}", x.netns, x.dev)


def _check_routing(plan: Plan, p: _Problems) -> None:
    """Addresses, routes and rules: real prefixes and addresses, on devices that exist."""
    for a in plan.addresses:
        what = f"address {a.netns}:{a.dev} {a.cidr}"
        if p.ns_ok(what, a.netns):
            p.has_dev(what, a.netns, a.dev)
        p.net(what, a.cidr, True)
    for r in plan.routes:
        what = f"route {r.netns} {r.dst}"
        if not p.ns_ok(what, r.netns):
            continue
        p.net(what, r.dst, True)
        p.net(what, r.src, False)
        if r.nexthops:
            if r.via or r.dev:
                p.add(f"{what}: give via/dev in nexthops, not on a multipath route")
            for nh in r.nexthops:
                p.net(what, nh.via, False)
                p.has_dev(what, r.netns, nh.dev)
                if nh.via is None and nh.dev is None:
                    p.add(f"{what}: a nexthop needs via or dev")
                if not 1 <= nh.weight <= 256:
                    p.add(f"{what}: nexthop weight must be 1..256")
        else:
            if r.via is None and r.dev is None:
                p.add(f"{what}: needs via, dev or nexthops")
            p.net(what, r.via, False)
            p.has_dev(what, r.netns, r.dev)
    for u in plan.rules:
        what = f"rule {u.netns} table {u.table}"
        if p.ns_ok(what, u.netns):
            p.net(what, u.src, True)
            p.net(what, u.dst, True)
            p.has_dev(what, u.netns, u.iif)
            p.has_dev(what, u.netns, u.oif)


def _check_shaping(plan: Plan, p: _Problems) -> None:
    for s in plan.shaping:
        what = f"shaping {s.netns}:{s.dev}"
        if p.ns_ok(what, s.netns):
            p.has_dev(what, s.netns, s.dev)
        if s.kind not in ("tbf", "htb"):
            p.add(f"{what}: kind must be tbf or htb (this kernel has no netem)")
        if not s.rate_mbit > 0:
            p.add(f"{what}: rate must be positive")
    shaped = [(s.netns, s.dev) for s in plan.shaping]
    if len(set(shaped)) != len(shaped):
        p.add("a device is shaped twice")


def _check_processes(plan: Plan, p: _Problems) -> None:
    pnames = [x.name for x in plan.processes]
    if len(set(pnames)) != len(pnames):
        p.add("duplicate process names")
    pidfiles = [x.pidfile for x in plan.processes]
    if len(set(pidfiles)) != len(pidfiles):
        p.add("two processes share a pid file")
    for x in plan.processes:
        p.ns_ok(f"process {x.name}", x.netns)
        if not x.argv:
            p.add(f"process {x.name}: empty argv")
        for path in (x.pidfile, *x.dirs, *(f for f, _ in x.files)):
            if not path.startswith("/") or "/../" in path + "/":
                p.add(f"process {x.name}: {path!r} must be an absolute path without '..'")


def _check_root_sysctls(plan: Plan, p: _Problems) -> None:
    for k, v in plan.root_sysctls:
        if not ROOT_SYSCTL_RE.fullmatch(k):
            p.add(f"root sysctl {k!r}: only neighbour gc_thresh may be changed")
        if whole(v) is None:
            p.add(f"root sysctl {k}: value {v!r} is not a number")


class PlanError(ValueError):
    def __init__(self, problems: list[str]):
        super().__init__("invalid plan:\n  " + "\n  ".join(problems))
        self.problems = problems


# --- rendering ----------------------------------------------------------------------

PHASES = ("root-sysctl", "netns", "sysctl", "links", "config", "sysctl-late", "shaping", "processes")


@dataclass(frozen=True)
class Step:
    """One unit of work. ``argv`` is the equivalent command a person could run
    (``ip -n NS -batch -`` with ``stdin``); the engine may execute it more
    cheaply (setns in a thread) with the same effect."""

    phase: str
    kind: str  # "ip" | "tc" | "sysctl" | "process"
    netns: str | None
    argv: tuple[str, ...] = ()
    stdin: str | None = None
    items: tuple[tuple[str, str], ...] = ()  # sysctl key/values
    process: Process | None = None


def _is_dev_sysctl(key: str) -> bool:
    # net.ipv4.conf.<dev>.x names a device that exists only after the links phase.
    parts = key.split(".")
    return len(parts) > 4 and parts[2] in ("conf", "neigh") and parts[3] not in ("all", "default")


def _burst(s: Shaping) -> int:
    return s.burst_bytes or max(128 * 1024, int(s.rate_mbit * 1e6 / 8 / 100))


def _rate(mbit: float) -> str:
    return f"{int(round(mbit * 1000))}kbit"


def _route_line(r: Route) -> str:
    w = ["route", "add", r.dst]
    if r.table is not None:
        w += ["table", str(r.table)]
    if r.metric is not None:
        w += ["metric", str(r.metric)]
    if r.src:
        w += ["src", r.src]
    if r.nexthops:
        for nh in r.nexthops:
            w.append("nexthop")
            if nh.via:
                w += ["via", nh.via]
            if nh.dev:
                w += ["dev", nh.dev]
            w += ["weight", str(nh.weight)]
            if nh.onlink:
                w.append("onlink")
    else:
        if r.via:
            w += ["via", r.via]
        if r.dev:
            w += ["dev", r.dev]
        if r.onlink:
            w.append("onlink")
    return " ".join(w)


def _rule_line(u: Rule) -> str:
    w = ["rule", "add"]
    if u.priority is not None:
        w += ["priority", str(u.priority)]
    for key, val in (("from", u.src), ("to", u.dst), ("iif", u.iif), ("oif", u.oif)):
        if val:
            w += [key, val]
    if u.fwmark is not None:
        w += ["fwmark", str(u.fwmark)]
    return " ".join(w + ["table", str(u.table)])


def _group(items, key) -> dict[str, list]:
    out: dict[str, list] = {}
    for it in items:
        out.setdefault(key(it), []).append(it)
    return out


def config_ops(plan: Plan) -> dict[str, list[tuple]]:
    """Per namespace, the ordered settings of the config phase as plain tuples:
    ("link", dev, mtu, up, master), ("addr", dev, cidr), ("route", Route),
    ("rule", Rule). Both the ``ip -batch`` text and the engine's netlink
    messages are made from these, so the two strategies cannot drift apart."""
    per_ns: dict[str, list[tuple]] = {n.name: [("link", "lo", None, True, None)] for n in plan.namespaces}
    auto_up: dict[str, list[str]] = {n.name: [] for n in plan.namespaces}
    # Bridges come up before their ports: a bridge that opens without carrier
    # keeps its qdisc pending, so its carrier-on (when the first port comes
    # up) is "urgent" to the kernel's linkwatch; opened last, it waits for
    # linkwatch's once-a-second batch (seconds in a big lab).
    for b in plan.bridges:
        auto_up[b.netns].append(b.name)
        per_ns[b.netns] += [("link", p, None, None, b.name) for p in b.ports]
    for v in plan.veths:
        auto_up[v.a_ns].append(v.a_dev)
        auto_up[v.b_ns].append(v.b_dev)
    explicit = {(x.netns, x.dev): x for x in plan.links}
    for ns, dev_list in auto_up.items():
        for dev in dev_list:
            if (ns, dev) not in explicit:
                per_ns[ns].append(("link", dev, None, True, None))
    bridge_names = {(b.netns, b.name) for b in plan.bridges}
    for x in sorted(plan.links, key=lambda x: (x.netns, x.dev) not in bridge_names):  # bridges first, as above
        per_ns[x.netns].append(("link", x.dev, x.mtu or None, x.up, None))
    for a in plan.addresses:
        per_ns[a.netns].append(("addr", a.dev, a.cidr))
    for r in plan.routes:
        per_ns[r.netns].append(("route", r))
    for u in plan.rules:
        per_ns[u.netns].append(("rule", u))
    return per_ns


def shaping_ops(plan: Plan) -> dict[str, list[tuple]]:
    """Per namespace, ("shape", Shaping) in plan order."""
    return {ns: [("shape", s) for s in shapes] for ns, shapes in _group(plan.shaping, lambda s: s.netns).items()}


def op_line(op: tuple) -> str:
    """One ``ip -batch`` line for a :func:`config_ops` tuple."""
    kind = op[0]
    if kind == "link":
        _, dev, mtu, up, master = op
        if master is not None:
            return f"link set dev {dev} master {master}\n"
        m = f" mtu {mtu}" if mtu else ""
        return f"link set dev {dev}{m} {'up' if up else 'down'}\n"
    if kind == "addr":
        # nodad: IPv6 addresses usable at once instead of after ~1 s of DAD
        nodad = " nodad" if ":" in op[2] else ""
        return f"addr add {op[2]} dev {op[1]}{nodad}\n"
    if kind == "route":
        return _route_line(op[1]) + "\n"
    return _rule_line(op[1]) + "\n"


def _shape_lines(s: Shaping) -> str:
    rate, burst = _rate(s.rate_mbit), _burst(s)
    if s.kind == "tbf":
        return f"qdisc replace dev {s.dev} root tbf rate {rate} burst {burst} latency 50ms\n"
    return (f"qdisc replace dev {s.dev} root handle 1: htb default 1\n"
            f"class replace dev {s.dev} parent 1: classid 1:1 htb rate {rate} ceil {rate}"
            f" burst {burst} cburst {burst}\n")


def bridge_line(b: Bridge, inside: bool = False) -> str:
    """``ip -batch`` line creating a bridge: from the root namespace into its own, or
    ``inside`` it (a batch run with ``ip -n NS``)."""
    where = "" if inside else f" netns {b.netns}"
    mtu = f" mtu {b.mtu}" if b.mtu else ""
    return f"link add {b.name}{where}{mtu} type bridge stp_state {int(b.stp)}\n"


def config_script(netns: str, bridges: Iterable[Bridge], links: Iterable[Link], addresses: Iterable[Address]) -> str:
    """One ``ip -n NETNS -batch`` body that creates ``bridges`` and applies the
    link and address settings, rendered as deploy renders them."""
    plan = Plan("", (Namespace(netns),), bridges=tuple(bridges), links=tuple(links), addresses=tuple(addresses))
    lines = [bridge_line(b, inside=True) for b in plan.bridges]
    return "".join(lines) + "".join(op_line(o) for o in config_ops(plan)[netns])


def render(plan: Plan) -> list[Step]:
    """The ordered steps that deploy ``plan``. Raises PlanError if invalid."""
    problems = validate(plan)
    if problems:
        raise PlanError(problems)
    steps: list[Step] = []
    if plan.root_sysctls:
        steps.append(Step("root-sysctl", "sysctl", None, items=plan.root_sysctls))
    if plan.namespaces:
        script = "".join(f"netns add {n.name}\n" for n in plan.namespaces)
        steps.append(Step("netns", "ip", None, ("ip", "-batch", "-"), script))
    # Device-independent sysctls go before the links exist: new devices copy
    # conf.default (rp_filter), and the effective rp_filter is max(all, dev).
    for n in plan.namespaces:
        early = tuple(kv for kv in n.sysctls if not _is_dev_sysctl(kv[0]))
        if early:
            steps.append(Step("sysctl", "sysctl", n.name, items=early))
    lines = []
    for v in plan.veths:
        mtu = f" mtu {v.mtu}" if v.mtu else ""
        lines.append(
            f"link add {v.a_dev} netns {v.a_ns}{mtu} type veth peer name {v.b_dev} netns {v.b_ns}{mtu}\n"
        )
    lines += [bridge_line(b) for b in plan.bridges]
    if lines:
        steps.append(Step("links", "ip", None, ("ip", "-batch", "-"), "".join(lines)))

    # Qdiscs go on while the links are still down: a carrier-up event on a
    # device whose qdisc is pending is "urgent" to the kernel's linkwatch and
    # handled at once; otherwise linkwatch batches them once a second, and a
    # big lab waits seconds for its links.
    for ns, shapes in _group(plan.shaping, lambda s: s.netns).items():
        body = "".join(_shape_lines(s) for s in shapes)
        steps.append(Step("shaping", "tc", ns, ("tc", "-n", ns, "-batch", "-"), body))

    for ns, ops in config_ops(plan).items():
        body = "link set lo up\n" + "".join(op_line(o) for o in ops[1:])  # ops[0]: lo up
        steps.append(Step("config", "ip", ns, ("ip", "-n", ns, "-batch", "-"), body))

    for n in plan.namespaces:
        late = tuple(kv for kv in n.sysctls if _is_dev_sysctl(kv[0]))
        if late:
            steps.append(Step("sysctl-late", "sysctl", n.name, items=late))


    for p in plan.processes:
        argv = ("ip", "netns", "exec", p.netns, *p.argv)
        steps.append(Step("processes", "process", p.netns, argv, process=p))
    return steps


def _quote(word: str) -> str:
    return word if TOKEN_RE.fullmatch(word) else "'" + word.replace("'", "'\\''") + "'"


def dump(plan: Plan, steps: list[Step] | None = None) -> str:
    """Human-readable ``--dry-run`` text: a shell-like script of the deploy."""
    steps = render(plan) if steps is None else steps
    out = [
        f"# lab {plan.lab} (prefix {plan.prefix}, plan {plan.fingerprint()}): "
        f"{len(plan.namespaces)} namespaces, {len(plan.veths)} veth pairs, "
        f"{len(plan.bridges)} bridges, {len(plan.processes)} processes"
    ]
    phase = None
    for s in steps:
        if s.phase != phase:
            phase = s.phase
            out.append(f"\n# --- {phase}")
        if s.kind == "sysctl":
            args = [f"{k}={v}" for k, v in s.items]
            pre = [] if s.netns is None else ["ip", "netns", "exec", s.netns]
            out.append(" ".join(pre + ["sysctl", "-q", "-w", *args]))
        elif s.kind == "process":
            p = s.process
            how = "daemonizes, writes" if p.daemonizes else "background, engine writes"
            own = ""
            if p.owner:
                user, _, group = p.owner.partition(":")
                own = f"-o {user} -g {group or user} "
            for d in p.dirs:
                out.append(f"install -d {own}{d}")
            for path, text in p.files:
                out.append(f"install -m 0640 {own}/dev/stdin {path}   # {len(text)} bytes from the plan")
            out.append(" ".join(_quote(w) for w in s.argv) + f"   # {p.name}: {how} {p.pidfile}")
            if p.then:
                out.append(" ".join(_quote(w) for w in ("ip", "netns", "exec", p.netns, *p.then)) + f"   # after {p.name}")
        else:
            out.append(" ".join(s.argv) + " <<'EOF'\n" + (s.stdin or "") + "EOF")
    return "\n".join(out) + "\n"
