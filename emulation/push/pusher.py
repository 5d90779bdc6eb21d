"""`railonly push`: generated configs onto switches over SSH with netmiko, with dry-run diffs.

SONiC (netmiko ``linux``: community SONiC logs in to bash; netmiko's
``dell_sonic``/``edgecore_sonic`` drive vendor Klish CLIs, not bash):

1. read the running state: ``show runningconfiguration all`` (config DB as
   JSON) and ``vtysh -c 'show running-config'``; diff against the candidate;
2. upload config_db.json and the FRR files as base64 here-docs into
   /tmp/railonly-push/ and verify them with ``sha256sum`` (no SCP: see
   netns/switch_shell.py for why; it works the same on a real switch's bash);
3. ``sudo cp`` them to /etc/sonic/ and /etc/sonic/frr/, ``sudo config reload -y``;
4. confirm: read the running state back; every pushed table/key/field must be
   in the running config DB and every pushed FRR statement in FRR's running
   config (FRR elides some defaults, listed in FRR_ELIDED).

EOS (netmiko ``arista_eos``): ``configure session railonly-<hash>``,
``rollback clean-config`` (the session starts empty, so the config replaces
the running one), the config lines, ``show session-config diffs``, then
``commit``; any ``% `` error from a line or an empty-handed commit aborts the
session (``abort``) and the running config is untouched.

``dry_run`` connects, reads, diffs, changes nothing. Devices run in a bounded
thread pool; a failure is a :class:`DeviceResult`, never an exception that
stops the others. Secrets never reach results: every text passes
:meth:`Credentials.redact`.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import json
import logging
import os
import re
import shlex
import socket
import stat
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from railonly.fabric.outdir.rollout_rules import frr_statements  # noqa: F401  (re-exported: tests and callers)
from railonly.fabric.outdir_layout import CONFIG_DB, FRR_CONF, SONIC_CONFIG_DB_PATH, SONIC_FILES, STARTUP_CONFIG

from .targets import Device

# paramiko logs a failed SSH handshake (a port that does not speak SSH) with its traceback from
# its own thread, which Python's last-resort handler printed on stderr beside the one-line
# result push gives for that device
logging.getLogger("paramiko").addHandler(logging.NullHandler())

STAGE = "/tmp/railonly-push"
MAX_CONFIG = 64 * 1024 * 1024  # one switch's config file
RC_MARK = "RAILONLY_RC="
HEREDOC_TAG = "RAILONLY_EOF"

class PushFailed(Exception):
    """One device's push failed at a named step (the message is for the user)."""


@dataclass
class Credentials:
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    key_file: str | None = None
    insecure: bool = False  # do not check host keys

    def __repr__(self) -> str:  # never print the password, even in a debugger or log
        return f"Credentials(username={self.username!r}, password={'***' if self.password else None}, key_file={self.key_file!r})"

    def redact(self, text: str) -> str:
        if self.password:
            text = text.replace(self.password, "***")
        return text

    @classmethod
    def from_env(cls, key_file: str | None = None, insecure: bool = False, env=os.environ) -> "Credentials":
        return cls(env.get("RAILONLY_SSH_USER") or None, env.get("RAILONLY_SSH_PASSWORD") or None,
                   key_file or env.get("RAILONLY_SSH_KEY") or None, insecure)


@dataclass
class DeviceResult:
    device: str
    platform: str
    ok: bool
    changed: bool | None = None  # None: unknown (failed before diffing)
    diff: str = ""
    message: str = ""
    seconds: float = 0.0
    steps: list[str] = field(default_factory=list)  # what was done, for the report
    mark: str = ""  # hitless | disruptive (docs/push.md); "" when nothing changes
    wave: int = 0


# --- candidate files and diffs ----------------------------------------------------


def candidate(configs_dir: Path, device: Device) -> dict[str, str]:
    """{file name: text} to push, read from OUTDIR/configs/<device>/ without
    following a symlink (a config file that points at /etc/shadow is refused,
    never sent to a switch)."""
    from railonly.fabric.outdir.reader import OutdirReader

    d = Path(configs_dir) / device.name
    try:
        st = os.lstat(d)
    except OSError:
        st = None
    if st is None or not stat.S_ISDIR(st.st_mode):
        raise PushFailed(f"no generated configs in {d}" + (" (it is not a plain directory)" if st else ""))
    tree = OutdirReader(str(d))  # UntrustedFile (exit 2) for a symlink or a special file
    if device.platform == "eos":
        if not tree.exists(STARTUP_CONFIG):
            raise PushFailed(f"{d / STARTUP_CONFIG} is missing (is {device.name} an EOS switch?)")
        return {STARTUP_CONFIG: tree.read_text(STARTUP_CONFIG, limit=MAX_CONFIG)}
    if not tree.exists(CONFIG_DB):
        raise PushFailed(f"{d / CONFIG_DB} is missing (is {device.name} a SONiC switch?)")
    # only the files a SONiC switch reads (never whatever else the folder holds)
    return {name: text for name in sorted(SONIC_FILES) if (text := tree.read_text(name, limit=MAX_CONFIG)) is not None}


