"""NetnsRuntime: the embedded default runtime (network namespaces, veths, bridges, FRR).

Deploys an OUTDIR's ``<name>.clab.yml`` as namespaces ``clab-<name>-<node>``:
lab_plan turns the lab into a pure Plan (switches programmed from their own
config files), the engine applies it with intent-first state in
``OUTDIR/.lab/netns-state.json`` and destroys exactly what that file lists.
A deployed switch is re-programmed by :mod:`.reprogram`.
"""

from __future__ import annotations

import os
import pwd
import time
from dataclasses import dataclass, field
from typing import Sequence

from railonly import proc

from ..lab import Lab, LabNode, target
from ..runtime.protocol import LabStatus, RuntimeProblem
from . import engine, frr, lab_plan, setns
from . import sshd as lab_sshd
from .plan import dump


def state_path(lab: Lab) -> str:
    return str(lab.netns_state_file)


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
        path = state_path(lab)
        try:
            if self.ssh and lab_sshd.sonic_switches(lab):
                lab_sshd.prepare(lab)  # keys and sshd configs before the processes start
            rep = engine.deploy(lp.plan, path, hook=hook, workers=self.workers, strategy=self.strategy)
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
        """Remove what the state file lists; RuntimeProblem names anything that stayed."""
        if os.geteuid() != 0 and os.path.exists(state_path(lab)):
            raise RuntimeProblem("destroying a netns lab needs root")
        rep = engine.destroy(state_path(lab))
        if not rep.ok:
            raise RuntimeProblem(f"destroy of lab {lab.name} left {len(rep.leftovers)} things behind "
                                 f"(still listed in {state_path(lab)}):\n  " + "\n  ".join(rep.leftovers))
        return rep

    def status(self, lab: Lab) -> LabStatus:
        st = engine.status(state_path(lab))
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
            detail = f"no state file {state_path(lab)}" + (f"; {len(up)} lab namespaces exist anyway (not ours?)" if up else "")
        elif st.complete and all(s == "running" for s in nodes.values()):
            state, detail = "running", f"{len(nodes)} nodes, {len(st.processes)} processes"
        else:
            state = "partial" if up or st.anything else "absent"
            bad = [f"{n}: {s}" for n, s in nodes.items() if s != "running"]
            detail = f"state {st.phase}; " + (", ".join(bad[:8]) or "nothing of it runs")
        return LabStatus(lab.name, state, nodes, detail, dict(st.processes))
