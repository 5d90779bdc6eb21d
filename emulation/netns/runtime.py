"""NetnsRuntime: the embedded default runtime (network namespaces, veths, bridges, FRR).

Deploys an OUTDIR's ``<name>.clab.yml`` as namespaces ``clab-<name>-<node>``:
lab_plan turns the lab into a pure Plan (switches programmed from their own
config files), the engine applies it with intent-first state in
``OUTDIR/.lab/netns-state.json`` and destroys what that file lists, as far as
it is provably the lab's (statefile.Owner: its namespace prefix, processes in
those namespaces, paths under /run/railonly/<lab> and OUTDIR/.lab). Destroy
also finds the lab's namespaces by name, so a lab whose state file is
missing, corrupt or hostile is still removed completely.

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

from ..lab import RUN_ROOT, STATE_DIR, Lab, LabError, LabNode, netns_prefix, run_dir, target
from ..runtime.outdir_writer import UnsafePath
from ..runtime.protocol import LabStatus, RuntimeProblem
from . import engine, frr, lab_plan, setns, statefile
from . import sshd as lab_sshd
from .plan import dump


def state_path(lab: Lab) -> str:
    return str(lab.netns_state_file)


def owner(lab: Lab) -> statefile.Owner:
    """What this lab may touch: its namespaces, its run directory, OUTDIR/.lab."""
    return statefile.Owner.for_lab(lab.name, str(lab.state_dir))


def check_state_dir(lab: Lab) -> None:
    """UnsafePath (exit 2) when OUTDIR/.lab is a symlink or holds one (or a FIFO,
    a device...): a root process would read or write through it."""
    from railonly.fabric.outdir.reader import unsafe_entries

    try:
        st = os.lstat(lab.state_dir)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):  # lstat first: unsafe_entries(under=) would list a link's target
        raise UnsafePath(lab.state_dir, "is a symlink or not a directory: the lab's runtime state is never"
                         " read or written through it")
    bad = unsafe_entries(str(lab.outdir), under=STATE_DIR)
    if bad:
        raise UnsafePath(bad[0].file, bad[0].message + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""))


def switch_file_problems(config_dir: str, platform: str, frr_run_dir: str | None) -> list:
    """The allow-list findings (railonly.fabric.outdir.reader, the checks
    `validate` runs) for every file the switch readers would use in config_dir:
    config_db.json and the FRR file(s) (frr.conf, or the split per-daemon files
    the reader also accepts), or the EOS startup-config. Read without following
    a symlink; malformed is UntrustedFile (exit 2)."""
    from railonly.fabric.outdir import reader as U

    from ..switchcfg.sonic import SPLIT_FILES

    reader = U.OutdirReader(config_dir)
    if platform == "eos":
        text = reader.read_text("startup-config")
        return U.check_eos(text, reader.where("startup-config")) if text is not None else []
    out = []
    db = reader.read_text("config_db.json")
    if db is not None:
        out += U.check_config_db(U.parse_json(db, reader.where("config_db.json")), reader.where("config_db.json"), db)
    for name in ("frr.conf", *SPLIT_FILES):
        text = reader.read_text(name)
        if text is not None:
            out += U.check_frr(text, reader.where(name), frr_run_dir)
    return out


def check_lab_files(lab: Lab) -> None:
    """InputError (exit 2) naming each file and line of the OUTDIR that `validate`
    would refuse, before a deploy uses any of it: the tree (no symlink, no
    special file, OUTDIR/.lab included), the topology, fabric.json and every
    switch's config files."""
    from railonly.fabric.input.problems import InputError
    from railonly.fabric.outdir.reader import check_outdir

    problems = check_outdir(str(lab.outdir), run_dir=run_dir(lab.name))
    for sw in lab.switches:
        problems += [p for p in switch_file_problems(lab_plan.switch_config_dir(lab, sw.name), lab_plan.platform_of(sw),
                                                     run_dir(lab.name)) if p not in problems]
    if problems:
        raise InputError(problems)