def _has_command(text: str) -> bool:
    """Whether an EOS or FRR config holds a command: not only blank lines, '!' comments and 'end'."""
    return any((stmt := line.strip()) and not stmt.startswith("!") and stmt != "end" for line in text.splitlines())


def unfit_problems(configs_dir: Path, device: Device, files: dict[str, str]) -> list:
    """Why the candidate `files` (see :func:`candidate`) must not be sent at all, judged by the
    readback parsers validate uses: a file with no command, a config that names no hostname or
    another switch's, what the parser finds wrong (an EOS config cut short, without 'end').
    EOS is pushed as `rollback clean-config` plus the file: an empty one wipes the switch."""
    from railonly.fabric.devices.readback.eos import parse_startup_config
    from railonly.fabric.devices.readback.sonic import parse_config_db
    from railonly.fabric.input.jsonsource import parse_json
    from railonly.fabric.input.problems import Problem

    d = Path(configs_dir) / device.name
    fix = "recompile the design into OUTDIR (railonly compile DESIGN.yml -o OUTDIR); push sends the compiled files"
    out: list[Problem] = []
    empty = [name for name, text in sorted(files.items()) if name != CONFIG_DB and not _has_command(text)]
    for name in empty:
        what = "wipe the switch's config (rollback clean-config)" if name == STARTUP_CONFIG else "remove its routing"
        out.append(Problem("", f"is empty (no command): pushing it would {what}", fix, None, str(d / name)))
    if device.platform == "eos":
        if empty:
            return out
        main_file = STARTUP_CONFIG
        facts = parse_startup_config(files[STARTUP_CONFIG], STARTUP_CONFIG, device.name).facts
        where = "'hostname' line"
    else:
        main_file = CONFIG_DB
        doc = parse_json(files[CONFIG_DB], str(d / CONFIG_DB))  # UntrustedFile (exit 2) when not JSON
        if doc == {}:
            return out + [Problem("", "is empty (no table): pushing it would leave the switch unconfigured", fix, None,
                                  str(d / CONFIG_DB))]
        frr = files.get(FRR_CONF)
        facts = parse_config_db(doc, frr, CONFIG_DB, FRR_CONF if frr is not None else None, device.name).facts
        where = "DEVICE_METADATA.localhost.hostname"
    if facts.hostname is None or facts.hostname == "":
        out.append(Problem("", f"names no hostname (its {where} is missing), so it is not {device.name}'s config", fix, None,
                           str(d / main_file)))
    elif facts.hostname != device.name:
        out.append(Problem("", f"is the config of {facts.hostname!r} (its {where}), not of {device.name}", fix, None,
                           str(d / main_file)))
    out += [Problem("", problem, fix, None, str(d / main_file)) for problem in facts.problems]
    return out


def _json_lines(obj) -> list[str]:
    return json.dumps(obj, indent=4, sort_keys=True).splitlines()


def unified(a: list[str], b: list[str], name: str, device: str) -> str:
    return "".join(
        line + "\n" for line in difflib.unified_diff(a, b, f"{device}:{name} (running)", f"{device}:{name} (candidate)", lineterm="")
    )


def eos_lines(text: str) -> list[str]:
    return [ln.rstrip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("!") and ln.strip() != "end"]


def _missing_db(pushed: dict, running: dict) -> list[str]:
    """Table|key|field of the pushed config DB that the running one lacks or differs in."""
    miss = []
    for table, keys in pushed.items():
        rt = running.get(table)
        if not isinstance(keys, dict) or not isinstance(rt, dict):
            if rt != keys:
                miss.append(table)
            continue
        for key, fields in keys.items():
            rk = rt.get(key)
            if rk is None:
                miss.append(f"{table}|{key}")
            elif isinstance(fields, dict):
                miss += [f"{table}|{key}|{f}" for f, v in fields.items() if rk.get(f) != v]
    return miss


# --- connections ---------------------------------------------------------------------


def _explain(exc: BaseException, device: Device) -> str:
    from netmiko.exceptions import NetmikoAuthenticationException, NetmikoTimeoutException
    import paramiko

    where = device.where
    if isinstance(exc, ConnectionRefusedError):
        return f"cannot connect to {where}: connection refused (is sshd running there?)"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return f"cannot connect to {where}: timed out"
    if isinstance(exc, OSError) and not isinstance(exc, paramiko.SSHException) and exc.errno is not None:
        return f"cannot connect to {where}: {exc.strerror or exc}"
    if isinstance(exc, NetmikoAuthenticationException):
        return f"authentication failed at {where} (check RAILONLY_SSH_USER / RAILONLY_SSH_PASSWORD / --key)"
    if isinstance(exc, paramiko.BadHostKeyException):
        return f"host key of {where} does not match known_hosts: refusing to connect (possible impersonation)"
    if isinstance(exc, paramiko.SSHException) and "known_hosts" in str(exc):
        return (f"host key of {where} is not in known_hosts: refusing to connect "
                f"(add it with ssh-keyscan, or pass --insecure-no-host-key-check)")
    if isinstance(exc, NetmikoTimeoutException):
        return f"timed out talking to {where}: {str(exc).splitlines()[0] if str(exc) else 'no prompt'}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__} at {where}: {text[0] if text else ''}"


