"""What the host let a benchmark have: the share of CPU time the hypervisor took (steal),
and the core time nobody used (idle) while the benchmarked command ran.

On a shared VM the same code runs 20% slower an hour later with nothing else running on
the guest; /proc/stat's steal column says how much of that the host took. With nothing
else running, the idle time during a command is what it left of the cores: its serial
stretches, where one core works and the other waits. Linux only: elsewhere both are None.
"""

from __future__ import annotations

import os


def cpu_ticks() -> tuple[int, int, int] | None:
    """(stolen, idle, all) ticks of every CPU since boot, or None without /proc/stat's steal column."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if len(fields) < 9 or fields[0] != "cpu":
        return None
    ticks = [int(x) for x in fields[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice: already in user/nice]
    return ticks[7], ticks[3] + ticks[4], sum(ticks[:8])


class HostTicks:
    """Stolen and idle ticks over the spans between start() and stop(), summed."""

    def __init__(self) -> None:
        self.stolen = self.idle = self.total = self.spans = 0
        self._at: tuple[int, int, int] | None = None

    def start(self) -> None:
        self._at = cpu_ticks()

    def stop(self) -> None:
        now = cpu_ticks()
        if self._at is not None and now is not None:
            self.stolen += now[0] - self._at[0]
            self.idle += now[1] - self._at[1]
            self.total += now[2] - self._at[2]
            self.spans += 1
        self._at = None

    @classmethod
    def summed(cls, parts: "list[HostTicks]") -> "HostTicks":
        out = cls()
        for p in parts:
            out.stolen, out.idle, out.total, out.spans = (out.stolen + p.stolen, out.idle + p.idle,
                                                          out.total + p.total, out.spans + p.spans)
        return out

    def share(self) -> str:
        """"7.4%" of the CPU time stolen, or "n/a"."""
        return f"{100 * self.stolen / self.total:.1f}%" if self.total else "n/a"

    def idle_per_span(self) -> str:
        """"1.2 core-s (13%)": the core time left idle in a span, on average, and its share of
        all the cores' time then; "n/a" without /proc/stat."""
        if not self.total:
            return "n/a"
        seconds = self.idle / self.spans / os.sysconf("SC_CLK_TCK")
        return f"{seconds:.2f} core-s ({100 * self.idle / self.total:.0f}%)"
