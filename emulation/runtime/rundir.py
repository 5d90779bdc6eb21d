"""A lab's run directory: its identity and every runtime record, outside the OUTDIR.

Layout (all root-owned; see docs/security.md)::

    /run/railonly/                 0755  every lab's run dir and lock files
    /run/railonly/<lab>/           0755  FRR instances (frr/<switch>, user frr reaches its
                                         sockets), iperf3 and sshd pid files, containerlab's
                                         clab-<lab> lab directory (its CLAB_LABDIR_BASE)
    /run/railonly/<lab>/state/     0700  identity.json, netns-state.json, faults.json,
                                         traffic.json, ssh/ (keys, sshd configs, switch shells),
                                         deployed/ (the OUTDIR files the lab was deployed from)

An OUTDIR is whatever a pull request wrote, so nothing a lab records lives
there: a record there could be forged (destroy would act on it) or swapped
for a symlink mid-deploy (root would write through it). Here every directory
on the way is opened one fd at a time with O_NOFOLLOW and must be a real
directory owned by root that nobody else can write (:func:`open_state`), so
only root can change what a lab records.

A lab's identity (:class:`Identity`) is its name, the OUTDIR it was deployed
from and the nodes it deployed. It decides what the lab owns: exactly the
namespaces ``clab-<lab>-<node>`` of its recorded nodes (never a prefix match:
``clab-a-b-leaf0`` is lab ``a-b``'s, even when lab ``a`` has a node
``b-leaf0``, see :func:`claims_of_others`), and which OUTDIR may act on it.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from dataclasses import dataclass

from ..lab import LabError, run_dir, run_root, state_dir
from .outdir_writer import OutdirWriter, UnsafePath

IDENTITY = "identity.json"
DEPLOYED = "deployed"  # the OUTDIR files the running lab was deployed from (record_deployed)
LAB_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")  # netns.ns_plan.LAB_RE: one rule for lab names
NODE_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
MAX_RECORD_BYTES = 64 << 20
MAX_NODES_RECORDED = 100_000


class RunDirUnsafe(UnsafePath):
    """A directory of the run dir chain is not what root created (exit 2)."""


def _check_dir(fd: int, path: str) -> None:
    st = os.fstat(fd)
    if st.st_uid != 0 or st.st_mode & 0o022:
        raise RunDirUnsafe(path, f"is owned by uid {st.st_uid} with mode {stat.S_IMODE(st.st_mode):04o}: a lab's"
                           " run directory must be root's and writable by root only",
                           f"remove it (as root) and redeploy; railonly creates it itself")


def _open_chain(parts: list[tuple[str, int]], create: bool) -> int | None:
    """An fd of the last directory of ``parts`` [(name, mode)] below run_root()'s parent,
    every step opened with O_NOFOLLOW and checked (:func:`_check_dir`). None when a
    directory is missing and ``create`` is False."""
    root = run_root()
    parent = os.path.dirname(root.rstrip("/")) or "/"
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    path = parent
    try:
        for name, mode in [(os.path.basename(root.rstrip("/")), 0o755)] + parts:
            path = os.path.join(path, name)
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                nfd = os.open(name, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    return None
                try:
                    os.mkdir(name, mode, dir_fd=fd)
                except FileExistsError:
                    pass
                nfd = os.open(name, flags, dir_fd=fd)
                os.fchmod(nfd, mode)  # exactly mode, whatever the umask
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise RunDirUnsafe(path, "is a symlink or not a directory: a lab's records are never read or"
                                       " written through it") from None
                raise
            os.close(fd)
            fd = nfd
            _check_dir(fd, path)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _lab_name(name: str, where: str) -> None:
    """LabError (exit 2) naming `where` when `name` is not a lab name."""
    if not LAB_NAME.fullmatch(name):
        raise LabError(where, f"{name!r} is not a lab name", "lowercase letters, digits and '-', at most 40")


def ensure_root() -> None:
    """/run/railonly itself, created when missing, checked: a real directory, root's alone."""
    os.close(_open_chain([], create=True))


