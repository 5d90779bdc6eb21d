"""A real sshd in each SONiC switch namespace of a netns lab, so `railonly push` works on the lab.

Per lab, under its root-owned state directory /run/railonly/<lab>/state/ssh/
(runtime/rundir.py; never in the OUTDIR, which a pull request may have written):

- ``client_ed25519``: the lab's client key (authorized for every switch sshd);
- ``known_hosts``: every switch's host key, recorded under the alias
  ``clab-<lab>-<switch>`` so host keys are checked with no extra flags;
- ``<switch>/ssh_host_ed25519_key``, ``<switch>/sshd_config``: one sshd each;
- ``lab-ssh.json``: what push reads (user, key, known_hosts, address per switch).

Keys survive redeploys (known_hosts stays valid); destroy removes them with the
rest of the lab's run directory. Each sshd listens on 127.0.0.1:22 *inside its namespace*:
no address of the fabric is needed (a push that changes the switch's
addresses cannot cut its own session), and a controller reaches it by opening
the socket inside the namespace. Its ``ForceCommand`` is the railonly switch
shell (railonly.emulation.runtime.netns.switch_shell), a tiny SONiC-like CLI whose
``config reload`` calls the same apply function as deploy.

The sshd processes are plan processes (:func:`processes`): the engine starts
them in their namespaces, writes their pid files, records them in the lab
state file and stops them by PID on destroy. Cost (measured): about 9 MiB RSS
per idle sshd (shared pages counted), cheap next to FRR's ~24 MB per switch,
so the netns runtime starts one per SONiC switch by default (ssh=False turns
it off).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import stat
import sys
import time
from pathlib import Path

from railonly import proc

from railonly.fabric.outdir_layout import CONFIG_DB
from ...lab import run_dir
from . import setns
from .ns_plan import Process

SSHD = "/usr/sbin/sshd"
USER = "root"  # the sshd checks system accounts; the lab creates none
PORT = 22
ADDRESS = "127.0.0.1"
INFO = "lab-ssh.json"
# what a SONiC switch reads from its config folder, and so all that push sends


def ssh_dir(lab) -> Path:
    return Path(lab.ssh_dir)


def switch_dir(lab, switch: str) -> Path:
    return ssh_dir(lab) / switch


def host_alias(lab, switch: str) -> str:
    return lab.netns(switch)


def sonic_switches(lab) -> list:
    return [n for n in lab.switches if (n.platform or "sonic") == "sonic"]


def endpoint(lab, switch: str) -> dict:
    """Where push reaches a switch's sshd: its management address from the lab's
    management network when fabric.json gives one (as on the floor, docs/management.md),
    else 127.0.0.1 inside the switch's own namespace."""
    from ...lab import management_network

    net = management_network(lab)
    if net is not None and switch in net.switches:
        return {"host": net.switches[switch].split("/")[0], "port": PORT, "alias": host_alias(lab, switch), "netns": net.netns}
    return {"host": ADDRESS, "port": PORT, "alias": host_alias(lab, switch), "netns": lab.netns(switch)}


def _keygen(path: Path, comment: str) -> None:
    pair = (path, Path(str(path) + ".pub"))
    if all(os.path.lexists(p) and stat.S_ISREG(os.lstat(p).st_mode) for p in pair):
        return
    for p in pair:
        p.unlink(missing_ok=True)  # a symlink is removed, never followed
    proc.require("ssh-keygen", "openssh-client")
    res = proc.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], timeout=30)
    if not res.ok:  # a full disk, a read-only /run: exit 3 naming the path
        from ..protocol import RuntimeProblem

        raise RuntimeProblem(f"ssh-keygen {path}: {res.stderr.strip()}")
    os.chmod(path, 0o600)


SAFE_PATH_RE = re.compile(r"^/[A-Za-z0-9_./+=,@:-]+$")  # one sshd_config word, no quoting needed


def _config_paths(lab, switch: str) -> str:
    """The absolute OUTDIR, once it and the switch's run dir are paths one sshd_config word
    carries (a newline would start a directive of its own in a root sshd's config)."""
    outdir = str(Path(lab.outdir).resolve())
    for path, what in ((switch_dir(lab, switch), "the lab's run directory"), (outdir, "the OUTDIR path")):
        if not SAFE_PATH_RE.fullmatch(str(path)):
            from ...lab import LabError

            raise LabError(str(path), f"{what} has a character sshd_config cannot carry (space, quote, '#',"
                           " newline...)", "move the OUTDIR to a plain path such as /tmp/lab")
    return outdir


