"""Apply a :class:`~railonly.emulation.nsplan.Plan` to the kernel, and undo it.

Costs drive the shape (figures in bench/bench_netns_engine.py and
docs/lab/index.md): one ``ip -batch`` creates every namespace, one more every veth
pair (directly in its target namespaces) and bridge; per-namespace settings
are one ``ip -batch`` per namespace started from a thread that has entered
the namespace with setns, run on a small thread pool; sysctls are written to
/proc/sys from such a thread without any subprocess.

State file: every namespace, process, root sysctl and directory is written to
the state file *before* it is created, so :func:`destroy` works from the file
alone after a deploy that failed or was interrupted (Ctrl-C) at any point.
The file is untrusted input all the same (it sits in OUTDIR): it is checked
against its schema and an :class:`~railonly.emulation.runtime.netns.statefile.Owner`
(statefile), read and written without following a symlink, and a process is
only signalled when its network namespace is one of the lab's.

Idempotence: deploying the plan that is already fully deployed (same
fingerprint, every namespace and process alive) is a no-op; any other
existing state is destroyed first and the plan deployed afresh.
"""

from __future__ import annotations

import errno
import json
import os
import pwd
import grp
import stat
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from railonly import proc

from . import pids, rtnetlink, setns, statefile
from .ns_plan import Plan, Process, Step, config_ops, render, shaping_ops
from .statefile import STATE_VERSION, Owner

MAX_STATE_BYTES = 64 * 1024 * 1024
Hook = Callable[[str, list[Step]], None]


class DeployError(RuntimeError):
    """A deploy could not finish; the state file still lists what may exist. ``causes``:
    every failure of the jobs run side by side (the message names the first)."""

    def __init__(self, message: str, causes: tuple = ()):
        super().__init__(message)
        self.causes = tuple(causes)


class ThenFailed(DeployError):
    """A process's ``then`` command (FRR's ``vtysh -b``) exited non-zero: ``output`` says why."""

    def __init__(self, message: str, process: str, output: str):
        super().__init__(message)
        self.process, self.output = process, output


class StateRefused(DeployError):
    """The state file is not one the engine may act on (corrupt, another lab's, or
    listing what is not the lab's): invalid input, nothing was changed."""


@dataclass
class DeployReport:
    lab: str
    noop: bool
    seconds: float
    phases: dict[str, float] = field(default_factory=dict)
    namespaces: int = 0
    processes: int = 0
    replaced: bool = False  # a running lab of another plan was removed first (the OUTDIR changed)


@dataclass
class DestroyReport:
    lab: str | None
    killed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)  # what could not be removed, and why
    refused: list[str] = field(default_factory=list)  # state file entries not provably the lab's: not touched
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.leftovers


@dataclass
class Status:
    lab: str | None
    phase: str | None  # "deploying" | "deployed" | None (no state file)
    namespaces: dict[str, bool] = field(default_factory=dict)
    processes: dict[str, int | None] = field(default_factory=dict)  # name -> live pid
    problems: list[str] = field(default_factory=list)  # what the state file check refused

    @property
    def complete(self) -> bool:
        return (
            self.phase == "deployed"
            and all(self.namespaces.values())
            and all(p is not None for p in self.processes.values())
        )

    @property
    def anything(self) -> bool:
        return any(self.namespaces.values()) or any(p is not None for p in self.processes.values())


# --- state file ---------------------------------------------------------------


def _read_bounded(path: str) -> bytes | None:
    """The file's bytes, None when missing; OSError for a symlink (ELOOP) or a non-file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path} is not a regular file")
        data = f.read(MAX_STATE_BYTES + 1)
    if len(data) > MAX_STATE_BYTES:
        raise OSError(f"{path} is larger than {MAX_STATE_BYTES} bytes")
    return data


def check_state(path: str, owner: Owner | None = None) -> statefile.Checked:
    """The state file checked (statefile.check): what is provably the lab's, and what is refused."""
    try:
        data = _read_bounded(path)
    except OSError as exc:
        msg = "is a symlink" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        return statefile.Checked(None, corrupt=f"{path}: {msg}: not read")
    if data is None:
        return statefile.Checked(None)
    if not data.strip():
        return statefile.Checked(None, corrupt=f"{path}: empty")
    try:
        parsed = statefile.parse(data)
    except ValueError as exc:
        return statefile.Checked(None, corrupt=f"{path}: {exc}")
    return statefile.check(parsed, path, owner)


