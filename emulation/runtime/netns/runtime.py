"""NetnsRuntime: the embedded default runtime (network namespaces, veths, bridges, FRR).

Deploys an OUTDIR's ``<name>.clab.yml`` as namespaces ``clab-<name>-<node>``:
lab_plan turns the lab into a pure Plan (switches programmed from their own
config files), the engine applies it with intent-first state in the lab's
root-owned state directory (``/run/railonly/<lab>/state/netns-state.json``,
runtime/rundir.py; never the OUTDIR) and destroys what that file lists, as far
as it is provably the lab's (statefile.Owner: the namespaces of its recorded
nodes, processes in those namespaces, paths under /run/railonly/<lab>).
Destroy needs only the lab's identity (name and recorded nodes), not its
OUTDIR, and finds the lab's namespaces by exact name, so a lab whose state
file is missing or corrupt is still removed completely.

A deployed switch is re-programmed by :mod:`.reprogram`.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import time
from dataclasses import dataclass, field
from typing import Sequence

from railonly import proc
from railonly.fabric.outdir_layout import STARTUP_CONFIG

from ...lab import Lab, LabError, LabNode, run_dir, run_root, target
from .. import rundir
from ..protocol import LabStatus, Runtime, RuntimeProblem
from . import engine, frr, lab_plan, pids, setns, statefile
from . import sshd as lab_sshd
from .ns_plan import dump


STATE_FILE = "netns-state.json"  # in the lab's state directory


def state_path(lab: "Lab | rundir.Identity") -> str:
    return os.path.join(rundir.state_dir(lab.name), STATE_FILE)


def _identity(lab: "Lab | rundir.Identity") -> rundir.Identity:
    return lab if isinstance(lab, rundir.Identity) else rundir.identity_of(lab)


def owner(lab: "Lab | rundir.Identity", also: "rundir.Identity | None" = None) -> statefile.Owner:
    """What this lab may touch: the namespaces of its own nodes (less any another lab's
    recorded nodes also name), its run directory. ``also``: the identity of the previous
    deploy of the same lab (a recompiled OUTDIR may have dropped nodes it still runs)."""
    others = rundir.claims_of_others(lab.name)
    mine = _identity(lab).namespaces | (also.namespaces if also is not None and also.name == lab.name else frozenset())
    return statefile.Owner.for_lab(lab.name, {n for n in mine if n not in others})


def check_lab_files(lab: Lab) -> None:
    """InputError (exit 2) naming each file and line of the OUTDIR that `validate`
    would refuse, before a deploy uses any of it: the tree (no symlink, no
    special file, OUTDIR/.lab included), the topology, fabric.json and every
    switch's config files."""
    from railonly.fabric.input.problems import InputError
    from railonly.fabric.outdir.reader import check_outdir, switch_file_problems

    problems = check_outdir(str(lab.outdir), run_dir=run_dir(lab.name))
    for sw in lab.switches:
        problems += [p for p in switch_file_problems(lab_plan.switch_config_dir(lab, sw.name), lab_plan.platform_of(sw),
                                                     run_dir(lab.name)) if p not in problems]
    if problems:
        raise InputError(problems)


def frr_refusals(lab: Lab, lp: lab_plan.LabPlan, exc: Exception) -> list:
    """A Problem (exit 2) for each config line FRR's ``vtysh -b`` refused in the failed deploy ``exc``,
    named in the switch's OUTDIR file where the line is found there; [] when the deploy failed for
    another reason (a runtime failure, exit 3). FRR's own parser only: validate runs it too."""
    from railonly.fabric.input.problems import Problem

    out = []
    for cause in getattr(exc, "causes", ()) or (exc,):
        sw = cause.process.split("/")[0] if isinstance(cause, engine.ThenFailed) else None
        if sw not in lp.frr:
            continue
        for n, words, text in frr.refused_lines(cause.output):
            file, line = _config_line(lab, sw, text)
            if file.endswith(STARTUP_CONFIG):  # EOS: FRR read the config the lab translates it into
                where, fix = f" (line {n} of the FRR config translated from it)", "fix its router bgp section"
            else:
                where = "" if line else f" (line {n} of the frr.conf FRR loaded)"
                fix = f"fix or remove the line (railonly validate {lab.outdir} runs FRR's parser on every frr.conf)"
            out.append(Problem("", f"switch {sw}: FRR refused the line {text!r} ({words}){where}",
                               f"{fix}, or recompile the design; the deploy stopped and removed what it created"
                               f" (nothing of lab {lab.name} is left)", line, file))
    return out


