"""Producers of switch configs (SONiC or EOS, per switch platform) and host configs.

Each switch and each host is a *unit*: its files are a pure function of its view
of the graph (:func:`switch_view`, the host view), the design's settings other
than the HB domain count, and the rendering code. :func:`switch_units` and
:func:`host_units` give each unit a digest of exactly that, so an incremental
compile re-renders only the units whose digest moved (`reuse`: unit -> digest of
the units whose previous files are intact) and carries the others over.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import marshal
import operator
import os
from functools import lru_cache
from pathlib import Path
from typing import Callable

from .. import parallel
from ..graph.model import Endpoint, Fabric, Node, Vlan
from ..outdir_layout import CONFIG_DB, FRR_CONF, STARTUP_CONFIG, host_file, switch_file
from ..progress import Progress
from . import eos_render, hosts, qos, sonic_render
from .device import Neighbor, Port, SwitchView, switch_view

# unit -> (digest, [paths]) of every unit rendered or carried; reused: paths carried over
Units = dict[str, tuple[str, list[str]]]


def switch_configs(fab: Fabric, progress: Progress) -> dict[str, bytes]:
    return switch_units(fab, progress)[0]


def switch_units(fab: Fabric, progress: Progress, reuse: dict[str, str] | None = None,
                 per_switch: "Callable[[Fabric, Node, SwitchView], object] | None" = None,
                 extras: "dict[str, object] | None" = None) -> tuple[dict[str, bytes], Units, set[str]]:
    """(rendered files, every switch's unit, paths carried over unchanged from `reuse`).
    `per_switch(fab, switch, view)`, run in the workers on each switch's view (made once
    for its configs and its digest), fills `extras` (switch name -> its result): other
    files' rows per switch, without making the view again in the parent."""
    total = len(fab.switches)
    progress.step(f"rendering switch configs ({parallel.jobs()} workers)", 0, total)
    out: dict[str, bytes] = {}
    units: Units = {}
    carried: set[str] = set()
    for part in parallel.map_shards(_switch_shard, (fab, reuse, per_switch), total, min_items=128):
        out.update(part[0])
        units.update(part[1])
        carried |= part[2]
        if extras is not None:
            extras.update(part[3])
    progress.step(f"rendering switch configs ({parallel.jobs()} workers)", total, total)
    return out, units, carried


def _switch_shard(state, i: int, n: int):
    # Encoded in the worker: bytes cross the process boundary as one copy.
    fab, reuse, per_switch = state
    q = qos.plan(fab.design)
    key = _digest(render_key(fab.design), q) if reuse is not None else ""  # the QoS plan is one for all switches
    out: dict[str, bytes] = {}
    units: Units = {}
    carried: set[str] = set()
    extras: dict[str, object] = {}
    for sw in fab.switches[i::n]:
        unit = f"switch/{sw.name}"
        view = switch_view(fab, sw) if reuse is not None or per_switch else None
        if per_switch:
            extras[sw.name] = per_switch(fab, sw, view)
        if reuse is not None:
            digest = _digest(key, _plain_view(view))
            paths = [switch_file(sw.name, f) for f in _switch_files(sw, view)]
            units[unit] = (digest, paths)
            if reuse.get(unit) == digest:
                carried.update(paths)
                continue
        render = sonic_render.render_switch if sw.platform == "sonic" else eos_render.render_switch
        files = render(fab, sw, q, view)[1]
        for path, text in files.items():
            out[path] = text.encode()
        if reuse is not None and sorted(files) != units[unit][1]:
            raise AssertionError(f"{unit}: renders {sorted(files)}, expected {units[unit][1]}")  # _switch_files is stale
    return out, units, carried, extras


def _switch_files(sw, view) -> list[str]:
    """The file names a switch's renderer writes (sorted), known before rendering."""
    if sw.platform != "sonic":
        return [STARTUP_CONFIG]
    return [CONFIG_DB, FRR_CONF] if view.routed else [CONFIG_DB]


def host_configs(fab: Fabric, progress: Progress) -> dict[str, bytes]:
    return host_units(fab, progress)[0]


def host_units(fab: Fabric, progress: Progress, reuse: dict[str, str] | None = None
               ) -> tuple[dict[str, bytes], Units, set[str]]:
    out: dict[str, bytes] = {}
    units: Units = {}
    carried: set[str] = set()
    for part in parallel.map_shards(_host_shard, (fab, reuse), len(fab.hbs), min_items=512):
        out.update(part[0])
        units.update(part[1])
        carried |= part[2]
    return out, units, carried


