"""Where `railonly push` connects: devices from an inventory YAML or from a deployed lab.

Not railonly.fabric.cost.inventory, the BOM's switch/cable counter: an unrelated thing.

Inventory file (validated with the declarative checker of fabric/input/schema.py;
every problem names its key and line, exit 2)::

    known_hosts: lab_known_hosts   # optional (relative to this file); default ~/.ssh/known_hosts
    defaults:              # optional, applied to every device
      platform: sonic
      port: 22
    devices:
      minir-rail0-leaf0: {host: 192.0.2.10}
      minir-rail0-spine0: {host: 192.0.2.20, port: 2222, platform: eos}

A device name is the folder under OUTDIR/configs/ whose files are pushed; its
platform is the one OUTDIR's fabric.json gives that switch (the other OS's is exit 2).
``netns`` (optional) opens the TCP connection inside that network namespace,
which is how the lab is reached (and how tests reach a device without a
route from the root namespace).

Without an inventory, the devices are the SONiC switches of the lab deployed
from OUTDIR: each has an sshd on 127.0.0.1:22 inside its own namespace
(railonly.emulation.runtime.netns.sshd), a per-lab client key and a known_hosts file
in the lab's root-owned state directory (/run/railonly/<lab>/state/ssh/), so host
keys are checked with no extra flags.

The inventory is read like a design file (fabric/yamlsource.py): a symlink is
refused (its target is never read or quoted), a FIFO or device is refused at
once (never a hang), the size and YAML shape are bounded.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from railonly.fabric.input.problems import InputError, Problem, did_you_mean
from railonly.fabric.input.schema import Field, check
from railonly.fabric.input.yamlsource import Limits, load_yaml_file
from railonly.fabric.outdir_layout import FABRIC_JSON

PLATFORMS = ("sonic", "eos")
# ~60 bytes and ~7 YAML nodes a device: room for 100,000 devices, far from a runaway file
INVENTORY_LIMITS = Limits(max_bytes=16 << 20, max_nodes=1_000_000)
_HOST_RE = r"[A-Za-z0-9_.:-]{1,253}"
_NAME_RE = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
_NETNS_RE = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"


@dataclass(frozen=True)
class Device:
    name: str
    host: str
    port: int
    platform: str  # sonic | eos
    netns: str | None = None  # connect from inside this namespace
    username: str | None = None  # per-device override of RAILONLY_SSH_USER
    known_hosts: str | None = None  # lab file; None: ~/.ssh/known_hosts
    key_file: str | None = None  # lab client key; None: from the environment / --key
    host_alias: str | None = None  # name host keys are recorded under (the lab: the namespace name)
    door: object | None = field(default=None, compare=False, repr=False)  # the lab runtime's NodeDoor (netns)

    @property
    def where(self) -> str:
        ns = f" in netns {self.netns}" if self.netns else ""
        return f"{self.host}:{self.port}{ns}"


_DEVICE = {
    "host": Field("str", pattern=_HOST_RE, pattern_text="a host name or IP address",
                  hint="the management address the switch's sshd listens on"),
    "port": Field("int", min=1, max=65535),
    "platform": Field("choice", choices=PLATFORMS),
    "netns": Field("str", pattern=_NETNS_RE, pattern_text="a network namespace name",
                   hint="leave it out unless the device is reachable only inside a namespace"),
    "username": Field("str", pattern=r"[A-Za-z0-9_.][A-Za-z0-9_.-]{0,31}", pattern_text="a user name"),
}
_DEFAULTS = {k: v for k, v in _DEVICE.items() if k != "host"}
SCHEMA = {
    "known_hosts": Field("str", pattern=r"[^\0\n]{1,4096}", pattern_text="a file path",
                         hint="host keys to check against (default ~/.ssh/known_hosts)"),
    "defaults": Field("section", fields=_DEFAULTS),
    "devices": Field("map", required=True, item=Field("section", fields=_DEVICE),
                     hint="map each device name (a folder under OUTDIR/configs/) to its host"),
}


def load_inventory(path: str | os.PathLike, configs_dir: Path | None = None,
                   platforms: dict[str, str] | None = None, fabric_file: str = FABRIC_JSON) -> list[Device]:
    """Devices of an inventory file. Raises InputError (exit 2) naming every bad key.

    `platforms`: {switch: sonic | eos} of the OUTDIR's fabric_file; a device given the other
    platform is refused here (its configs are the other OS's: push would fail at run time)."""
    file = str(path)
    src = load_yaml_file(file, INVENTORY_LIMITS, what="an inventory YAML file")
    data, problems = check(SCHEMA, src)
    devices: list[Device] = []
    if not problems:
        dflt = {k: v for k, v in (data.get("defaults") or {}).items() if v is not None}
        for name, spec in (data.get("devices") or {}).items():
            where = f"devices.{name}"
            if not isinstance(name, str) or not re.fullmatch(_NAME_RE, name):
                shown = src.shown(where)  # as written: `null`, not None
                problems.append(Problem(shown, f"device name {shown.removeprefix('devices.')!r} is not a valid switch name",
                                        "give the name of a folder under OUTDIR/configs/", src.line(where), file))
                continue
            merged = {**dflt, **{k: v for k, v in spec.items() if v is not None}}
            if "host" not in merged:
                problems.append(Problem(f"{where}.host", "is required but missing", _DEVICE["host"].hint, src.line(where), file))
                continue
            if "platform" not in merged:
                problems.append(Problem(f"{where}.platform", "is required (here or in defaults.platform)",
                                        f"one of {', '.join(PLATFORMS)}", src.line(where), file))
                continue
            if configs_dir is not None and not (configs_dir / name).is_dir():
                known = sorted(p.name for p in configs_dir.iterdir() if p.is_dir()) if configs_dir.is_dir() else []
                problems.append(Problem(where, f"no generated configs for {name!r} in {configs_dir}",
                                        did_you_mean(name, known, "devices") if known else "compile the design first", src.line(where), file))
                continue
            actual = (platforms or {}).get(name)
            if actual is not None and actual != merged["platform"]:
                key = f"{where}.platform" if spec.get("platform") is not None else "defaults.platform"
                problems.append(Problem(
                    key, f"platform {merged['platform']} contradicts {fabric_file}, where {name} is a {actual} switch "
                    f"(its configs are {actual}'s)", f"set platform: {actual} for {name}"
                    + (" (defaults.platform applies to every device without its own)" if key == "defaults.platform" else ""),
                    src.line(key), file))
                continue
            kh = data.get("known_hosts")
            if kh:
                kh = str((Path(file).parent / os.path.expanduser(kh)).resolve())
            devices.append(Device(name, merged["host"], int(merged.get("port", 22)), merged["platform"],
                                  merged.get("netns"), merged.get("username"), kh))
        if not devices and not problems:
            problems.append(Problem("devices", "lists no devices", SCHEMA["devices"].hint, src.line("devices"), file))
    if problems:
        raise InputError(problems)
    return devices


def lab_devices(outdir: "str | os.PathLike | object", rt=None) -> list[Device]:
    """The SONiC switches of the lab deployed from OUTDIR (or of a loaded, bound Lab),
    reached through their namespaces.

    Raises RuntimeProblem (exit 3) when the lab has no switch sshd (not deployed,
    or deployed without it)."""
    from ..lab import Lab, load_lab
    from ..runtime import rundir
    from ..runtime.protocol import RuntimeProblem
    from ..runtime.registry import get_runtime

    lab = outdir if isinstance(outdir, Lab) else rundir.bind(load_lab(outdir))
    outdir = lab.outdir
    rt = rt or get_runtime()
    # reached as deployed: a management network the OUTDIR gained (or changed) since the deploy
    # does not run yet, and its namespace does not exist (every switch failed "is the lab deployed?")
    info = rt.ssh_endpoints(rt.running_lab(str(outdir)) or lab)
    if info is None:
        if lab.switches and all(sw.platform == "eos" for sw in lab.switches):
            raise RuntimeProblem(
                f"lab {lab.name} has only EOS switches, and the emulation runs no EOS CLI to push to "
                f"(its switches are programmed from their startup-config at deploy): give --inventory FILE "
                f"for real devices, or re-deploy the lab (railonly lab deploy {outdir}) to apply new configs")
        raise RuntimeProblem(
            f"lab {lab.name} has no switch sshd state in {rt.ssh_state_dir(lab)}: deploy it first "
            f"(railonly lab deploy {outdir}) or give --inventory FILE")
    out = []
    for sw in lab.switches:
        ent = info["switches"].get(sw.name)
        if ent is None:
            continue  # EOS switches of a lab have no sshd (no EOS CLI in the emulation)
        out.append(Device(sw.name, ent["host"], int(ent["port"]), "sonic", ent.get("netns", sw.netns), info["user"],
                          info["known_hosts"], info["client_key"], ent.get("alias"), rt.door()))
    if not out:
        raise RuntimeProblem(f"lab {lab.name} has no SONiC switch with an sshd to push to")
    return out
