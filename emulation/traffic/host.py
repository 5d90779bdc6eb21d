"""Is the host free enough to time traffic on? CPU sampled from /proc/stat during every timed run.

A lab's links are veths and qdiscs: their rate is the CPU's to give. When the
host is saturated (other work holds the CPUs), flows are late for reasons that
are not the network's, so a timed verdict would judge the host, not the
fabric: the result is ``inconclusive`` (exit 3) with the figures, never pass or
fail. Busy is every jiffy that is not idle or iowait (steal included: the CPU
was not ours), over the timed windows only (between a step's first client and
its last, not the set-up around it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

CPU_SATURATED = 0.90  # busy share of all CPUs over the timed windows at which timing is not judged
IDLE_FIELDS = (3, 4)  # idle, iowait in the "cpu" line of /proc/stat (after the label)

Sampler = Callable[[], "tuple[int, int]"]  # () -> (busy jiffies, total jiffies), cumulative


def proc_stat_sample(path: str = "/proc/stat") -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot (the kernel's "cpu" line)."""
    with open(path, encoding="ascii") as fh:
        for line in fh:
            if line.startswith("cpu "):
                vals = [int(v) for v in line.split()[1:9]]  # user nice system idle iowait irq softirq steal
                total = sum(vals)
                return total - sum(vals[i] for i in IDLE_FIELDS), total
    raise OSError(f"{path} has no cpu line")


@dataclass
class CpuMeter:
    """Busy share of the CPUs over the windows between start() and stop() calls."""

    sampler: Sampler = proc_stat_sample
    busy: int = 0
    total: int = 0
    windows: list[float] = field(default_factory=list)  # busy share of each window
    _open: "tuple[int, int] | None" = None

    def start(self) -> None:
        try:
            self._open = self.sampler()
        except (OSError, ValueError):
            self._open = None

    def stop(self) -> None:
        if self._open is None:
            return
        try:
            b, t = self.sampler()
        except (OSError, ValueError):
            return
        db, dt = b - self._open[0], t - self._open[1]
        self._open = None
        if dt > 0:
            self.busy += db
            self.total += dt
            self.windows.append(db / dt)

    @property
    def share(self) -> float | None:
        return self.busy / self.total if self.total else None

    def report(self, limit: float = CPU_SATURATED) -> dict:
        s = self.share
        return {"busy_share": None if s is None else round(s, 3), "limit": limit,
                "busiest_window": round(max(self.windows), 3) if self.windows else None,
                "windows": len(self.windows), "saturated": saturated(s, limit),
                "source": "/proc/stat cpu line: 1 - (idle + iowait) / all, over the timed steps"}


def saturated(share: float | None, limit: float = CPU_SATURATED) -> bool:
    """The host was saturated (pure): busy share at or above the limit. No figure: not saturated
    (a host without /proc/stat is judged on its figures alone)."""
    return share is not None and share >= limit