def sshd_config(lab, switch: str) -> str:
    d = switch_dir(lab, switch)
    outdir = _config_paths(lab, switch)
    shell = [sys.executable, "-m", "railonly.emulation.runtime.netns.switch_shell", outdir, switch, lab.name]
    return "\n".join([
        "# railonly lab sshd for one switch namespace (generated; see railonly.emulation.runtime.netns.sshd)",
        f"Port {PORT}",
        *(f"ListenAddress {a}" for a in dict.fromkeys((ADDRESS, endpoint(lab, switch)["host"]))),
        f"HostKey {d / 'ssh_host_ed25519_key'}",
        "PidFile none",  # the engine writes and owns the pid file
        f"AuthorizedKeysFile {ssh_dir(lab) / 'authorized_keys'}",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "PermitRootLogin prohibit-password",
        f"AllowUsers {USER}",
        # OUTDIR is often under /tmp (mode 1777), which StrictModes rejects as an
        # ancestor of the key file; the files themselves are root-owned 0600/0644.
        "StrictModes no",
        "MaxStartups 64:30:128",  # parallel pushes log in at once
        "MaxSessions 16",
        "LoginGraceTime 20",
        "AllowTcpForwarding no",
        "AllowAgentForwarding no",
        "X11Forwarding no",
        "PermitTunnel no",
        "PrintMotd no",
        "PrintLastLog no",
        "LogLevel ERROR",
        "ForceCommand " + " ".join(shlex.quote(w) for w in shell),
        "",
    ])


def prepare(lab) -> dict:
    """Keys, configs, known_hosts and the info file for every SONiC switch
    (idempotent: existing keys are kept). Returns the info dict."""
    # sshd's privilege-separation chroot: a system directory the openssh package
    # expects, shared by every sshd on the machine: created, never recorded, never removed.
    # Everything goes through the lab's state directory (root's, 0700): no symlink is followed.
    from .. import rundir

    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    tree = reader = rundir.state(lab.name)
    base = ssh_dir(lab)
    rel = str(base.relative_to(lab.state_dir))
    tree.makedirs(rel, mode=0o700)
    tree.chmod_dir(rel, 0o700)
    client = base / "client_ed25519"
    _keygen(client, f"railonly-lab-{lab.name}")
    pub = reader.read_bytes(f"{rel}/client_ed25519.pub", limit=4096).decode("ascii", "replace").strip()
    # restrict: no forwarding of any kind; pty: netmiko drives an interactive shell
    tree.write_text(f"{rel}/authorized_keys", f"restrict,pty {pub}\n")
    known, switches = [], {}
    for sw in sonic_switches(lab):
        tree.makedirs(f"{rel}/{sw.name}")
        key = switch_dir(lab, sw.name) / "ssh_host_ed25519_key"
        _keygen(key, f"{sw.name}@{lab.name}")
        host_pub = reader.read_bytes(f"{rel}/{sw.name}/ssh_host_ed25519_key.pub", limit=4096).decode(
            "ascii", "replace").split()
        known.append(f"{host_alias(lab, sw.name)} {host_pub[0]} {host_pub[1]}")
        tree.write_text(f"{rel}/{sw.name}/sshd_config", sshd_config(lab, sw.name))
        switches[sw.name] = endpoint(lab, sw.name)
    tree.write_text(f"{rel}/known_hosts", "\n".join(known) + "\n")
    info = {"lab": lab.name, "user": USER, "client_key": str(client), "known_hosts": str(base / "known_hosts"),
            "switches": switches}
    tree.write_text(f"{rel}/{INFO}", json.dumps(info, indent=1, sort_keys=True) + "\n")
    return info


def flat_to_tree(src: Path, etc: Path) -> None:
    """configs/<sw>/ layout (config_db.json + FRR files) -> /etc/sonic layout."""
    if etc.exists():
        shutil.rmtree(etc)
    (etc / "frr").mkdir(parents=True)
    for f in sorted(src.iterdir()):
        if f.is_file():
            dst = etc / f.name if f.name == CONFIG_DB else etc / "frr" / f.name
            shutil.copyfile(f, dst)


