"""`railonly push` as a rollout: waves of switches, stop at the first failure, probes counted per wave.

The order and the hitless/disruptive marks are railonly.fabric.outdir.rollout_rules's
(pure, also what `railonly diff --runbook` writes); each switch's drain,
apply, verify and undrain are run.push_device's. A wave's switches are pushed
in parallel; a failed switch stops the rollout before the next wave (the
failed switch itself is back on its previous config: its push rolled it back).

Probes (lab only): a continuous ping from a GPU to a GPU of the same rail on
another leaf, so every probe crosses the spines; each wave's window counts
the probes that got no answer.
"""

from __future__ import annotations

import os
import re
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from railonly.fabric.safe_text import natural
from railonly.fabric.outdir.rollout_rules import Target, target_of, waves as plan_waves

from .targets import Device
from .pusher import Credentials, DeviceResult, Options, Progress, push_device

PROBE_INTERVAL = 0.01  # seconds between probes of one stream (100 per second)


@dataclass
class Wave:
    index: int  # 0: the canary
    devices: list[str]
    results: list[DeviceResult] = field(default_factory=list)
    start: float = 0.0
    end: float = 0.0
    probes_sent: int = 0
    probes_lost: int = 0

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)


@dataclass
class Report:
    waves: list[Wave]
    stopped_at: int | None = None  # wave that failed (-1: reading a switch failed); later waves were not started
    probes: list[str] = field(default_factory=list)  # "src -> dst" of each stream
    unchanged: list[DeviceResult] = field(default_factory=list)  # in sync, or failed to be read

    @property
    def results(self) -> list[DeviceResult]:
        return sorted(self.unchanged + [r for w in self.waves for r in w.results], key=lambda r: natural(r.device))


def run(devices: list[Device], targets: dict[str, Target], configs_dir: Path, creds: Credentials, *,
        max_per_group: int = 1, workers: int = 64, dry_run: bool = False, timeout: float = 10.0,
        opts: Options | None = None, progress: Progress | None = None, prober: "Prober | None" = None,
        push_one=push_device) -> Report:
    """Read every switch (in parallel, changing nothing), then roll the changed ones out in
    waves. A switch that cannot be read fails the plan: nothing is applied anywhere."""
    by_name = {d.name: d for d in devices}
    progress = progress or Progress(len(devices), enabled=False)
    quiet = Progress(len(devices), enabled=False)
    planned = _parallel(push_one, devices, configs_dir, creds, True, timeout, opts, workers,
                        progress if dry_run else quiet)
    plan = {r.device: r for r in planned}
    changed = [d for d in devices if plan[d.name].ok and plan[d.name].changed]
    order = plan_waves([targets.get(d.name) or target_of(d.name, None) for d in changed], max_per_group)
    report = Report([Wave(i, [t.device for t in w]) for i, w in enumerate(order)])
    report.unchanged = [r for r in planned if not (r.ok and r.changed)]
    if not dry_run:  # read by the plan's dry run, but this is a push: say what the push did to them
        for r in report.unchanged:
            if r.ok:
                r.message = "in sync: nothing to push"
    if any(not r.ok for r in planned):
        report.stopped_at = -1  # the plan failed: nothing is applied (a dry run says a push would not start)
    if dry_run:
        for w in report.waves:
            w.results = [plan[n] for n in w.devices]
        return report
    if report.stopped_at == -1:
        return report
    progress.total = len(changed)
    progress.start(f"{len(changed)} of {len(devices)} device(s) change, in {len(order)} wave(s): a canary, then at most "
                   f"{max_per_group} per rail and tier at once")
    if prober:
        prober.start()
        report.probes = prober.streams()
    try:
        for wave in report.waves:
            wave.start = time.time()
            wave.results = _parallel(push_one, [by_name[n] for n in wave.devices], configs_dir, creds, False,
                                     timeout, opts, workers, progress)
            for r in wave.results:
                r.wave = wave.index
            wave.end = time.time()
            if not wave.ok:
                report.stopped_at = wave.index
                break
    finally:
        if prober:
            prober.stop()
            for wave in report.waves:
                if wave.end:
                    wave.probes_sent, wave.probes_lost = prober.count(wave.start, wave.end)
    return report


def _parallel(push_one, devices, configs_dir, creds, dry_run, timeout, opts, workers, progress) -> list[DeviceResult]:
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(devices) or 1))) as ex:
        futs = [ex.submit(_one, push_one, d, configs_dir, creds, dry_run, timeout, opts) for d in devices]
        out = []
        for f in futs:
            r = f.result()
            out.append(r)
            progress.finished(r)
    return out


def _one(push_one, device, configs_dir, creds, dry_run, timeout, opts) -> DeviceResult:
    try:
        return push_one(device, configs_dir, creds, dry_run, timeout, opts)
    except Exception as exc:  # a bug in one device's push must not lose the others
        return DeviceResult(device.name, device.platform, False, message=creds.redact(f"internal error: {exc}"))


