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
import os
import re
import socket
import stat
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .targets import Device

STAGE = "/tmp/railonly-push"
MAX_CONFIG = 64 * 1024 * 1024  # one switch's config file
RC_MARK = "RAILONLY_RC="
HEREDOC_TAG = "RAILONLY_EOF"

# Lines FRR's running-config never shows (or shows from the kernel, not the
# config): with `frr defaults datacenter` these equal the defaults and are
# elided; the forwarding lines mirror sysctls; version/hostname noise comes
# from the daemons (the UTS namespace is shared, so zebra adds the machine's).
FRR_ELIDED = {
    "bgp log-neighbor-changes", "no bgp ebgp-requires-policy", "no ip forwarding", "no ipv6 forwarding",
}
_FRR_SKIP = re.compile(r"^(!.*|end|exit|exit-address-family|exit-vrf|frr version .*|frr defaults .*|"
                       r"Building configuration\.\.\.|Current configuration:?)$")


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
        if not tree.exists("startup-config"):
            raise PushFailed(f"{d / 'startup-config'} is missing (is {device.name} an EOS switch?)")
        return {"startup-config": tree.read_text("startup-config", limit=MAX_CONFIG)}
    if not tree.exists("config_db.json"):
        raise PushFailed(f"{d / 'config_db.json'} is missing (is {device.name} a SONiC switch?)")
    # only the files a SONiC switch reads (never whatever else the folder holds)
    from railonly.fabric.devices.readback.sonic import SWITCH_FILES

    return {name: text for name in sorted(SWITCH_FILES) if (text := tree.read_text(name, limit=MAX_CONFIG)) is not None}


def _json_lines(obj) -> list[str]:
    return json.dumps(obj, indent=4, sort_keys=True).splitlines()


def frr_statements(text: str) -> list[str]:
    """FRR config as sorted 'context > statement' paths: order and comment
    noise-free, so running-config and the file compare by meaning."""
    out, stack = [], []  # stack of (indent, line)
    hostname_seen = False
    for raw in text.splitlines():
        line = raw.rstrip()
        body = line.strip()
        if not body or _FRR_SKIP.match(body) or body in FRR_ELIDED:
            continue
        if body.startswith("hostname "):
            if hostname_seen:
                continue
            hostname_seen = True
        indent = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        out.append(" > ".join([s for _, s in stack] + [body]))
        stack.append((indent, body))
    return sorted(set(out))


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


def _sonic_diff(device: Device, files: dict[str, str], db: dict, frr: str) -> str:
    cand_db = json.loads(files["config_db.json"])
    diff = unified(_json_lines(db), _json_lines(cand_db), "config_db.json", device.name)
    frr_files = {k: v for k, v in files.items() if k != "config_db.json"}
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


def _nothing_to_apply(res: DeviceResult, dry_run: bool) -> bool:
    """After the diff: record it, and say whether to stop here (dry run, or in sync)."""
    res.changed = bool(res.diff)
    if dry_run:
        res.message = "differs from the candidate (dry run: nothing changed)" if res.diff else "in sync (dry run)"
        return True
    if not res.diff:
        res.message = "in sync: nothing to push"
        return True
    return False