def _config_line(lab: Lab, sw: str, text: str) -> tuple[str, int | None]:
    """(the switch's OUTDIR config file, the line number of ``text`` in it or None) where FRR's
    config came from: frr.conf, SONiC's split files, or EOS's startup-config (translated)."""
    from railonly.fabric.outdir.reader import OutdirReader
    from railonly.fabric.outdir_layout import FRR_CONF, SONIC_SPLIT_FRR

    node = lab.node(sw)
    rel = str(lab.configs_dir.relative_to(lab.outdir) / sw)
    names = (STARTUP_CONFIG,) if lab_plan.platform_of(node) == "eos" else (FRR_CONF, *SONIC_SPLIT_FRR)
    reader = OutdirReader(str(lab.outdir))
    for name in names:
        body = reader.read_text(f"{rel}/{name}")
        if body is None:
            continue
        found = [i for i, ln in enumerate(body.splitlines(), 1) if ln.strip() == text]
        return str(lab.outdir / rel / name), found[0] if len(found) == 1 else None
    return str(lab.outdir / rel), None


def lab_namespaces(lab: "Lab | rundir.Identity") -> list[str]:
    """The lab's namespaces that exist, found by exact name (no state file needed): one
    ``clab-<lab>-<node>`` per node of the lab, never a prefix match (lab ``a``'s prefix
    ``clab-a-`` also starts lab ``a-b``'s namespaces), and none that another lab's
    recorded nodes also name (:func:`owner`)."""
    mine = owner(lab).namespaces or frozenset()
    return [n for n in setns.list_netns() if n in mine]


@dataclass
class DeployResult(engine.DeployReport):
    """The engine's report plus what the lab adds: BGP convergence, warnings."""

    bgp: dict[str, dict[str, str]] = field(default_factory=dict)  # switch -> {peer: state}
    bgp_converged: bool | None = None  # None: no BGP in the lab
    bgp_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)


def check_environment(lp: lab_plan.LabPlan | None = None, shaping: bool = True) -> None:
    """RuntimeProblem (exit 3) naming what is missing: root, ip, tc, FRR."""
    if os.geteuid() != 0:
        raise RuntimeProblem("the netns runtime needs root (network namespaces): run with sudo, "
                             "or print the plan without root: railonly lab deploy OUTDIR --dry-run")
    missing = [t for t in ("ip",) + (("tc",) if shaping else ()) if proc.which(t) is None]
    if missing:
        raise RuntimeProblem(f"{', '.join(missing)} not installed (Debian package iproute2)")
    if lp is not None and lp.frr:
        bins = [f"{frr.FRR_LIBDIR}/{d}" for d in frr.DAEMONS]
        gone = [b for b in bins if not os.access(b, os.X_OK)]
        if gone or proc.which("vtysh") is None:
            raise RuntimeProblem(f"FRR is needed for {len(lp.frr)} switches but {', '.join(gone) or 'vtysh'} "
                                 "is missing (Debian package frr, 8.4)")
        try:
            pwd.getpwnam("frr")
        except KeyError:
            raise RuntimeProblem("user 'frr' does not exist (install the Debian package frr)") from None


