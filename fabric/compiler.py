"""Design -> every artifact of an OUTDIR, as {relative path: bytes}.

Each producer is a pure function of the fabric graph returning
{path: text}; :data:`PRODUCERS` lists them in the order they run. Adding an
artifact means adding one producer here. Nothing is written: the CLI hands
the result to :func:`railonly.fabric.outdir.writer.write_outdir`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable

from .outdir_layout import CABLING_CSV, CONFIGS, FABRIC_JSON, SLICE_DIR
from . import parallel
from .cost import bom
from .cost.inventory import check_caps, from_fabric
from .design import lab_slice, physical
from .design.design import Design
from .devices import configs
from .devices import sonic_platform
from .devices.configs import Units
from .graph import fabric_json
from .graph.build import build_fabric
from .graph.model import Fabric
from .outputs import cabling, clab, clabernetes, docs, netbox
from .progress import Progress, Silent

Producer = Callable[[Fabric, Progress], "dict[str, str | bytes]"]  # bytes: already encoded


def _fabric_json(fab: Fabric, progress: Progress) -> dict[str, str]:
    # parsed back before writing (a renderer bug must not reach disk): by the self-check,
    # or by compile_units(parse_back=True) without one
    return {FABRIC_JSON: fabric_json.render(fab)}


def _cabling(fab: Fabric, progress: Progress) -> dict[str, str]:
    return {CABLING_CSV: cabling.render(fab)}


def produce_lab(fab: Fabric, progress: Progress) -> dict[str, str | bytes]:
    """`<name>.clab.yml`; when the lab is a slice of the design, the slice's own
    artifacts under lab/ too (every other producer, rerun on the sliced design)."""
    d = fab.design
    if not lab_slice.is_slice(d):
        return {clab.filename(fab): clab.render(fab, CONFIGS)}
    sub = lab_slice.sliced(d)
    progress.step(f"building lab slice ({sub.hb_count} of {d.hb_count:,} HB domains)")
    sfab = build_fabric(sub)
    files: dict[str, str | bytes] = {}
    for label, producer in PRODUCERS:
        if producer is produce_lab:
            continue
        for path, text in producer(sfab, progress).items():
            files[f"{SLICE_DIR}/{path}"] = text
    files[clab.filename(fab)] = clab.render(sfab, f"{SLICE_DIR}/{CONFIGS}")
    return files


PRODUCERS: list[tuple[str, Producer]] = [
    (FABRIC_JSON, _fabric_json),
    ("cabling plan", _cabling),
    ("bill of materials", bom.produce),
    ("fabric docs", docs.produce),
    ("NetBox devices and cables", netbox.produce_from_graph),
    ("switch configs", configs.switch_configs),
    ("NetBox interfaces", netbox.produce_interfaces),  # after the switches: their rows come with their configs
    ("host configs", configs.host_configs),
    ("containerlab topology", produce_lab),  # a lab slice reruns the other producers
]

# Producers of files from the graph alone, single-threaded: on a big fabric they run in a
# forked process while this one renders the switch and host units on the workers (the
# second core idled through them: 1.7 s at 32,768 GPUs).
BESIDE_UNITS = (_fabric_json, _cabling, bom.produce, docs.produce, netbox.produce_from_graph)
BESIDE_MIN_SWITCHES = 512

# From this size of fabric.json (1,024 GPUs write about 1 MB) an incremental self-check
# diffs the plant files' text in a forked process beside the parse (validate/since.py).
SINCE_BESIDE_MIN_BYTES = 4 << 20

# The producers made of units (one switch, one host) that an incremental compile can carry over.
UNIT_PRODUCERS = {configs.switch_configs: configs.switch_units, configs.host_configs: configs.host_units}

# A lab slice's files (lab/, the clab and clabernetes files) as one unit of an incremental compile.
LAB_UNIT = "lab"

# Producers of artifacts derived from other artifacts rather than from the
# graph: they run last, on the files above (lab name, files so far) -> files.
DERIVED: list[tuple[str, Callable[[str, dict], "dict[str, str]"]]] = [
    ("clabernetes manifest", clabernetes.produce),  # the lab's clab file and switch files, for Kubernetes
]


class Tree(Mapping):
    """Every file of a compile: the rendered bytes, and the carried files read (and
    checked) from the previous OUTDIR only when something asks for them."""

    def __init__(self, rendered: dict[str, bytes], carried: "set[str] | frozenset[str]" = frozenset(),
                 read_carried: "Callable[[str], bytes] | None" = None):
        self.rendered, self.carried, self._read = rendered, carried, read_carried

    def __getitem__(self, path: str) -> bytes:
        if path in self.rendered:
            return self.rendered[path]
        if path in self.carried:
            return self._read(path)
        raise KeyError(path)

    def __contains__(self, path) -> bool:
        return path in self.rendered or path in self.carried

    def __iter__(self):
        yield from self.rendered
        yield from self.carried

    def __len__(self) -> int:
        return len(self.rendered) + len(self.carried)


@dataclass
class Compiled:
    files: Tree
    units: Units = field(default_factory=dict)  # switch/<name>, host/<name> -> (digest, paths)

    @property
    def changed_switches(self) -> set[str]:
        """Switches whose configs were rendered this time (not carried over)."""
        return {u.split("/", 1)[1] for u, (_d, paths) in self.units.items()
                if u.startswith("switch/") and paths[0] in self.files.rendered}


def compile_fabric(fab: Fabric, progress: Progress | None = None) -> dict[str, bytes]:
    """Every file of the OUTDIR, rendered."""
    return compile_units(fab, progress).files.rendered


def compile_units(fab: Fabric, progress: Progress | None = None, reuse: dict[str, str] | None = None,
                  read_carried: "Callable[[str], bytes] | None" = None,
                  reuse_paths: "dict[str, list[str]] | None" = None, parse_back: bool = True) -> Compiled:
    """Every file; with `reuse` (unit -> digest of the previous compile's intact units;
    {} for none) each switch and host unit gets its digest, and a unit whose digest
    is unchanged is carried over (read through `read_carried` if anything needs it).
    A lab slice is one unit too (:data:`LAB_UNIT`: its files are a function of the sliced
    design, which growth leaves alone); `reuse_paths` names the previous unit's files.
    `parse_back=False`: the caller's self-check (:func:`check_outputs`) parses the
    fabric.json files back instead."""
    progress = progress or Silent()
    lab_paths: set[str] = set()
    switch_rows: dict[str, str] = {}  # switch -> its NetBox interface rows, made in the switch workers
    files: dict[str, str | bytes] = {}
    carried: set[str] = set()
    units: Units = {}
    sliced = reuse is not None and lab_slice.is_slice(fab.design)
    lab_digest = configs.slice_key(lab_slice.sliced(fab.design)) if sliced else None
    lab_kept = lab_digest is not None and reuse.get(LAB_UNIT) == lab_digest and LAB_UNIT in (reuse_paths or {})
    beside = None
    if len(fab.switches) >= BESIDE_MIN_SWITCHES and parallel.jobs() > 1:
        beside = parallel.Background(_render_beside, fab)
        progress.step("rendering " + ", ".join(label for label, p in PRODUCERS if p in BESIDE_UNITS)
                      + " (beside the switch configs)")
    try:
        for label, produce in PRODUCERS:
            if beside is not None and produce in BESIDE_UNITS:
                continue
            progress.step(f"rendering {label}")
            if produce is produce_lab and lab_kept:
                units[LAB_UNIT] = (lab_digest, reuse_paths[LAB_UNIT])
                carried.update(reuse_paths[LAB_UNIT])
                continue
            if produce is configs.switch_configs:
                out, more, kept = configs.switch_units(fab, progress, reuse, netbox.switch_interfaces, switch_rows)
                units.update(more)
                carried |= kept
            elif produce is netbox.produce_interfaces:
                out = netbox.produce_interfaces(fab, progress, switch_rows)
            elif reuse is not None and produce in UNIT_PRODUCERS:
                out, more, kept = UNIT_PRODUCERS[produce](fab, progress, reuse)
                units.update(more)
                carried |= kept
            else:
                out = produce(fab, progress)
                if produce is produce_lab:
                    lab_paths = set(out)
            clash = (files.keys() | carried) & out.keys()
            if clash:
                raise AssertionError(f"two producers write {sorted(clash)}")
            files.update(out)
        if beside is not None:
            out = beside.result()
            clash = (files.keys() | carried) & out.keys()
            if clash:
                raise AssertionError(f"two producers write {sorted(clash)}")
            files.update(out)
    except BaseException:
        if beside is not None:
            beside.cancel()  # no child left behind
        raise
    tree = Tree(files, carried, read_carried)
    before_lab = set(files)
    for label, derive in DERIVED if not lab_kept else ():  # derived from the lab's files: kept with them
        progress.step(f"rendering {label}")
        out = derive(fab.design.name, tree)
        if out.keys() & tree.keys():
            raise AssertionError(f"two producers write {sorted(out.keys() & tree.keys())}")
        files.update(out)
    if lab_digest is not None and not lab_kept:
        units[LAB_UNIT] = (lab_digest, sorted(lab_paths | (files.keys() - before_lab)))
    tree.rendered = {path: text if isinstance(text, bytes) else text.encode() for path, text in files.items()}
    if parse_back:
        for path in (p for p in tree.rendered if p in (FABRIC_JSON, f"{SLICE_DIR}/{FABRIC_JSON}")):
            fabric_json.decodes(tree.rendered[path])
    return Compiled(tree, units)


def _render_beside(fab: Fabric) -> dict[str, bytes]:
    """The BESIDE_UNITS producers' files, encoded here: bytes cross the pipe as one copy."""
    files: dict[str, bytes] = {}
    for produce in BESIDE_UNITS:
        for path, text in produce(fab, Silent()).items():
            files[path] = text if isinstance(text, bytes) else text.encode()
    return files