def lab_namespaces(lab: Lab) -> list[str]:
    """The lab's namespaces that exist, found by name (no state file needed): every
    ``clab-<lab>-<node>`` of its topology, and every other name with its prefix
    unless it carries the longer prefix of another lab this machine knows of
    (``demo`` must not take ``demo-big``'s: run directories and lock files name them)."""
    prefix = netns_prefix(lab.name)
    try:
        others = {e.split(".")[0] for e in os.listdir(RUN_ROOT)}
    except OSError:
        others = set()
    foreign = tuple(netns_prefix(o) for o in others if o.startswith(lab.name + "-"))
    mine = {n.netns for n in lab.nodes.values()}
    return [n for n in setns.list_netns()
            if n in mine or (n.startswith(prefix) and not (foreign and n.startswith(foreign)))]


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


class NetnsRuntime:
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
        check_state_dir(lab)
        path = state_path(lab)
        checked = engine.check_state(path, owner(lab))
        if checked.problems:  # before anything is written, the sshd keys too
            raise LabError(path, "the state file of the previous deploy is not usable:\n  "
                           + "\n  ".join(checked.problems[:10]),
                           f"remove what is provably the lab's with: railonly lab destroy {lab.outdir}"
                           " (it refuses the rest, by name)")
        try:
            if self.ssh and lab_sshd.sonic_switches(lab):
                lab_sshd.prepare(lab)  # keys and sshd configs before the processes start
            rep = engine.deploy(lp.plan, path, hook=hook, workers=self.workers, strategy=self.strategy,
                                  owner=owner(lab))
        except engine.StateRefused as exc:
            raise LabError(path, str(exc), f"remove what is provably the lab's with: railonly lab destroy {lab.outdir}"
                           " (it refuses the rest, by name)") from None
        except engine.DeployError as exc:
            raise RuntimeProblem(f"deploy of lab {lab.name} failed: {exc}\n  what was created is listed in {path};"
                                 f" remove it with: railonly lab destroy {lab.outdir}") from None
        res = DeployResult(lab.name, rep.noop, rep.seconds, dict(rep.phases), rep.namespaces,
                           rep.processes, warnings=list(lp.warnings))
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

    def exec(self, node: "str | LabNode", argv: Sequence[str], timeout: float = 30.0) -> tuple[int, str]:
        ns = target(node)
        if not setns.exists(ns):
            return 127, f"no namespace {ns} (is the lab deployed?)"
        res = proc.run(list(argv), netns=ns, timeout=timeout)
        return res.returncode, res.stdout if res.ok else res.stdout + res.stderr

    def destroy(self, lab: Lab) -> engine.DestroyReport:
        """Remove everything provably the lab's: what the state file lists (checked),
        the lab's namespaces found by name and every process inside them, its run
        directory. ``rep.refused`` names what was not touched; RuntimeProblem names
        anything that stayed."""
        refused: list[str] = []
        path: str | None = state_path(lab)
        try:
            check_state_dir(lab)
        except UnsafePath as exc:
            refused.append(f"{exc}: the state file there was not read")
            path = None
        rundir = run_dir(lab.name)
        found = lab_namespaces(lab)
        if os.geteuid() != 0 and (found or os.path.isdir(rundir) or (path and os.path.exists(path))):
            raise RuntimeProblem("destroying a netns lab needs root")
        rep = engine.destroy(path, owner=owner(lab), extra_namespaces=tuple(found), kill_all_inside=True)
        rep.lab = lab.name
        rep.refused[:0] = refused
        if rep.ok:
            try:
                st = os.lstat(rundir)
            except FileNotFoundError:
                st = None
            if st is not None and stat.S_ISDIR(st.st_mode):
                shutil.rmtree(rundir, ignore_errors=True)  # never follows a symlink inside
                if os.path.lexists(rundir):
                    rep.leftovers.append(f"directory {rundir} could not be removed")
                else:
                    rep.deleted.append(rundir)
            from ..runtime import lock

            lock.remove_unheld(lab.name)  # a command holding the lab lock removes it itself
            try:
                os.rmdir(RUN_ROOT)  # only when no other lab uses it
            except OSError:
                pass
        if not rep.ok:
            raise RuntimeProblem(f"destroy of lab {lab.name} left {len(rep.leftovers)} things behind "
                                 f"(still listed in {path or 'no state file'}):\n  " + "\n  ".join(rep.leftovers))
        return rep

    def status(self, lab: Lab) -> LabStatus:
        check_state_dir(lab)
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