def ensure_run_dir(lab: str) -> None:
    """/run/railonly/<lab>, created when missing, every step checked (root's alone)."""
    _lab_name(lab, lab)
    os.close(_open_chain([(lab, 0o755)], create=True))


def remove_if_empty(lab: str) -> None:
    """The lab's run dir and then /run/railonly, each only when empty (rmdir never follows a link)."""
    for path in (run_dir(lab), run_root()):
        try:
            os.rmdir(path)
        except OSError:
            return


def open_state(lab: str, create: bool) -> "StateDir | None":
    """The lab's state directory, checked (and created 0700 with ``create``); None when absent."""
    _lab_name(lab, lab)
    fd = _open_chain([(lab, 0o755), (os.path.basename(state_dir(lab)), 0o700)], create)
    if fd is None:
        return None
    os.close(fd)  # checked; OutdirWriter walks from here (only root can change it now)
    return StateDir(lab)


def check_state_dir(lab) -> None:
    """RunDirUnsafe (exit 2) when a directory of the lab's (a Lab's or an Identity's) run dir
    chain is a symlink or not root's alone: its records are never read or written through it."""
    open_state(lab.name, create=False)


class StateDir(OutdirWriter):
    """Reads and writes below a lab's state directory, never following a symlink."""

    def __init__(self, lab: str):
        super().__init__(state_dir(lab))
        self.lab = lab

    def read_bytes(self, rel: str, limit: int = MAX_RECORD_BYTES) -> bytes | None:
        parts = self._parts(rel)
        try:
            dfd = self._dir_fd(parts[:-1], create=False)
        except FileNotFoundError:
            return None
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise (self._refuse(self.path(rel), exc) or UnsafePath(self.path(rel), exc.strerror or str(exc))) from None
        finally:
            os.close(dfd)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise UnsafePath(self.path(rel), "is not a regular file")
            data = f.read(limit + 1)
        if len(data) > limit:
            raise UnsafePath(self.path(rel), f"is larger than {limit} bytes", "railonly never writes one that large;"
                             " remove it (as root)")
        return data

    def read_json(self, rel: str, limit: int = MAX_RECORD_BYTES) -> object | None:
        data = self.read_bytes(rel, limit)
        if data is None:
            return None
        try:
            return json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise LabError(self.path(rel), f"is not JSON ({str(exc)[:80]})", "remove it (as root) and redeploy") from None


def state(lab: str) -> StateDir:
    """The lab's state directory, created when missing (for writing)."""
    sd = open_state(lab, create=True)
    assert sd is not None
    return sd


# --- identity --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Identity:
    """Who a lab is: its name, the OUTDIR it was deployed from, the nodes it deployed.
    ``recorded`` False: taken from an OUTDIR's topology (nothing was recorded yet)."""

    name: str
    outdir: str
    nodes: tuple[str, ...]
    recorded: bool = True

    @property
    def namespaces(self) -> frozenset[str]:
        from ..lab import netns_name

        return frozenset(netns_name(self.name, n) for n in self.nodes)


def _own_nodes(lab) -> set[str]:
    """The names of a loaded Lab's namespaces after ``clab-<lab>-``: its topology's nodes, and the
    management network's namespace when fabric.json asks for one (the runtime makes it, so the
    lab owns it too; no topology node may take that name)."""
    from ..lab import MGMT_NODE

    return set(lab.nodes) | ({MGMT_NODE} if lab.fabric.design.management is not None else set())


def identity_of(lab) -> Identity:
    """The identity a loaded Lab would record."""
    return Identity(lab.name, str(lab.outdir), tuple(sorted(_own_nodes(lab))), recorded=False)


def read_identity(lab: str) -> Identity | None:
    """The recorded identity of lab ``lab``, None when none is recorded. A record of the
    wrong shape is exit 2 naming it (only root writes there: it means tampering)."""
    sd = open_state(lab, create=False)
    if sd is None:
        return None
    data = sd.read_json(IDENTITY)
    if data is None:
        return None
    nodes = data.get("nodes") if isinstance(data, dict) else None
    if (not isinstance(data, dict) or data.get("lab") != lab or not isinstance(data.get("outdir"), str)
            or not data["outdir"].startswith("/") or not isinstance(nodes, list) or len(nodes) > MAX_NODES_RECORDED
            or not all(isinstance(n, str) and NODE_NAME.fullmatch(n) for n in nodes)):
        raise LabError(sd.path(IDENTITY), f"is not the identity record of lab {lab}",
                       f"remove {run_dir(lab)} as root once nothing of the lab runs")
    return Identity(lab, data["outdir"], tuple(nodes))


