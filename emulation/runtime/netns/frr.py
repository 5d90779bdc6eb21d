"""FRR (zebra + staticd + bfdd + bgpd, Debian 8.4) as plan processes in a namespace.

Each instance gets its own run directory (owned frr:frr) holding pid files,
the zserv socket and the vty sockets, so many instances share one machine;
``-P 0`` keeps the daemons from opening TCP vty ports. The UTS namespace is
shared, so the config must set ``hostname`` (docs/lab/index.md). Starting and
stopping is the engine's job (the daemons are ``Process(daemonizes=True)``
entries); this module builds those entries and talks to running instances.

An instance boots as a switch in FRR's integrated mode does: the daemons start
with no node of the config (only its ``hostname``, see :func:`own_config`), then
``vtysh -b`` reads the instance's ``frr.conf`` once and sends each node to the
daemon that knows it. A daemon given the whole file
with ``-f`` parses every node itself, and one that does not know a node (bfdd
and ``router bgp``) takes that node's closing ``exit`` as leaving configure
mode, dropping its own nodes that follow.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from dataclasses import dataclass

from railonly import proc

from railonly.fabric.outdir.rollout_rules import LAB_ZEBRA
from railonly.fabric.outdir_layout import FRR_CONF
from . import pids
from .ns_plan import Process

FRR_LIBDIR = "/usr/lib/frr"
DAEMONS = ("zebra", "staticd", "bfdd", "bgpd")  # bfdd: BFD on every fabric session (docs/bgp.md)
HOSTNAME_RE = re.compile(r"^hostname \S+", re.M)


@dataclass(frozen=True)
class FrrInstance:
    name: str  # short node name, e.g. "leaf1"; also the process-name prefix
    netns: str
    rundir: str  # per-instance directory; every ancestor must be searchable by user frr

    @property
    def config(self) -> str:
        return f"{self.rundir}/{FRR_CONF}"

    @property
    def own_config(self) -> str:
        """What each daemon reads itself with ``-f`` (:func:`own_config`)."""
        return f"{self.rundir}/hostname.conf"

    @property
    def zebra_config(self) -> str:
        """zebra's own ``-f`` file: :func:`own_config` and the lab's LAB_ZEBRA (its reason there)."""
        return f"{self.rundir}/zebra-own.conf"

    @property
    def vtysh_config(self) -> str:
        """vtysh's own settings, empty: ``vtysh -b --config_dir`` reads it first, and without it
        opened every FRR error of a deploy with "% Can't open configuration file .../vtysh.conf"."""
        return f"{self.rundir}/vtysh.conf"


def check_config(text: str) -> list[str]:
    """Problems of a config for a shared-UTS instance (empty if fine)."""
    errs = []
    if not HOSTNAME_RE.search(text):
        errs.append("no 'hostname' line: every instance would report the machine's name")
    return errs


def own_config(text: str) -> str:
    """What each daemon reads itself: the config's ``hostname`` line alone. vtysh -b keeps
    ``hostname`` to itself (a switch's daemons take the machine's name, which is the
    switch's; here they share the host's UTS namespace and would report its name). Without
    ``-f`` a daemon would read the host's /etc/frr/<daemon>.conf."""
    m = HOSTNAME_RE.search(text)
    return f"{m.group(0)}\n" if m else ""


def instance(lab_rundir: str, name: str, netns: str) -> FrrInstance:
    """An instance under the lab's run directory, e.g. /run/railonly/<lab>
    (not under a 0700 directory such as pytest's: the daemons run as frr)."""
    return FrrInstance(name, netns, os.path.join(lab_rundir, "frr", name))