def connect(device: Device, creds: Credentials, timeout: float = 10.0):
    """A netmiko connection to the device (socket opened inside its namespace if it has one)."""
    from netmiko import ConnectHandler

    sock = _open_socket(device, timeout)
    key = creds.key_file or device.key_file  # --key / RAILONLY_SSH_KEY win over the lab's key
    known = device.known_hosts
    params = dict(
        device_type="arista_eos" if device.platform == "eos" else "linux",
        # The name host keys are looked up under: the lab records each switch
        # under its namespace name, since every lab sshd listens on 127.0.0.1.
        host=device.host_alias or device.host,
        port=device.port,
        username=device.username or creds.username or os.environ.get("USER") or "admin",
        password=creds.password or "",
        use_keys=bool(key), key_file=key, allow_agent=False,
        ssh_strict=not creds.insecure,
        system_host_keys=not creds.insecure and not known,
        alt_host_keys=bool(known) and not creds.insecure, alt_key_file=known or "",
        conn_timeout=timeout, auth_timeout=timeout, banner_timeout=timeout,
        fast_cli=True, sock=sock,
    )
    try:
        return ConnectHandler(**params)
    except BaseException:
        sock.close()
        raise


def _open_socket(device: Device, timeout: float) -> socket.socket:
    if device.netns and not os.path.exists(f"/run/netns/{device.netns}"):
        raise PushFailed(f"cannot connect to {device.where}: namespace {device.netns} does not exist (is the lab deployed?)")

    def make() -> socket.socket:
        return socket.create_connection((device.host, device.port), timeout=timeout)

    if not device.netns:
        return make()
    # a switch in a namespace: the socket is created inside it (and keeps it), through the runtime's door
    from ..runtime.registry import get_runtime

    return (device.door or get_runtime().door()).call_in(device.netns, make)


# --- SONiC -----------------------------------------------------------------------------


def _cmd(conn, command: str, timeout: float = 60.0) -> str:
    return conn.send_command(command, read_timeout=timeout, strip_prompt=True, strip_command=True)


def _cmd_rc(conn, command: str, timeout: float = 60.0) -> tuple[int, str]:
    out = _cmd(conn, f"{command}; echo {RC_MARK}$?", timeout)
    m = re.search(rf"{RC_MARK}(\d+)", out)
    text = out[: m.start()] if m else out
    return (int(m.group(1)) if m else -1), text.strip()


def _sonic_running(conn) -> tuple[dict, str]:
    rc, out = _cmd_rc(conn, "show runningconfiguration all")
    if rc != 0:
        raise PushFailed(f"reading the running config failed: {out[:200]}")
    try:
        db = json.loads(out)
    except ValueError:
        raise PushFailed(f"'show runningconfiguration all' did not print JSON: {out[:120]!r}") from None
    rc, frr = _cmd_rc(conn, "vtysh -c 'show running-config'")
    return db, (frr if rc == 0 else "")


def _sonic_diff(device: Device, files: dict[str, str], running: dict, cand_db: dict, frr: str) -> str:
    """The running config against the candidate, the config DBs as the push compares them
    (rollout_rules.image_aligned)."""
    diff = unified(_json_lines(running), _json_lines(cand_db), CONFIG_DB, device.name)
    frr_files = {k: v for k, v in files.items() if k != CONFIG_DB}
    if frr_files:
        cand = frr_statements("\n".join(frr_files.values()))
        diff += unified(frr_statements(frr), cand, "frr (statements)", device.name)
    return diff


def _upload(conn, name: str, text: str, timeout: float) -> None:
    data = text.encode()
    b64 = base64.encodebytes(data).decode()  # 76-character lines: under any tty's line limit
    conn.write_channel(f"base64 -d > {STAGE}/{name} <<'{HEREDOC_TAG}'\n{b64}{HEREDOC_TAG}\n")
    conn.read_until_pattern(pattern=re.escape(conn.base_prompt) + r"\s*[$#]", read_timeout=timeout)
    want = hashlib.sha256(data).hexdigest()
    out = _cmd(conn, f"sha256sum {STAGE}/{name}")
    if want not in out:
        raise PushFailed(f"upload of {name} did not arrive intact (sha256 mismatch: {out.strip()[:80]})")


def _nothing_to_apply(res: DeviceResult, dry_run: bool, changed: bool | None = None) -> bool:
    """After the diff: record it, and say whether to stop here (dry run, or in sync)."""
    res.changed = bool(res.diff) if changed is None else changed
    if dry_run:
        res.message = (f"differs from the candidate ({res.mark}; dry run: nothing changed)" if res.changed
                       else "in sync (dry run)")
        return True
    if not res.changed:
        res.message = "in sync: nothing to push"
        return True
    return False