class NetnsRuntime(Runtime):
    name = "netns"

    def __init__(self, shaping: bool = True, wait_bgp: float = 90.0, workers: int | None = None,
                 ssh: bool = True, strategy: str = "netlink"):
        self.shaping = shaping
        self.strategy = strategy  # engine.deploy's: "netlink", or "setns" (ip/tc processes) as a fallback
        # One sshd per SONiC switch (~9 MiB RSS each, next to FRR's ~24 MB) so that
        # `railonly push OUTDIR` works on the lab; see lab_sshd.
        self.ssh = ssh
        self.wait_bgp = wait_bgp  # seconds to wait for every BGP session (0: do not wait)
        self.workers = workers

    # -- planning (pure, no root) -------------------------------------------------------
    def plan(self, lab: Lab) -> lab_plan.LabPlan:
        check_lab_files(lab)  # the same checks as `validate`, before anything of the OUTDIR is used
        lp = lab_plan.build(lab, shaping=self.shaping)
        if self.ssh and lab_sshd.sonic_switches(lab):
            from dataclasses import replace

            lp.plan = replace(lp.plan, processes=lp.plan.processes + lab_sshd.processes(lab))
        return lp

    def dry_run(self, lab: Lab) -> str:
        lp = self.plan(lab)
        head = [f"# NIC links {lp.nic_mbps:g} Mbit/s, HB links {lp.hb_mbps:g} Mbit/s (lab.nic_mbps; NIC:HB kept)",
                f"# state file: {state_path(lab)}"]
        head += [f"# warning: {w}" for w in lp.warnings]
        return "\n".join(head) + "\n" + dump(lp.plan)

    # -- the protocol ---------------------------------------------------------------------
    def deploy(self, lab: Lab, hook: engine.Hook | None = None) -> DeployResult:
        lp = self.plan(lab)
        check_environment(lp, self.shaping)
        ident = rundir.read_identity(lab.name)
        if ident is not None and ident.outdir != str(lab.outdir):  # the command checked; under the lock again
            raise LabError(str(lab.outdir), f"lab {lab.name} is deployed from {ident.outdir}: not touched",
                           f"railonly lab deploy {lab.outdir} --lab-name {lab.name}-2")
        # intent first: who the lab is, before anything of it exists (with the previous deploy's
        # nodes until this deploy has replaced them: a recompile may have dropped some)
        fresh = ident is None and not os.path.lexists(run_dir(lab.name))
        rundir.record_identity(lab, also=ident)
        try:
            return self._deploy(lab, lp, ident, hook)
        except (LabError, RuntimeProblem):
            if fresh and not lab_namespaces(lab) and not os.path.exists(state_path(lab)):
                shutil.rmtree(run_dir(lab.name), ignore_errors=True)  # refused before anything of it existed
            raise

    def _deploy(self, lab: Lab, lp: lab_plan.LabPlan, ident: "rundir.Identity | None",
                hook: engine.Hook | None) -> DeployResult:
        path = state_path(lab)
        mine = owner(lab, also=ident)
        checked = engine.check_state(path, mine)
        if checked.problems:  # before anything is written, the sshd keys too
            raise LabError(path, "the state file of the previous deploy is not usable:\n  "
                           + "\n  ".join(checked.problems[:10]),
                           f"remove what is provably the lab's with: railonly lab destroy {lab.outdir}"
                           " (it refuses the rest, by name)")
        try:
            rundir.record_deployed(lab)  # intent first, as the identity: what the lab runs from now on
            if self.ssh and lab_sshd.sonic_switches(lab):
                lab_sshd.prepare(lab)  # keys and sshd configs before the processes start
            rep = engine.deploy(lp.plan, path, hook=hook, workers=self.workers, strategy=self.strategy,
                                  owner=mine)
        except engine.StateRefused as exc:
            raise LabError(path, str(exc), f"remove what is provably the lab's with: railonly lab destroy {lab.outdir}"
                           " (it refuses the rest, by name)") from None
        except engine.DeployError as exc:
            refused = frr_refusals(lab, lp, exc)
            if refused:  # bad input, found only once FRR read it: stop as if refused before the deploy
                self._remove_refused(lab, refused)
                from railonly.fabric.input.problems import InputError

                raise InputError(refused) from None
            raise RuntimeProblem(f"deploy of lab {lab.name} failed: {exc}\n  what was created is listed in {path};"
                                 f" remove it with: railonly lab destroy {lab.outdir}") from None
        if ident is not None and set(ident.nodes) != set(lab.nodes):
            rundir.record_identity(lab)  # the previous deploy is gone: exactly this lab's nodes
        res = DeployResult(lab.name, rep.noop, rep.seconds, dict(rep.phases), rep.namespaces,
                           rep.processes, rep.replaced, warnings=list(lp.warnings))
        if self.ssh and lab_sshd.sonic_switches(lab):
            if not rep.noop:
                lab_sshd.seed(lab)
            late = lab_sshd.wait_ready(lab)
            if late:
                res.warnings.append(f"switch sshd not answering on {len(late)} switches, e.g. {late[0]}"
                                    f" (see {lab_sshd.switch_dir(lab, late[0])}/sshd.log)")
        if lp.frr and self.wait_bgp:
            t = time.perf_counter()
            res.bgp = frr.wait_established(list(lp.frr.values()), expected=lp.bgp_peers, timeout=self.wait_bgp)
            res.bgp_converged = frr.converged(res.bgp, lp.bgp_peers)
            res.bgp_seconds = time.perf_counter() - t
        return res

    def _remove_refused(self, lab: Lab, refused: list) -> None:
        """Remove what the refused deploy created, by its record, as lab destroy does; RuntimeProblem
        (exit 3) naming the refusal and what stayed when that fails."""
        try:
            self.destroy(lab)
        except RuntimeProblem as exc:
            raise RuntimeProblem(f"FRR refused {refused[0].file}: {refused[0].message}; removing what the deploy"
                                 f" created then failed: {exc}") from None

    def exec(self, node: "str | LabNode", argv: Sequence[str], timeout: float = 30.0) -> tuple[int, str]:
        ns = target(node)
        if not setns.exists(ns):
            return 127, f"no namespace {ns} (is the lab deployed?)"
        if argv and proc.which(argv[0]) is None:  # ip netns exec says 1 for it, as the program's own failure
            return 127, f"{argv[0]}: no such program here (a namespace sees the host's files)"
        # done when the command exits: a child it left in the background holds its output open
        # (sh -c 'x &'), and runs on in the namespace, where destroy stops it
        res = proc.run(list(argv), netns=ns, timeout=timeout, until_exit=True)
        return res.returncode, res.stdout if res.ok else res.stdout + res.stderr

    def interactive(self, node: "str | LabNode", argv: Sequence[str]) -> int:
        ns = target(node)
        if not setns.exists(ns):
            raise RuntimeProblem(f"no namespace {ns} (is the lab deployed?)")
        return proc.attached(["ip", "netns", "exec", ns, *argv])

    def destroy(self, lab: "Lab | rundir.Identity") -> engine.DestroyReport:
        """Remove everything provably the lab's: what the state file lists (checked),
        the namespaces of its own nodes and every process inside them, its run
        directory. Needs only the lab's identity (rundir.for_destroy), not its OUTDIR.
        ``rep.refused`` names what was not touched; RuntimeProblem names anything that stayed."""
        refused: list[str] = []
        path: str | None = state_path(lab)
        try:
            rundir.check_state_dir(lab)
        except rundir.RunDirUnsafe as exc:
            refused.append(f"{exc}: the state file there was not read")
            path = None
        rdir = run_dir(lab.name)
        found = lab_namespaces(lab)
        if os.geteuid() != 0 and (found or os.path.isdir(rdir)):
            raise RuntimeProblem("destroying a netns lab needs root")
        rep = engine.destroy(path, owner=owner(lab), extra_namespaces=tuple(found), kill_all_inside=True)
        rep.lab = lab.name
        rep.refused[:0] = refused
        if rep.ok:  # rmtree unlinks a symlink inside, never follows it; a symlinked run dir is left (lstat)
            try:
                st = os.lstat(rdir)
            except FileNotFoundError:
                st = None
            if st is not None and stat.S_ISDIR(st.st_mode):
                shutil.rmtree(rdir, ignore_errors=True)  # never follows a symlink inside
                if os.path.lexists(rdir):
                    rep.leftovers.append(f"directory {rdir} could not be removed")
                else:
                    rep.deleted.append(rdir)
            from .. import lock

            lock.remove_unheld(lab.name)  # a command holding the lab lock removes it itself
            try:
                os.rmdir(run_root())  # only when no other lab uses it
            except OSError:
                pass
        if not rep.ok:
            raise RuntimeProblem(f"destroy of lab {lab.name} left {len(rep.leftovers)} things behind "
                                 f"(still listed in {path or 'no state file'}):\n  " + "\n  ".join(rep.leftovers))
        return rep

    # -- capabilities beyond exec (the Runtime protocol) --------------------------------
    def bind_lab(self, lab: Lab, name: str | None = None, deploying: bool = False) -> Lab:
        if os.geteuid() != 0:  # labs are root's: a user's dry run reads none of them
            return lab
        return rundir.bind(lab, name, deploying=deploying)

    def lab_to_destroy(self, outdir: str | None, name: str | None) -> Lab | None:
        return rundir.for_destroy(outdir, name)

    def running_lab(self, outdir: str) -> Lab | None:
        if os.geteuid() != 0:  # labs are root's
            return None
        return rundir.deployed_lab(outdir)

    def door(self):
        return setns  # call_in / call_many / link_states: threads that enter a namespace

    def daemon_argv(self, lab: Lab, node: str, daemon: str = "vtysh") -> list[str]:
        if daemon != "vtysh":
            return [daemon]
        return ["vtysh", "--vty_socket", frr.instance(run_dir(lab.name), node, lab.netns(node)).rundir]

    def daemon_show(self, lab: Lab, node: str, daemon: str, command: str, timeout: float = 15.0) -> tuple[int, str]:
        return frr.vty_show(frr.instance(run_dir(lab.name), node, lab.netns(node)), daemon, command, timeout)

    def settle_links(self, lab: Lab, timeout: float = 3.0) -> list[str]:
        return wait_links_settled([n.netns for n in lab.nodes.values()], timeout)

    def neighbour_table_size(self) -> int | None:
        try:
            return int(setns.read_sysctl("net.ipv4.neigh.default.gc_thresh3"))
        except (OSError, ValueError):
            return None

    def frr_daemons(self, lab: Lab, node: str, running: bool = False) -> list[list[str]]:
        inst = frr.instance(run_dir(lab.name), node, lab.netns(node))
        live = frr.running(inst) if running else None
        procs = frr.daemon_processes(inst)
        chosen = [list(p.argv) for p in procs if live is None or live.get(p.name.split("/")[-1])]
        # the daemons start without their config: vtysh -b after them loads it
        return chosen + [list(p.then) for p in procs if p.then] if chosen else []

    def stop_frr(self, lab: Lab, node: str) -> list[str]:
        return frr.stop(frr.instance(run_dir(lab.name), node, lab.netns(node)))

    def ssh_endpoints(self, lab: Lab) -> dict | None:
        return lab_sshd.load_info(lab)

    def ssh_state_dir(self, lab: Lab) -> str:
        return str(lab_sshd.ssh_dir(lab))

    def pid_of(self, pidfile: str) -> int | None:
        return pids.read_pidfile(pidfile)

    def stop_recorded(self, records: list[dict], grace: float = 3.0) -> int:
        targets = []
        for r in records:
            pid = pids.read_pidfile(r["pidfile"])
            ino = setns.inode(r["netns"])
            pi = pids.matches(pid, r["argv"], netns_inode=ino) if pid and ino else None
            if pi is not None:
                targets.append(pi)
        pids.terminate(targets, grace)
        return len(targets)

    def status(self, lab: Lab) -> LabStatus:
        st = engine.status(state_path(lab), owner(lab))
        nodes: dict[str, str] = {}
        for n in lab.nodes.values():
            nodes[n.name] = "running" if st.namespaces.get(n.netns, setns.exists(n.netns)) else "missing"
        for pname, pid in st.processes.items():
            node = pname.split("/")[0]
            if pid is None and nodes.get(node) == "running":
                nodes[node] = "degraded"  # namespace there, a daemon of it is not
        up = [n for n, s in nodes.items() if s != "missing"]
        if st.phase is None:
            state = "partial" if up else "absent"
            why = "; ".join(st.problems) or f"no state file {state_path(lab)}"
            detail = why + (f"; {len(up)} lab namespaces exist anyway (railonly lab destroy removes them)" if up else "")
        elif st.complete and all(s == "running" for s in nodes.values()):
            state, detail = "running", f"{len(nodes)} nodes, {len(st.processes)} processes"
        else:
            state = "partial" if up or st.anything else "absent"
            bad = [f"{n}: {s}" for n, s in nodes.items() if s != "running"]
            detail = f"state {st.phase}; " + (", ".join(bad[:8]) or "nothing of it runs")
        return LabStatus(lab.name, state, nodes, detail, dict(st.processes))


def wait_links_settled(netns: list[str], timeout: float = 3.0) -> list[str]:
    """Wait until no device has a carrier the kernel has not yet acted on.

    Carrier changes are handled by linkwatch up to ~1 s later; until then a
    bridge port does not forward. Probing sooner misses a cable (or a stray
    link) that came up just before the check. Returns namespaces still pending."""
    def pending() -> bool:
        # IFF_UP with IFF_LOWER_UP (carrier) but operstate not yet UP (6) or UNKNOWN (0)
        return any(f & 0x1 and f & 0x10000 and oper not in (0, 6) for f, oper in setns.link_states().values())

    deadline = time.monotonic() + timeout
    todo = list(netns)
    while todo:
        res = setns.call_many([(n, pending) for n in todo], 4)
        todo = [n for n, r in zip(todo, res) if r is True]  # a missing namespace is judged by the checks
        if not todo or time.monotonic() > deadline:
            return todo
        time.sleep(0.05)
    return todo
