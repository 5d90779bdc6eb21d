"""An OUTDIR is untrusted input: safe reading and allow-list checks, pure.

A pull request can edit every file in an OUTDIR, and `validate`, `lab deploy`
and `push` run as root on it. This module is the one place that decides what
of an OUTDIR may be used; `validate` reports its findings and the lab runtime
and `push` call the same functions before they deploy or push anything.

Reading (no symlink is ever followed, no special file opened, sizes bounded)
-----------------------------------------------------------------------------

``reader = OutdirReader(outdir)``
    Resolves OUTDIR itself once (it may be a symlink: that is the user's own
    choice on the command line) and keeps that path as ``reader.root``.
    Raises :class:`UntrustedFile` when it is not a directory.
``reader.exists(rel) -> bool``
``reader.read_bytes(rel, limit=MAX_FILE_BYTES) -> bytes | None``
``reader.read_text(rel) -> str | None``
``reader.read_json(rel) -> object | None``
``reader.read_yaml(rel) -> (data, lines) | None``  (lines: {key path: line})
``reader.read_fabric(rel="fabric.json") -> Fabric | None``
    fabric.json as the typed graph (railonly.fabric.graph.fabric_json.parse: every
    field's type checked, InputError naming file and field).
    `rel` is a path relative to OUTDIR ("configs/leaf0/frr.conf"). Every
    component is opened with O_NOFOLLOW relative to the previous one, so a
    symlink anywhere on the way is refused, named, never followed. ``None``
    means the file does not exist. A symlink, FIFO, device, socket or
    directory, a file over the limit, text that is not UTF-8, malformed
    JSON/YAML (or YAML with aliases, deep nesting, NaN...) raise
    :class:`UntrustedFile` (an InputError: exit 2) naming the file.
``unsafe_entries(outdir, under="", files=None) -> list[Problem]``
    Every symlink and special file below OUTDIR (or below OUTDIR/under, e.g.
    ".lab"), found with lstat only. Empty list: the tree holds only regular
    files and directories. `files` (a dict) receives every regular file found,
    as :func:`walk` names it: one walk of the tree for validate's checks.

Allow-list checks (pure: text or parsed data in, a list of Problems out)
------------------------------------------------------------------------

Each returns ``list[railonly.fabric.input.problems.Problem]`` naming the file (as
given, relative to OUTDIR), the line when known, what is refused and a fix;
an empty list means the file holds only what the compiler emits.

``check_exec_line(command) -> str | None``
    One clab ``exec`` command: ``None`` when it is one of the exact forms the
    compiler emits (ip link/addr/route, a bridge, a per-namespace ``net.*``
    sysctl from :data:`SYSCTL_ALLOWED`), otherwise why not.
``check_clab(data, file, lines=None)``
    A parsed ``<name>.clab.yml``: lab name, prefix, node names and kinds,
    binds and startup-config (only the node's own config files, relative, no
    ``..``), every exec line through :func:`check_exec_line`, link endpoints,
    no other node keys (no ``cmd``, ``entrypoint``, ``env``...).
``check_fabric(fab, file)``
    fabric.json read back (``reader.read_fabric``): lab, node and port names are safe as namespace, file and
    interface names (they become paths and netns names).
``check_frr(text, file, run_dir=None)``
    frr.conf: only command keywords the compiler emits; no ``log file`` (the
    lab runtime gives FRR its log path; with `run_dir`, a ``log file`` below
    it is tolerated), no ``dump``, ``script``, ``agentx``, ``rpki``, ``line``;
    the hostname is a plain name.
``check_eos(text, file)``
    EOS startup-config: only top-level commands the compiler emits; never
    ``bash``, ``event-handler``, ``daemon``, ``alias``, ``schedule``...;
    the hostname is a plain name.
``check_config_db(doc, file, text=None)``
    SONiC config_db.json: the hostname is a plain name, no text with control
    or non-ASCII characters (`text`, the JSON source, makes a clean file fast).
``check_switch_texts(where, db_text, frr, eos, run_dir=None, repeated=None) -> (list[Problem], doc, table texts)``
    The three above for one switch folder's files as already read (None: absent), and
    its config_db.json parsed: validate reads each file once for every check (and
    decodes a table that repeats an earlier switch's text once, `RepeatedMembers`).
``lab_files(reader) -> (fabric_rel, clab_rel)``
    The fabric.json (lab/fabric.json for a lab slice) and the one
    ``<name>.clab.yml`` the lab reads.
``check_outdir(outdir, run_dir=None, require_lab=True, fabric=None, scanned=False) -> list[Problem]``
    All of the above for every file the lab and push use: the one
    ``<name>.clab.yml`` (`require_lab=False`: may be absent), fabric.json and
    each switch's config_db.json, frr.conf and startup-config, the same again
    under lab/ for a lab slice, plus :func:`unsafe_entries` over the whole
    tree (when that finds anything, only those are returned: nothing else is
    read). Raises UntrustedFile for an unreadable or malformed file, returns
    the allow-list findings.

A caller that runs as root should refuse to act when ``check_outdir`` returns
anything (exit 2, print each ``Problem.format()``).
"""

from __future__ import annotations

import errno
import ipaddress
import os
import re
import stat

from ..outdir_layout import (CLAB_SUFFIX, CONFIG_DB, CONFIGS, FRR_CONF, MANIFEST, SONIC_CONTAINER_CONFIG_DB,
                             SONIC_FRR_CONF_PATH, SONIC_SPLIT_FRR, STARTUP_CONFIG, switch_file)
from ..design import management as _mgmt
from ..design.design import NAME_PATTERN
from ..design.lab_slice import SLICE_DIR
from ..graph import fabric_json
from ..graph.model import Fabric
from ..input.jsonsource import RepeatedMembers, UntrustedFile, parse_json, parse_json_members  # noqa: F401 (the reader's names)
from ..input.problems import InputError, Problem, short
from ..input.yamlsource import Limits, compose_checked, construct, file_kind, read_at_most
from ..outputs import clab_exec
from ..outputs.clab import NODE_STARTUP_CONFIG, endpoint_problems