@dataclass
class Options:
    """How a rollout applies one switch (docs/push.md)."""

    drain_wait: float = 3.0  # seconds after a drain (or undrain) for the neighbours to move traffic
    drain_confirm: float = 20.0  # seconds for the drained switch to stop forwarding
    verify_timeout: float = 60.0  # seconds for BGP, interfaces and BFD to come back as before
    commit_timer: str = "00:05:00"  # EOS: rolled back unless confirmed within this
    reload_timeout: float = 300.0


def _vtysh(conn, cmds: list[str], what: str) -> str:
    arg = " ".join("-c " + shlex.quote(c) for c in cmds)
    rc, out = _cmd_rc(conn, f"vtysh {arg}")
    if rc != 0 or re.search(r"^% ", out, re.M):
        raise PushFailed(f"{what} failed: {(out.strip().splitlines() or ['exit ' + str(rc)])[-1][:200]}")
    return out


def _bgp_state(conn, platform: str) -> dict[str, tuple[str, int]]:
    """{peer: (state, prefixes received)}; {} when the switch runs no BGP."""
    if platform == "eos":
        out = _cmd(conn, "show ip bgp summary | json")
        try:
            peers = json.loads(out[out.index("{"):])["vrfs"]["default"]["peers"]
        except (ValueError, KeyError):
            return {}
        return {p: (v.get("peerState", ""), int(v.get("prefixReceived", 0))) for p, v in peers.items()}
    rc, out = _cmd_rc(conn, "vtysh -c 'show bgp summary json'")
    try:
        doc = json.loads(out[out.index("{"):]) if rc == 0 else {}
    except ValueError:
        return {}
    peers = (doc.get("ipv4Unicast") or {}).get("peers") or {}
    return {p: (v.get("state", ""), int(v.get("pfxRcd", 0) or 0)) for p, v in peers.items()}


def _interfaces_up(conn, platform: str) -> set[str]:
    if platform == "eos":
        return set()  # the session diff and BGP tell; EOS's interface table is not parsed here
    rc, out = _cmd_rc(conn, "show interfaces status")
    up = set()
    for line in out.splitlines() if rc == 0 else []:
        w = line.split()
        if len(w) >= 4 and w[0].startswith("Ethernet") and w[2] == "up":
            up.add(w[0])
    return up


def _bfd_up(conn, platform: str) -> set[str]:
    """BFD peers whose session is up (none on EOS: its BFD state is read through BGP)."""
    if platform == "eos":
        return set()
    rc, out = _cmd_rc(conn, "vtysh -c 'show bfd peers json'")
    try:
        peers = json.loads(out[out.index("["):]) if rc == 0 and "[" in out else []
    except ValueError:
        return set()
    return {str(p.get("peer")) for p in peers if isinstance(p, dict) and p.get("status") == "up"}


@dataclass
class Health:
    bgp: dict[str, tuple[str, int]]
    up: set[str]
    bfd: set[str]  # BFD peers up


def health(conn, platform: str) -> Health:
    return Health(_bgp_state(conn, platform), _interfaces_up(conn, platform), _bfd_up(conn, platform))


