"""Design -> every artifact of an OUTDIR, as {relative path: bytes}.

Each producer is a pure function of the fabric graph returning
{path: text}; :data:`PRODUCERS` lists them in the order they run. Adding an
artifact means adding one producer here. Nothing is written: the CLI hands
the result to :func:`railonly.fabric.outdir.writer.write_outdir`.
"""

from __future__ import annotations

import json
from typing import Callable

from .cost import bom
from .cost.inventory import from_fabric
from .design import lab_slice
from .design.design import Design
from .devices import configs
from .graph import fabric_json
from .graph.build import build_fabric
from .graph.model import Fabric
from .outputs import cabling, clab, clabernetes, docs, netbox
from .progress import Progress, Silent

Producer = Callable[[Fabric, Progress], "dict[str, str | bytes]"]  # bytes: already encoded


def _fabric_json(fab: Fabric, progress: Progress) -> dict[str, str]:
    text = fabric_json.render(fab)
    json.loads(text)  # parse back before writing (a renderer bug must not reach disk)
    return {fabric_json.FILE: text}


def _cabling(fab: Fabric, progress: Progress) -> dict[str, str]:
    return {"cabling.csv": cabling.render(fab)}


def produce_lab(fab: Fabric, progress: Progress) -> dict[str, str | bytes]:
    """`<name>.clab.yml`; when the lab is a slice of the design, the slice's own
    artifacts under lab/ too (every other producer, rerun on the sliced design)."""
    d = fab.design
    if not lab_slice.is_slice(d):
        return {clab.filename(fab): clab.render(fab, "configs")}
    sub = lab_slice.sliced(d)
    progress.step(f"building lab slice ({sub.hb_count} of {d.hb_count:,} HB domains)")
    sfab = build_fabric(sub)
    files: dict[str, str | bytes] = {}
    for label, producer in PRODUCERS:
        if producer is produce_lab:
            continue
        for path, text in producer(sfab, progress).items():
            files[f"{lab_slice.SLICE_DIR}/{path}"] = text
    files[clab.filename(fab)] = clab.render(sfab, f"{lab_slice.SLICE_DIR}/configs")
    return files


PRODUCERS: list[tuple[str, Producer]] = [
    (fabric_json.FILE, _fabric_json),
    ("cabling plan", _cabling),
    ("bill of materials", bom.produce),
    ("fabric docs", docs.produce),
    ("NetBox cables", netbox.produce),
    ("switch configs", configs.switch_configs),
    ("host configs", configs.host_configs),
    ("containerlab topology", produce_lab),  # a lab slice reruns the other producers
]

# Producers of artifacts derived from other artifacts rather than from the
# graph: they run last, on the files above (lab name, files so far) -> files.
DERIVED: list[tuple[str, Callable[[str, dict], "dict[str, str]"]]] = [
    ("clabernetes manifest", clabernetes.produce),  # the lab's clab file and switch files, for Kubernetes
]


def compile_fabric(fab: Fabric, progress: Progress | None = None) -> dict[str, bytes]:
    progress = progress or Silent()
    files: dict[str, str | bytes] = {}
    for label, produce in PRODUCERS:
        progress.step(f"rendering {label}")
        out = produce(fab, progress)
        clash = files.keys() & out.keys()
        if clash:
            raise AssertionError(f"two producers write {sorted(clash)}")
        files.update(out)
    for label, derive in DERIVED:
        progress.step(f"rendering {label}")
        out = derive(fab.design.name, files)
        if files.keys() & out.keys():
            raise AssertionError(f"two producers write {sorted(files.keys() & out.keys())}")
        files.update(out)
    return {path: text if isinstance(text, bytes) else text.encode() for path, text in files.items()}


def check_outputs(files: dict[str, bytes], frr: bool = True) -> list:
    """Compile's self-check: what `railonly validate` judges, on the files about
    to be written (full cross-check; YANG and `vtysh -C` on one switch per
    shape, since switches of a shape come from the same code). Returns the
    failed results; the caller writes nothing when there are any."""
    from .validate import validator

    read = validator.memory_reader(files)
    results = validator.validate(read, validator.load_fabric(read, "<compile>"), validator.sample_per_shape(), frr=frr)
    return [r for r in results if not r.passed]


def check_caps(design: Design) -> None:
    """InputError (exit 2) when the design is over a cap (input.limits): counts only, nothing built."""
    from .cost.inventory import from_design
    from .input import limits
    from .input.problems import InputError

    problems = []
    if design.gpus > limits.GPUS.value:
        problems.append(design.problem("hb_domain.count", *limits.GPUS.message(design.gpus)))
    else:
        try:
            switches = sum(from_design(design).switches.values())
        except ValueError:
            switches = 0  # over three tiers: the design check says so
        if switches > limits.SWITCHES.value:
            problems.append(design.problem("switch.radix", *limits.SWITCHES.message(switches)))
        files = limits.estimated_files(switches, design.hb_count)
        if files > limits.FILES.value:
            problems.append(design.problem("hb_domain.count", *limits.FILES.message(files)))
    if problems:
        raise InputError(problems)


def compile_design(design: Design, progress: Progress | None = None) -> tuple[Fabric, dict[str, bytes]]:
    check_caps(design)  # before anything is built: exit 2 naming the cap
    progress = progress or Silent()
    progress.step("building fabric graph")
    fab = build_fabric(design)
    return fab, compile_fabric(fab, progress)


def summary(fab: Fabric) -> str:
    d = fab.design
    by_tier = fab.switches_by_tier()
    names = {1: "leaf", 2: "spine", 3: "core"}
    tiers = ", ".join(f"{len(v):,} {names[t]}" for t, v in by_tier.items())
    rails_desc = f"{d.rails} rails x {len(fab.hbs):,} HB domains of {d.hb_size}"
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
    return "\n".join(lines)