def tree_to_flat(etc: Path, dst: Path) -> None:
    """/etc/sonic layout -> configs/<sw>/ layout (what the readers take)."""
    dst.mkdir(parents=True, exist_ok=True)
    if (etc / CONFIG_DB).is_file():
        shutil.copyfile(etc / CONFIG_DB, dst / CONFIG_DB)
    for f in sorted((etc / "frr").glob("*")) if (etc / "frr").is_dir() else []:
        if f.is_file():
            shutil.copyfile(f, dst / f.name)


def seed_state(lab, switch: str) -> None:
    """At deploy: the switch shell's startup (etc/) and running copies = the generated configs deploy programs."""
    d = switch_dir(lab, switch)
    src = Path(lab.configs_dir) / switch
    flat_to_tree(src, d / "etc")
    if (d / "running").exists():
        shutil.rmtree(d / "running")
    tree_to_flat(d / "etc", d / "running")
    (d / "tmp").mkdir(parents=True, exist_ok=True)


def seed(lab) -> None:
    """After a (non-noop) deploy: each switch shell's startup and running files
    = the generated configs the deploy programmed."""
    for sw in sonic_switches(lab):
        seed_state(lab, sw.name)


def processes(lab) -> tuple[Process, ...]:
    """Plan entries (pure): one sshd per SONiC switch, in its namespace. :func:`prepare` writes their files.

    Not daemonizing (-D): the engine spawns it, writes the pid file and stops it by PID."""
    rundir = f"{run_dir(lab.name)}/sshd"
    out = []
    for sw in sonic_switches(lab):
        _config_paths(lab, sw.name)  # refused while planning, before anything exists
        d = switch_dir(lab, sw.name)
        out.append(Process(
            name=f"{sw.name}/sshd", netns=sw.netns,
            argv=(SSHD, "-D", "-e", "-f", str(d / "sshd_config")),
            pidfile=f"{rundir}/{sw.name}.pid", dirs=(rundir,), log=str(d / "sshd.log"),
        ))
    return tuple(out)


def load_info(lab) -> dict | None:
    """What push needs to reach the lab's switches, or None when the lab has no
    switch sshd. The file is only a marker: every path and address is derived
    here from the lab (a hostile file cannot point push at another key, host
    or known_hosts); a file of the wrong shape is exit 2 naming it."""
    from ...lab import LabError
    from .. import rundir

    path = ssh_dir(lab) / INFO
    sd = rundir.open_state(lab.name, create=False)
    data = sd.read_json(str(path.relative_to(lab.state_dir)), limit=16 * 1024 * 1024) if sd else None
    if data is None:
        return None
    if not isinstance(data, dict) or data.get("lab") != lab.name or not isinstance(data.get("switches"), dict):
        raise LabError(str(path), f"is not the switch sshd record of lab {lab.name}",
                       f"redeploy the lab: railonly lab deploy {lab.outdir}")
    base = ssh_dir(lab)
    switches = {sw.name: endpoint(lab, sw.name) for sw in sonic_switches(lab) if sw.name in data["switches"]}
    return {"lab": lab.name, "user": USER, "client_key": str(base / "client_ed25519"),
            "known_hosts": str(base / "known_hosts"), "switches": switches}


def connect_socket(netns: str | None, host: str, port: int, timeout: float = 5.0) -> socket.socket:
    """A TCP socket connected from inside ``netns`` (a socket belongs to the
    namespace of the thread that creates it, and keeps it afterwards)."""
    def make() -> socket.socket:
        return socket.create_connection((host, port), timeout=timeout)

    return setns.call_in(netns, make) if netns else make()


def wait_ready(lab, timeout: float = 10.0) -> list[str]:
    """Wait until every switch sshd accepts connections; returns the switches that never did."""
    pending = [sw.netns for sw in sonic_switches(lab)]
    names = {sw.netns: sw.name for sw in sonic_switches(lab)}
    deadline = time.monotonic() + timeout
    while pending:
        for ns in list(pending):
            try:
                connect_socket(ns, ADDRESS, PORT, timeout=1.0).close()
                pending.remove(ns)
            except OSError:
                pass
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return [names[n] for n in pending]
