"""Address and ASN plans: pools split into fixed per-rail blocks.

Every pool is cut into as many equal blocks as there are rails, plus one for
switches that join rails (baseline spines). Block sizes depend only on the
pool and the rail count, never on how many servers there are, so adding a
server never renumbers existing GPUs or switches.

Within a block each switch tier (and each tier of /31 links) has a slot of
its own, a fixed fraction of the block (:data:`SWITCH_SLOTS`,
:data:`LINK_SLOTS`): a spine's loopback is the spine's index in the spine
slot, not "after the last leaf", so growing past the planned size (more
leaves) leaves every existing spine's loopback and ASN where it was.
"""

from __future__ import annotations

import ipaddress
import math

def _pow2_at_least(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, n))))


def prefix_for(hosts: int) -> int:
    """Prefix length of the smallest subnet with room for `hosts` addresses."""
    return 32 - max(0, math.ceil(math.log2(max(1, hosts))))


# Slot of a tier inside a block, in quarters of the block: (first quarter, quarters).
SWITCH_SLOTS = {1: (0, 2), 2: (2, 1), 3: (3, 1)}  # leaves, spines, cores
LINK_SLOTS = {2: (0, 2), 3: (2, 2)}  # leaf-spine /31s, spine-core /31s
WHOLE = (0, 4)


class BlockPool:
    """A pool cut into `rails` equal blocks (block r for rail r).

    With `cross` (the baseline, whose spines join rails) the first half of the
    pool is one block for the cross-rail switches and links, and the rails
    share the second half: a spine tier holds as many links as all rails
    together.
    """

    def __init__(self, key: str, net: ipaddress.IPv4Network, rails: int, what: str, cross: bool = False):
        self.key = key
        self.net = net
        self.what = what
        self.rails = rails
        total = net.num_addresses
        self.rail_area = total // 2 if cross else total
        self.rail_base = int(net.network_address) + (total - self.rail_area)
        self.cross_size = total - self.rail_area
        self.block_size = self.rail_area // _pow2_at_least(rails)
        self.base = int(net.network_address)
        self.need: dict[tuple[int | None, tuple[int, int]], int] = {}  # (block (None: cross), slot) -> offsets used

    def room(self, block: int | None, slot: tuple[int, int] = WHOLE) -> int:
        return (self.cross_size if block is None else self.block_size) * slot[1] // 4

    def addr(self, block: int | None, offset: int, slot: tuple[int, int] = WHOLE) -> int:
        if offset + 1 > self.need.get((block, slot), 0):
            self.need[(block, slot)] = offset + 1
        start = (self.cross_size if block is None else self.block_size) * slot[0] // 4
        if block is None:
            return self.base + start + offset
        return self.rail_base + block * self.block_size + start + offset

    def problems(self) -> list[tuple[str, str, str]]:
        """(key path, message, hint) for every block (or slot of one) that overflowed."""
        factor, worst = 1, None
        for (block, slot), used in self.need.items():
            room = self.room(block, slot)
            if used > room and math.ceil(used / max(1, room)) >= factor:
                factor, worst = math.ceil(used / max(1, room)), (block, slot, used)
        if worst is None:
            return []
        plen = self.net.prefixlen - math.ceil(math.log2(factor))
        block, slot, used = worst
        per = "the spine tiers" if block is None else "one rail"
        part = "" if slot == WHOLE else f" (one tier's share, {slot[1]}/4 of the block)"
        return [(
            f"addressing.{self.key}",
            f"{self.net} is too small: {self.what} of {per} need {used:,} addresses{part}",
            f"use a /{plen} or larger private pool (for example inside 10.0.0.0/8 or 100.64.0.0/10)",
        )]


def ip(addr: int, plen: int) -> str:
    # Hand-rolled: ipaddress objects cost ~10x more and this runs per port.
    return f"{addr >> 24}.{(addr >> 16) & 255}.{(addr >> 8) & 255}.{addr & 255}/{plen}"