def record_identity(lab, also: Identity | None = None) -> Identity:
    """Record the lab's identity (intent first: before anything of it exists). ``also``: the
    previous deploy's identity, whose nodes stay recorded until the new deploy replaced them."""
    nodes = _own_nodes(lab) | (set(also.nodes) if also is not None and also.name == lab.name else set())
    ident = Identity(lab.name, str(lab.outdir), tuple(sorted(nodes)))
    state(lab.name).write_text(IDENTITY, json.dumps(
        {"lab": ident.name, "outdir": ident.outdir, "nodes": list(ident.nodes)}, indent=1) + "\n", mode=0o600)
    return ident


def recorded_labs() -> list[str]:
    """Names of every lab with a run directory on this machine."""
    try:
        names = os.listdir(run_root())
    except OSError:
        return []
    return sorted(n for n in names if LAB_NAME.fullmatch(n) and os.path.isdir(os.path.join(run_root(), n))
                  and not os.path.islink(os.path.join(run_root(), n)))


def identities() -> list[Identity]:
    out = []
    for name in recorded_labs():
        try:
            ident = read_identity(name)
        except LabError:
            continue  # a broken record claims nothing; destroy --lab NAME names it
        if ident is not None:
            out.append(ident)
    return out


def deployed_from(outdir: str) -> list[Identity]:
    """The labs recorded as deployed from ``outdir`` (its absolute path)."""
    return [i for i in identities() if i.outdir == str(outdir)]


def claims_of_others(lab: str) -> dict[str, str]:
    """namespace -> the other lab whose recorded nodes name it."""
    return {ns: i.name for i in identities() if i.name != lab for ns in i.namespaces}


# --- what the running lab was deployed from -----------------------------------------------


def deployed_files(lab) -> list[str]:
    """What the commands on a running lab read of its OUTDIR, relative to it: the topology, the
    lab's fabric.json, the cabling.csv beside it and each switch's frr.conf (check_plan.load)."""
    from railonly.fabric.outdir_layout import CABLING_CSV, FRR_CONF

    base = lab.fabric_file.parent.relative_to(lab.outdir)
    return [lab.topology_file.name, str(lab.fabric_file.relative_to(lab.outdir)), str(base / CABLING_CSV)] + [
        str(lab.configs_dir.relative_to(lab.outdir) / sw.name / FRR_CONF) for sw in lab.switches]


def record_deployed(lab) -> None:
    """Copy deployed_files into the lab's state dir (before the deploy changes anything), so status,
    check, traffic and fault act on the lab as deployed, from railonly's own record: whatever became
    of the OUTDIR since (edited, recompiled, removed, a symlink planted in it) is never read by them.
    Read from OUTDIR without following a symlink, as load_lab reads it."""
    import shutil

    from railonly.fabric.outdir.reader import OutdirReader

    reader, sd = OutdirReader(str(lab.outdir)), state(lab.name)
    shutil.rmtree(sd.path(DEPLOYED), ignore_errors=True)  # a recompile may have dropped a switch; never follows a link
    for rel in deployed_files(lab):
        data = reader.read_bytes(rel)
        if data is not None:
            sd.write_bytes(f"{DEPLOYED}/{rel}", data, mode=0o600)


