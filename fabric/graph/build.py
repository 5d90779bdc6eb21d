"""Design -> fabric graph, for `rail-only` and the `rail-optimized` baseline.

Wiring rules (docs/fabric.md):
* GPU r of every HB domain has one NIC, on rail r; every GPU also has an HB
  port on its domain's NVSwitch.
* A Clos of 1, 2 or 3 tiers is non-blocking: below the top tier a switch has
  as many up as down links. Leaves have radix/2 ports down; in two tiers every
  leaf reaches every spine; in three, leaves form pods of radix/2 with one
  aggregation switch ("spine") per leaf, and each spine index is a plane of
  cores.
* Rail-only builds one Clos per rail (rails share no switch), or packs small
  one-tier rails onto shared switches as separate partitions. The baseline
  builds rail-pure leaves, or packs rails that fill at most half a leaf onto
  shared leaves (one partition each), and joins all of them with spine tiers.

Everything is sized for the build-out (`hb_domain.planned` domains) and
numbered by position in it: GPU d of a rail sits on leaf d // (ports down) at
port d % (ports down), a leaf's uplinks go to the spines of the build-out,
and switch indexes, /31s, subnets and cable ids are those of the build-out.
So any count up to the planned size is a subset of it: growing only adds
cables. Past the planned size the spine tier is re-sized and uplinks move.

Numbers never depend on how many there are of something: a switch is
numbered within its rail and tier (its loopback in its tier's slot of the
rail's block, its ASN in its tier's range of the rail's 65,536), a /31 and a
cable by their position (rail, tier, GPU or uplink). So growing past the
planned size keeps every existing switch's ASN, loopback and name, and every
cable that does not move keeps its id; only the uplinks that move change.
(Three tiers: the cores of a plane are sized by the number of pods, so
growth past the planned size renames them; see docs/push.md.)
"""

from __future__ import annotations

import math

from ..design import clos, management
from ..design.design import Design
from ..input.problems import InputError
from ..platforms.ports import GPU_HB_PORT, GPU_RAIL_PORT, fabric_port, hb_port, port_names
from .addressing import LINK_SLOTS, SWITCH_SLOTS, BlockPool, ip, prefix_for
from .model import Endpoint, Fabric, Link, Node, Vlan

VLAN_BASE = 1000  # rail r's partition is VLAN 1000 + r
ASN_MAX = 4_294_967_294  # last private 32-bit ASN (RFC 6996)
ASN_BLOCK = 65536  # ASNs per rail (and one block for switches that join rails)
ASN_TIER_BASE = {1: 0, 2: 32768, 3: 49152}  # a tier's range in its block: leaves, spines, cores


def cable_label(rail: int | None, tier: int, position: int) -> str:
    """A cable's id from what it connects, never from a running count: rail (X: the
    switches that join rails), cable tier, and 1-based position in that rail and tier
    (the GPU's place on the rail; the lower switch's uplink)."""
    return f"{'X' if rail is None else f'R{rail}'}-T{tier}-{position + 1:05d}"


def gpu_node_name(domain: int, rank: int) -> str:
    """The fabric node name of GPU `rank` of HB domain `domain` (launchers map ranks to it)."""
    return f"hb{domain}-gpu{rank}"


