"""The login shell of a lab SONiC switch: a tiny SONiC-like CLI that netmiko drives.

Started by the switch's sshd (``ForceCommand``) inside the switch namespace::

    python -m railonly.emulation.runtime.netns.switch_shell OUTDIR SWITCH LAB

It understands exactly what `railonly push` sends to a real SONiC switch's
bash (so push has one code path for both), and answers with the same shapes:

    mkdir -p /tmp/railonly-push
    base64 -d > /tmp/railonly-push/config_db.json <<'RAILONLY_EOF'   (a here-doc)
    sha256sum FILE...           cat FILE...           cp SRC DST
    sudo CMD                    show runningconfiguration all
    sudo config reload -y       vtysh -c '...' [-c ...]
    sudo config apply-patch FILE    sudo config save -y    show interfaces status
    CMD; echo RAILONLY_RC=$?    hostname              exit
    cat /proc/net/snmp [/proc/net/dev]  (the namespace's forwarding and interface counters, read-only)

Files live in the switch's lab state (/run/railonly/<lab>/state/ssh/<switch>/): ``etc/``
stands for /etc/sonic (the startup files ``config reload`` reads) and
``tmp/`` for /tmp/railonly-push; nothing else is reachable. ``running/``
holds the files last applied: the emulation has no redis, so
``show runningconfiguration all`` prints the config_db that is applied.
``config reload`` applies the startup files to the live namespace through
``reprogram.apply_switch_config``, the same code that programs the switch
at deploy time, so a push exercises exactly the deploy path.
``config apply-patch`` takes an RFC 6902 patch of the config DB (whole keys,
as railonly.fabric.outdir.rollout_rules writes it) and changes only what it names, live:
a port's or VLAN's MTU, a port's admin state, an interface or loopback address; tables that
change no forwarding state (descriptions, cable lengths, neighbours) only
in the DB. A table it cannot apply live is refused (exit 1, "use config
reload"), never half-applied.

Why not SCP: netmiko's SCP transfer needs ``scp -t``, ``df``, ``ls`` and md5
commands on the far side, which would each have to be emulated; a base64
here-doc over the session works unchanged on a real SONiC bash and here.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shlex
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

from railonly.fabric.outdir_layout import CONFIG_DB
from railonly.fabric.safe_text import natural
from .sshd import switch_dir, tree_to_flat

TMP_PREFIX = "/tmp/railonly-push/"
PROC_SNMP = "/proc/net/snmp"
PROC_DEV = "/proc/net/dev"  # per-interface packets: a leaf's own GPUs' traffic, which the drain leaves
PROC_READABLE = {PROC_SNMP, PROC_DEV}
ETC_PREFIX = "/etc/sonic/"


class Shell:
    def __init__(self, outdir: str, switch: str, lab_name: str | None = None, out=None):
        from ...lab import load_lab
        from .. import rundir

        # refuses a symlink anywhere in OUTDIR; the name the lab was deployed under (--lab-name)
        self.lab = rundir.bind(load_lab(outdir), lab_name)
        rundir.check_state_dir(self.lab)  # the run dir chain, where this root shell writes: root's alone
        self.switch = switch
        self.node = self.lab.node(switch)
        self.dir = switch_dir(self.lab, switch)
        self.out = out or sys.stdout
        self.rc = 0
        fd = os.open(self.dir / "shell.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        self.log = os.fdopen(fd, "a", buffering=1)

    # --- output ---------------------------------------------------------------
    def say(self, text: str = "") -> None:
        self.out.write(text if text.endswith("\n") or not text else text + "\n")

    @property
    def prompt(self) -> str:
        return f"admin@{self.switch}:~$ "

    # --- the virtual file system -------------------------------------------------
    def path(self, p: str, *, write: bool = False) -> Path:
        if "/../" in p + "/" or "\0" in p:
            raise PermissionError(f"{p}: Permission denied")
        if p.rstrip("/") + "/" == TMP_PREFIX:
            return self.dir / "tmp"
        if p.startswith(TMP_PREFIX):
            return self.dir / "tmp" / p[len(TMP_PREFIX):]
        if p.startswith(ETC_PREFIX):
            return self.dir / "etc" / p[len(ETC_PREFIX):]
        raise PermissionError(f"{p}: outside this lab switch's file system (/etc/sonic/, {TMP_PREFIX})")

    # --- commands -------------------------------------------------------------------
    def run_line(self, line: str, more) -> bool:
        """Run one input line (``more()`` reads the next, for here-docs). False: log out."""
        for part in _split_semicolons(line):
            if not part.strip():
                continue
            try:
                argv = shlex.split(part)
            except ValueError as exc:
                self.say(f"-bash: syntax error: {exc}")
                self.rc = 2
                continue
            self.log.write(f"{time.strftime('%H:%M:%S')} {argv[:6]}\n")
            if argv[0] in ("exit", "logout"):
                return False
            try:
                self.rc = self.dispatch(argv, more)
            except (PermissionError, FileNotFoundError, IsADirectoryError) as exc:
                self.say(f"{argv[0]}: {exc}")
                self.rc = 1
            except Exception as exc:  # a bug here must not drop the session with a traceback
                self.say(f"{argv[0]}: error: {type(exc).__name__}: {exc}")
                self.rc = 1
        return True

    def dispatch(self, argv: list[str], more) -> int:
        if argv[0] == "sudo":
            argv = argv[1:]
            if not argv:
                self.say("usage: sudo command")
                return 1
        cmd = argv[0]
        if cmd == "echo":
            self.say(" ".join(a.replace("$?", str(self.rc)) for a in argv[1:]))
            return 0
        if cmd == "hostname":
            self.say(self.switch)
            return 0
        if cmd == "true":
            return 0
        if cmd == "mkdir":
            for p in (a for a in argv[1:] if not a.startswith("-")):
                self.path(p, write=True).mkdir(parents=True, exist_ok=True)
            return 0
        if cmd == "cat":
            for p in argv[1:]:
                # the namespace's IP and interface counters (what the drain watches), read-only
                self.out.write(Path(p).read_text() if p in PROC_READABLE else self.path(p).read_text())
            return 0
        if cmd == "sha256sum":
            for p in argv[1:]:
                self.say(f"{hashlib.sha256(self.path(p).read_bytes()).hexdigest()}  {p}")
            return 0
        if cmd == "cp":
            src, dst = [a for a in argv[1:] if not a.startswith("-")][-2:]
            d = self.path(dst, write=True)
            d.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.path(src), d)
            return 0
        if cmd == "rm":
            for p in (a for a in argv[1:] if not a.startswith("-")):
                self.path(p, write=True).unlink(missing_ok=True)
            return 0
        if cmd == "base64":
            return self.base64_heredoc(argv, more)
        if cmd == "show" and argv[1:3] == ["runningconfiguration", "all"]:
            f = self.dir / "running" / CONFIG_DB
            self.out.write(f.read_text() if f.is_file() else "{}\n")
            return 0
        if cmd == "config" and argv[1:2] == ["apply-patch"] and len(argv) >= 3:
            return self.apply_patch(argv[2])
        if cmd == "config" and argv[1:2] == ["save"]:
            shutil.copyfile(self.dir / "running" / CONFIG_DB, self.dir / "etc" / CONFIG_DB)
            return 0
        if cmd == "show" and argv[1:3] == ["interfaces", "status"]:
            return self.interfaces_status()
        if cmd == "config" and len(argv) >= 2 and argv[1] in ("reload", "load"):
            if "-y" not in argv:
                self.say("Error: add -y (this shell cannot ask for confirmation)")
                return 1
            return self.reload()
        if cmd == "vtysh":
            return self.vtysh(argv[1:])
        if cmd in ("scp", "sftp-server"):
            self.say(f"{cmd}: not supported by the railonly lab switch shell (send files as a base64 here-doc)")
            return 1
        self.say(f"-bash: {cmd}: command not found")
        return 127

    def base64_heredoc(self, argv: list[str], more) -> int:
        # base64 -d > PATH <<'TAG'   (shlex keeps "<<TAG" and ">" as words)
        words = argv[1:]
        try:
            target = words[words.index(">") + 1]
            tag = next(w for w in words if w.startswith("<<"))[2:].strip("'\"")
        except (ValueError, IndexError, StopIteration):
            self.say("base64: only 'base64 -d > FILE <<'TAG'' is supported here")
            return 1
        if not tag:
            tag = words[words.index(next(w for w in words if w.startswith("<<"))) + 1].strip("'\"")
        chunks = []
        while True:
            line = more()
            if line is None:
                self.say("-bash: warning: here-document delimited by end-of-file")
                break
            if line.rstrip("\r\n") == tag:
                break
            chunks.append(line.strip())
        try:
            data = base64.b64decode("".join(chunks), validate=True)
        except ValueError:
            self.say("base64: invalid input")
            return 1
        p = self.path(target, write=True)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        return 0

    def reload(self) -> int:
        # One reload at a time per lab, not per switch: apply_switch_config
        # rewrites the lab's engine state file (new FRR pids), and parallel
        # pushes run one shell per switch. The lab lock is held shared (a push
        # holds it shared too; deploy and destroy wait), the reload lock
        # exclusive; both live in /run/railonly, not in the untrusted OUTDIR.
        from .. import lock as lab_lock

        with lab_lock.hold(self.lab.name, shared=True), lab_lock.hold(self.lab.name, what="reload.lock"):
            return self._reload()

    def _reload(self) -> int:
        etc = self.dir / "etc"
        if not (etc / CONFIG_DB).is_file():
            self.say("Error: /etc/sonic/config_db.json does not exist")
            return 1
        stage = Path(tempfile.mkdtemp(prefix="apply-", dir=self.dir))
        try:
            tree_to_flat(etc, stage)
            self.say("Running command: /usr/local/bin/sonic-cfggen -j /etc/sonic/config_db.json --write-to-db")
            t = time.perf_counter()
            try:
                from .reprogram import apply_switch_config
            except ImportError as exc:
                self.say(f"Error: this installation cannot apply configs ({exc})")
                return 1
            try:
                apply_switch_config(self.lab, self.switch, str(stage))
            except Exception as exc:
                self.say(f"Error: config reload failed: {exc}")
                return 1
            running = self.dir / "running"
            if running.exists():
                shutil.rmtree(running)
            stage.rename(running)
            self.say(f"Reloaded {self.switch} in {time.perf_counter() - t:.2f}s")
            return 0
        finally:
            if stage.exists():
                shutil.rmtree(stage, ignore_errors=True)

    def apply_patch(self, file: str) -> int:
        import json

        from railonly import proc

        from .patch import PatchError, apply_ops, live_commands, undo_command

        with lab_lock_shared(self.lab):
            running = self.dir / "running" / CONFIG_DB
            db = json.loads(running.read_text()) if running.is_file() else {}
            try:
                ops = json.loads(self.path(file).read_text())
                new = apply_ops(db, ops)
                # the devices this namespace has: a port the OUTDIR cables since the deploy
                # (a grown design pushed to the lab) has none yet
                cmds = live_commands(db, new, {name for _, name in socket.if_nameindex()})
            except (ValueError, PatchError) as exc:
                self.say(f"Error: {exc}")
                return 1
            done: list[list[str]] = []
            for argv in cmds:
                res = proc.run(["ip", *argv], timeout=20)
                if not res.ok:
                    self.say(f"Error: ip {' '.join(argv)}: {res.stderr.strip()}")
                    # the running DB stays the old one: so must the namespace (a half-applied
                    # patch left addresses the DB did not list, and a roll back read the DB)
                    left = [a for a in reversed(done)
                            if (u := undo_command(a, db)) is None or not proc.run(["ip", *u], timeout=20).ok]
                    self.say(f"{len(done) - len(left)} of {len(done)} live change(s) before it undone"
                             + (f"; NOT undone: {'; '.join('ip ' + ' '.join(a) for a in left)}" if left else ""))
                    return 1
                done.append(argv)
            tmp = running.with_suffix(".tmp")
            tmp.write_text(json.dumps(new, indent=4, sort_keys=True) + "\n")
            tmp.rename(running)
            self.say(f"Patch applied: {len(ops)} operation(s), {len(cmds)} live change(s).")
            return 0

    def interfaces_status(self) -> int:
        import json

        from railonly import proc

        res = proc.run(["ip", "-j", "link", "show"], timeout=20)
        links = {d["ifname"]: d for d in json.loads(res.stdout or "[]")} if res.ok else {}
        f = self.dir / "running" / CONFIG_DB
        ports = (json.loads(f.read_text()).get("PORT") or {}) if f.is_file() else {}
        self.say(f"{'Interface':>11} {'MTU':>6} {'Oper':>5} {'Admin':>6}")
        self.say(f"{'-' * 11} {'-' * 6} {'-' * 5} {'-' * 6}")
        for name in sorted(ports, key=natural):
            d = links.get(name)
            if d is None:
                continue
            oper = "up" if "LOWER_UP" in d.get("flags", []) and "UP" in d.get("flags", []) else "down"
            admin = "up" if "UP" in d.get("flags", []) else "down"
            self.say(f"{name:>11} {d.get('mtu', 0):>6} {oper:>5} {admin:>6}")
        return 0

    def vtysh(self, args: list[str]) -> int:
        from railonly import proc

        cmds = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-c"]
        if not cmds:
            self.say("vtysh: only 'vtysh -c COMMAND ...' is supported here")
            return 1
        argv = ["vtysh", "--vty_socket", _frr_rundir(self.lab, self.switch)]
        for c in cmds:
            argv += ["-c", c]
        res = proc.run(argv, timeout=30)
        self.out.write(res.stdout)
        if res.stderr.strip():
            self.out.write(res.stderr)
        return res.returncode

    # --- the session -------------------------------------------------------------------
    def interact(self, stdin=None) -> int:
        stdin = stdin or sys.stdin
        self.say(f"railonly lab switch {self.switch} (lab {self.lab.name}): SONiC-like shell, see railonly.emulation.runtime.netns.switch_shell")

        def more():
            line = stdin.readline()
            return line if line else None

        while True:
            self.out.write(self.prompt)
            self.out.flush()
            line = stdin.readline()
            if not line:
                return 0
            ok = self.run_line(line.rstrip("\r\n"), more)
            self.out.flush()
            if not ok:
                return 0


def lab_lock_shared(lab):
    from .. import lock as lab_lock

    return lab_lock.hold(lab.name, shared=True)


def _split_semicolons(line: str) -> list[str]:
    """Split on ';' outside quotes (enough for 'CMD; echo RAILONLY_RC=$?')."""
    parts, cur, quote = [], [], None
    for ch in line:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == ";":
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return parts


def _frr_rundir(lab, switch: str) -> str:
    from ...lab import run_dir
    from . import frr

    return frr.instance(run_dir(lab.name), switch, lab.netns(switch)).rundir


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (2, 3):
        print("usage: python -m railonly.emulation.runtime.netns.switch_shell OUTDIR SWITCH [LAB]", file=sys.stderr)
        return 2
    from railonly.fabric.input.problems import InputError

    try:
        shell = Shell(argv[0], argv[1], argv[2] if len(argv) == 3 else None)
    except InputError as exc:  # a hostile OUTDIR: say which file, no traceback
        print(str(exc), file=sys.stderr)
        return 2
    original = os.environ.get("SSH_ORIGINAL_COMMAND")
    if original:  # `ssh switch CMD`: one command, no prompt
        shell.run_line(original, lambda: sys.stdin.readline() or None)
        sys.stdout.flush()
        return shell.rc
    return shell.interact()


if __name__ == "__main__":
    sys.exit(main())