def processes(
    inst: FrrInstance, config_text: str, daemons: tuple[str, ...] = DAEMONS
) -> tuple[Process, ...]:
    """Plan entries for one instance, zebra first (the others connect to its
    zserv socket), the last daemon followed by :func:`boot_argv` (the config
    loaded into all of them). The config text is written to the run directory
    (owned by frr) by the engine, so it travels in the plan. Raises ValueError
    for a config without ``hostname``."""
    problems = check_config(config_text)
    if problems:
        raise ValueError(f"FRR config of {inst.name}: " + "; ".join(problems))
    out = []
    for i, d in enumerate(daemons):
        argv = [
            f"{FRR_LIBDIR}/{d}", "-d",
            "-f", inst.zebra_config if d == "zebra" else inst.own_config,
            "-i", f"{inst.rundir}/{d}.pid",
            "-z", f"{inst.rundir}/zserv.api",
            "--vty_socket", inst.rundir,
            "-P", "0",
            "-u", "frr", "-g", "frr",
            "--log", f"file:{inst.rundir}/{d}.log",
        ]
        if d == "bfdd":  # its control socket defaults to one path for the whole machine
            argv += ["--bfdctl", f"{inst.rundir}/bfdd.sock"]
        out.append(
            Process(
                name=f"{inst.name}/{d}",
                netns=inst.netns,
                argv=tuple(argv),
                pidfile=f"{inst.rundir}/{d}.pid",
                daemonizes=True,
                dirs=(inst.rundir,),
                owner="frr:frr",
                files=((inst.config, config_text), (inst.own_config, own_config(config_text)),
                       (inst.zebra_config, own_config(config_text) + LAB_ZEBRA + "\n"),
                       (inst.vtysh_config, "")) if i == 0 else (),
                then=boot_argv(inst) if i == len(daemons) - 1 else (),
            )
        )
    return tuple(out)


def boot_argv(inst: FrrInstance) -> tuple[str, ...]:
    """``vtysh -b`` for this instance alone: the integrated config of its run directory
    (``--config_dir``: its ``frr.conf``) sent node by node to the daemons listening on
    its vty sockets. A daemon with ``-d`` returns once it serves its vty socket, so
    after the last one started every node has its daemon."""
    return ("vtysh", "--vty_socket", inst.rundir, "--config_dir", inst.rundir, "-b")


# how `vtysh -b` names a config line FRR refused: "line 36: % Unknown command[25]:  bgp x"
# (also "% Command incomplete", "% Ambiguous command", "Warning[4]...": vtysh_config_from_file)
_REFUSED = re.compile(r"^line (\d+): (.+?)\[\d+\](?:\.\.\.)?: (.*)$", re.M)


def refused_lines(output: str) -> list[tuple[int, str, str]]:
    """(line number in the instance's frr.conf, FRR's words, the line as written) for each line
    ``vtysh -b`` refused in ``output``; [] when it failed for another reason (no daemon...)."""
    return [(int(m.group(1)), m.group(2).lstrip("% ").strip(), m.group(3).strip())
            for m in _REFUSED.finditer(output)]


def vtysh(inst: FrrInstance, *commands: str, timeout: float = 15.0) -> proc.Result:
    """Run vtysh commands against this instance only (its own vty socket dir)."""
    argv = ["vtysh", "--vty_socket", inst.rundir]
    for c in commands:
        argv += ["-c", c]
    return proc.run(argv, timeout=timeout)


VTY_END = b"\0\0\0"  # a daemon ends each answer with three NULs and its status byte


def vty_show(inst: FrrInstance, daemon: str, command: str, timeout: float = 15.0) -> tuple[int, str]:
    """One command to one daemon of this instance over its vty socket, as vtysh speaks to
    it (command NUL-terminated; the answer ends in three NULs and a status byte), without
    starting vtysh: a process per switch and reading was most of ``lab check``'s BGP and
    BFD time on 48 switches. ``enable`` first: bfdd's show commands need it. Returns
    (status, output), status 0 on success; 127 with a reason when the socket is absent."""
    path = os.path.join(inst.rundir, f"{daemon}.vty")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(path)
            out = b""
            for line in ("enable", command):
                s.sendall(line.encode() + b"\0")
                buf = bytearray()
                while len(buf) < 4 or buf[-4:-1] != VTY_END:
                    chunk = s.recv(1 << 16)
                    if not chunk:
                        return 1, f"{daemon} of {inst.name} closed its vty socket {path}"
                    buf += chunk
                status, out = buf[-1], bytes(buf[:-4])
                if status != 0:
                    break
    except OSError as exc:
        return 127, f"{daemon} of {inst.name}: vty socket {path}: {exc.strerror or exc}"
    return status, out.decode(errors="replace")