class _Builder:
    """Walks the fabric of the build-out (`hb_domain.planned` domains) in a fixed
    order and creates what exists at `hb_domain.count`. Every switch index, /31,
    subnet and cable number is taken by position in the build-out, present or
    not, so a count up to the planned size only adds nodes, links and cables."""

    def __init__(self, design: Design):
        self.d = design
        K = design.hb_size
        self.n = design.hb_count  # domains built now
        self.planned = design.planned  # domains the tiers are sized for
        self.fab = Fabric(design=design, tiers=0)
        cross = design.topology == "rail-optimized"
        self.cross_block = None  # block of switches/links that join rails
        self.gpu_pool = BlockPool("gpu_pool", design.pools.gpu, K, "GPU subnets")
        self.fabric_pool = BlockPool("fabric_pool", design.pools.fabric, K, "/31 fabric links", cross)
        self.lo_pool = BlockPool("loopback_pool", design.pools.loopback, K, "switch loopbacks", cross)
        self.hb_pool = BlockPool("hb_pool", design.pools.hb, 1, "HB-domain subnets")
        self.hb_plen = prefix_for(K + 2)
        self.routed = design.rail_mode == "routed"
        self.switch_count: dict[tuple[int | None, int], int] = {}  # (block, tier) -> switches so far
        self.asn_overflow = False
        self.asn_groups: dict[tuple, int] = {}  # (block, group) -> the group's shared ASN (rfc7938)

    # -- nodes -------------------------------------------------------------
    def add(self, node: Node) -> Node:
        self.fab.by_name[node.name] = node
        return node

    def switch(self, name: str, tier: int, rails: list[int], present: bool = True,
               asn_group: str | None = None) -> Node | None:
        """The next switch of its block; None (its index still taken) when it is not built yet.
        Under `bgp.asn_scheme: rfc7938` the switches of one `asn_group` (in one block) share
        the ASN its first switch would have had on its own."""
        block = rails[0] if len(rails) == 1 or (rails and self.d.topology == "rail-only") else self.cross_block
        index = self.switch_count.get((block, tier), 0)  # within its rail and tier: no other count moves it
        self.switch_count[(block, tier)] = index + 1
        loopback = self.lo_pool.addr(block, index + 1, SWITCH_SLOTS[tier]) if self.routed else None  # reserved either way
        # 65,536 ASNs per rail, a fixed range per tier; cross-rail switches after the last rail.
        offset = ASN_TIER_BASE[tier] + index + 1
        own_asn = self.d.asn_base + (self.d.hb_size if block is None else block) * ASN_BLOCK + offset
        if asn_group is not None and self.d.asn_scheme == "rfc7938":
            own_asn = self.asn_groups.setdefault((block, asn_group), own_asn)
        if not present:
            return None
        sw = Node(name=f"{self.d.site}-{name}" if self.d.site else name, role="switch", tier=tier, rails=rails,
                  platform=self.d.platform_of_tier(tier))
        if self.routed:
            sw.asn = own_asn
            if sw.asn > ASN_MAX or offset >= ASN_TIER_BASE.get(tier + 1, ASN_BLOCK):
                self.asn_overflow = True
            sw.loopback = ip(loopback, 32)
        self.fab.switches.append(sw)
        return self.add(sw)

    def port(self, sw: Node, index: int, ip_addr: str | None = None) -> Endpoint:
        names = port_names(self.fab, sw.tier, sw.platform)
        name = names[index] if index < len(names) else fabric_port(self.d, sw.tier, sw.platform, index)
        ep = Endpoint(sw.name, name, ip_addr, index)
        if ep.port in sw.ports:
            raise AssertionError(f"port {ep.port} of {sw.name} assigned twice")
        sw.ports[ep.port] = ep
        return ep

    # -- links -------------------------------------------------------------
    def rail_link(self, gpu: Node | None, sw: Node | None, port_index: int, vlan: Vlan | None, host_offset: int,
                  rail: int, position: int) -> None:
        """The NIC cable of GPU `position` of `rail` (its cable id is that place's)."""
        cable_id = cable_label(rail, 1, position)
        if gpu is None or sw is None or vlan is None:
            return  # a GPU of the build-out: its cable number and port stay reserved
        plen = int(vlan.subnet.rsplit("/", 1)[1])
        base = _addr_int(vlan.subnet)
        a = Endpoint(gpu.name, GPU_RAIL_PORT, ip(base + host_offset, plen), 0)
        gpu.ports[a.port] = a
        b = self.port(sw, port_index)
        vlan.ports.append(b.port)
        self.fab.links.append(Link("rail", gpu.rail, self.d.nic_gbps, a, b, 1, cable_id))

    def fabric_link(self, lower: Node | None, lower_index: int, upper: Node | None, upper_index: int,
                    tier: int, rail: int | None, n: int) -> None:
        """Uplink `n` of `rail`'s (None: the cross-rail block's) `tier`: (index of the lower
        switch in its tier) * ports up + uplink. Its /31 and cable id are that place's."""
        cable_id = cable_label(rail, tier, n)
        a_ip = b_ip = None
        if self.routed:
            base = self.fabric_pool.addr(rail, 2 * n + 1, LINK_SLOTS[tier]) - 1
            b_ip, a_ip = ip(base, 31), ip(base + 1, 31)  # upper tier takes the even address
        if lower is None or upper is None:
            return
        a = self.port(lower, lower_index, a_ip)
        b = self.port(upper, upper_index, b_ip)
        self.fab.links.append(Link("fabric", rail, self.d.nic_gbps, a, b, tier, cable_id))

    def vlan(self, sw: Node | None, rail: int, leaf_index: int, width: int) -> Vlan | None:
        """The GPU subnet of `width` ports of `rail` on `sw` (leaf `leaf_index` of the rail)."""
        plen = prefix_for(width + 3)  # GPUs + gateway + network + broadcast
        size = 1 << (32 - plen)
        base = self.gpu_pool.addr(rail, (leaf_index + 1) * size - 1) - (size - 1)
        if sw is None:
            return None
        gw = ip(base + 1, plen) if self.routed else None
        v = Vlan(VLAN_BASE + rail, rail, ip(base, plen), gw)
        sw.vlans.append(v)
        return v

    # -- GPUs and HB domains -------------------------------------------------
    def gpus_and_hb(self) -> list[list[Node]]:
        """Create GPUs and HB domains; returns rails[r] = GPUs of rank r in domain order."""
        d = self.d
        K = d.hb_size
        rails: list[list[Node]] = [[] for _ in range(K)]
        hb_links = []
        span = 1 << (32 - self.hb_plen)
        self.hb_pool.addr(0, self.planned * span - 1)  # the build-out's domains need their subnets too
        for dom in range(self.n):
            hb = self.add(Node(name=f"hb{dom}", role="hb", hb_domain=dom))
            self.fab.hbs.append(hb)
            base = self.hb_pool.addr(0, (dom + 1) * span - 1) - (span - 1)
            for r in range(K):
                gpu = self.add(Node(name=gpu_node_name(dom, r), role="gpu", hb_domain=dom, rank=r, rail=r))
                self.fab.gpus.append(gpu)
                rails[r].append(gpu)
                a = Endpoint(gpu.name, GPU_HB_PORT, ip(base + 1 + r, self.hb_plen), 1)
                gpu.ports[a.port] = a
                b = Endpoint(hb.name, hb_port(r), None, r)
                hb.ports[b.port] = b
                hb_links.append(Link("hb", None, d.hb_gbps, a, b, 0))
        self._hb_links = hb_links
        return rails

    def host_offset(self, pos: int) -> int:
        return pos + (2 if self.routed else 1)  # .1 is the gateway on routed rails

    def one_leaf(self, sw: Node | None, rails: list[list[Node]], served: list[int], width: int) -> None:
        """Whole rails on one tier-1 switch, one partition (VLAN) of `width` ports each."""
        for q, r in enumerate(served):
            v = self.vlan(sw, r, 0, width)
            for pos in range(self.planned):
                gpu = rails[r][pos] if pos < self.n else None
                self.rail_link(gpu, sw, q * width + pos, v, self.host_offset(pos), r, pos)

    # -- Clos tiers ------------------------------------------------------------
    def leaves_for_rail(self, r: int, gpus: list[Node], name: str) -> list[Node | None]:
        """The rail's leaves in the build-out; None for one with no GPU yet."""
        half = self.d.radix // 2
        leaves: list[Node | None] = []
        for li in range(clos.leaves_needed(self.planned, self.d.radix)):
            sw = self.switch(f"{name}-leaf{li}", 1, [r], present=li * half < self.n)
            v = self.vlan(sw, r, li, half)
            for pos in range(min(half, self.planned - li * half)):
                g = li * half + pos
                self.rail_link(gpus[g] if g < self.n else None, sw, pos, v, self.host_offset(pos), r, g)
            leaves.append(sw)
        return leaves

    def upper_tiers(self, leaves: list[Node | None], tiers: int, prefix: str, rail: int | None) -> None:
        """Spine (and core) tiers above the build-out's `leaves` (None: not built yet);
        `rail` None when they join rails. Spines and cores are sized for the build-out,
        so a leaf's uplinks land where they will stay."""
        k = self.d.radix
        half = k // 2
        rails = [] if rail is None else [rail]
        if tiers == 2:
            spines = [self.switch(f"{prefix}spine{i}", 2, rails, asn_group="spines") for i in range(math.ceil(len(leaves) / 2))]
            S = len(spines)
            for li, leaf in enumerate(leaves):
                for j in range(half):
                    t = li * half + j
                    self.fabric_link(leaf, half + j, spines[t % S], t // S, 2, rail, t)
            return
        # Three tiers: pods of `half` leaves, one spine per leaf in the pod; a pod
        # is built with its first leaf.
        pods = [leaves[p:p + half] for p in range(0, len(leaves), half)]
        planes: list[list[Node | None]] = [[] for _ in range(half)]  # plane a: spine a of every pod
        for p, pod in enumerate(pods):
            m = len(pod)
            spines = [self.switch(f"{prefix}pod{p}-spine{a}", 2, rails, present=pod[0] is not None,
                                  asn_group=f"pod{p}") for a in range(m)]
            for i, leaf in enumerate(pod):
                for j in range(half):
                    t = i * half + j
                    self.fabric_link(leaf, half + j, spines[t % m], t // m, 2, rail, (p * half + i) * half + j)
            for a, sp in enumerate(spines):
                planes[a].append(sp)
        core_index = 0
        for a, plane in enumerate(planes):
            if not plane:
                continue
            C = math.ceil(len(plane) * half / k)
            cores = [self.switch(f"{prefix}core{core_index + c}", 3, rails, asn_group="cores") for c in range(C)]
            core_index += C
            for pi, sp in enumerate(plane):
                for j in range(half):
                    t = pi * half + j
                    # spine a of pod pi is spine pi * half + a of its tier
                    self.fabric_link(sp, half + j, cores[t % C], t // C, 3, rail, (pi * half + a) * half + j)

    def rail_only(self, rails: list[list[Node]]) -> int:
        d = self.d
        k, K, P = d.radix, d.hb_size, self.planned
        t = clos.tiers(P, k)
        if t == 1 and d.share_rails and P <= k // 2:
            per = k // P  # rail partitions per physical switch
            for s in range(math.ceil(K / per)):
                served = list(range(s * per, min(K, (s + 1) * per)))
                name = f"rails{served[0]}-{served[-1]}" if len(served) > 1 else f"rail{served[0]}-leaf0"
                self.one_leaf(self.switch(name, 1, served), rails, served, k // per)
            return 1
        for r in range(K):
            if t == 1:
                self.one_leaf(self.switch(f"rail{r}-leaf0", 1, [r]), rails, [r], k)
            else:
                leaves = self.leaves_for_rail(r, rails[r], f"rail{r}")
                self.upper_tiers(leaves, t, f"rail{r}-", r)
        return t

    def rail_optimized(self, rails: list[list[Node]]) -> int:
        d = self.d
        k, K, P = d.radix, d.hb_size, self.planned
        t = clos.baseline_depth(K, P, k)
        if t == 1:
            self.one_leaf(self.switch("leaf0", 1, list(range(K))), rails, list(range(K)), k // K)
            return 1
        per = clos.rails_per_leaf(P, k)
        if per > 1:
            # Small rails: each leaf carries `per` whole rails, one partition each.
            leaves: list[Node | None] = []
            for s in range(math.ceil(K / per)):
                served = list(range(s * per, min(K, (s + 1) * per)))
                name = f"rails{served[0]}-{served[-1]}" if len(served) > 1 else f"rail{served[0]}-leaf0"
                sw = self.switch(name, 1, served)
                self.one_leaf(sw, rails, served, (k // 2) // per)
                leaves.append(sw)
        else:
            per_rail = [self.leaves_for_rail(r, rails[r], f"rail{r}") for r in range(K)]
            # Interleave rails so each pod (three tiers) holds the same leaf of many rails.
            leaves = [rl[i] for i in range(len(per_rail[0])) for rl in per_rail]
        self.upper_tiers(leaves, t, "", None)
        return t

    def build(self) -> Fabric:
        rails = self.gpus_and_hb()
        if self.d.topology == "rail-only":
            self.fab.tiers = self.rail_only(rails)
        else:
            self.fab.tiers = self.rail_optimized(rails)
        problems = []
        for pool in (self.gpu_pool, self.fabric_pool, self.lo_pool, self.hb_pool):
            problems += [self.d.problem(*p) for p in pool.problems()]
        if self.asn_overflow:
            top = max(sw.asn for sw in self.fab.switches)
            if top > ASN_MAX:
                problems.append(self.d.problem(
                    "bgp.asn_base", f"ASNs run past {ASN_MAX:,} (the highest switch would get {top:,})",
                    f"lower bgp.asn_base to at most {self.d.asn_base - (top - ASN_MAX):,}",
                ))
            else:
                problems.append(self.d.problem(
                    "hb_domain.planned", "one rail's tier has more switches than its ASN range holds (32,767 leaves, 16,383 spines or cores)",
                    "plan fewer HB domains per fabric, or use a larger switch.radix"))
        m = self.d.management
        if m is not None:
            management.problems({"pool": m.pool}, set(), len(self.fab.switches),
                                lambda path, msg, hint: problems.append(self.d.problem(path, msg, hint)))
        if problems:
            raise InputError(problems)
        management.assign(self.fab)
        self.fab.links.extend(self._hb_links)
        return self.fab


def _addr_int(cidr: str) -> int:
    a, b, c, d = cidr.split("/", 1)[0].split(".")
    return (int(a) << 24) | (int(b) << 16) | (int(c) << 8) | int(d)


def build_fabric(design: Design) -> Fabric:
    """The fabric graph of a validated design (raises InputError when pools are too small)."""
    return _Builder(design).build()