MAX_FILE_BYTES = 256 << 20  # fabric.json of a 32k-GPU design is tens of MB
MAX_LINE = 4096
OUTDIR_YAML_LIMITS = Limits(plain_text=False, max_bytes=MAX_FILE_BYTES, max_depth=16, max_aliases=0, max_nodes=50_000_000,
                            max_scalar=MAX_LINE, max_int_digits=20, fast=True)

LAB_NAME = re.compile(NAME_PATTERN)
NODE_NAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
HOSTNAME = NODE_NAME
# Ethernet0, eth1, hb0, gpu3: valid Linux names; or an EOS breakout subport (Ethernet1/5) of a
# catalog platform, whose lab runs under generic names (fabric/lab_slice.py)
PORT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]{0,14}|Ethernet\d{1,3}/\d{1,2}", re.ASCII)
IFNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,14}")
ENTRY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")  # any file or folder name the compiler writes
_V4 = clab_exec.V4  # a valid IPv4 address (one regex, with the exec grammar)
_PRINTABLE = re.compile(r"[\x20-\x7e]*")
CLAB_KINDS = ("linux", "sonic-vs", "arista_ceos")
CLAB_NODE_KEYS = {"kind", "exec", "binds", NODE_STARTUP_CONFIG, "image"}
CLAB_TOP_KEYS = {"name", "prefix", "mgmt", "topology"}
CLAB_TOPOLOGY_KEYS = {"kinds", "nodes", "links"}
SONIC_BIND_TARGETS = {CONFIG_DB: SONIC_CONTAINER_CONFIG_DB, FRR_CONF: SONIC_FRR_CONF_PATH}

# The clab exec lines: one grammar, defined with the compiler's renderer (outputs/clab_exec.py).
SYSCTL_ALLOWED, SYSCTL_ALLOWED_TEXT, sysctl_allowed = clab_exec.SYSCTL_ALLOWED, clab_exec.SYSCTL_ALLOWED_TEXT, clab_exec.sysctl_allowed

# frr.conf: command keywords (first word of a line) the compiler emits or that
# only shape routing; anything else (dump, script, agentx, rpki, line, password
# ...) is refused. Some keywords are refused in specific forms below.
FRR_KEYWORDS = frozenset({
    "!", "frr", "hostname", "log", "service", "ip", "ipv6", "route-map", "match", "set", "router", "bgp",
    "no", "neighbor", "address-family", "network", "maximum-paths", "exit-address-family", "exit", "end",
    "interface", "description", "redistribute", "timers", "bfd", "aggregate-address", "peer", "profile",
    "on-match", "continue", "vrf", "exit-vrf", "segment-routing", "receive-interval", "transmit-interval",
})
_FRR_PLAIN = FRR_KEYWORDS - {"log", "match", "service", "frr", "hostname"}  # accepted in any form
FRR_LOG_FORMS = re.compile(r"log (syslog( \w+)?|timestamp precision \d|commands)", re.ASCII)
FRR_MATCH_REFUSED = ("script",)  # `match script` runs a Lua script
EOS_TOP_KEYWORDS = frozenset({
    "!", "service", "hostname", "spanning-tree", "ip", "ipv6", "no", "route-map", "interface", "vlan", "qos",
    "router", "end", "peer-filter", "transceiver", "platform", "hardware", "vrf", "priority-flow-control",
})  # and the management heads of EOS_MGMT_FORMS (and the EOS_MGMT_SSH block), in their forms only
# Lines EOS prints in every running-config of a containerlab cEOS (its defaults), which
# a config taken back from a device carries: accepted exactly as printed, although
# their heads are refused in every other form.
EOS_PRINTED_DEFAULTS = frozenset({"no aaa root", "management api http-commands"})
# Never valid on any line (at any indentation): they run commands or programs.
EOS_REFUSED = frozenset({
    "bash", "event-handler", "daemon", "alias", "schedule", "action", "trigger", "exec", "command",
    "boot", "aaa", "username", "enable", "management", "copy", "run", "event-monitor", "load-interval-script",
})
# The management plane (docs/management.md): these top-level heads change who may log in
# or what the switch talks to, so each is accepted only in the exact forms railonly
# writes and EOS prints, with the values railonly's design checks allow; any other
# form of them is refused. A `nopassword` user must have an SSH key line too.
_ROLE = "|".join(_mgmt.ROLES)
_VRF = _mgmt.VRF_NAME
EOS_MGMT_FORMS: dict[str, tuple[re.Pattern, ...]] = {
    "username": (
        re.compile(rf"username ({_mgmt.USER_NAME})( privilege (?:1[0-5]|[0-9]))?( role (?:{_ROLE}))? secret sha512 {_mgmt.SHA512_CRYPT}"),
        re.compile(rf"username ({_mgmt.USER_NAME})( privilege (?:1[0-5]|[0-9]))?( role (?:{_ROLE}))? nopassword"),
        re.compile(rf"username ({_mgmt.USER_NAME}) ssh-key {_mgmt.SSH_KEY}"),
    ),
    "logging": (re.compile(rf"logging vrf {_VRF} host {_V4}"),),
    "ntp": (re.compile(rf"ntp server vrf {_VRF} {_V4}( iburst)?( local-interface Management1)?"),),
    "tacacs-server": (re.compile(rf"tacacs-server host {_V4} vrf {_VRF}"),),
    "management": (re.compile(r"management api (gnmi|http-commands)"),),
}
# `management ssh` (docs/management.md): with a management VRF, EOS's SSH server must be
# enabled in it, or nothing answers on the management address. Accepted only as the block
# railonly writes (and EOS prints, `   !` aside): that VRF's server on, no other line in it
# (no authentication, cipher, access-group, known-hosts or shutdown line).
EOS_MGMT_SSH = "management ssh"
EOS_MGMT_SSH_BODY = re.compile(rf"   vrf {_VRF}\n      no shutdown")


