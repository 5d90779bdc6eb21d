"""The one narrow Runtime protocol: what every runtime does, and what it reports.

Runtimes deploy a :class:`~railonly.emulation.lab.Lab`; checks and traffic
talk to nodes only through :meth:`Runtime.exec`. Everything else is an
implementation detail of a runtime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

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

    @property
    def running(self) -> bool:
        return self.state == "running"


@runtime_checkable
class Runtime(Protocol):
    """What every runtime does; everything else is an implementation detail.

    ``exec`` is stateless: `node` is the qualified name ``clab-<lab>-<node>``
    (``Lab.netns(name)`` or ``LabNode.netns``; a LabNode is accepted too), so a
    later process (``lab check``) can exec into a lab another one deployed.
    It returns (exit code, output); output is stdout, with stderr appended
    when the command failed. Timeouts give 124, a missing program 127.
    """

    name: str

    def deploy(self, lab: Lab) -> None: ...

    def exec(self, node: "str | LabNode", argv: Sequence[str], timeout: float = 30.0) -> tuple[int, str]: ...

    def destroy(self, lab: Lab) -> None: ...

    def status(self, lab: Lab) -> LabStatus: ...


def deployed_status(rt: Runtime, lab: Lab) -> LabStatus:
    """The lab's status from ``rt``; NotDeployed when nothing of it exists."""
    st = rt.status(lab)
    if st.state == "absent":
        raise NotDeployed(lab, st.detail)
    return st