def _host_shard(state, i: int, n: int):
    fab, reuse = state
    if reuse is None:
        return {path: text.encode() for path, text in hosts.render_hosts(fab, i, n).items()}, {}, set()
    key = render_key(fab.design)
    keep = set()
    units: Units = {}
    carried: set[str] = set()
    views = hosts.host_views(fab, i, n)
    for view in views:
        unit = f"host/{view['name']}"
        digest = _digest(key, view)
        paths = [host_file(view['name'], f) for f in hosts.HOST_FILES]
        units[unit] = (digest, paths)
        if reuse.get(unit) == digest:
            keep.add(view["name"])
            carried.update(paths)
    out = {path: text.encode() for path, text in hosts.render_hosts(fab, i, n, skip=keep, views=views).items()}
    return out, units, carried


def _digest(*parts) -> str:
    """BLAKE2b of the parts as marshal (format 2) writes them: bytes that depend on the values
    alone (no back-references, no interning flag), types included, at half the cost of repr
    on a switch view (0.2 s against 0.42 s for 2,576 at 32k GPUs); repr for a value marshal
    cannot write (an object)."""
    try:
        data = b"m" + marshal.dumps(parts, 2)
    except ValueError:
        data = b"r" + repr(parts).encode()
    return hashlib.blake2b(data, digest_size=20).hexdigest()


def _fields(cls, *nested: str) -> Callable:
    """A getter of every field of the dataclass `cls` but `nested`, as one tuple (C speed)."""
    return operator.attrgetter(*(f.name for f in dataclasses.fields(cls) if f.name not in nested))


_PORT, _NEIGHBOR, _VLAN, _ENDPOINT = _fields(Port), _fields(Neighbor), _fields(Vlan), _fields(Endpoint)
_NODE = _fields(Node, "ports", "vlans")
_VIEW = _fields(SwitchView, "node", "ports", "vlans", "neighbors")


def _plain_view(view: SwitchView) -> tuple:
    """Every field of the view and of the objects in it, as plain nested tuples: what the
    dataclasses' repr says, at about half its cost. The getters list each class's fields,
    so a field added later is digested too (a nested object in it through its repr)."""
    node = view.node
    return (_NODE(node), [(k, _ENDPOINT(e)) for k, e in node.ports.items()], list(map(_VLAN, node.vlans)),
            list(map(_PORT, view.ports)), list(map(_VLAN, view.vlans)), list(map(_NEIGHBOR, view.neighbors)),
            _VIEW(view))


def render_key(design) -> str:
    """What a unit's files depend on besides its own view: the design's settings with
    the HB domain count (growth moves only the views) and provenance blanked, and
    the rendering code itself (a changed template or renderer re-renders all)."""
    same = dataclasses.replace(design, hb_count=0, sha256="", file=None, lines={}, values={})
    # models (the platform files' contents) are left out of the Design's repr: add them
    return _digest(repr(same), repr(sorted(design.models.items())), code_fingerprint())


def slice_key(sub) -> str:
    """What the files of a lab slice depend on (the lab/ tree, its clab and clabernetes
    files): the sliced design `sub` whole (lab_slice.sliced sets its count, radix and
    values: no other HB domain count reaches it) with its provenance blanked (no renderer
    prints the design's path or hash), its platform files and the rendering code."""
    same = dataclasses.replace(sub, sha256="", file=None, lines={})
    return _digest(repr(same), repr(sorted(sub.models.items())), code_fingerprint())


def inputs_key(design) -> str:
    """What a whole compile writes depends on: the design whole (its HB domain count, file
    and sha256 included), its platform files and railonly's build. Equal keys, equal OUTDIRs
    (the output is deterministic), and equal self-check verdicts (the build includes the
    checker's models)."""
    return _digest(repr(design), repr(sorted(design.models.items())), code_fingerprint())


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """sha256 of every file of the compiler and its checker (sources, templates, YANG
    models, schemas: some 350 small files): a unit digest from another build of railonly
    never matches."""
    spec = importlib.util.find_spec("railonly.templates")
    h = hashlib.sha256()
    for root in (Path(__file__).resolve().parents[1], Path(next(iter(spec.submodule_search_locations)))):
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for f in sorted(filenames):
                if not f.endswith((".pyc", ".pyo")):
                    p = Path(dirpath, f)
                    h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()
