"""Address and ASN plans: pools split into fixed per-rail blocks.

Every pool is cut into as many equal blocks as there are rails, plus one for
switches that join rails (baseline spines). Block sizes depend only on the
pool and the rail count, never on how many servers there are, so adding a
server never renumbers existing GPUs or switches.
"""

from __future__ import annotations

import ipaddress
import math

def _pow2_at_least(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, n))))


def prefix_for(hosts: int) -> int:
    """Prefix length of the smallest subnet with room for `hosts` addresses."""
    return 32 - max(0, math.ceil(math.log2(max(1, hosts))))


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
        self.need: dict[int | None, int] = {}  # block (None: cross) -> offsets used

    def addr(self, block: int | None, offset: int) -> int:
        if offset + 1 > self.need.get(block, 0):
            self.need[block] = offset + 1
        if block is None:
            return self.base + offset
        return self.rail_base + block * self.block_size + offset

    def problems(self) -> list[tuple[str, str, str]]:
        """(key path, message, hint) for every block that overflowed."""
        factor = 1
        for block, used in self.need.items():
            room = self.cross_size if block is None else self.block_size
            if used > room:
                factor = max(factor, math.ceil(used / max(1, room)))
        if factor == 1:
            return []
        plen = self.net.prefixlen - math.ceil(math.log2(factor))
        per = "the spine tiers" if None in self.need and self.need[None] > self.cross_size else "one rail"
        return [(
            f"addressing.{self.key}",
            f"{self.net} is too small: {self.what} of {per} need {max(self.need.values()):,} addresses",
            f"use a /{plen} or larger private pool (for example inside 10.0.0.0/8 or 100.64.0.0/10)",
        )]


def ip(addr: int, plen: int) -> str:
    # Hand-rolled: ipaddress objects cost ~10x more and this runs per port.
    return f"{addr >> 24}.{(addr >> 16) & 255}.{(addr >> 8) & 255}.{addr & 255}/{plen}"