def push_sonic(conn, device: Device, files: dict[str, str], dry_run: bool, res: DeviceResult,
               reload_timeout: float = 300.0, confirm_timeout: float = 60.0) -> None:
    db, frr = _sonic_running(conn)
    res.steps.append("read running config")
    res.diff = _sonic_diff(device, files, db, frr)
    if _nothing_to_apply(res, dry_run):
        return
    rc, out = _cmd_rc(conn, f"mkdir -p {STAGE}")
    if rc != 0:
        raise PushFailed(f"mkdir {STAGE} failed: {out[:200]}")
    for name, text in files.items():
        _upload(conn, name, text, timeout=60.0)
    res.steps.append(f"uploaded {', '.join(files)}")
    for name in files:
        dst = "/etc/sonic/config_db.json" if name == "config_db.json" else f"/etc/sonic/frr/{name}"
        rc, out = _cmd_rc(conn, f"sudo cp {STAGE}/{name} {dst}")
        if rc != 0:
            raise PushFailed(f"installing {name} as {dst} failed: {out[:200]}")
    rc, out = _cmd_rc(conn, "sudo config reload -y", timeout=reload_timeout)
    if rc != 0:
        raise PushFailed(f"'config reload -y' failed ({rc}): {out.strip().splitlines()[-1] if out.strip() else 'no output'}")
    res.steps.append("config reload -y")
    # Confirm: the running state holds what was pushed. FRR may take a moment
    # to come back after a reload on a real switch (the bgp container restarts).
    cand_db = json.loads(files["config_db.json"])
    cand_frr = frr_statements("\n".join(v for k, v in files.items() if k != "config_db.json"))
    deadline = time.monotonic() + confirm_timeout
    while True:
        db, frr = _sonic_running(conn)
        miss_db = _missing_db(cand_db, db)
        miss_frr = sorted(set(cand_frr) - set(frr_statements(frr))) if cand_frr else []
        if not miss_db and not miss_frr:
            break
        if time.monotonic() > deadline:
            what = (miss_db + miss_frr)[:3]
            raise PushFailed(f"applied, but the running state lacks {len(miss_db) + len(miss_frr)} pushed items, e.g. {what}")
        time.sleep(1.0)
    res.steps.append("confirmed running state")
    res.message = "applied; running state confirmed"


# --- EOS ---------------------------------------------------------------------------------

_EOS_ERROR = r"^% "


def session_name(text: str) -> str:
    return "railonly-" + hashlib.sha256(text.encode()).hexdigest()[:8]


def push_eos(conn, device: Device, files: dict[str, str], dry_run: bool, res: DeviceResult) -> None:
    from netmiko.exceptions import ConfigInvalidException

    conn.enable()
    text = files["startup-config"]
    running = conn.send_command("show running-config", read_timeout=60)
    res.steps.append("read running config")
    res.diff = unified(eos_lines(running), eos_lines(text), "running-config", device.name)
    if _nothing_to_apply(res, dry_run):
        return
    name = session_name(text)
    lines = ["rollback clean-config"] + eos_lines(text)
    # the prompt, whatever the mode: "sw#", "sw(config-s-railon)#"
    prompt = re.escape(conn.base_prompt[:16]) + r"[^\n]*#"
    try:
        conn.send_config_set(lines, config_mode_command=f"configure session {name}", exit_config_mode=False,
                             error_pattern=_EOS_ERROR, read_timeout=60)
        res.steps.append(f"configure session {name}: {len(lines)} lines")
        diffs = conn.send_command("show session-config diffs", expect_string=prompt, read_timeout=60)
        res.steps.append("show session-config diffs")
        if diffs.strip():
            res.diff = diffs.strip() + "\n"
        out = conn.send_command("commit", expect_string=prompt, read_timeout=120)
        if re.search(_EOS_ERROR, out, re.M):
            raise PushFailed(f"commit of session {name} failed: {out.strip()[:200]}")
        res.steps.append("commit")
    except (ConfigInvalidException, PushFailed) as exc:
        conn.send_command("abort", expect_string=prompt, read_timeout=30)
        res.steps.append("abort")
        first = str(exc).strip().splitlines()
        raise PushFailed(f"rejected in session {name}, aborted (running config untouched): "
                         f"{first[-1] if first else exc}") from None
    res.message = f"committed session {name}"


# --- many devices ------------------------------------------------------------------------


def push_device(device: Device, configs_dir: Path, creds: Credentials, dry_run: bool,
                timeout: float = 10.0) -> DeviceResult:
    t0 = time.perf_counter()
    res = DeviceResult(device.name, device.platform, ok=False)
    conn = None
    try:
        files = candidate(configs_dir, device)
        conn = connect(device, creds, timeout)
        res.steps.append("connected")
        if device.platform == "eos":
            push_eos(conn, device, files, dry_run, res)
        else:
            push_sonic(conn, device, files, dry_run, res)
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
