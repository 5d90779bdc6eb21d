"""The netns state file checked against its schema, and what a lab provably owns. Pure.

The state file lives in the lab's root-owned state directory
(``/run/railonly/<lab>/state``, runtime/rundir.py), never in the OUTDIR.
``destroy`` runs as root, so the file is still checked as if it were hostile
(defence in depth): each entry is kept only when it is provably the lab's
(:class:`Owner`):

- a namespace: one of the lab's own, ``clab-<lab>-<node>`` for a node of its
  recorded identity (a runtime passes them; never a prefix match, which would
  give lab ``a`` the namespaces of lab ``a-b``);
- a process: recorded in one of those namespaces (the engine also checks, on
  the live process, that /proc/PID/ns/net is one of them before a signal);
- a path (pid file, run directory): absolute, normalised, strictly below the
  lab's run directory ``/run/railonly/<lab>``; the shared parent
  ``/run/railonly`` may only be rmdir'ed when empty;
- a root sysctl: a neighbour ``gc_thresh`` key, its original and set values
  numbers with original below set and set at most :data:`MAX_GC_THRESH` (the only
  host-global setting a deploy raises, and only ever raises).

Anything else is refused and named (:func:`check`), never acted on.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from ...lab import netns_prefix, run_dir, run_root
from .ns_plan import LAB_RE, ROOT_SYSCTL_RE

STATE_VERSION = 1
PHASES = ("deploying", "deployed", "destroy-incomplete")
NETNS_RE = re.compile(r"^[A-Za-z0-9_.:@+=,-]{1,200}$")  # one word, no '/' (ip netns names a file)
MAX_ENTRIES = 100_000
MAX_ARGV = 64
MAX_WORD = 4096
MAX_GC_THRESH = 1 << 24  # far above what the largest lab a deploy accepts needs (plan.neighbour_need)


@dataclass(frozen=True)
class Owner:
    """What one lab may touch. ``roots`` None: any absolute path (engine tests with
    their own temp dirs); a runtime always passes the lab's run dir. ``namespaces``
    None: any name with the lab's prefix (the engine on its own, tests); a runtime
    always passes exactly the lab's own (its recorded nodes')."""

    lab: str
    roots: tuple[str, ...] | None = None
    namespaces: frozenset[str] | None = None

    @classmethod
    def for_lab(cls, lab: str, namespaces: "frozenset[str] | set[str]") -> "Owner":
        return cls(lab, (run_dir(lab),), frozenset(namespaces))

    @property
    def shared_parents(self) -> tuple[str, ...]:  # rmdir'ed only when empty
        return (run_root(),)

    @property
    def prefix(self) -> str:
        return netns_prefix(self.lab)

    def namespace_ok(self, name: object) -> bool:
        if not isinstance(name, str) or not NETNS_RE.fullmatch(name):
            return False
        if self.namespaces is not None:
            return name in self.namespaces
        return name.startswith(self.prefix) and len(name) > len(self.prefix)

    def path_ok(self, path: object) -> bool:
        """Strictly below one of the roots (a root itself is not: it may hold other things)."""
        if not isinstance(path, str) or not path.startswith("/") or "\0" in path or "\n" in path:
            return False
        if os.path.normpath(path) != path or len(path) > MAX_WORD:
            return False
        if self.roots is None:
            return path != "/"
        return any(path.startswith(r.rstrip("/") + "/") for r in self.roots)

    def rmdir_ok(self, path: object) -> bool:
        """A directory the deploy created that may be removed when empty."""
        if self.path_ok(path) or path in self.shared_parents:
            return True
        # the lab's run directory itself (created by the deploy; rmtree'd by the runtime)
        return self.roots is not None and path in self.roots


@dataclass
class Checked:
    """The state file reduced to what is provably the lab's, and what was refused."""

    state: dict | None  # None: missing, unreadable or not this lab's state file at all
    refused: list[str] = field(default_factory=list)  # each names the entry and why
    corrupt: str | None = None  # why the whole file was set aside

    @property
    def problems(self) -> list[str]:
        return ([self.corrupt] if self.corrupt else []) + self.refused