LINK_HINT = "railonly never follows links inside an OUTDIR: recompile, or replace the link with a regular file"


_GIVE_OUTDIR = "give the folder railonly compile wrote (railonly compile DESIGN.yml -o OUTDIR)"


def outdir_problem(outdir: str) -> UntrustedFile | None:
    """Why a command's OUTDIR argument is not a folder to read (None when it is one; a link to
    one is the user's own choice): every command that takes an OUTDIR says it the same way.
    An empty argument is a mistake, never the current folder."""
    if not outdir:
        return UntrustedFile("''", "an OUTDIR path is needed, and this one is empty", _GIVE_OUTDIR)
    try:
        mode = os.stat(outdir).st_mode
    except FileNotFoundError:
        return UntrustedFile(outdir, "no such directory", _GIVE_OUTDIR)
    except OSError as exc:
        return UntrustedFile(outdir, f"cannot be read: {exc.strerror}", _GIVE_OUTDIR)
    if stat.S_ISDIR(mode):
        return None
    if stat.S_ISREG(mode):
        parent = os.path.dirname(outdir) or "."
        inside = os.path.isfile(os.path.join(parent, MANIFEST))
        return UntrustedFile(outdir, "is a file, not an OUTDIR folder",
                             f"give the folder it is in, {parent}" if inside else _GIVE_OUTDIR)
    return UntrustedFile(outdir, f"is {file_kind(mode)}, not an OUTDIR folder", _GIVE_OUTDIR)


class OutdirReader:
    """Reads files below OUTDIR without following any symlink (see module doc)."""

    def __init__(self, outdir: str):
        refused = outdir_problem(outdir)
        if refused is not None:
            raise refused
        self.given = outdir
        self.root = os.path.realpath(outdir)  # resolved once: the argument itself may be a link

    def where(self, rel: str) -> str:
        return os.path.join(self.given, rel)

    def _open_path(self, rel: str, folder: bool = False) -> int | None:
        """A descriptor of `rel` (a regular file, or a folder with `folder`), opened one
        component at a time with O_NOFOLLOW below OUTDIR; None when absent."""
        parts = rel.split("/")
        if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise UntrustedFile(self.where(rel), "is not a plain path inside OUTDIR", "recompile the design")
        flags_dir = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        flags_file = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        fd = os.open(self.root, flags_dir)
        try:
            for i, part in enumerate(parts):
                last = i == len(parts) - 1
                try:
                    nxt = os.open(part, flags_file if last and not folder else flags_dir, dir_fd=fd)
                except FileNotFoundError:
                    return None
                except OSError as exc:
                    raise self._refusal(fd, part, "/".join(parts[: i + 1]), exc) from None
                os.close(fd)
                fd = nxt
            if not folder:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise UntrustedFile(self.where(rel), f"is {file_kind(st.st_mode)}, not a regular file",
                                        "recompile the design")
            out, fd = fd, -1
            return out
        finally:
            if fd >= 0:
                os.close(fd)

    def _refusal(self, dir_fd: int, part: str, sub: str, exc: OSError) -> UntrustedFile:
        """Why `part` (at `sub`) could not be opened: a link, not a folder, or unreadable."""
        try:
            mode = os.lstat(part, dir_fd=dir_fd).st_mode
        except OSError:
            return UntrustedFile(self.where(sub), f"cannot be read: {exc.strerror}", "")
        if stat.S_ISLNK(mode):
            return UntrustedFile(self.where(sub), "is a symbolic link; refused, not followed", LINK_HINT)
        if exc.errno == errno.ENOTDIR:
            return UntrustedFile(self.where(sub), f"is {file_kind(mode)}, not a directory", "recompile the design")
        return UntrustedFile(self.where(sub), f"cannot be read: {exc.strerror}", "")

    def exists(self, rel: str) -> bool:
        """True for a regular file at `rel` (UntrustedFile for a link or special file)."""
        fd = self._open_path(rel)
        if fd is None:
            return False
        os.close(fd)
        return True

    def read_bytes(self, rel: str, limit: int = MAX_FILE_BYTES) -> bytes | None:
        fd = self._open_path(rel)
        if fd is None:
            return None
        try:
            if os.fstat(fd).st_size > limit:
                raise UntrustedFile(self.where(rel), f"is larger than the limit of {limit:,} bytes", "recompile the design")
            data = read_at_most(fd, limit)
        except OSError as exc:
            raise UntrustedFile(self.where(rel), f"cannot be read: {exc.strerror}", "") from None
        finally:
            os.close(fd)
        if len(data) > limit:
            raise UntrustedFile(self.where(rel), f"is larger than the limit of {limit:,} bytes", "recompile the design")
        return data

    def listdir(self, rel: str, limit: int = 1_000_000) -> list[str] | None:
        """Sorted names in the folder `rel` (None when absent), opened like a file: no link
        followed on the way; at most `limit` names, each a plain file or folder name."""
        fd = self._open_path(rel, folder=True)
        if fd is None:
            return None
        try:
            names = []
            with os.scandir(fd) as it:
                for entry in it:
                    if len(names) >= limit:
                        raise UntrustedFile(self.where(rel), f"holds more than {limit:,} entries", "recompile the design")
                    if not ENTRY_NAME.fullmatch(entry.name):
                        raise UntrustedFile(self.where(f"{rel}/{entry.name!r}"), "has a name the compiler never writes",
                                            "recompile the design")
                    names.append(entry.name)
            return sorted(names)
        finally:
            os.close(fd)

    def read_text(self, rel: str, limit: int = MAX_FILE_BYTES) -> str | None:
        data = self.read_bytes(rel, limit)
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UntrustedFile(self.where(rel), f"is not UTF-8 text (byte {exc.start:,})", "recompile the design") from None

    def read_json(self, rel: str, limit: int = MAX_FILE_BYTES):
        text = self.read_text(rel, limit)
        return None if text is None else parse_json(text, self.where(rel))

    def read_yaml(self, rel: str, limits: Limits = OUTDIR_YAML_LIMITS):
        text = self.read_text(rel, limits.max_bytes)
        return None if text is None else parse_yaml(text, self.where(rel), limits)

    def read_fabric(self, rel: str = fabric_json.FILE) -> Fabric | None:
        """The typed fabric graph of fabric.json at `rel` (None when absent): the one way an
        OUTDIR's fabric.json is read (graph/fabric_json.py parses it; InputError names each field)."""
        text = self.read_text(rel)
        return None if text is None else fabric_json.parse(text, self.where(rel))


