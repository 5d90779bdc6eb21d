"""ContainerlabRuntime: the lab's `<name>.clab.yml` deployed by the real containerlab.

Everything goes through the `containerlab` binary via proc.run (argv lists):
``deploy -t FILE --reconfigure`` (idempotent: a redeploy starts from a clean
lab directory), ``destroy -t FILE --cleanup`` and ``inspect -t FILE --format
json``. Each run has ``CLAB_LABDIR_BASE`` set to the lab's run directory
(/run/railonly/<lab>): containerlab's own lab directory (``clab-<lab>``: TLS
keys, node state) is runtime state, so it goes there and never beside the
topology file, inside the OUTDIR railonly compiled (a recompile refuses an
OUTDIR holding entries its MANIFEST.json does not list). It is set through
``env`` in argv because ``sudo`` drops the caller's environment. Exec enters
the node's namespace, which containerlab links at /var/run/netns/clab-<lab>-<node>,
or uses ``docker exec`` where `ip netns` cannot be used (not root).

``containerlab inspect --format json`` has two shapes: older releases print
``{"containers": [...]}``; newer ones (since containerlab PR #2552, April
2025) key the lists by lab name, ``{"<lab>": [...]}``. Both are parsed by
:func:`parse_inspect`.
"""

from __future__ import annotations

import json
import os
from typing import Sequence

from railonly import proc

from ..lab import Lab, LabNode, netns_prefix, run_dir, target
from . import rundir
from .protocol import LabStatus, NoDoor, NodeDoor, Runtime, RuntimeProblem

INSTALL_HINT = ('install it (https://containerlab.dev/install/, e.g. bash -c "$(curl -sL https://get.containerlab.dev)"), '
                "or use the embedded runtime: --runtime netns")
DEPLOY_TIMEOUT = 1800.0  # sonic-vs and cEOS take minutes to boot on big labs
INSPECT_TIMEOUT = 120.0


def parse_inspect(text: str, lab: str) -> dict[str, str]:
    """node name -> container state, from `containerlab inspect --format json` (either shape).

    Containers of other labs are ignored (an old containerlab lists every lab
    for `-t` in some versions). Raises ValueError on output that is neither shape.
    """
    text = (text or "").strip()
    if not text:
        return {}
    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise ValueError(f"expected a JSON object, got {type(doc).__name__}")
    if "containers" in doc and isinstance(doc["containers"], list):
        rows = doc["containers"]  # old shape
    else:
        rows = []
        for key, value in doc.items():  # new shape: one list per lab
            if not isinstance(value, list):
                raise ValueError(f"expected a list of containers under {key!r}")
            rows.extend(value)
    prefix = netns_prefix(lab)
    out = {}
    for row in rows:
        if not isinstance(row, dict) or "name" not in row:
            raise ValueError(f"container entry without a name: {row!r}")
        if row.get("lab_name", lab) != lab:
            continue
        name = row["name"].lstrip("/")  # very old versions printed docker's "/name"
        if not name.startswith(prefix):
            continue
        out[name[len(prefix):]] = str(row.get("state", "unknown"))
    return out