def parse(text: str | bytes) -> object:
    """JSON text -> data; ValueError (with the reason) for anything that is not JSON."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"not valid JSON: {str(exc)[:120]}") from None


def _short(v: object) -> str:
    s = repr(v)
    return s if len(s) <= 80 else s[:77] + "..."


def check(data: object, path: str, owner: Owner | None = None) -> Checked:
    """Validate a parsed state file. ``owner`` None: the lab named in the file
    (engine use without a runtime); a runtime passes its own, so a file naming
    another lab is set aside whole."""
    if not isinstance(data, dict):
        return Checked(None, corrupt=f"{path}: not a JSON object")
    lab = data.get("lab")
    if not isinstance(lab, str) or not LAB_RE.fullmatch(lab):
        return Checked(None, corrupt=f"{path}: 'lab' is {_short(lab)}, not a lab name")
    if owner is None:
        owner = Owner(lab)
    elif lab != owner.lab:
        return Checked(None, corrupt=f"{path}: belongs to lab {lab!r}, not {owner.lab!r}")
    if data.get("version") != STATE_VERSION:
        return Checked(None, corrupt=f"{path}: version {_short(data.get('version'))}, expected {STATE_VERSION}")
    out = Checked({
        "version": STATE_VERSION, "lab": lab, "prefix": owner.prefix,
        "fingerprint": data.get("fingerprint") if isinstance(data.get("fingerprint"), str) else "",
        "phase": data.get("phase") if data.get("phase") in PHASES else "deploying",
        "namespaces": [], "processes": [], "root_sysctls": [], "dirs": [],
    })
    if data.get("prefix") != owner.prefix:
        out.refused.append(f"{path}: prefix {_short(data.get('prefix'))} is not the lab's {owner.prefix!r} (ignored)")

    def listed(key: str) -> list:
        v = data.get(key, [])
        if not isinstance(v, list):
            out.refused.append(f"{path}: '{key}' is {type(v).__name__}, not a list (ignored)")
            return []
        if len(v) > MAX_ENTRIES:
            out.refused.append(f"{path}: '{key}' has {len(v)} entries, more than {MAX_ENTRIES} (ignored)")
            return []
        return v

    st = out.state
    for i, n in enumerate(listed("namespaces")):
        if owner.namespace_ok(n):
            if n not in st["namespaces"]:
                st["namespaces"].append(n)
        else:
            out.refused.append(f"{path}: namespaces[{i}] {_short(n)} is not a namespace of lab {lab}"
                               f" ({owner.prefix}<node> for one of its own nodes): not touched")
    known = set(st["namespaces"])
    for i, e in enumerate(listed("processes")):
        why = _process_problem(e, owner, known)
        if why:
            out.refused.append(f"{path}: processes[{i}] {why}: not touched")
            continue
        st["processes"].append({
            "name": e["name"], "netns": e["netns"], "argv": list(e["argv"]), "pidfile": e["pidfile"],
            "pid": e.get("pid"), "starttime": e.get("starttime"), "dirs": list(e.get("dirs") or []),
        })
    for i, r in enumerate(listed("root_sysctls")):
        if (isinstance(r, dict) and isinstance(r.get("key"), str) and ROOT_SYSCTL_RE.fullmatch(r["key"])
                and all(isinstance(r.get(k), str) and r[k].isascii() and r[k].isdigit() and len(r[k]) <= 9
                        for k in ("original", "set"))
                and 0 <= int(r["original"]) < int(r["set"]) <= MAX_GC_THRESH):
            st["root_sysctls"].append({"key": r["key"], "original": r["original"], "set": r["set"]})
        else:
            out.refused.append(f"{path}: root_sysctls[{i}] {_short(r)}: only a neighbour gc_thresh the deploy raised"
                               f" (0 <= original < set <= {MAX_GC_THRESH}) is ever restored: not written")
    for i, d in enumerate(listed("dirs")):
        if owner.rmdir_ok(d):
            st["dirs"].append(d)
        else:
            out.refused.append(f"{path}: dirs[{i}] {_short(d)} is not below the lab's run directory"
                               f" {run_dir(lab)}: not removed")
    return out


def _process_problem(e: object, owner: Owner, namespaces: set[str]) -> str:
    if not isinstance(e, dict):
        return f"{_short(e)} is not an object"
    name = e.get("name")
    if not isinstance(name, str) or not name or len(name) > 200 or "\n" in name:
        return f"name {_short(name)} is not a process name"
    if e.get("netns") not in namespaces:
        return f"{name}: namespace {_short(e.get('netns'))} is not one of the lab's"
    argv = e.get("argv")
    if (not isinstance(argv, list) or not argv or len(argv) > MAX_ARGV
            or not all(isinstance(a, str) and len(a) <= MAX_WORD and "\0" not in a for a in argv)):
        return f"{name}: argv {_short(argv)} is not a list of words"
    if not owner.path_ok(e.get("pidfile")):
        return f"{name}: pid file {_short(e.get('pidfile'))} is not below the lab's run directory"
    for k in ("pid", "starttime"):
        v = e.get(k)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v <= (1 if k == "pid" else -1)):
            return f"{name}: {k} {_short(v)} is not a positive integer"
    dirs = e.get("dirs") or []
    if not isinstance(dirs, list) or not all(owner.path_ok(d) for d in dirs):
        return f"{name}: dirs {_short(dirs)} are not below the lab's run directory"
    return ""
