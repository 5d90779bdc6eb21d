"""Which part of a design the emulation lab runs: the whole design or a slice.

A slice keeps every rail and drops HB domains: domains 0..N-1 of the design,
compiled as a design of its own (``hb_domain.count = N``). Its Clos is the
one N domains need, so a 3-tier rail of a 32k-GPU design becomes a one-switch
rail in a 4-domain lab; what the lab tests is the configuration templates,
rail isolation and rail-only forwarding through the HB domain, which a slice
exercises as fully as the whole design.

Layout of an OUTDIR (the decision the runtimes rely on):

* whole design (the lab runs all domains): ``<name>.clab.yml`` references the
  top-level ``configs/``; the lab reads the top-level ``fabric.json``.
* slice: the sliced design is compiled by the same producers into ``lab/``
  (``lab/fabric.json``, ``lab/configs/<switch>/...``, ``lab/cabling.csv`` ...);
  ``<name>.clab.yml`` references ``lab/configs/``, and the lab reads
  ``lab/fabric.json``. The top-level files always describe the full design.

Default (``lab.domains`` unset): the whole design when it has at most
:data:`WHOLE_MAX_GPUS` GPUs, otherwise :data:`SLICE_DEFAULT` domains. An
explicit ``lab.domains`` (or ``railonly compile --lab-domains N``) wins.
"""

from __future__ import annotations

import copy
import dataclasses

from ..input.problems import InputError, Problem
from ..platforms.catalog import GENERIC
from .design import Design

WHOLE_MAX_GPUS = 64  # labs up to this size run the whole design
SLICE_DEFAULT = 4  # HB domains in the default slice of a larger design
SLICE_DIR = "lab"  # where a slice's own artifacts go inside OUTDIR


def lab_domains(design: Design) -> int:
    """HB domains the lab runs (never more than the design has)."""
    if design.lab_domains is not None:
        return min(design.lab_domains, design.hb_count)
    if design.gpus <= WHOLE_MAX_GPUS:
        return design.hb_count
    return min(SLICE_DEFAULT, design.hb_count)


def lab_names_ok(design: Design) -> bool:
    """False when a catalog model gives EOS ports breakout names (`Ethernet1/5`): a Linux
    interface name cannot hold '/', so such a lab runs under generic port names (lab/)."""
    return all(design.platform_of_tier(t) != "eos" for t in design.models)


def is_slice(design: Design) -> bool:
    return lab_domains(design) < design.hb_count or not lab_names_ok(design)


def sliced(design: Design) -> Design:
    """The design the lab runs: the first lab_domains() domains, all rails."""
    n = lab_domains(design)
    if n == design.hb_count and lab_names_ok(design):
        return design
    values = copy.deepcopy(design.values)
    if not lab_names_ok(design):  # the same Clos and radix, ports named as generic switches name them
        values["switch"].update(model=GENERIC, breakout=None, model_by_tier={})
        design = dataclasses.replace(design, switch_model=GENERIC, breakout=None, models={})
        if n == design.hb_count:
            return dataclasses.replace(design, values=values)
    values.setdefault("hb_domain", {})["count"] = n
    values["hb_domain"]["planned"] = None  # the lab's Clos is the one its N domains need
    values.setdefault("lab", {})["domains"] = n
    return dataclasses.replace(design, hb_count=n, hb_planned=None, lab_domains=n, values=values)


def with_lab_domains(design: Design, n: int | None) -> Design:
    """Apply `--lab-domains N` from the command line (InputError when out of range)."""
    if n is None:
        return design
    if not 1 <= n <= design.hb_count:
        raise InputError([Problem(
            "lab.domains", f"--lab-domains must be between 1 and hb_domain.count ({design.hb_count}), got {n}",
            f"use --lab-domains {min(SLICE_DEFAULT, design.hb_count)}", None, getattr(design, "file", None),
        )])
    values = copy.deepcopy(design.values)
    values.setdefault("lab", {})["domains"] = n
    return dataclasses.replace(design, lab_domains=n, values=values)


def describe(design: Design) -> str:
    """One summary line for `railonly compile`."""
    n = lab_domains(design)
    if not lab_names_ok(design):
        return (f"  lab       {n} of {design.hb_count:,} HB domains in {design.name}.clab.yml and {SLICE_DIR}/, "
                "EOS ports under generic names (Linux interface names cannot hold '/')")
    if n == design.hb_count:
        return f"  lab       whole design ({design.gpus:,} GPUs) in {design.name}.clab.yml"
    return (f"  lab       a slice: {n} of {design.hb_count:,} HB domains, all {design.rails} rails "
            f"({n * design.rails:,} GPUs) in {design.name}.clab.yml and {SLICE_DIR}/ "
            f"(set lab.domains or --lab-domains to change)")