def check_outputs(files: "Mapping[str, bytes]", frr: bool = True, only: "set[str] | None" = None,
                  base: "Callable[[str], str | None] | None" = None) -> list:
    """Compile's self-check: what `railonly validate` judges, on the files about
    to be written (full cross-check; YANG and `vtysh -C` on one switch per
    shape, since switches of a shape come from the same code). Returns the
    failed results; the caller writes nothing when there are any.

    `only` (an incremental compile onto a self-checked one): the switches rendered this
    time. The per-switch checks and the cross-check then cover them and the switches whose
    lines of fabric.json may have changed (:func:`_judged`; the others' files are byte for
    byte the ones checked before, against the same lines); YANG and `vtysh -C` the first of
    them of each shape no carried switch has (a carried switch's unit digest holds the
    rendering and checking code, so a self-check run by this same code sampled its shape);
    the plant files by their changes since `base` (the previous compile's files, read where
    its self-check judged them: `Previous.read_checked`), else whole."""
    from .validate import since, validator

    from .input.problems import InputError
    from .results import Result

    read = validator.memory_reader(files)
    slice_json = f"{SLICE_DIR}/{FABRIC_JSON}"
    # What the plant files' text says changed needs no graph: on a big fabric it is
    # taken in a forked process while this one parses fabric.json.
    changes = None
    if (only is not None and base is not None and parallel.jobs() > 1
            and len(files.get(FABRIC_JSON) or b"") >= SINCE_BESIDE_MIN_BYTES):
        changes = parallel.Background(since.text_changes, read, base)
    try:
        try:
            if slice_json in files and slice_json not in getattr(files, "carried", ()):
                fabric_json.decodes(files[slice_json])  # the lab's, which the compile left unparsed
            fabric = validator.load_fabric(read, "<compile>")
        except (InputError, ValueError) as exc:  # a renderer bug: the compile stops with exit 1
            return [Result(f"parse/{FABRIC_JSON}", "fabric", False, f"fabric.json does not parse back: {exc}")]
        if only is None:
            results = validator.validate(read, fabric, validator.sample_per_shape(), frr=frr)
        else:
            changed = changes.result() if changes is not None else since.text_changes(read, base) if base else None
            pick = validator.sample_per_shape(n for n in fabric.switches if n.name not in only)
            results = validator.validate(read, fabric, lambda n: n.name in only and pick(n), frr=frr,
                                         plant_check=False, checked=_judged(fabric, only, changed))
            results += since.plant_since(fabric, read, base, changed)
    finally:
        if changes is not None:
            changes.cancel()  # on the way out before its result (a no-op after it): no child left behind
    return [r for r in results if not r.passed]


