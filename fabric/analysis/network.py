"""The three networks, which differ only in the path a flow takes.

A transfer step moves bytes per GPU split by pair class (hb, rail,
cross-rail). Each network maps the classes onto links, and a step takes the
time of its most loaded link (bytes / rate, one direction):

  ideal           every GPU in one HB domain (the paper's K = N): all bytes at the HB rate
                  (or the NIC's, were it faster, so the ideal bounds both from below)
  rail-optimized  hb bytes on NVLink; rail bytes on the NIC; cross-rail bytes on the NIC
                  and the spine (at NIC / oversub when the spine is oversubscribed)
  rail-only       like rail-optimized while no byte crosses rails (so the two are equal);
                  a step with cross-rail bytes is forwarded through the HB domain (PXN):
                  the GPU's inter-domain bytes first cross NVLink to the peer on the
                  destination's rail, then go out on the NIC. The paper's convention:
                  the NVLink stage is serial with the NIC stage, which makes the
                  all-to-all overhead NIC / HB (8.3% DGX A100, 11.1% DGX H100).

Ring and point-to-point steps are paced by their slowest hop; all-to-all steps
load every link at once.
"""

from __future__ import annotations

from dataclasses import dataclass

NETWORKS = ("rail-only", "rail-optimized", "ideal")

# Share of a link's nominal rate a collective achieves (NCCL bus bandwidth over
# line rate on DGX A100 / H100, nccl-tests). Assumed, not fitted (docs/analyze.md: at 1.0
# the Table 5 error grows from 1.5% to 2.4% unless the GEMM constants are refitted).
LINK_EFFICIENCY = 0.8


@dataclass(frozen=True)
class Rates:
    """Per-GPU rates in bytes/s, one direction, as a collective achieves them."""

    nic: float
    hb: float
    oversub: float = 1.0  # rail-optimized spine: cross-rail bytes get nic / oversub

    @classmethod
    def from_gbps(cls, nic_gbps: float, hb_gbps: float, oversub: float = 1.0,
                  efficiency: float = LINK_EFFICIENCY) -> "Rates":
        return cls(nic_gbps * 1e9 / 8 * efficiency, hb_gbps * 1e9 / 8 * efficiency, oversub)

    @classmethod
    def of(cls, cluster, oversub: float = 1.0, efficiency: float = LINK_EFFICIENCY) -> "Rates":
        return cls.from_gbps(cluster.nic_gbps, cluster.hb_gbps, oversub, efficiency)


@dataclass(frozen=True)
class Step:
    """One transfer of a collective: `hop` bytes per GPU, split over pair classes by `share`.

    pattern "ring" / "p2p": every member sends `hop` bytes to one peer; the slowest
    hop class present paces the step. "all-to-all": every member sends `hop` bytes
    spread over its peers; each link carries its classes' share at once.
    """

    pattern: str
    hop: float
    share: tuple[float, float, float]  # hb, rail, cross_rail; sums to 1

    def bytes(self) -> tuple[float, float, float]:
        return tuple(self.hop * s for s in self.share)


def step_time(step: Step, network: str, r: Rates) -> float:
    if step.hop <= 0:
        return 0.0
    hb, rail, cross = step.share
    if network == "ideal":
        return step.hop / max(r.hb, r.nic)
    if step.pattern == "all-to-all":
        t_hb = step.hop * hb / r.hb
        if network == "rail-optimized":
            return max(t_hb, step.hop * (rail + cross * r.oversub) / r.nic)
        if cross > 0:  # forwarded: NVLink stage, then the NIC
            inter = step.hop * (rail + cross)
            return max(t_hb, inter / r.nic) + inter / r.hb
        return max(t_hb, step.hop * rail / r.nic)
    # ring / p2p: the slowest hop class present
    per_byte = 0.0
    if hb > 0:
        per_byte = 1 / r.hb
    if rail > 0:
        per_byte = max(per_byte, 1 / r.nic)
    if cross > 0:
        if network == "rail-optimized":
            per_byte = max(per_byte, r.oversub / r.nic)
        else:
            per_byte = max(per_byte, 1 / r.nic + 1 / r.hb)
    return step.hop * per_byte