def parse_yaml(text: str, file: str, limits: Limits = OUTDIR_YAML_LIMITS):
    """(data, {key path: line}) of YAML from OUTDIR; malformed is UntrustedFile."""
    try:
        node, lines, _ = compose_checked(text, file, limits)
        return construct(node, file), lines
    except InputError as exc:
        p = exc.problems[0]
        more = f" (and {len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
        raise UntrustedFile(file, f"is not acceptable YAML: {p.message}{more}", "recompile the design", p.line) from None


def unsafe_entries(outdir: str, under: str = "", files: dict[str, str] | None = None,
                   folders: set[str] | None = None) -> list[Problem]:
    """Every symlink and special file below OUTDIR[/under], by lstat only. `files`: filled
    with {path relative to OUTDIR: "file"} for every regular file listed, what :func:`walk`
    says of a tree with no finding (validate walks the tree once, for every check);
    `folders`: filled with every folder's relative path, as :func:`walk` fills its own."""
    root = os.path.realpath(outdir)
    out: list[Problem] = []
    stack = [under.strip("/")] if under else [""]
    if under:  # the starting folder itself must not be a link (scandir would list its target)
        try:
            st = os.lstat(os.path.join(root, stack[0]))
        except FileNotFoundError:
            return out
        except OSError as exc:
            return [Problem("", f"cannot be read: {exc.strerror}", "", None, os.path.join(outdir, stack[0]))]
        if not stat.S_ISDIR(st.st_mode):
            return [Problem("", f"is {file_kind(st.st_mode)}; refused", LINK_HINT, None,
                            os.path.join(outdir, stack[0]))]
    from ..input import limits

    cap, seen = limits.FILES.value, 0
    while stack:
        rel = stack.pop()
        try:
            with os.scandir(os.path.join(root, rel) if rel else root) as it:
                entries = sorted(it, key=lambda e: e.name)
            seen += len(entries)
            if seen > cap:  # a tree no compile writes: refused before anything of it is read
                return [Problem(
                    "", f"holds more than {cap:,} files and folders, the cap of an OUTDIR ({limits.FILES.env})",
                    f"recompile the design into a fresh OUTDIR, or raise the cap: {limits.FILES.env}={seen * 2}",
                    None, outdir)]
        except FileNotFoundError:
            continue
        except NotADirectoryError:
            st = os.lstat(os.path.join(root, rel))
            if not stat.S_ISREG(st.st_mode):
                out.append(Problem("", f"is {file_kind(st.st_mode)}; refused", LINK_HINT, None,
                                   os.path.join(outdir, rel)))
            continue
        except OSError as exc:
            out.append(Problem("", f"cannot be listed: {exc.strerror}", "", None, os.path.join(outdir, rel)))
            continue
        for e in entries:
            sub = f"{rel}/{e.name}" if rel else e.name
            # the entry's type from the directory listing: no lstat for the 20k plain files
            if e.is_dir(follow_symlinks=False):
                stack.append(sub)
                if folders is not None:
                    folders.add(sub)
                continue
            if e.is_file(follow_symlinks=False):
                if files is not None:
                    files[sub] = "file"
                continue
            st = e.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                stack.append(sub)
                if folders is not None:
                    folders.add(sub)
            elif stat.S_ISREG(st.st_mode):
                if files is not None:
                    files[sub] = "file"
            else:
                what = file_kind(st.st_mode)
                if stat.S_ISLNK(st.st_mode):
                    try:
                        what += f" (to {short(os.readlink(e.path), 80)})"
                    except OSError:
                        pass
                    hint = LINK_HINT
                else:
                    hint = "remove it; an OUTDIR holds regular files and folders only"
                out.append(Problem("", f"is {what}; refused, never followed or opened", hint, None,
                                   os.path.join(outdir, sub)))
    return sorted(out, key=lambda p: p.file or "")


# --- allow-list checks --------------------------------------------------------------


_PRINTABLE_LINES = re.compile(r"[\x20-\x7e\n]*")


def _text_problems(text: str, file: str) -> list[Problem]:
    """Lines with control or non-ASCII characters, or absurdly long."""
    if _PRINTABLE_LINES.fullmatch(text) and (len(text) <= MAX_LINE or max(map(len, text.split("\n"))) <= MAX_LINE):
        return []  # a clean file: one scan, not a match per line
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        if len(line) > MAX_LINE:
            out.append(Problem("", f"line of {len(line):,} characters (limit {MAX_LINE:,})",
                               "the compiler never writes such lines; recompile", n, file))
        elif not _PRINTABLE.fullmatch(line):
            bad = next(c for c in line if not "\x20" <= c <= "\x7e")
            out.append(Problem("", f"holds the character {bad!r}, which the compiler never writes",
                               "recompile; configs are plain ASCII", n, file))
        if len(out) >= 20:
            break
    return out


def check_exec_line(command: object) -> str | None:
    """None when `command` is an exec form the compiler emits, else why not."""
    if not isinstance(command, str):
        return f"must be text, got {short(repr(command))}"
    try:
        clab_exec.parse(command)
    except clab_exec.ExecLineError as exc:
        if str(exc).startswith("sysctl "):
            return str(exc)
        return f"{short(repr(command), 120)} is {exc}"
    return None