def bgp_summary(inst: FrrInstance) -> dict:
    """``show bgp summary json`` parsed; {} when bgpd does not answer."""
    rc, out = vty_show(inst, "bgpd", "show bgp summary json")
    if rc != 0:
        return {}
    try:
        return json.loads(out)
    except ValueError:
        return {}


def peer_info(inst: FrrInstance) -> dict[str, dict]:
    """{peer: summary entry} over all address families (last family wins)."""
    out: dict[str, dict] = {}
    for af in bgp_summary(inst).values():
        if isinstance(af, dict):
            out.update(af.get("peers", {}))
    return out


def peer_states(inst: FrrInstance) -> dict[str, str]:
    return {p: i.get("state", "?") for p, i in peer_info(inst).items()}


def wait_established(
    instances: list[FrrInstance],
    *,
    expected: dict[str, int] | None = None,
    min_prefixes: int = 0,
    timeout: float = 60.0,
    interval: float = 0.25,
) -> dict[str, dict[str, str]]:
    """Poll until every instance has all its peers Established (at least
    ``expected[name]`` peers, default 1, each having sent ``min_prefixes``)
    or until timeout. Returns the last seen {instance: {peer: state}}; the
    caller judges it (see :func:`converged`). Established alone does not
    mean routes are installed: ask for min_prefixes when traffic follows."""
    deadline = time.monotonic() + timeout
    pending = {i.name: i for i in instances}
    seen: dict[str, dict[str, str]] = {}
    while True:
        for name, inst in list(pending.items()):
            peers = peer_info(inst)
            states = {p: i.get("state", "?") for p, i in peers.items()}
            seen[name] = states
            need = (expected or {}).get(name, 1)
            if (
                len(states) >= need
                and all(s == "Established" for s in states.values())
                and all(i.get("pfxRcd", 0) >= min_prefixes for i in peers.values())
            ):
                del pending[name]
        if not pending or time.monotonic() > deadline:
            return seen
        time.sleep(interval)


def converged(seen: dict[str, dict[str, str]], expected: dict[str, int] | None = None) -> bool:
    return all(
        len(st) >= (expected or {}).get(n, 1) and all(s == "Established" for s in st.values())
        for n, st in seen.items()
    )


def daemon_processes(inst: FrrInstance, daemons: tuple[str, ...] = DAEMONS) -> tuple[Process, ...]:
    """The plan entries of an instance's daemons: their argv and pid files (what finds them)."""
    return processes(inst, "hostname x\n", daemons)  # argv do not depend on the text


def running(inst: FrrInstance, daemons: tuple[str, ...] = DAEMONS) -> dict[str, int | None]:
    """{daemon: live pid} read from the pid files, checked against the command line."""
    out = {}
    for p in daemon_processes(inst, daemons):
        pid = pids.read_pidfile(p.pidfile)
        pi = pids.matches(pid, p.argv) if pid else None
        out[p.name.split("/")[-1]] = pi.pid if pi else None
    return out


def stop(inst: FrrInstance, daemons: tuple[str, ...] = DAEMONS, timeout: float = 5.0) -> list[str]:
    """Stop one instance by its pid files (bgpd first); returns daemons that survived.
    A lab's destroy does this for every instance; this is for restarting one."""
    targets = []
    for p in reversed(daemon_processes(inst, daemons)):
        pid = pids.read_pidfile(p.pidfile)
        pi = pids.matches(pid, p.argv) if pid else None
        if pi is not None:
            targets.append(pi)
    left = pids.terminate(targets, timeout)
    return [" ".join(p.cmdline[:1]) for p in left]