def verify(conn, platform: str, before: Health, timeout: float, gone: set[str] = frozenset()) -> list[str]:
    """Poll until the switch is as healthy as `before` (docs/push.md: BGP sessions and
    prefix counts, cabled interfaces, BFD); returns what is still wrong at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        now = health(conn, platform)
        wrong = []
        for peer, (state, pfx) in sorted(before.bgp.items()):
            if peer in gone or state.lower() != "established":
                continue
            st, n = now.bgp.get(peer, ("absent", 0))
            if st.lower() != "established":
                wrong.append(f"BGP {peer} {st}")
            elif n < pfx:
                wrong.append(f"BGP {peer} {n} prefixes, {pfx} before")
        wrong += [f"{i} down" for i in sorted(before.up - now.up)]
        # as BGP: a BFD session up before must be up again; a new peer's session (a neighbour
        # the change adds, not yet reachable) is not required
        wrong += [f"BFD {p} down" for p in sorted(before.bfd - now.bfd - set(gone))]
        if not wrong or time.monotonic() > deadline:
            return wrong
        time.sleep(0.5)


def _saved_frr(conn, files: dict[str, str]) -> str:
    """The FRR files the switch starts from (what was pushed last)."""
    names = " ".join(f"/etc/sonic/frr/{n}" for n in files if n != CONFIG_DB)
    rc, out = _cmd_rc(conn, f"cat {names}") if names else (1, "")
    return out if rc == 0 else ""


def _sonic_apply(conn, device: Device, files: dict[str, str], ch, res: DeviceResult, opts: Options, what: str,
                 drained: bool = False, reached: list[str] | None = None,
                 applied: list[list[str]] | None = None) -> None:
    """Apply change `ch` (to `files`): a patch and vtysh, or a full reload where needed.
    `reached` gets "frr" once a reload started (FRR may then run any of the candidate),
    `applied` each vtysh command FRR took, so a failed apply's roll back undoes only what
    was reached.
    A reload of a drained switch starts it drained (the drain is in the FRR file it loads,
    as SONiC keeps TSA across a reload); :func:`_reinstall` puts the plain file back."""
    from railonly.fabric.outdir.rollout_rules import bgp_asn, drain_config, vtysh_commands

    rc, out = _cmd_rc(conn, f"mkdir -p {STAGE}")
    if rc != 0:
        raise PushFailed(f"mkdir {STAGE} failed: {out[:200]}")
    staged = dict(files)
    if ch.reload_why and drained and FRR_CONF in files:
        staged[FRR_CONF] = files[FRR_CONF] + drain_config(files[FRR_CONF], bgp_asn(files[FRR_CONF]))
    for name, text in staged.items():
        _upload(conn, name, text, timeout=60.0)
    reached = reached if reached is not None else []
    if ch.reload_why:
        _install(conn, files)
        reached.append("frr")
        rc, out = _cmd_rc(conn, "sudo config reload -y", timeout=opts.reload_timeout)
        if rc != 0:
            raise PushFailed(f"'config reload -y' failed ({rc}): {out.strip().splitlines()[-1] if out.strip() else 'no output'}")
        res.steps.append(f"{what}: config reload -y, because {'; '.join(ch.reload_why)}"
                         + (" (starting drained)" if staged != files else ""))
        if staged != files:
            _upload(conn, FRR_CONF, files[FRR_CONF], timeout=60.0)
            _install(conn, {FRR_CONF: files[FRR_CONF]})  # the next start is undrained
        return
    if ch.patch:
        _upload(conn, "patch.json", json.dumps(ch.patch, indent=1, sort_keys=True) + "\n", timeout=60.0)
        rc, out = _cmd_rc(conn, f"sudo config apply-patch {STAGE}/patch.json", timeout=opts.reload_timeout)
        if rc != 0:
            raise PushFailed(f"'config apply-patch' failed: {out.strip().splitlines()[-1] if out.strip() else rc}")
        res.steps.append(f"{what}: config apply-patch ({len(ch.patch)} operation(s))")
    cmds = vtysh_commands(ch.frr_add, ch.frr_remove)
    applied = applied if applied is not None else []
    for c in cmds:
        _vtysh(conn, c, "vtysh " + " / ".join(c[1:]))
        applied.append(c)
    if cmds:
        res.steps.append(f"{what}: vtysh, {len(cmds)} statement(s)")
        if any(" neighbor " in f" {s} " for s in ch.frr_add + ch.frr_remove if not _hitless(s)):
            _vtysh(conn, ["clear bgp *"], "clear bgp *")  # new session settings take effect now, while drained
            res.steps.append(f"{what}: clear bgp * (session settings changed)")
    _install(conn, files)  # the startup files: a later reload keeps this config


def _hitless(statement: str) -> bool:
    from railonly.fabric.outdir.rollout_rules import hitless_line

    return hitless_line(statement)


def _install(conn, files: dict[str, str]) -> None:
    for name in files:
        dst = SONIC_CONFIG_DB_PATH if name == CONFIG_DB else f"/etc/sonic/frr/{name}"
        rc, out = _cmd_rc(conn, f"sudo cp {STAGE}/{name} {dst}")
        if rc != 0:
            raise PushFailed(f"installing {name} as {dst} failed: {out[:200]}")


def _drain(conn, device: Device, frr_text: str, on: bool, res: DeviceResult, opts: Options,
           local: tuple[str, ...] = ()) -> None:
    """Drain (on) or undrain the switch; a drain is confirmed by the kernel's forwarding
    counter, less the packets of `local` (the interfaces of the switch's own GPUs, which a
    drain cannot move: a leaf forwards its GPUs' traffic drained or not)."""
    from railonly.fabric.outdir.rollout_rules import bgp_asn, drain_commands

    if device.platform == "eos":
        conn.send_config_set(["maintenance", "unit System", "quiesce" if on else "no quiesce"],
                             error_pattern=_EOS_ERROR, read_timeout=60)
        res.steps.append("drain: maintenance unit System quiesce" if on else "undrain: no quiesce")
    else:
        cmds = drain_commands(frr_text, bgp_asn(frr_text), on)
        for c in cmds:
            _vtysh(conn, c, "drain" if on else "undrain")
        _vtysh(conn, ["clear bgp * soft out"], "clear bgp * soft out")
        res.steps.append(("drain: AS-path prepend x3 + GRACEFUL_SHUTDOWN on " if on else "undrain: ")
                         + f"{len(cmds)} outbound route-map(s)")
    time.sleep(opts.drain_wait)
    if on and device.platform != "eos":
        still = _forwarding_stopped(conn, opts.drain_confirm, local)
        if still is None:
            res.steps.append("drain: confirmed, nothing forwarded for 1 s"
                             + (f" (but its own GPUs' traffic on {', '.join(local)})" if local else ""))
        else:
            _drain(conn, device, frr_text, False, res, Options(drain_wait=0))
            raise PushFailed(f"drain did not move traffic away: {still} packets forwarded in the last second "
                             f"after {opts.drain_confirm:.0f} s; undrained, nothing applied")


def _forwarded(conn, local: tuple[str, ...] = ()) -> int | None:
    """The kernel's forwarded packets less every packet received or sent on a `local`
    interface: traffic to or from the switch's own GPUs is not transit a drain moves."""
    rc, out = _cmd_rc(conn, "cat /proc/net/snmp" + (" /proc/net/dev" if local else ""))
    lines = [ln.split() for ln in out.splitlines() if ln.startswith("Ip:")]
    if rc != 0 or len(lines) < 2 or "ForwDatagrams" not in lines[0]:
        return None
    try:
        n = int(lines[1][lines[0].index("ForwDatagrams")])
        seen = set()
        for ln in out.splitlines():  # /proc/net/dev: "  NAME: rx_bytes rx_packets ... tx_bytes tx_packets ..."
            name, sep, rest = ln.partition(":")
            if sep and name.strip() in local:
                f = rest.split()
                n -= int(f[1]) + int(f[9])
                seen.add(name.strip())
        return n if seen == set(local) else None
    except (ValueError, IndexError):
        return None


def _forwarding_stopped(conn, timeout: float, local: tuple[str, ...] = ()) -> int | None:
    """None once the switch's kernel forwarded nothing for a second but its own GPUs'
    traffic (`local`: see :func:`_forwarded`; the lab forwards in the kernel; a real switch
    forwards in its ASIC, leaves this counter still, and the drain wait is what holds);
    else the packets forwarded in the last second."""
    deadline = time.monotonic() + timeout
    last = _forwarded(conn, local)
    while True:
        time.sleep(1.0)
        now = _forwarded(conn, local)
        if last is None or now is None or now <= last:
            return None
        if time.monotonic() > deadline:
            return now - last
        last = now


def _local_interfaces(*dbs: dict) -> tuple[str, ...]:
    """The L3 interfaces of a switch's own GPUs (its VLAN interfaces) in config DBs."""
    return tuple(sorted({k.split("|")[0] for db in dbs for k in (db.get("VLAN_INTERFACE") or {})}))


def push_sonic(conn, device: Device, files: dict[str, str], dry_run: bool, res: DeviceResult,
               opts: Options | None = None) -> None:
    from railonly.fabric.outdir.rollout_rules import classify, image_aligned, undo_statements

    opts = opts or Options()
    db, frr = _sonic_running(conn)
    res.steps.append("read running config")
    # Tables the candidate does not list are left alone (a real switch holds more than we generate),
    # and so is what the image keeps in those it lists (its init_cfg.json defaults)
    old_db, new_db = image_aligned(db, json.loads(files[CONFIG_DB]))
    res.diff = _sonic_diff(device, files, old_db, new_db, frr)
    saved = _saved_frr(conn, files) or frr
    old = {CONFIG_DB: json.dumps(old_db), FRR_CONF: saved}
    ch = classify(device.name, "sonic", old, {**files, CONFIG_DB: json.dumps(new_db)})
    res.mark = ch.mark if ch.changed else ""
    if not ch.changed:
        res.diff = ""
    if ch.changed and db.get("MGMT_INTERFACE") and "MGMT_INTERFACE" not in new_db:
        # the candidate becomes the startup config (config reload loads it now, a reboot later):
        # without the table the switch comes up with no static management address
        raise PushFailed(f"the switch has a static management address (MGMT_INTERFACE "
                         f"{', '.join(sorted(db['MGMT_INTERFACE']))[:80]}) and the candidate none: installed as its "
                         "startup config it would lose that address at its next reload. Add management: to the "
                         "design and recompile; nothing was changed")
    if _nothing_to_apply(res, dry_run, ch.changed):
        if dry_run and ch.changed:
            res.steps.append(f"would apply ({ch.mark}): {ch.apply_method()}")
        return
    before = health(conn, "sonic")
    cand_frr = "\n".join(v for k, v in files.items() if k != CONFIG_DB)
    if ch.disruptive:
        _drain(conn, device, frr, True, res, opts, _local_interfaces(db, json.loads(files[CONFIG_DB])))
    reached: list[str] = []
    applied: list[list[str]] = []
    try:
        _sonic_apply(conn, device, files, ch, res, opts, "apply", drained=ch.disruptive, reached=reached,
                     applied=applied)
        wrong = verify(conn, "sonic", before, opts.verify_timeout)
        if wrong:
            raise PushFailed(f"verify failed: {', '.join(wrong[:4])}")
        res.steps.append("verify: " + _health_text(before))
    except PushFailed as exc:
        back = {CONFIG_DB: json.dumps(db, indent=4, sort_keys=True) + "\n", FRR_CONF: saved}
        try:
            # undo what the failed apply did, not what it meant to do: a refused patch changed
            # nothing (undoing it from the candidate removed keys that were never added, failed,
            # and left the switch drained); the config DB as it runs now, FRR as far as it got:
            # the candidate's after a reload, else the vtysh statements it took
            now_db, _ = _sonic_running(conn)
            cand = json.loads(files[CONFIG_DB])
            now = {CONFIG_DB: json.dumps({t: v for t, v in now_db.items() if t in db or t in cand}),
                   **{k: v for k, v in (files if "frr" in reached else {FRR_CONF: saved}).items() if k != CONFIG_DB}}
            undo = classify(device.name, "sonic", now, back)
            if "frr" not in reached:
                undo.frr_add, undo.frr_remove = undo_statements(ch.frr_add, ch.frr_remove, applied)
            _sonic_apply(conn, device, back, undo, res, opts, "roll back", drained=ch.disruptive)
            wrong = verify(conn, "sonic", before, opts.verify_timeout)
            state = "back on its previous config" + (f" (still wrong: {', '.join(wrong[:3])})" if wrong else ", healthy")
        except PushFailed as exc2:
            state = f"ROLL BACK FAILED, left drained: {exc2}"
        if ch.disruptive and not state.startswith("ROLL"):
            _drain(conn, device, saved, False, res, opts)
        raise PushFailed(f"{exc}; {state}") from None
    if ch.disruptive:
        _drain(conn, device, cand_frr, False, res, opts)
    res.message = f"applied ({ch.mark}); running state confirmed"


def _health_text(h: Health) -> str:
    est = sum(1 for s, _ in h.bgp.values() if s.lower() == "established")
    return f"{est} BGP session(s) and their prefixes as before, {len(h.up)} interface(s) up"


# --- EOS ---------------------------------------------------------------------------------

_EOS_ERROR = r"^% "


def _drops_login(running: str, candidate: str, login: str | None) -> bool:
    """Whether the switch has a local user `login` (whom push logs in as) that the candidate has not."""
    if not login:
        return False
    user = re.compile(rf"^username {re.escape(login)}(\s|$)", re.M)
    return bool(user.search(running)) and not user.search(candidate)


def session_name(text: str) -> str:
    return "railonly-" + hashlib.sha256(text.encode()).hexdigest()[:8]


def push_eos(conn, device: Device, files: dict[str, str], dry_run: bool, res: DeviceResult,
             opts: Options | None = None) -> None:
    """A configure session with its diff, `commit timer`, verify, then `configure session
    NAME commit` to confirm; a failed verify aborts the pending session (EOS rolls back,
    as it would when the timer ran out)."""
    from netmiko.exceptions import ConfigInvalidException

    from railonly.fabric.outdir.rollout_rules import classify

    opts = opts or Options()
    conn.enable()
    text = files[STARTUP_CONFIG]
    running = conn.send_command("show running-config", read_timeout=60)
    res.steps.append("read running config")
    res.diff = unified(eos_lines(running), eos_lines(text), "running-config", device.name)
    ch = classify(device.name, "eos", {STARTUP_CONFIG: running}, files)
    res.mark = ch.mark if ch.changed else ""
    if not ch.changed:
        res.diff = ""
    login = getattr(conn, "username", None)
    if ch.changed and _drops_login(running, text, login):
        raise PushFailed(f"the candidate has no 'username {login}', the local user this push logs in as: the "
                         "session replaces the whole config (rollback clean-config), so committing it would lock "
                         f"that login out. Add {login} to management.users in the design (sha512 or ssh_key) and "
                         "recompile, or push as a user the design has; nothing was changed")
    if _nothing_to_apply(res, dry_run, ch.changed):
        return
    name = session_name(text)
    lines = ["rollback clean-config"] + eos_lines(text)
    prompt = re.escape(conn.base_prompt[:16]) + r"[^\n]*#"  # "sw#", "sw(config-s-railon)#"
    before = health(conn, "eos")
    if ch.disruptive:
        _drain(conn, device, running, True, res, opts)
    try:
        conn.send_config_set(lines, config_mode_command=f"configure session {name}", exit_config_mode=False,
                             error_pattern=_EOS_ERROR, read_timeout=60)
        res.steps.append(f"configure session {name}: {len(lines)} lines")
        diffs = conn.send_command("show session-config diffs", expect_string=prompt, read_timeout=60)
        res.steps.append("show session-config diffs")
        if diffs.strip():
            res.diff = diffs.strip() + "\n"
        out = conn.send_command(f"commit timer {opts.commit_timer}", expect_string=prompt, read_timeout=120)
        if re.search(_EOS_ERROR, out, re.M):
            raise PushFailed(f"commit of session {name} failed: {out.strip()[:200]}")
        res.steps.append(f"commit timer {opts.commit_timer}")
    except (ConfigInvalidException, PushFailed) as exc:
        conn.send_command("abort", expect_string=prompt, read_timeout=30)
        res.steps.append("abort")
        if ch.disruptive:
            _drain(conn, device, running, False, res, opts)
        first = str(exc).strip().splitlines()
        raise PushFailed(f"rejected in session {name}, aborted (running config untouched): "
                         f"{first[-1] if first else exc}") from None
    wrong = verify(conn, "eos", before, opts.verify_timeout)
    if wrong:
        conn.send_command(f"configure session {name} abort", expect_string=prompt, read_timeout=60)
        res.steps.append(f"verify failed; configure session {name} abort (rolled back)")
        if ch.disruptive:
            _drain(conn, device, running, False, res, opts)
        raise PushFailed(f"verify failed: {', '.join(wrong[:4])}; session {name} rolled back, previous config running")
    res.steps.append("verify: " + _health_text(before))
    out = conn.send_command(f"configure session {name} commit", expect_string=prompt, read_timeout=120)
    if re.search(_EOS_ERROR, out, re.M):
        raise PushFailed(f"confirming session {name} failed: {out.strip()[:200]} (the commit timer rolls it back)")
    res.steps.append(f"configure session {name} commit (confirmed)")
    if ch.disruptive:
        _drain(conn, device, running, False, res, opts)
    res.message = f"committed session {name} ({ch.mark}), confirmed after verify"


# --- many devices ------------------------------------------------------------------------


def push_device(device: Device, configs_dir: Path, creds: Credentials, dry_run: bool,
                timeout: float = 10.0, opts: Options | None = None) -> DeviceResult:
    t0 = time.perf_counter()
    res = DeviceResult(device.name, device.platform, ok=False)
    conn = None
    try:
        files = candidate(configs_dir, device)
        conn = connect(device, creds, timeout)
        res.steps.append("connected")
        if device.platform == "eos":
            push_eos(conn, device, files, dry_run, res, opts)
        else:
            push_sonic(conn, device, files, dry_run, res, opts)
        res.ok = True
    except PushFailed as exc:
        res.message = str(exc)
    except Exception as exc:  # netmiko/paramiko/socket failures become a result
        res.message = _explain(exc, device)
    finally:
        if conn is not None:
            try:
                conn.disconnect()
            except Exception:
                pass
    res.message = creds.redact(res.message)
    res.diff = creds.redact(res.diff)
    res.seconds = time.perf_counter() - t0
    return res


class Progress:
    """One stderr line per finished device, plus a start line; quiet when disabled."""

    def __init__(self, total: int, stream=None, enabled: bool = True):
        self.total, self.done = total, 0
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.lock = threading.Lock()

    def start(self, text: str) -> None:
        if self.enabled:
            print(f"push: {text}", file=self.stream, flush=True)

    def finished(self, r: DeviceResult) -> None:
        with self.lock:
            self.done += 1
            if self.enabled:
                state = "ok" if r.ok else "FAILED"
                print(f"push: [{self.done:>{len(str(self.total))}}/{self.total}] {r.device}: {state} "
                      f"({r.seconds:.1f}s) {r.message}", file=self.stream, flush=True)


def push_all(devices: list[Device], configs_dir: Path, creds: Credentials, *, dry_run: bool = False,
             workers: int = 8, progress: Progress | None = None, timeout: float = 10.0,
             push_one: Callable[..., DeviceResult] = push_device) -> list[DeviceResult]:
    """Push to every device with at most ``workers`` at once; results in device order."""
    progress = progress or Progress(len(devices), enabled=False)
    progress.start(f"{len(devices)} device(s), {min(workers, len(devices))} at a time"
                   + (" (dry run: nothing will change)" if dry_run else ""))
    results: dict[str, DeviceResult] = {}
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(devices)))) as ex:
        futs = {ex.submit(push_one, d, configs_dir, creds, dry_run, timeout): d for d in devices}
        for f in as_completed(futs):
            d = futs[f]
            try:
                r = f.result()
            except Exception as exc:  # a bug in one device's push must not lose the others
                r = DeviceResult(d.name, d.platform, False, message=creds.redact(f"internal error: {exc}"))
            results[d.name] = r
            progress.finished(r)
    return [results[d.name] for d in devices]


def summary_table(results: list[DeviceResult], dry_run: bool) -> str:
    rows = [("DEVICE", "PLATFORM", "RESULT", "CHANGES" if dry_run else "CHANGED", "SECONDS", "DETAIL")]
    for r in results:
        changed = "-" if r.changed is None else ("yes" if r.changed else "no")
        rows.append((r.device, r.platform, "ok" if r.ok else "FAILED", changed, f"{r.seconds:.2f}", r.message))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row[:5], widths)) + "  " + row[5] for row in rows]
    failed = sum(not r.ok for r in results)
    lines.append(f"{len(results)} device(s): {len(results) - failed} ok, {failed} failed"
                 + ("; dry run, nothing was changed" if dry_run else ""))
    return "\n".join(line.rstrip() for line in lines) + "\n"