def load_state(path: str, owner: Owner | None = None) -> dict | None:
    """The checked state (only what is provably the lab's), None when missing or corrupt."""
    return check_state(path, owner).state


def _save(path: str, state: dict) -> None:
    # temp + fsync + rename: an interrupted write never leaves a torn file;
    # O_EXCL|O_NOFOLLOW and rename never write through a symlink someone left there
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "w") as f:
            json.dump(state, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:  # a full disk: named by the state file's path (exit 3), the temp file gone
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise OSError(exc.errno, exc.strerror, path) from None


# --- running steps --------------------------------------------------------------


def _workers(n: int | None) -> int:
    # ~2 workers per core: each job mostly waits on fork/exec and the rtnl lock
    return n or max(2, min(8, 2 * (os.cpu_count() or 1)))


def _batch_timeout(script: str) -> float:
    return 30.0 + 0.05 * script.count("\n")


def _run_root_batch(step: Step) -> None:
    res = proc.run(list(step.argv), input=step.stdin, timeout=_batch_timeout(step.stdin or ""))
    if not res.ok:
        raise DeployError(f"{step.phase}: {' '.join(step.argv)} failed: {res.stderr.strip()}")


def _run_ns_step(step: Step, strategy: str) -> None:
    if step.kind == "sysctl":
        setns.call_in(step.netns, lambda: setns.write_sysctls(step.items))
        return
    tool = step.argv[0]
    timeout = _batch_timeout(step.stdin or "")
    if strategy == "setns":
        res = setns.call_in(
            step.netns, lambda: proc.run([tool, "-batch", "-"], input=step.stdin, timeout=timeout)
        )
    else:  # "ip-n": exactly the rendered command
        res = proc.run(list(step.argv), input=step.stdin, timeout=timeout)
    if not res.ok:
        raise DeployError(f"{step.phase} in {step.netns}: {tool} failed: {res.stderr.strip()}")


def _run_in_namespaces(jobs: list[tuple[str, Callable[[], None]]], workers: int, phase: str) -> None:
    """(namespace, fn) jobs on the setns worker pool; raise the first failure after all ran."""
    res = setns.call_many(jobs, workers)
    errors = [(ns, e) for (ns, _), e in zip(jobs, res) if isinstance(e, BaseException)]
    if errors:
        ns, first = errors[0]
        if isinstance(first, KeyboardInterrupt):
            raise first
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise DeployError(f"{phase} in {ns}: {first}{more}") from first


def _netlink_phase(phase: str, batch: list[Step], ops: dict[str, list[tuple]], workers: int) -> None:
    """A per-namespace phase without a process: sysctls written to /proc/sys and
    config/shaping sent as rtnetlink messages, from threads inside each namespace."""
    jobs: list[tuple[str, Callable[[], None]]] = []
    for s in batch:
        if s.kind == "sysctl":
            jobs.append((s.netns, lambda items=s.items: setns.write_sysctls(items)))
        else:
            jobs.append((s.netns, lambda o=ops[s.netns]: rtnetlink.apply(o)))
    _run_in_namespaces(jobs, workers, phase)


def _parallel(jobs: list[Callable[[], None]], workers: int) -> None:
    """Run all jobs; raise the first failure after the others finished."""
    if len(jobs) == 1:
        jobs[0]()
        return
    ex = ThreadPoolExecutor(max_workers=workers)
    try:
        futures = [ex.submit(j) for j in jobs]
        errors = [f.exception() for f in futures]
    except BaseException:
        ex.shutdown(wait=True, cancel_futures=True)  # Ctrl-C: let running jobs end, drop the rest
        raise
    ex.shutdown(wait=True)
    errors = [e for e in errors if e is not None]
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise DeployError(f"{errors[0]}{more}", causes=tuple(errors)) from errors[0]


def _owner_ids(owner: str | None) -> tuple[int, int] | None:
    if not owner:
        return None
    user, _, group = owner.partition(":")
    return pwd.getpwnam(user).pw_uid, grp.getgrnam(group or user).gr_gid


def _start_process(p: Process, entry: dict) -> None:
    ids = _owner_ids(p.owner)
    for d in p.dirs:
        os.makedirs(d, exist_ok=True)
        if ids:
            os.chown(d, *ids)
    for path, text in p.files:
        # the directory belongs to the daemon's user: a symlink it left there is
        # replaced, never written through (root would write the config anywhere)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o640)
        with os.fdopen(fd, "w") as f:
            if ids:
                os.fchown(f.fileno(), *ids)
            f.write(text)
    try:
        os.unlink(p.pidfile)  # a stale file would be mistaken for the new daemon
    except FileNotFoundError:
        pass
    ns_ino = setns.inode(p.netns)
    if p.daemonizes:
        res = proc.run(list(p.argv), netns=p.netns, timeout=p.ready_timeout)
        if not res.ok:
            raise DeployError(f"process {p.name} failed to start ({res.returncode}): {res.stderr.strip()}")
        deadline = time.monotonic() + p.ready_timeout
        while True:  # the daemon writes its pid file soon after the parent exits
            pid = pids.read_pidfile(p.pidfile)
            pi = pids.matches(pid, p.argv, netns_inode=ns_ino) if pid else None
            if pi is not None:
                break
            if time.monotonic() > deadline:
                raise DeployError(f"process {p.name}: no live pid in {p.pidfile} after {p.ready_timeout:g}s")
            time.sleep(0.02)
    else:
        pid = proc.spawn(list(p.argv), netns=p.netns, log=p.log)
        tmp = p.pidfile + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{pid}\n")
        os.replace(tmp, p.pidfile)
        pi = pids.info(pid)
        if pi is None:
            raise DeployError(f"process {p.name} exited at once (see {p.log or 'its output'})")
    entry["pid"], entry["starttime"] = pi.pid, pi.starttime
    if p.then:  # after the pid is recorded: a failure here still leaves the process to destroy
        res = proc.run(list(p.then), netns=p.netns, timeout=p.ready_timeout)
        if not res.ok:
            output = res.stderr.strip() or res.stdout.strip()
            said = output.splitlines()
            raise ThenFailed(f"process {p.name}: {' '.join(p.then)} failed ({res.returncode})"
                             + (f": {' / '.join(said[:5])}" if said else ""), p.name, output)


def _missing_chain(d: str) -> list[str]:
    """d and the ancestors makedirs will create, top first ([] if d exists)."""
    d = os.path.abspath(d)
    chain = []
    while not os.path.exists(d):
        chain.insert(0, d)
        d = os.path.dirname(d)
    return chain


def _process_phase(procs: list[Process], state: dict, path: str, workers: int) -> None:
    entries = {e["name"]: e for e in state["processes"]}
    new_dirs = []
    for p in procs:
        entries[p.name] = {
            "name": p.name, "netns": p.netns, "argv": list(p.argv),
            "pidfile": p.pidfile, "pid": None, "starttime": None, "dirs": list(p.dirs),
        }
        for d in p.dirs:
            for made in _missing_chain(d):
                if made not in new_dirs and made not in state.get("dirs", []):
                    new_dirs.append(made)
    state["processes"] = list(entries.values())
    state["dirs"] = state.get("dirs", []) + new_dirs
    _save(path, state)  # intent: destroy finds them by pid file if we stop now
    by_ns: dict[str, list[Process]] = {}
    for p in procs:
        by_ns.setdefault(p.netns, []).append(p)

    def group(procs: list[Process]) -> Callable[[], None]:
        def job() -> None:
            for p in procs:  # in plan order within a namespace (zebra before bgpd)
                _start_process(p, entries[p.name])
        return job

    try:
        _parallel([group(g) for g in by_ns.values()], workers)
    finally:
        _save(path, state)


def _root_sysctl_phase(step: Step, state: dict, path: str) -> None:
    for key, want in step.items:
        cur = setns.read_sysctl(key)
        if int(cur) >= int(want):
            continue  # shared by all labs: never lower
        state["root_sysctls"].append({"key": key, "original": cur, "set": want})
        _save(path, state)
        setns.write_sysctls([(key, want)])


# --- public API ----------------------------------------------------------------------


def deploy(
    plan: Plan,
    state_path: str,
    *,
    hook: Hook | None = None,
    workers: int | None = None,
    strategy: str = "netlink",
    wait_links: float = 5.0,
    owner: Owner | None = None,
) -> DeployReport:
    """Create everything the plan describes. Raises DeployError (or whatever
    interrupted it); the caller then runs :func:`destroy` on the same state file.

    ``strategy``: "netlink" (default, measured fastest: rtnetlink messages
    from setns threads, no process per namespace), "setns" (``ip``/``tc
    -batch`` processes started from those threads) or "ip-n" (the rendered
    ``ip -n NS -batch`` commands verbatim). ``wait_links``: seconds to wait
    for veths to carry traffic (0: do not wait). ``owner``: what the lab may
    touch (default: the plan's lab, any path); a state file that lists anything
    else raises :class:`StateRefused` before anything changes."""
    t0 = time.perf_counter()
    if strategy not in ("netlink", "setns", "ip-n"):
        raise ValueError(f"unknown strategy {strategy!r}")
    steps = render(plan)
    owner = owner or Owner(plan.lab)
    outside = [f"{p.name}: {path}" for p in plan.processes for path in (p.pidfile, *p.dirs) if not owner.path_ok(path)]
    if outside:  # destroy would refuse them later: never create what cannot be removed
        raise StateRefused(f"{len(outside)} process paths lie outside the lab's directories, e.g. {outside[0]}")
    checked = check_state(state_path, owner)
    if checked.problems:
        raise StateRefused("the state file of the previous deploy is not usable:\n  " + "\n  ".join(checked.problems[:10]))
    old = checked.state
    if old is not None:
        if old["fingerprint"] == plan.fingerprint() and status(state_path, owner).complete:
            return DeployReport(plan.lab, True, time.perf_counter() - t0)
        # replaced as `lab destroy` removes it: a process a user started in one of its namespaces
        # (lab exec ... iperf3 -s -D) goes too; kept, it held the namespace once its name was gone
        rep = destroy(state_path, owner=owner, kill_all_inside=True)
        if not rep.ok:
            raise DeployError("could not clear the previous deploy: " + "; ".join(rep.leftovers))
    clash = [n.name for n in plan.namespaces if setns.exists(n.name)]
    if clash:
        raise DeployError(
            f"{len(clash)} namespaces exist but are not in {state_path} (not ours, not touched): "
            + ", ".join(clash[:5])
        )
    state = {
        "version": STATE_VERSION, "lab": plan.lab, "prefix": plan.prefix,
        "fingerprint": plan.fingerprint(), "phase": "deploying",
        "namespaces": [n.name for n in plan.namespaces],
        "processes": [], "root_sysctls": [], "dirs": [],
    }
    _save(state_path, state)  # intent before the first namespace exists
    workers = _workers(workers)
    report = DeployReport(plan.lab, False, 0.0, namespaces=len(plan.namespaces), processes=len(plan.processes),
                          replaced=old is not None)
    for phase in dict.fromkeys(s.phase for s in steps):
        batch = [s for s in steps if s.phase == phase]
        if hook is not None:
            hook(phase, batch)
        t = time.perf_counter()
        if phase == "root-sysctl":
            _root_sysctl_phase(batch[0], state, state_path)
        elif phase == "processes":
            _process_phase([s.process for s in batch], state, state_path, workers)
        else:
            root = [s for s in batch if s.netns is None]
            for s in root:
                _run_root_batch(s)
            in_ns = [s for s in batch if s.netns is not None]
            if in_ns and strategy == "netlink":
                ops = config_ops(plan) if phase == "config" else shaping_ops(plan) if phase == "shaping" else {}
                _netlink_phase(phase, in_ns, ops, workers)
            elif in_ns:
                _parallel([lambda s=s: _run_ns_step(s, strategy) for s in in_ns], workers)
        report.phases[phase] = time.perf_counter() - t
    if wait_links and plan.veths:
        if hook is not None:
            hook("settle", [])
        t = time.perf_counter()
        _wait_links(plan, wait_links)
        report.phases["settle"] = time.perf_counter() - t
    state["phase"] = "deployed"
    _save(state_path, state)
    report.seconds = time.perf_counter() - t0
    return report


def _wait_links(plan: Plan, timeout: float) -> None:
    """Wait until every up veth end (and bridge with ports) is operationally up.

    The kernel handles carrier changes in linkwatch, batched up to ~1 s after
    the link comes up; until then a bridge port does not forward (measured: the
    first ARP after deploy is lost, the first ping takes 1 s)."""
    down = {(x.netns, x.dev) for x in plan.links if not x.up}
    devices: dict[str, set[str]] = {}  # every veth end and bridge, to sync once
    for v in plan.veths:
        devices.setdefault(v.a_ns, set()).add(v.a_dev)
        devices.setdefault(v.b_ns, set()).add(v.b_dev)
    for b in plan.bridges:
        devices.setdefault(b.netns, set()).add(b.name)
    want: dict[str, set[str]] = {}
    for v in plan.veths:
        if (v.a_ns, v.a_dev) in down or (v.b_ns, v.b_dev) in down:
            continue
        want.setdefault(v.a_ns, set()).add(v.a_dev)
        want.setdefault(v.b_ns, set()).add(v.b_dev)
    for b in plan.bridges:
        if b.ports and (b.netns, b.name) not in down:
            want.setdefault(b.netns, set()).add(b.name)
    deadline = time.monotonic() + timeout

    def ready(ns: str) -> Callable[[], set[str]]:
        def job() -> set[str]:
            # operstate is set by linkwatch (IFF_LOWER_UP is not): it is the signal.
            # Devices still waiting get their queued carrier event handled now; on
            # the first round every device does, so one whose peer is down also
            # shows its final state (NO-CARRIER) when deploy returns.
            setns.sync_links(sorted(devices.pop(ns, None) or want[ns]))
            return {
                name for name, (flags, oper) in setns.link_states().items()
                if flags & 0x10000 and oper == 6  # IFF_LOWER_UP, IF_OPER_UP
            }
        return job

    # rounds over the namespaces still pending; a netlink dump costs ~0.1 ms, no spawn
    while want:
        pending = list(want)
        for ns, got in zip(pending, setns.call_many([(ns, ready(ns)) for ns in pending], 2)):
            if isinstance(got, BaseException):
                raise got
            want[ns] -= got
            if not want[ns]:
                del want[ns]
        if not want:
            return
        if time.monotonic() > deadline:
            ns, devs = next(iter(want.items()))
            raise DeployError(
                f"links not ready after {timeout:g}s in {len(want)} namespaces, e.g. {ns}: {sorted(devs)}"
            )
        time.sleep(0.05)


def _find_process(e: dict, ns_ino: int | None) -> pids.ProcInfo | None:
    """The live process of a record, only if it runs in the recorded lab namespace
    (a record naming any other pid, pid 1 say, finds nothing)."""
    if ns_ino is None:
        return None
    if e.get("pid"):
        pi = pids.matches(e["pid"], e["argv"], starttime=e.get("starttime"), netns_inode=ns_ino)
        if pi is not None:
            return pi
    pid = pids.read_pidfile(e["pidfile"])  # deploy stopped before it recorded the pid
    if pid:
        return pids.matches(pid, e["argv"], netns_inode=ns_ino)
    return None


def start_processes(state_path: str, procs: list[Process], workers: int = 1, owner: Owner | None = None) -> None:
    """Start ``procs`` in a deployed lab (a re-programmed switch's new FRR, say), each
    recorded in its state file before it starts, so :func:`destroy` still finds it.
    Within a namespace they start in the given order. Raises DeployError
    (StateRefused for a state file that is not provably the lab's)."""
    checked = check_state(state_path, owner)
    if checked.problems:
        raise StateRefused("the state file is not usable:\n  " + "\n  ".join(checked.problems[:10]))
    state = checked.state
    if state is None:
        raise DeployError(f"no state file {state_path}: the lab is not deployed")
    outside = [f"{p.name}: {path}" for p in procs for path in (p.pidfile, *p.dirs)
               if not (owner or Owner(state["lab"])).path_ok(path)]
    if outside:
        raise StateRefused(f"process paths outside the lab's directories, e.g. {outside[0]}")
    _process_phase(procs, state, state_path, workers)


def status(state_path: str, owner: Owner | None = None) -> Status:
    checked = check_state(state_path, owner)
    state = checked.state
    if state is None:
        return Status(None, None, problems=checked.problems)
    st = Status(state["lab"], state["phase"], problems=checked.problems)
    for n in state["namespaces"]:
        st.namespaces[n] = setns.exists(n)
    for e in state["processes"]:
        pi = _find_process(e, setns.inode(e["netns"]))
        st.processes[e["name"]] = pi.pid if pi else None
    return st


def destroy(
    state_path: str | None,
    *,
    term_timeout: float = 5.0,
    owner: Owner | None = None,
    extra_namespaces: tuple[str, ...] = (),
    kill_all_inside: bool = False,
) -> DestroyReport:
    """Remove what the state file lists that is provably the lab's (statefile), plus
    ``extra_namespaces`` (the runtime's fallback: the lab's namespaces found by
    name, for a missing or corrupt file); report what could not be removed and
    what was refused. ``kill_all_inside``: every process inside the lab's
    namespaces is the lab's (the runtime's view); otherwise one that matches no
    record is reported, not killed. ``state_path`` None: the file is not to be
    read or written (it sits behind a symlink). The state file is deleted only
    when nothing is left."""
    t0 = time.perf_counter()
    checked = check_state(state_path, owner) if state_path else statefile.Checked(None)
    state = checked.state
    if state is None:
        if owner is None or not extra_namespaces:
            rep = DestroyReport(None, refused=checked.problems)
            if owner is not None and state_path and checked.corrupt and not checked.corrupt.endswith("not read"):
                _unlink_quiet(state_path)  # nothing of the lab exists: the corrupt file goes too
            return rep
        state = {"version": STATE_VERSION, "lab": owner.lab, "prefix": owner.prefix, "fingerprint": "",
                 "phase": "destroy-incomplete", "namespaces": [], "processes": [], "root_sysctls": [], "dirs": []}
    rep = DestroyReport(state["lab"], refused=checked.problems)
    for n in extra_namespaces:
        if (owner or Owner(state["lab"])).namespace_ok(n) and n not in state["namespaces"]:
            state["namespaces"].append(n)
    inodes = {n: setns.inode(n) for n in state["namespaces"]}

    # 1. processes first: a live process keeps its namespace alive after `netns del`
    targets: dict[int, tuple[str, pids.ProcInfo]] = {}
    for e in reversed(state["processes"]):
        pi = _find_process(e, inodes.get(e["netns"]))
        if pi is not None:
            targets[pi.pid] = (e["name"], pi)
    recorded_argv = {tuple(e["argv"]) for e in state["processes"]}
    live_inodes = {i for i in inodes.values() if i is not None}
    strays = []
    for pi in pids.in_netns(live_inodes) if live_inodes else []:
        if pi.pid in targets:
            continue
        if kill_all_inside or any(pids.same_program(pi.cmdline, a) for a in recorded_argv):
            targets[pi.pid] = (f"pid {pi.pid} ({' '.join(pi.cmdline)[:40]})", pi)  # inside a lab namespace
        else:
            strays.append(pi)
    left = pids.terminate([pi for _, pi in targets.values()], term_timeout)
    left_pids = {p.pid for p in left}
    for pid, (name, pi) in targets.items():
        if pid in left_pids:
            rep.leftovers.append(f"process {name} (pid {pid}) survived SIGKILL")
        else:
            rep.killed.append(name)
    for e in state["processes"]:  # stale pid files would mislead the next deploy's readers
        pid = pids.read_pidfile(e["pidfile"])
        if pid is not None and pids.info(pid) is None:
            try:
                os.unlink(e["pidfile"])
            except OSError:
                pass
    for pi in strays:
        rep.leftovers.append(
            f"process pid {pi.pid} ({' '.join(pi.cmdline)[:80]}) is not ours but runs in a lab namespace:"
            " not killed; it keeps that namespace alive"
        )

    # 2. namespaces: deleting one removes its veths, bridges, addresses, qdiscs. One a process
    # left alive still runs in keeps its name, so the record and a later destroy still find it.
    held = {pi.netns_inode for pi in strays} | {pi.netns_inode for pi in left}
    existing = [n for n in state["namespaces"] if setns.exists(n) and inodes.get(n) not in held]
    rep.leftovers += [f"namespace {n} kept: a process left running is in it" for n in state["namespaces"]
                      if inodes.get(n) is not None and inodes.get(n) in held]
    if existing:
        script = "".join(f"netns del {n}\n" for n in existing)
        proc.run(["ip", "-force", "-batch", "-"], input=script, timeout=_batch_timeout(script))
    for n in existing:
        if setns.exists(n):
            rep.leftovers.append(f"namespace {n} could not be deleted")
        else:
            rep.deleted.append(n)

    # 3. root sysctls: restore only what still holds the value we set
    kept = []
    for r in state.get("root_sysctls", []):
        cur = setns.read_sysctl(r["key"])
        if cur == r["set"]:
            try:
                setns.write_sysctls([(r["key"], r["original"])])
                rep.restored.append(f"{r['key']}={r['original']}")
            except OSError as exc:
                rep.leftovers.append(f"sysctl {r['key']}: {exc}")
                kept.append(r)
        else:
            rep.restored.append(f"{r['key']} left at {cur} (changed by someone else since)")

    # 4. directories the deploy created, deepest first: a process's own dirs
    # with their content, created ancestors only when empty (another lab may
    # have put its run directory there since)
    own = {os.path.abspath(d) for e in state["processes"] for d in e.get("dirs", [])}
    for d in sorted(state.get("dirs", []), key=lambda x: -x.count("/")):
        if d in own:
            shutil.rmtree(d, ignore_errors=True)
            if os.path.exists(d):
                rep.leftovers.append(f"directory {d} could not be removed")
        else:
            try:
                os.rmdir(d)
            except OSError:
                pass

    if state_path is None:
        pass
    elif rep.ok:
        _unlink_quiet(state_path)
    else:
        state["phase"] = "destroy-incomplete"
        state["root_sysctls"] = kept
        _save(state_path, state)
    rep.seconds = time.perf_counter() - t0
    return rep


def _unlink_quiet(path: str) -> None:
    try:
        os.unlink(path)  # a symlink is removed, never followed
    except FileNotFoundError:
        pass