def report_text(report: Report, dry_run: bool) -> str:
    lines = ["rollout plan (dry run: nothing changed):" if dry_run else "rollout:"]
    if not report.waves and report.stopped_at != -1:  # an unread switch: its changes are unknown, not none
        lines.append("  no switch changes")
    for w in report.waves:
        name = "canary" if w.index == 0 else f"wave {w.index}"
        if not w.results:
            lines.append(f"{name}: {', '.join(w.devices)}: not started (the rollout stopped)")
            continue
        probes = "" if not report.probes or dry_run else (
            f"; probes lost {w.probes_lost} of {w.probes_sent}" if w.probes_sent else
            "; no probe sent in this wave: loss not measured")  # "lost 0 of 0" read as zero loss
        took = "" if dry_run else f" ({w.end - w.start:.1f}s)"
        lines.append(f"{name}: {', '.join(w.devices)}: {'planned' if dry_run else 'ok' if w.ok else 'FAILED'}{took}{probes}")
        for r in w.results:
            mark = f" [{r.mark}]" if r.mark else ""
            lines.append(f"  {r.device}{mark}: {'ok' if r.ok else 'FAILED'}: {r.message}")
            for s in r.steps:
                lines.append(f"    - {s}")
    if report.probes:
        lines.append("probes: " + "; ".join(report.probes) + f" (every {PROBE_INTERVAL * 1000:.0f} ms)")
    if report.stopped_at == -1:
        lines.append("a push would not start: a switch could not be read (see below)" if dry_run else
                     "rollout not started: a switch could not be read (see below); nothing was applied")
    elif report.stopped_at is not None:
        lines.append(f"rollout stopped at {'the canary' if report.stopped_at == 0 else f'wave {report.stopped_at}'}: "
                     "the failed switch is back on its previous config; later waves were not started")
    return "\n".join(lines) + "\n"


# --- probes ------------------------------------------------------------------------------

_REPLY = re.compile(r"^\[(\d+\.\d+)\] \d+ bytes from .*icmp_seq=(\d+)")


class Prober:
    """Continuous pings (one process per stream, in the source GPU's namespace), stopped by PID."""

    def __init__(self, streams: list[tuple[str, str, str, str]], log_dir: str):
        self._streams = streams  # (src name, src netns, dst name, dst ip)
        self.log_dir = log_dir
        self.pids: list[int] = []
        self.logs: list[str] = []
        self.t0: list[float] = []

    def streams(self) -> list[str]:
        return [f"{s} -> {d} ({ip})" for s, _, d, ip in self._streams]

    def start(self) -> None:
        from railonly import proc

        os.makedirs(self.log_dir, exist_ok=True)
        for i, (_, ns, _, ip) in enumerate(self._streams):
            log = os.path.join(self.log_dir, f"probe{i}.log")
            if os.path.lexists(log):
                os.unlink(log)
            self.t0.append(time.time())
            self.pids.append(proc.spawn(["ping", "-D", "-n", "-i", str(PROBE_INTERVAL), "-W", "1", ip], netns=ns, log=log))
            self.logs.append(log)
        time.sleep(1.0)  # the streams run before the first wave

    def stop(self) -> None:
        from railonly import proc

        time.sleep(1.5)  # the last probes of the last wave get their answers
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGINT)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5
        for pid in self.pids:
            while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}") and _alive(pid):
                proc.reap(pid)
                time.sleep(0.05)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
            proc.reap(pid)

    def count(self, start: float, end: float) -> tuple[int, int]:
        """(sent, lost) over all streams, for probes sent between start and end."""
        sent = lost = 0
        for t0, log in zip(self.t0, self.logs):
            replies: dict[int, float] = {}
            for line in Path(log).read_text(errors="replace").splitlines():
                m = _REPLY.match(line)
                if m:
                    replies[int(m.group(2))] = float(m.group(1))
            if not replies:
                continue
            last = max(replies)
            # the send time of probe n, from the answered probe before it (ping paces by the clock)
            known = sorted(replies.items())
            k = 0
            anchor_seq, anchor_t = 1, t0
            for n in range(1, last + 1):
                while k < len(known) and known[k][0] <= n:
                    anchor_seq, anchor_t = known[k]
                    k += 1
                t = anchor_t + (n - anchor_seq) * PROBE_INTERVAL
                if start <= t <= end:
                    sent += 1
                    lost += n not in replies
        return sent, lost


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][:1] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def lab_streams(lab, running: set[str] | None = None) -> list[tuple[str, str, str, str]]:
    """Per rail of a lab with spines: its first GPU to its last one (another leaf, so
    every probe crosses a spine), with the destination's NIC address. `running`: the
    nodes the lab runs (the OUTDIR of a grown design names GPUs the deployed lab has not:
    a probe to one of them measured nothing and said "probes lost 0 of 0")."""
    leaf_of: dict[str, str] = {}
    ip_of: dict[str, str] = {}
    for lk in lab.links:
        if lk.kind == "rail" and lk.a.ip:
            leaf_of[lk.a.node] = lk.b.node
            ip_of[lk.a.node] = lk.a.ip.split("/")[0]
    by_rail: dict[int, list[str]] = {}
    for n in lab.gpus:
        if n.name in ip_of and (running is None or (n.name in running and leaf_of[n.name] in running)):
            by_rail.setdefault(n.fabric_node.rail or 0, []).append(n.name)
    out = []
    for rail, gpus in sorted(by_rail.items()):
        gpus.sort(key=natural)
        src, dst = gpus[0], gpus[-1]
        if leaf_of.get(src) != leaf_of.get(dst):
            out.append((src, lab.netns(src), dst, ip_of[dst]))
    return out


def lab_targets(lab) -> dict[str, Target]:
    return {sw.name: target_of(sw.name, sw.fabric_node) for sw in lab.switches}