def _judged(fabric: Fabric, only: set[str], changes: "since.Changes | None") -> set[str]:
    """The switches an incremental self-check judges: those rendered now, and every switch
    whose part of fabric.json may read otherwise than when it was judged. When fabric.json
    only gained lines since the last checked compile (`changes`, since.text_changes), a
    carried switch's verdict reads its own unchanged config and old lines only (its node,
    its links, its peers' nodes), unless a new line names it: a new link, or its own node
    line. Else every switch cabled to one rendered now (the peers whose verdicts read a
    rendered switch's node)."""
    switches = {n.name for n in fabric.switches}
    came = changes.fabric_items if changes is not None else None
    if came is None:
        ends = {e.node for lk in fabric.links if lk.a.node in only or lk.b.node in only for e in (lk.a, lk.b)}
        return set(only) | (ends & switches)
    named: set[str] = set()
    for item in came:  # decoded by since.py; the parse of the whole file judged their form
        if "kind" in item:  # a link: its two ends
            names = [end.get("node") for end in (item.get("a"), item.get("b")) if isinstance(end, dict)]
        else:  # a node
            names = [item.get("name")]
        named.update(n for n in names if isinstance(n, str))
    return set(only) | (named & switches)


def compile_design(design: Design, progress: Progress | None = None) -> tuple[Fabric, dict[str, bytes]]:
    fab, out = compile_design_units(design, progress)
    return fab, out.files.rendered