def _clab_line(lines: dict | None, path: str) -> int | None:
    if not lines:
        return None
    while path:
        if path in lines:
            return lines[path]
        path = path.rpartition(".")[0] if "." in path else ""
    return None


def check_clab(data: object, file: str, lines: dict[str, int] | None = None) -> list[Problem]:
    out: list[Problem] = []

    def bad(path: str, message: str, hint: str = "recompile the design; railonly writes this file") -> None:
        out.append(Problem(path, message, hint, _clab_line(lines, path), file))

    if not isinstance(data, dict):
        bad("", "is not a containerlab topology (the top level is not a mapping)")
        return out
    for key in data:
        if key not in CLAB_TOP_KEYS:
            bad(str(key), f"unknown top-level key {short(repr(key))}")
    name = data.get("name")
    if not isinstance(name, str) or not LAB_NAME.fullmatch(name):
        bad("name", f"lab name {short(repr(name))} is not a design name (lowercase letters, digits, '-')")
    if data.get("prefix", "clab") != "clab":
        bad("prefix", f"prefix must be 'clab', got {short(repr(data.get('prefix')))}")
    mgmt = data.get("mgmt")
    if mgmt is not None:
        if not isinstance(mgmt, dict) or set(mgmt) - {"network", "ipv4-subnet"}:
            bad("mgmt", "mgmt may hold only network and ipv4-subnet")
        else:
            net = mgmt.get("network")
            if net is not None and not (isinstance(net, str) and re.fullmatch(r"railonly-" + LAB_NAME.pattern, net)):
                bad("mgmt.network", f"network {short(repr(net))} is not railonly-<lab name>")
            sub = mgmt.get("ipv4-subnet")
            if sub is not None:
                try:
                    ipaddress.IPv4Network(sub)
                except (ValueError, TypeError):
                    bad("mgmt.ipv4-subnet", f"{short(repr(sub))} is not an IPv4 subnet")
    topo = data.get("topology")
    if not isinstance(topo, dict):
        bad("topology", "has no topology mapping")
        return out
    for key in topo:
        if key not in CLAB_TOPOLOGY_KEYS:
            bad(f"topology.{key}", f"unknown key {short(repr(key))} in topology (defaults, groups ... are never emitted)")
    kinds = topo.get("kinds") or {}
    if not isinstance(kinds, dict):
        bad("topology.kinds", "kinds must be a mapping")
        kinds = {}
    for kind, spec in kinds.items():
        if kind not in CLAB_KINDS:
            bad(f"topology.kinds.{kind}", f"kind {short(repr(kind))} is not one of {', '.join(CLAB_KINDS)}")
        elif not isinstance(spec, dict) or set(spec) - {"image"} or not isinstance(spec.get("image"), str) \
                or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._/:@-]{0,255}", spec["image"]):
            bad(f"topology.kinds.{kind}", "a kind may set only image, an image reference")
    nodes = topo.get("nodes") or {}
    if not isinstance(nodes, dict):
        bad("topology.nodes", "nodes must be a mapping")
        nodes = {}
    for nname, spec in nodes.items():
        where = f"topology.nodes.{nname}"
        if not isinstance(nname, str) or not NODE_NAME.fullmatch(nname):
            bad(where, f"node name {short(repr(nname))} is not a plain name (lowercase letters, digits, '-')")
            continue
        if not isinstance(spec, dict):
            bad(where, "a node must be a mapping")
            continue
        for key in spec:
            if key not in CLAB_NODE_KEYS:
                bad(f"{where}.{key}", f"node key {short(repr(key))} is never emitted by the compiler (refused: it could run or mount anything)")
        kind = spec.get("kind")
        if kind not in CLAB_KINDS:
            bad(f"{where}.kind", f"kind {short(repr(kind))} is not one of {', '.join(CLAB_KINDS)}")
        if "image" in spec and not (isinstance(spec["image"], str)
                                    and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._/:@-]{0,255}", spec["image"])):
            bad(f"{where}.image", "image must be an image reference")
        cmds = spec.get("exec") or []
        if not isinstance(cmds, list):
            bad(f"{where}.exec", "exec must be a list of commands")
            cmds = []
        if cmds and kind != "linux":
            bad(f"{where}.exec", f"exec on a {kind} node is never emitted by the compiler")
        for i, cmd in enumerate(cmds):
            why = check_exec_line(cmd)
            if why:
                bad(f"{where}.exec[{i}]", why, "only the compiler's own exec forms run; recompile the design")
        _check_node_files(spec, nname, kind, where, bad)
    links = topo.get("links") or []
    if not isinstance(links, list):
        bad("topology.links", "links must be a list")
    else:
        for msg in endpoint_problems({"topology": {"nodes": nodes, "links": links}}):
            m = re.match(r"(topology\.links\[\d+\])", msg)
            bad(m.group(1) if m else "topology.links", msg)
    return out


def _config_path_ok(path: object, node: str, leaf: str) -> bool:
    """configs/<node>/<leaf> or lab/configs/<node>/<leaf>: relative, the node's own file."""
    return isinstance(path, str) and path in (switch_file(node, leaf), f"{SLICE_DIR}/{switch_file(node, leaf)}")


