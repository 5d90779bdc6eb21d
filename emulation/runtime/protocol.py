"""The one narrow Runtime protocol: what every runtime does, and what it reports.

Runtimes deploy a :class:`~railonly.emulation.lab.Lab`; checks, traffic,
replay, faults and push reach nodes only through a :class:`Runtime`: ``exec``,
and the few capabilities they need beyond it (entering a node's network
namespace, a daemon's control client, waiting for links to settle, the FRR
daemons of a switch, the lab's SSH endpoints, processes the lab started).
Everything else is an implementation detail of a runtime; nothing above this
module branches on which runtime it has (tests/core/test_layers.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence, TypeVar, runtime_checkable

from ..lab import Lab, LabNode


class RuntimeProblem(Exception):
    """The environment cannot run the lab: a tool missing, not root, a deploy that failed (exit 3)."""


class NotDeployed(RuntimeProblem):
    """Nothing of the lab runs here (exit 3, as every RuntimeProblem: the CLI maps it)."""

    def __init__(self, lab: Lab, why: str = ""):
        super().__init__(f"lab {lab.name} is not deployed" + (f" ({why})" if why else "")
                         + f"; run: railonly lab deploy {lab.outdir}")


@dataclass
class LabStatus:
    lab: str
    state: str  # "running" (every node up) | "partial" | "absent" (nothing of the lab exists)
    nodes: dict[str, str] = field(default_factory=dict)  # node -> "running", "exited", "missing", ...
    detail: str = ""
    # "node/daemon" -> pid (None: recorded but dead), where the runtime records the
    # processes it started (netns: namespaces share the host's PIDs, so `ps` cannot
    # tell); None where the node's own `ps` is the answer (containers).
    processes: dict[str, int | None] | None = None

    @property
    def running(self) -> bool:
        return self.state == "running"


T = TypeVar("T")


@runtime_checkable
class NodeDoor(Protocol):
    """Entering nodes' network namespaces from this process (threads that setns):
    a socket belongs to the namespace of the thread that creates it."""

    def call_in(self, node: str, fn: Callable[[], T]) -> T: ...

    def call_many(self, jobs: list[tuple[str, Callable[[], T]]], workers: int) -> list: ...

    def link_states(self) -> dict[str, tuple[int, int]]: ...

    def ipv4_routes(self) -> list[dict]: ...

    def link_counters(self) -> dict[str, tuple[int, int]]: ...

    def nft_counters(self, table: str) -> dict[str, int]: ...


class NoDoor:
    """The door of a runtime whose nodes this process cannot enter: every use is a RuntimeProblem."""

    def __init__(self, runtime: str):
        self.runtime = runtime

    def _refuse(self, *_args, **_kw):
        raise RuntimeProblem(f"the {self.runtime} runtime gives no way into a node's network namespace")

    call_in = call_many = link_states = ipv4_routes = link_counters = nft_counters = _refuse


@runtime_checkable
class Runtime(Protocol):
    """What every runtime does; everything else is an implementation detail.

    ``exec`` is stateless: `node` is the qualified name ``clab-<lab>-<node>``
    (``Lab.netns(name)`` or ``LabNode.netns``; a LabNode is accepted too), so a
    later process (``lab check``) can exec into a lab another one deployed.
    It returns (exit code, output) once the command exits; output is stdout, with stderr appended
    when the command failed. A child the command left in the background (``sh -c 'x &'``) is not
    waited for, nor its later output read; it runs on in the node until destroy. Timeouts give 124
    (the command is killed, not such a child), a missing program 127.
    """

    name: str

    def deploy(self, lab: Lab, hook: Callable[[str, object], None] | None = None) -> object: ...

    def exec(self, node: "str | LabNode", argv: Sequence[str], timeout: float = 30.0) -> tuple[int, str]: ...

    def interactive(self, node: "str | LabNode", argv: Sequence[str]) -> int:
        """Run ``argv`` in the node on the caller's terminal (a vtysh shell) until it exits;
        its exit code. RuntimeProblem (exit 3) where the runtime cannot."""
        raise RuntimeProblem(f"the {self.name} runtime has no interactive shell; give the commands with -c")

    def destroy(self, lab: Lab) -> None: ...

    def status(self, lab: Lab) -> LabStatus: ...

    # -- capabilities beyond exec (a runtime that has no such thing keeps these defaults) --

    def bind_lab(self, lab: Lab, name: str | None = None, deploying: bool = False) -> Lab:
        """The lab under the name it was deployed under (where the runtime records deployed labs)."""
        return lab

    def lab_to_destroy(self, outdir: str | None, name: str | None) -> object | None:
        """What ``destroy`` removes, whatever became of the OUTDIR (the netns runtime: the recorded
        identity); None: the Lab loaded from OUTDIR."""
        return None

    def running_lab(self, outdir: str) -> Lab | None:
        """The lab deployed from ``outdir`` as the runtime recorded it at deploy, for the commands
        on a running lab (status, check, traffic, fault); None: they load the OUTDIR."""
        return None

    def dry_run(self, lab: Lab) -> str:
        """What deploy would do, printed by ``lab deploy --dry-run`` (no root needed)."""
        return f"{self.name}: deploy lab {lab.name} ({len(lab.nodes)} nodes)\n"

    def door(self) -> NodeDoor:
        """Enter the nodes' network namespaces (the probe agent's sockets, push's SSH sockets)."""
        return NoDoor(self.name)

    def daemon_argv(self, lab: Lab, node: str, daemon: str = "vtysh") -> list[str]:
        """The argv prefix of a node daemon's control client (vtysh: its FRR's socket)."""
        return [daemon]

    def daemon_show(self, lab: Lab, node: str, daemon: str, command: str, timeout: float = 15.0) -> tuple[int, str]:
        """One read-only command to one FRR daemon of a switch (``bgpd``, ``bfdd``):
        (exit code, output), as ``exec`` reports them. Default: its control client."""
        return self.exec(lab.netns(node), [*self.daemon_argv(lab, node, "vtysh"), "-d", daemon, "-c", command],
                         timeout=timeout)

    def settle_links(self, lab: Lab, timeout: float = 3.0) -> list[str]:
        """Wait until the kernel has acted on every link carrier; the nodes still pending."""
        return []

    def neighbour_table_size(self) -> int | None:
        """Entries of the neighbour table the lab's nodes share (None: each node has its own)."""
        return None

    def frr_daemons(self, lab: Lab, node: str, running: bool = False) -> list[list[str]]:
        """argv of the FRR daemons the runtime itself starts for a switch, in start order, then
        whatever loads their config (``running``: only those running now; []: the node's
        image runs them)."""
        return []

    def stop_frr(self, lab: Lab, node: str) -> list[str]:
        """Stop the FRR daemons the runtime started for a switch; the names that survived."""
        return []

    def ssh_endpoints(self, lab: Lab) -> dict[str, Any] | None:
        """How push reaches the lab's switches (user, keys, per switch host/port), None: no switch sshd."""
        return None

    def ssh_state_dir(self, lab: Lab) -> str:
        """Where the lab's switch sshd state lives (named in messages)."""
        return str(lab.ssh_dir)

    def pid_of(self, pidfile: str) -> int | None:
        """The pid a process of the lab wrote to ``pidfile`` (None: not (yet) written)."""
        return None

    def stop_recorded(self, records: list[dict], grace: float = 3.0) -> int:
        """Stop processes the lab recorded ({netns, argv, pidfile}), each only if provably
        that process; the number stopped."""
        return 0


def deployed_status(rt: Runtime, lab: Lab) -> LabStatus:
    """The lab's status from ``rt``; NotDeployed when nothing of it exists."""
    st = rt.status(lab)
    if st.state == "absent":
        raise NotDeployed(lab, st.detail)
    return st