def compile_design_units(design: Design, progress: Progress | None = None, reuse: dict[str, str] | None = None,
                         read_carried: "Callable[[str], bytes] | None" = None,
                         reuse_paths: "dict[str, list[str]] | None" = None,
                         parse_back: bool = True) -> tuple[Fabric, Compiled]:
    check_caps(design)  # before anything is built: exit 2 naming the cap
    progress = progress or Silent()
    progress.step("building fabric graph")
    fab = build_fabric(design)
    return fab, compile_units(fab, progress, reuse, read_carried, reuse_paths, parse_back)


def summary(fab: Fabric) -> str:
    d = fab.design
    by_tier = fab.switches_by_tier()
    tiers = ", ".join(f"{len(v):,} {physical.SWITCH_TIERS[t]}" for t, v in by_tier.items())
    rails_desc = f"{d.hb_size} rails x {len(fab.hbs):,} HB domains of {d.hb_size}"
    lines = [
        f"{d.name}: {d.topology}, {d.rail_mode} rails, {d.platform} (radix {d.radix}, {d.nic_gbps}G)"
        + (f", {d.switch_model} {d.breakout}" if d.models else ""),
        f"  GPUs      {len(fab.gpus):,} ({rails_desc})",
        f"  tiers     {fab.tiers} {'per rail' if d.topology == 'rail-only' else 'across rails'}",
        f"  switches  {len(fab.switches):,} ({tiers})",
        f"  cables    {len(fab.cables()):,} ({from_fabric(fab).transceiver_count:,} transceivers)",
    ]
    if d.planned > d.hb_count:
        lines.append(f"  build-out {d.planned:,} HB domains: spines and cores sized for it, growing only adds cables "
                     f"(bom-buildout.csv)")
    lines += [f"  note      {n}" for n in sonic_platform.unprotected_cable_tiers(d, fab.tiers)]
    return "\n".join(lines)