def deployed_lab(outdir: str):
    """The Lab deployed from ``outdir`` as railonly recorded it (record_deployed), with its name and
    OUTDIR; None when no lab, or several (bind names them), or a lab recorded before railonly kept
    the record, is deployed from it: the command reads the OUTDIR then."""
    from dataclasses import replace
    from pathlib import Path

    from ..lab import load_lab

    mine = deployed_from(os.path.realpath(outdir)) if outdir else []  # '': the reader names it
    if len(mine) != 1:
        return None
    ident = mine[0]
    sd = open_state(ident.name, create=False)
    try:
        if sd is None or not stat.S_ISDIR(os.lstat(sd.path(DEPLOYED)).st_mode):  # the chain to it is root's alone
            return None
    except FileNotFoundError:
        return None
    lab = load_lab(sd.path(DEPLOYED))
    lab = lab.renamed(ident.name) if lab.name != ident.name else lab
    return replace(lab, outdir=Path(ident.outdir))


# --- which lab a command acts on ----------------------------------------------------------


def _other_outdir(ident: Identity, outdir: str, destroying: bool = False) -> LabError:
    fix = (f"to remove lab {ident.name}, name it alone: railonly lab destroy --lab {ident.name}" if destroying else
           f"deploy this OUTDIR under another name: railonly lab deploy {outdir} --lab-name {ident.name}-2;"
           f" or remove the other lab: railonly lab destroy --lab {ident.name}")
    return LabError(outdir, f"lab {ident.name} is deployed from {ident.outdir}, not from this OUTDIR: not touched", fix)


def bind(lab, lab_name: str | None = None, deploying: bool = False):
    """The Lab as deployed: renamed to the name it was deployed under (``--lab-name``,
    or the recorded identity of this OUTDIR). LabError (exit 2) when the name belongs to
    a lab deployed from another OUTDIR: nothing of it is touched."""
    out = str(lab.outdir)
    if lab_name:
        _lab_name(lab_name, "--lab-name")
        lab = lab.renamed(lab_name) if lab_name != lab.name else lab
    else:
        mine = deployed_from(out)
        if len(mine) > 1:
            raise LabError(out, f"is deployed as {len(mine)} labs ({', '.join(i.name for i in mine)})",
                           f"name one: --lab-name {mine[0].name}" if deploying else f"name one: --lab {mine[0].name}")
        if mine and mine[0].name != lab.name:
            lab = lab.renamed(mine[0].name)
    ident = read_identity(lab.name)
    if ident is not None and ident.outdir != out:
        raise _other_outdir(ident, out)
    if deploying:
        clash = sorted(ns for ns in (n.netns for n in lab.nodes.values()) if ns in claims_of_others(lab.name))
        if clash:
            others = claims_of_others(lab.name)
            raise LabError(out, f"namespace {clash[0]} of lab {lab.name} is also a namespace of lab {others[clash[0]]}"
                           f" ({len(clash)} in all): deploying would take it over", "rename the lab: "
                           f"railonly lab deploy {out} --lab-name OTHER-NAME, or rename its nodes")
    return lab


def for_destroy(outdir: str | None, lab_name: str | None) -> Identity:
    """What ``lab destroy`` removes: the recorded identity named by ``--lab`` or by the
    OUTDIR's path (the OUTDIR need not be readable, or even exist, any more); an OUTDIR
    deployed before identities were recorded falls back to its topology's nodes."""
    if lab_name:
        _lab_name(lab_name, "--lab")
        ident = read_identity(lab_name)
        if ident is not None and outdir and ident.outdir != os.path.realpath(outdir):
            raise _other_outdir(ident, os.path.realpath(outdir), destroying=True)
        return ident or Identity(lab_name, "", (), recorded=False)
    assert outdir is not None
    real = os.path.realpath(outdir)
    mine = deployed_from(real)
    if len(mine) > 1:
        raise LabError(real, f"is deployed as {len(mine)} labs ({', '.join(i.name for i in mine)})",
                       f"destroy each: railonly lab destroy --lab {mine[0].name}")
    if mine:
        return mine[0]
    from ..lab import load_lab

    lab = load_lab(outdir)  # nothing recorded for this path: its topology names the lab
    try:
        ident = read_identity(lab.name)
    except LabError:  # an unreadable record (a symlink, not root's): the topology's nodes, the record named by destroy
        return identity_of(lab)
    if ident is not None and ident.outdir != str(lab.outdir):
        raise _other_outdir(ident, str(lab.outdir), destroying=True)
    return ident or identity_of(lab)
