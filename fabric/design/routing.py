"""Production eBGP policy of a routed fabric, vendor-neutral (docs/bgp.md).

RFC 7938 practice, printed by both renderers in their own words:

* ASNs (`bgp.asn_scheme`): `rfc7938` gives every leaf its own ASN and one ASN
  to each group of switches that never peer with each other: the spines of a
  rail (two tiers) or of a pod (three tiers), and the cores of a rail. AS-path
  loop prevention then already refuses spine -> leaf -> spine. `per-switch`
  keeps one ASN per switch.
* Valley-free export, explicit whatever the scheme: a route learned from the
  tier above is tagged with :data:`FROM_ABOVE` on import and never exported
  to the tier above again. Sessions up and down are two peer groups.
* `maximum-paths` at the ECMP width; BFD on every fabric session; a
  maximum-prefix limit per neighbour, sized from the prefixes of the
  routing domain with headroom.
"""

from __future__ import annotations

ASN_SCHEMES = ("rfc7938", "per-switch")
UP_GROUP = "FABRIC_UP"  # sessions to the tier above
DOWN_GROUP = "FABRIC_DOWN"  # sessions to the tier below
FROM_ABOVE = "64512:1"  # community: learned from the tier above (RFC 1997 16:16, private ASN)
FROM_ABOVE_LIST = "FROM_ABOVE"
PREFIX_LIST = "RAIL_ROUTES"
MAX_PREFIX_FLOOR = 100  # never a limit a lab-sized domain trips over
BFD_INTERVAL_MS = 300  # FRR and EOS default: 300 ms x 3 = under a second to detect a dead peer
BFD_MULTIPLIER = 3
BFD_PROFILE = "FABRIC"  # the FRR BFD profile a lab with its own timers prints
# BFD packets per second a lab may send in all (every session end, one packet per
# interval). Measured on a 2-core host: the 1,024-GPU routed lab's 2,048 session
# ends at 300 ms (6,800 packets/s) kept both cores busy in bfdd alone, which starved
# the checks and the traffic it was there to run; at 1,200 ms about half a core.
LAB_BFD_PACKETS_PER_S = 2000


def lab_bfd_interval_ms(session_ends: int) -> int:
    """BFD interval of a lab with this many BFD session ends: the production interval,
    doubled until the whole lab sends at most LAB_BFD_PACKETS_PER_S (a lab host runs every
    switch's bfdd on a few cores; a switch has its own CPU for its own sessions)."""
    ms = BFD_INTERVAL_MS
    while session_ends * 1000 / ms > LAB_BFD_PACKETS_PER_S:
        ms *= 2
    return ms


def max_prefix(domain_prefixes: int) -> int:
    """Per-neighbour limit: a peer can at most send every prefix of its routing
    domain; twice that (at least MAX_PREFIX_FLOOR) leaves room to grow to the plan."""
    return max(MAX_PREFIX_FLOOR, 2 * domain_prefixes)


def peer_groups(up_flags: list[bool]) -> list[dict]:
    """The peer groups a switch needs (up, down or both) with their route-maps:
    `up_flags` says per neighbour whether it is in the tier above."""
    out = []
    if any(up_flags):
        out.append({"name": UP_GROUP, "import_map": "RAIL_IMPORT_UP", "export_map": "RAIL_EXPORT_UP"})
    if not all(up_flags):
        out.append({"name": DOWN_GROUP, "import_map": "RAIL_IMPORT", "export_map": "RAIL_EXPORT"})
    return out