class ContainerlabRuntime(Runtime):
    name = "containerlab"

    def __init__(self, binary: str = "containerlab", exec_via: str | None = None, sudo: bool = False):
        self.binary = binary
        # Root can enter the linked namespace; otherwise docker exec (docker group).
        self.exec_via = exec_via or ("netns" if os.geteuid() == 0 else "docker")
        self.sudo = sudo  # prefix containerlab with sudo (it needs root), for non-root users

    # -- argv (pure, unit-tested) ----------------------------------------------------
    def _clab(self, lab: Lab, *args: str) -> list[str]:
        return (["sudo"] if self.sudo else []) + ["env", f"CLAB_LABDIR_BASE={run_dir(lab.name)}", self.binary, *args]

    def deploy_argv(self, lab: Lab) -> list[str]:
        return self._clab(lab, "deploy", "-t", str(lab.topology_file), "--reconfigure")

    def destroy_argv(self, lab: Lab) -> list[str]:
        return self._clab(lab, "destroy", "-t", str(lab.topology_file), "--cleanup")

    def inspect_argv(self, lab: Lab) -> list[str]:
        return self._clab(lab, "inspect", "-t", str(lab.topology_file), "--format", "json")

    def exec_argv(self, node: "str | LabNode", argv: Sequence[str]) -> list[str]:
        name = target(node)
        if self.exec_via == "docker":
            return ["docker", "exec", name, *argv]
        return ["ip", "netns", "exec", name, *argv]

    # -- environment ------------------------------------------------------------------
    def check_environment(self) -> None:
        """RuntimeProblem naming exactly what is missing."""
        if proc.which(self.binary) is None:
            raise RuntimeProblem(f"the containerlab runtime needs the '{self.binary}' program, which is not on PATH; {INSTALL_HINT}")
        if proc.which("docker") is None:
            raise RuntimeProblem("containerlab runs its nodes as Docker containers, but 'docker' is not on PATH; "
                                 "install Docker Engine (https://docs.docker.com/engine/install/) or use --runtime netns")

    def _run(self, argv: list[str], timeout: float, what: str) -> proc.Result:
        res = proc.run(argv, timeout=timeout)
        if res.returncode == 127:  # argv[0] may be sudo or env: the program not found is containerlab
            raise RuntimeProblem(f"cannot start {self.binary!r} ({res.stderr.strip()}); {INSTALL_HINT}")
        if res.returncode == 124:
            raise RuntimeProblem(f"containerlab {what} did not finish within {timeout:g}s: {' '.join(argv)}")
        return res

    # -- the protocol -------------------------------------------------------------------
    def dry_run(self, lab: Lab) -> str:
        return " ".join(self.deploy_argv(lab)) + "\n"

    def deploy(self, lab: Lab, hook=None) -> None:  # one containerlab run: no phases to report
        self.check_environment()
        if os.geteuid() == 0:
            rundir.ensure_run_dir(lab.name)  # the chain root's and checked; under sudo containerlab makes it
        res = self._run(self.deploy_argv(lab), DEPLOY_TIMEOUT, "deploy")
        if not res.ok:
            raise RuntimeProblem(f"containerlab deploy failed (exit {res.returncode}): {_tail(res)}\n"
                                 f"  run it by hand to see everything: {' '.join(res.argv)}")

    def destroy(self, lab: Lab) -> None:
        self.check_environment()
        res = self._run(self.destroy_argv(lab), DEPLOY_TIMEOUT, "destroy")
        if not res.ok:
            raise RuntimeProblem(f"containerlab destroy failed (exit {res.returncode}): {_tail(res)}")
        if os.geteuid() == 0:
            rundir.remove_if_empty(lab.name)  # --cleanup removed clab-<lab> from it

    def status(self, lab: Lab) -> LabStatus:
        self.check_environment()
        res = self._run(self.inspect_argv(lab), INSPECT_TIMEOUT, "inspect")
        if not res.ok:
            # Versions before the JSON rework exit 1 with "no containers found".
            if "no containers found" in (res.stdout + res.stderr).lower():
                return LabStatus(lab.name, "absent", {n: "missing" for n in lab.nodes})
            raise RuntimeProblem(f"containerlab inspect failed (exit {res.returncode}): {_tail(res)}")
        try:
            found = parse_inspect(res.stdout, lab.name)
        except ValueError as exc:
            raise RuntimeProblem(f"cannot read `containerlab inspect` output: {exc}") from None
        return status_of(lab, found)

    def door(self) -> NodeDoor:
        """containerlab links each container's namespace as /run/netns/clab-<lab>-<node>:
        root enters it like a netns node; without root there is no way in."""
        if self.exec_via != "netns":
            return NoDoor(self.name)
        from .netns import setns

        return setns

    def exec(self, node: "str | LabNode", argv: Sequence[str], timeout: float = 30.0) -> tuple[int, str]:
        res = proc.run(self.exec_argv(node, argv), timeout=timeout, until_exit=True)  # as the netns runtime's
        return res.returncode, res.stdout if res.ok else res.stdout + res.stderr

    def interactive(self, node: "str | LabNode", argv: Sequence[str]) -> int:
        full = self.exec_argv(node, argv)
        if full[:2] == ["docker", "exec"]:
            full[2:2] = ["-it"]  # docker gives the program a terminal only when asked
        return proc.attached(full)


def status_of(lab: Lab, found: dict[str, str]) -> LabStatus:
    """Judge containers found against the lab's nodes."""
    nodes = {n: found.get(n, "missing") for n in lab.nodes}
    up = sum(1 for s in nodes.values() if s == "running")
    if nodes and up == len(nodes):
        state = "running"
    elif not found:
        state = "absent"
    else:
        state = "partial"
    return LabStatus(lab.name, state, nodes, f"{up} of {len(nodes)} nodes running")


def _tail(res: proc.Result, lines: int = 8) -> str:
    text = (res.stderr.strip() or res.stdout.strip()).splitlines()
    return "\n    ".join(text[-lines:]) or "(no output)"