def _check_node_files(spec: dict, node: str, kind, where: str, bad) -> None:
    binds = spec.get("binds")
    if binds is not None:
        if kind != "sonic-vs" or not isinstance(binds, list):
            bad(f"{where}.binds", "binds are emitted only for sonic-vs nodes, as a list")
        else:
            for i, b in enumerate(binds):
                src, _, dst = b.partition(":") if isinstance(b, str) else ("", "", "")
                leaf = src.rsplit("/", 1)[-1]
                if SONIC_BIND_TARGETS.get(leaf) != dst or not _config_path_ok(src, node, leaf):
                    bad(f"{where}.binds[{i}]",
                        f"bind {short(repr(b), 120)} is not one the compiler emits "
                        f"({switch_file(node, CONFIG_DB)}:{SONIC_BIND_TARGETS[CONFIG_DB]} "
                        f"or {switch_file(node, FRR_CONF)}:{SONIC_BIND_TARGETS[FRR_CONF]})")
    sc = spec.get(NODE_STARTUP_CONFIG)
    if sc is not None and (kind != "arista_ceos" or not _config_path_ok(sc, node, STARTUP_CONFIG)):
        bad(f"{where}.{NODE_STARTUP_CONFIG}", f"{NODE_STARTUP_CONFIG} {short(repr(sc), 120)} is not {switch_file(node, STARTUP_CONFIG)}")


def check_fabric(fab: Fabric, file: str) -> list[Problem]:
    """Names in a fabric read back (fabric_json.parse) that are unsafe as a lab, namespace,
    file or interface name."""
    out: list[Problem] = []

    def bad(path: str, message: str) -> None:
        out.append(Problem(path, message, "recompile the design; names become namespaces and paths", None, file))

    name = fab.design.name
    if not LAB_NAME.fullmatch(name):
        bad("name", f"lab name {short(repr(name))} is not a design name (lowercase letters, digits, '-')")
    for i, n in enumerate(fab.nodes):  # the compiler's order: GPUs, HB nodes, switches
        if not NODE_NAME.fullmatch(n.name):
            bad(f"nodes[{i}].name", f"node name {short(repr(n.name))} is not a plain name (lowercase letters, digits, '-')")
        if len(out) >= 50:
            return out
    def bad_address(path: str, message: str) -> None:
        out.append(Problem(path, message, "recompile the design; railonly writes this file", None, file))

    roles = {n.name: n.role for n in fab.nodes}
    # 260,000 link ends at 32k GPUs name a few thousand nodes and ports: each name is
    # matched once (a pure test of the text), every end still judged
    plain_nodes = {name for name in roles if NODE_NAME.fullmatch(name)}
    plain_ports: set[str] = set()
    for i, lk in enumerate(fab.links):
        for end, e in (("a", lk.a), ("b", lk.b)):
            if e.port not in plain_ports:
                if PORT_NAME.fullmatch(e.port):
                    plain_ports.add(e.port)
                else:
                    bad(f"links[{i}].{end}.port", f"port {short(repr(e.port))} is not an interface name (letters and digits, at most 15, or an EOS breakout port such as Ethernet1/5)")
            if e.node not in plain_nodes and not NODE_NAME.fullmatch(e.node):
                bad(f"links[{i}].{end}.node", f"node {short(repr(e.node))} is not a plain name")
        gpu_end = None if lk.kind != "rail" else \
            "a" if roles.get(lk.a.node) == "gpu" else "b" if roles.get(lk.b.node) == "gpu" else None
        if gpu_end and getattr(lk, gpu_end).ip is None:
            bad_address(f"links[{i}].{gpu_end}.ip", f"GPU {short(repr(getattr(lk, gpu_end).node))} has no address on"
                        " its rail NIC; every check and flow of the lab starts from it")
        if len(out) >= 50:
            break
    return out


def _hostname_problem(value: object, file: str, line: int | None, path: str = "") -> list[Problem]:
    if isinstance(value, str) and HOSTNAME.fullmatch(value):
        return []
    return [Problem(path, f"hostname {short(repr(value))} is not a plain name (lowercase letters, digits, '-')",
                    "recompile; the hostname is the fabric.json node name", line, file)]


def check_frr(text: str, file: str, run_dir: str | None = None) -> list[Problem]:
    out = _text_problems(text, file)
    hostnames = 0
    for n, raw in enumerate(text.split("\n"), 1):
        first = raw.split(None, 1)  # most lines need their head only
        if not first or first[0] in _FRR_PLAIN or first[0].startswith("!"):
            continue
        words = raw.split()
        head = words[0]
        if head not in FRR_KEYWORDS:
            out.append(Problem("", f"FRR command {short(repr(head))} is never emitted by the compiler; refused",
                               "remove the line or recompile (FRR runs as root in the lab)", n, file))
        elif head == "log" and not FRR_LOG_FORMS.fullmatch(" ".join(words)):
            if words[1:2] == ["file"] and run_dir and len(words) >= 3 and _below(words[2], run_dir):
                continue
            out.append(Problem("", f"{short(' '.join(words), 120)!r}: FRR would write a file where the config says; "
                               "the compiler emits only 'log syslog'",
                               "remove the line; the lab runtime gives FRR its log file", n, file))
        elif head == "match" and len(words) > 1 and words[1] in FRR_MATCH_REFUSED:
            out.append(Problem("", "'match script' runs a Lua script; refused", "remove the line", n, file))
        elif head == "service" and words[1:] != ["integrated-vtysh-config"]:
            out.append(Problem("", f"{short(' '.join(words), 120)!r} is never emitted by the compiler; refused",
                               "remove the line", n, file))
        elif head == "frr" and not re.fullmatch(r"frr (version [0-9][0-9.]{0,15}|defaults (datacenter|traditional))",
                                                " ".join(words)):
            out.append(Problem("", f"{short(' '.join(words), 120)!r} is never emitted by the compiler; refused",
                               "remove the line", n, file))
        elif head == "hostname":
            hostnames += 1
            out += _hostname_problem(" ".join(words[1:]), file, n)
    return out


def _below(path: str, root: str) -> bool:
    path, root = os.path.normpath(path), os.path.normpath(root)
    return os.path.isabs(path) and path.startswith(root.rstrip("/") + "/") and ".." not in path.split("/")


