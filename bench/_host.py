"""What the host let a benchmark have: the share of CPU time the hypervisor took (steal).

On a shared VM the same code runs 20% slower an hour later with nothing else running on
the guest; /proc/stat's steal column says how much of that the host took. Linux only:
elsewhere the share is None.
"""

from __future__ import annotations


def cpu_ticks() -> tuple[int, int] | None:
    """(stolen, all) ticks of every CPU since boot, or None without /proc/stat's steal column."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if len(fields) < 9 or fields[0] != "cpu":
        return None
    ticks = [int(x) for x in fields[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice: already in user/nice]
    return ticks[7], sum(ticks[:8])


class Steal:
    """Stolen ticks over the spans between start() and stop(), summed."""

    def __init__(self) -> None:
        self.stolen = self.total = 0
        self._at: tuple[int, int] | None = None

    def start(self) -> None:
        self._at = cpu_ticks()

    def stop(self) -> None:
        now = cpu_ticks()
        if self._at is not None and now is not None:
            self.stolen += now[0] - self._at[0]
            self.total += now[1] - self._at[1]
        self._at = None

    def share(self) -> str:
        """"7.4%" of the CPU time stolen, or "n/a"."""
        return f"{100 * self.stolen / self.total:.1f}%" if self.total else "n/a"
