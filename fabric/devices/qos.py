"""RoCEv2 lossless QoS plan, vendor-neutral, from the design's `qos` section.

The usual GPU-fabric recipe (NVIDIA/Arista/SONiC reference designs):
* RoCE data (DSCP `roce_dscp`, default 26) -> traffic class and queue
  `roce_priority` (3), lossless: PFC on that priority only, ECN (WRED with
  ecn marking) on its queue between `ecn_min_kbytes` and `ecn_max_kbytes`.
* CNPs (DSCP `cnp_dscp`, 48) -> class `cnp_priority` (6), strict priority
  and lossy, so congestion feedback never waits behind the data it throttles.
* Everything else -> class 0, best effort.
Traffic class n uses queue n and priority group 0 unless lossless (its own PG).
Renderers print these numbers; they never pick their own.
"""

from __future__ import annotations

from dataclasses import dataclass

PFC_WATCHDOG_MS = 200  # detection and restoration time of the PFC storm watchdog
PFC_WATCHDOG_POLL_MS = PFC_WATCHDOG_MS // 2  # at most half the smaller of the two (EOS's rule)
SCHEDULER_WEIGHTS = {"lossy": 5, "lossless": 95}  # DWRR weights (SONiC) = bandwidth percent (EOS); CNPs strict

# The cable lengths SONiC's usual pg_profile_lookup.ini lists lossless PG profiles for, used
# where railonly has no hwsku's own file (generic switches; a catalog hwsku's own lengths
# per speed come from its pg_profile_lookup.ini facts, fabric/devices/sonic_buffers.py).
# With the traditional buffer model buffermgrd looks a port's CABLE_LENGTH up verbatim and
# creates no lossless PG for a length the file does not list (sonic-net/sonic-swss
# cfgmgr/buffermgr.cpp, BufferMgr::doSpeedUpdateTask, "No PG profile configured").
PG_PROFILE_CABLE_M = (5, 40, 300)


def pg_profile_cable_length(metres: float, lengths: tuple[int, ...] = PG_PROFILE_CABLE_M) -> str:
    """CABLE_LENGTH for a traditional-buffer SONiC switch: the shortest of `lengths` (those
    with a published profile, ascending) that is at least the cable (its headroom covers the
    cable); a cable longer than every published length keeps its own (no profile fits it)."""
    fit = next((m for m in lengths if m >= metres), metres)
    return f"{fit}m"


@dataclass(frozen=True)
class QosPlan:
    roce_dscp: int
    roce_priority: int
    cnp_dscp: int
    cnp_priority: int
    ecn_min_bytes: int
    ecn_max_bytes: int
    ecn_probability: int

    @property
    def ecn_min_kbytes(self) -> int:
        return self.ecn_min_bytes // 1024

    @property
    def ecn_max_kbytes(self) -> int:
        return self.ecn_max_bytes // 1024

    def dscp_to_tc(self) -> dict[int, int]:
        """All 64 code points: RoCE and CNP to their classes, the rest best effort."""
        out = {d: 0 for d in range(64)}
        out[self.roce_dscp] = self.roce_priority
        out[self.cnp_dscp] = self.cnp_priority
        return out

    def tc_to_pg(self) -> dict[int, int]:
        return {tc: (tc if tc == self.roce_priority else 0) for tc in range(8)}

    def tc_to_queue(self) -> dict[int, int]:
        return {tc: tc for tc in range(8)}

    @property
    def lossless(self) -> list[int]:
        return [self.roce_priority]


def plan(design) -> QosPlan:
    q = design.qos
    return QosPlan(
        roce_dscp=q["roce_dscp"],
        roce_priority=q["roce_priority"],
        cnp_dscp=q["cnp_dscp"],
        cnp_priority=q["cnp_priority"],
        ecn_min_bytes=q["ecn_min_kbytes"] * 1024,
        ecn_max_bytes=q["ecn_max_kbytes"] * 1024,
        ecn_probability=q["ecn_probability"],
    )