def check_eos(text: str, file: str) -> list[Problem]:
    out = _text_problems(text, file)
    keyless: dict[str, int] = {}  # user with `nopassword` -> its line
    keyed: set[str] = set()
    ssh: tuple[int, list[str]] | None = None  # an open `management ssh` block: its line, its sub-lines

    def close_ssh() -> None:
        if ssh is not None and not EOS_MGMT_SSH_BODY.fullmatch("\n".join(ssh[1])):
            body = " / ".join(x.strip() for x in ssh[1]) or "nothing"
            out.append(Problem("", f"'management ssh' holding {short(body, 100)!r}: this 'management' form is not one "
                               "railonly writes or EOS prints; refused",
                               "recompile; railonly writes only 'vrf <vrf>' / 'no shutdown' in it (docs/management.md)",
                               ssh[0], file))

    for n, raw in enumerate(text.split("\n"), 1):
        words = raw.split()
        if not words or words[0].startswith("!"):
            continue
        if not raw[:1].isspace():
            close_ssh()
            ssh = (n, []) if raw.rstrip() == EOS_MGMT_SSH else None
            if ssh is not None:
                continue
        elif ssh is not None:
            ssh[1].append(raw.rstrip())  # judged as one block when it closes
            continue
        head = words[0].lower()
        if not raw[:1].isspace() and " ".join(words) in EOS_PRINTED_DEFAULTS:
            continue
        if not raw[:1].isspace() and words[0] in EOS_MGMT_FORMS:
            line = raw.rstrip()
            form = next((i for i, f in enumerate(EOS_MGMT_FORMS[words[0]]) if f.fullmatch(line)), None)
            if form is None:
                out.append(Problem("", f"{short(line, 120)!r}: this '{words[0]}' form is not one railonly writes or EOS prints; refused",
                                   "recompile; the accepted forms are in docs/management.md", n, file))
            elif words[0] == "username" and form == 1:
                keyless.setdefault(words[1], n)
            elif words[0] == "username" and form == 2:
                keyed.add(words[1])
            continue
        if head in EOS_REFUSED or (head == "no" and len(words) > 1 and words[1].lower() in EOS_REFUSED):
            out.append(Problem("", f"EOS command {short(repr(words[0]))} runs programs or changes access; refused",
                               "remove the line; the compiler never emits it", n, file))
        elif not raw[:1].isspace() and head not in EOS_TOP_KEYWORDS:
            out.append(Problem("", f"EOS command {short(repr(words[0]))} is never emitted by the compiler; refused",
                               "remove the line or recompile", n, file))
        elif head == "hostname" and not raw[:1].isspace():
            out += _hostname_problem(" ".join(words[1:]), file, n)
    close_ssh()
    for user, n in sorted(keyless.items(), key=lambda x: x[1]):
        if user not in keyed:
            out.append(Problem("", f"user {user!r} has no password and no SSH key: anyone could log in as it; refused",
                               "give the user a SHA-512 secret or an ssh-key line (docs/management.md)", n, file))
    return out


# What could decode to a control or non-ASCII character: an escape of a control character
# or any \u escape (\u00e9 is non-ASCII too), a raw DEL (JSON allows it unescaped) or a
# non-ASCII character; the walk then names it. A text that is ASCII with no backslash and
# no DEL holds none, which str methods tell far faster than this search.
_JSON_ODD = re.compile(r'\\[bfnrtu]|[^\x00-\x7e]')


def _json_plain(text: str) -> bool:
    """True when no JSON string in `text` can decode to a control or non-ASCII character."""
    if text.isascii() and "\\" not in text and "\x7f" not in text:
        return True
    return not _JSON_ODD.search(text)


def check_config_db(doc: object, file: str, text: str | None = None) -> list[Problem]:
    """`text`, when given, is the JSON source: a quick scan of it skips the walk
    over every value when no escape or non-ASCII character occurs at all."""
    if not isinstance(doc, dict):
        return [Problem("", "is not a ConfigDB document (the top level is not an object)", "recompile the design", None, file)]
    out: list[Problem] = []
    meta = doc.get("DEVICE_METADATA")
    host = meta.get("localhost") if isinstance(meta, dict) else None
    if isinstance(host, dict) and "hostname" in host:
        out += _hostname_problem(host["hostname"], file, None, "DEVICE_METADATA.localhost.hostname")
    if text is not None and _json_plain(text):
        return out
    stack = [(doc, "")]
    while stack and len(out) < 20:
        v, path = stack.pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if not _PRINTABLE.fullmatch(k):
                    out.append(Problem(path, f"key {short(repr(k))} holds control or non-ASCII characters",
                                       "recompile the design", None, file))
                stack.append((x, f"{path}.{k}" if path else k))
        elif isinstance(v, list):
            stack.extend((x, f"{path}[{i}]") for i, x in enumerate(v))
        elif isinstance(v, str) and not _PRINTABLE.fullmatch(v):
            out.append(Problem(path, f"value {short(repr(v))} holds control or non-ASCII characters",
                               "recompile the design", None, file))
    return out


def check_outdir(outdir: str, run_dir: str | None = None, require_lab: bool = True,
                 fabric: Fabric | None = None, switch_files: bool = True, scanned: bool = False) -> list[Problem]:
    """Every file the lab (and push) uses, plus the tree scan (see module doc). For validate,
    which reads every switch file anyway: `fabric` is the OUTDIR's own fabric.json as it
    already parsed it (the largest file is not parsed twice), and `switch_files=False` leaves
    that fabric's switch files to it (:func:`check_switch_texts` on the text it read; a lab
    slice's are still checked here); `scanned`: the caller ran :func:`unsafe_entries` over
    OUTDIR and stopped at any finding (the tree is not walked again; every read below opens
    each path component with O_NOFOLLOW all the same)."""
    reader = OutdirReader(outdir)
    out = [] if scanned else unsafe_entries(outdir)
    if out:
        return out  # reading further could meet them; name them first
    clab_rel = None
    try:
        _, clab_rel = lab_files(reader)
    except UntrustedFile:
        if require_lab:
            raise
    if clab_rel is not None:
        data, lines = reader.read_yaml(clab_rel)
        out += check_clab(data, reader.where(clab_rel), lines)
    for base in ("", SLICE_DIR):  # the design's own files, and a lab slice's
        fabric_rel = f"{base}/{fabric_json.FILE}" if base else fabric_json.FILE
        fab = fabric if fabric is not None and not base else reader.read_fabric(fabric_rel)
        if fab is None:
            if not base:
                raise UntrustedFile(reader.where(fabric_rel), "is missing", "give the OUTDIR of railonly compile")
            continue
        out += check_fabric(fab, reader.where(fabric_rel))
        configs = f"{base}/{CONFIGS}" if base else CONFIGS
        if base or switch_files:
            for sw in fab.switches:
                d = f"{configs}/{sw.name}"
                if NODE_NAME.fullmatch(sw.name):
                    out += check_switch_texts(reader.where(d), reader.read_text(f"{d}/{CONFIG_DB}"),
                                              reader.read_text(f"{d}/{FRR_CONF}"),
                                              reader.read_text(f"{d}/{STARTUP_CONFIG}"), run_dir)[0]
    return out


def check_switch_texts(where: str, db_text: str | None, frr: str | None, eos: str | None,
                       run_dir: str | None = None, repeated: RepeatedMembers | None = None
                       ) -> tuple[list[Problem], object, dict[str, str] | None]:
    """The allow-list findings of one switch folder's files as read (None: absent), its
    config_db.json parsed (None when absent) and the text of each of its tables
    (`parse_json_members`, with `repeated`: tables shared with earlier switches' documents,
    to be read only). `where`: the folder as named in messages.
    Malformed JSON raises UntrustedFile."""
    out: list[Problem] = []
    doc = tables = None
    if db_text is not None:
        db_file = os.path.join(where, CONFIG_DB)
        doc, tables = parse_json_members(db_text, db_file, repeated)
        out += check_config_db(doc, db_file, db_text)
    if frr is not None:
        out += check_frr(frr, os.path.join(where, FRR_CONF), run_dir)
    if eos is not None:
        out += check_eos(eos, os.path.join(where, STARTUP_CONFIG))
    return out, doc, tables


def lab_files(reader: OutdirReader) -> tuple[str, str]:
    """(fabric.json, <name>.clab.yml) relative to OUTDIR, the files the lab reads
    (lab/fabric.json for a lab slice)."""
    try:
        names = sorted(e.name for e in os.scandir(reader.root) if e.name.endswith(CLAB_SUFFIX))
    except OSError as exc:
        raise UntrustedFile(reader.given, f"cannot be listed: {exc.strerror}", "") from None
    if len(names) != 1:
        what = "no <name>.clab.yml" if not names else f"{len(names)} .clab.yml files"
        raise UntrustedFile(reader.given, f"holds {what}", "give the OUTDIR of railonly compile (it writes exactly one)")
    return lab_fabric_rel(reader), names[0]


def lab_fabric_rel(reader: OutdirReader) -> str:
    """The lab's fabric.json relative to OUTDIR: lab/fabric.json for a lab slice."""
    sliced = f"{SLICE_DIR}/{fabric_json.FILE}"
    return sliced if reader.exists(sliced) else fabric_json.FILE


def manifest_files(doc: object) -> tuple[dict[str, str] | None, str]:
    """MANIFEST.json's `files` ({path: sha256}) from its decoded document, or (None, why, naming
    the key): validate and diff judge the listing by this one rule (diff took a null hash)."""
    listed = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(listed, dict):
        return None, 'needs "files": {path: sha256}'
    for path, digest in listed.items():
        if not isinstance(digest, str):
            return None, f'files.{short(repr(path))}: {short(repr(digest))} is not a sha256 (needs "files": {{path: sha256}})'
    return listed, ""


def walk(outdir: str, folders: set[str] | None = None) -> dict[str, str]:
    """Relative path -> 'file' | 'symlink' | 'other' of everything under outdir but MANIFEST.json,
    by the directory entries' own types (lstat only where the file system gives none): a
    symlink is named, never followed or descended into. `folders`: filled with every
    folder's relative path."""
    found: dict[str, str] = {}
    stack = [("", outdir)]
    while stack:
        rel_root, path = stack.pop()
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except OSError:  # gone, or not listable: as os.walk, nothing below it is named
            continue
        for e in entries:
            rel = f"{rel_root}/{e.name}" if rel_root else e.name
            try:
                if e.is_symlink():
                    found[rel] = "symlink"
                elif e.is_dir(follow_symlinks=False):
                    stack.append((rel, e.path))
                    if folders is not None:
                        folders.add(rel)
                elif e.is_file(follow_symlinks=False):
                    found[rel] = "file"
                else:
                    found[rel] = "other"
            except OSError:  # gone since the directory was listed
                continue
    found.pop(MANIFEST, None)  # compared, never listed as an artifact of itself
    return found


def switch_file_problems(config_dir: str, platform: str, frr_run_dir: str | None) -> list[Problem]:
    """The allow-list findings (the checks `validate` runs) for every file the switch
    readers would use in config_dir: config_db.json and the FRR file(s) (frr.conf, or the
    split per-daemon files the reader also accepts), or the EOS startup-config. Read
    without following a symlink; malformed is UntrustedFile (exit 2). Deploy, re-programming
    a live switch and push all judge a switch's files by this one function."""
    reader = OutdirReader(config_dir)
    if platform == "eos":
        text = reader.read_text(STARTUP_CONFIG)
        return check_eos(text, reader.where(STARTUP_CONFIG)) if text is not None else []
    out: list[Problem] = []
    db = reader.read_text(CONFIG_DB)
    if db is not None:
        out += check_config_db(parse_json(db, reader.where(CONFIG_DB)), reader.where(CONFIG_DB), db)
    for name in (FRR_CONF, *SONIC_SPLIT_FRR):
        text = reader.read_text(name)
        if text is not None:
            out += check_frr(text, reader.where(name), frr_run_dir)
    return out
