"""Which part of a design the emulation lab runs: the whole design or a slice.

A slice keeps every rail and drops HB domains: domains 0..N-1 of the design,
compiled as a design of its own (``hb_domain.count = N``) by the same producers
(the same renderers, roles and ASN scheme). It keeps the production *shape* at a
reduced size: the design's tiers, the ECMP width above the leaves (at least two
spines where the design has spines) and the leaf layout (rail-pure or packed),
at a reduced switch radix. So the lab of a two-tier design runs eBGP between
leaves and spines with several equal-cost uplinks per leaf, as the design does,
instead of one switch per rail. What a slice drops (domains, ports per switch,
the platform's port count) is stated by :func:`describe` in the compile summary.

Layout of an OUTDIR (the decision the runtimes rely on):

* whole design (the lab runs all domains): ``<name>.clab.yml`` references the
  top-level ``configs/``; the lab reads the top-level ``fabric.json``.
* slice (fewer domains, generic port names, or BFD timers a lab host can run:
  routing.lab_bfd_interval_ms): the lab's design is compiled by the same producers into ``lab/``
  (``lab/fabric.json``, ``lab/configs/<switch>/...``, ``lab/cabling.csv`` ...);
  ``<name>.clab.yml`` references ``lab/configs/``, and the lab reads
  ``lab/fabric.json``. The top-level files always describe the full design.

Default (``lab.domains`` unset): the whole design when it has at most
:data:`WHOLE_MAX_GPUS` GPUs, otherwise the fewest domains (at least
:data:`SLICE_DEFAULT`) whose Clos has the design's shape at some radix. An
explicit ``lab.domains`` (or ``railonly compile --lab-domains N``) wins; when no
radix gives N domains the design's shape, the lab keeps the design's radix and
the summary says which tiers it drops.
"""

from __future__ import annotations

import copy
import dataclasses

from ..outdir_layout import SLICE_DIR, clab_yml
from ..input.problems import InputError, Problem
from ..platforms.catalog import GENERIC
from . import clos, routing
from .design import Design

WHOLE_MAX_GPUS = 64  # labs up to this size run the whole design
SLICE_DEFAULT = 4  # fewest HB domains in the default slice of a larger design
SLICE_SEARCH_MAX = 1024  # domains tried for the default slice's shape (far more than any shape needs)
MIN_RADIX = 4  # the smallest switch a lab runs (two ports down, two up)


def design_shape(design: Design) -> dict:
    """The Clos of the design (its build-out), by tier (clos.shape)."""
    return clos.shape(design.topology, design.hb_size, design.planned, design.radix)


def _same_shape(lab: dict, prod: dict) -> bool:
    """Same tiers, leaves as rail-pure or packed as the design's, and at least
    two spines (the ECMP width) where the design has two or more."""
    return (lab["tiers"] == prod["tiers"] and (lab["rails_per_leaf"] > 1) == (prod["rails_per_leaf"] > 1)
            and lab["spines"] >= min(2, prod["spines"]))


def shape_radix(design: Design, domains: int, full_leaves: bool = False) -> int | None:
    """The largest even radix, up to the design's, at which `domains` HB domains
    build a Clos of the design's shape; None when none does. ``full_leaves``: only
    a radix whose rail-pure leaves are all full (every down port used)."""
    prod = design_shape(design)
    for k in range(design.radix, MIN_RADIX - 1, -2):
        lab = clos.shape(design.topology, design.hb_size, domains, k)
        if full_leaves and lab["tiers"] > 1 and lab["rails_per_leaf"] == 1 and domains % (k // 2):
            continue
        if _same_shape(lab, prod):
            return k
    return None


def _shape_fit(design: Design, domains: int) -> int | None:
    """shape_radix, preferring full leaves."""
    return shape_radix(design, domains, True) or shape_radix(design, domains)


def lab_domains(design: Design) -> int:
    """HB domains the lab runs (never more than the design has): the fewest, from
    SLICE_DEFAULT up, that keep the design's shape with full leaves (else without)."""
    if design.lab_domains is not None:
        return min(design.lab_domains, design.hb_count)
    if design.gpus <= WHOLE_MAX_GPUS:
        return design.hb_count
    tries = range(min(SLICE_DEFAULT, design.hb_count), min(design.hb_count, SLICE_SEARCH_MAX) + 1)
    for full in (True, False):
        for n in tries:
            if shape_radix(design, n, full) is not None:
                return n
    return min(SLICE_DEFAULT, design.hb_count)


def lab_radix(design: Design) -> int:
    """The switch radix the lab runs: the design's for the whole design, else the
    largest that keeps the design's shape (the design's when none does)."""
    n = lab_domains(design)
    if n == design.hb_count:
        return design.radix
    return _shape_fit(design, n) or design.radix


def lab_names_ok(design: Design) -> bool:
    """False when a catalog model gives EOS ports breakout names (`Ethernet1/5`): a Linux
    interface name cannot hold '/', so such a lab runs under generic port names (lab/)."""
    return all(design.platform_of_tier(t) != "eos" for t in design.models)


def _routed(design: Design) -> bool:
    return design.rail_mode == "routed" or design.topology != "rail-only"


def bfd_session_ends(design: Design, domains: int, radix: int) -> int:
    """BFD session ends of the Clos `domains` HB domains build at `radix`: two per
    switch-to-switch link, i.e. every leaf's radix/2 uplinks (and in three tiers every
    spine's), as the fabric builder wires them; none on L2 rails."""
    if not _routed(design):
        return 0
    s = clos.shape(design.topology, design.hb_size, domains, radix)
    if s["tiers"] < 2:
        return 0
    uplinked = s["leaves"] + (s["spines"] if s["tiers"] == 3 else 0)
    return 2 * uplinked * (radix // 2) * (design.hb_size if s["per_rail"] else 1)


def lab_bfd_interval_ms(design: Design) -> int:
    """The BFD interval the lab's switches run (routing.lab_bfd_interval_ms of its sessions).
    An EOS lab keeps the design's: its FRR comes from the startup-config's `router bgp`
    (readback.eos.frr_text), and EOS timers are not rendered yet."""
    if any(design.platform_of_tier(t) == "eos" for t in (1, 2, 3)):
        return design.bfd_interval_ms
    return routing.lab_bfd_interval_ms(bfd_session_ends(design, lab_domains(design), lab_radix(design)))


def is_slice(design: Design) -> bool:
    """The lab is compiled as a design of its own under lab/: fewer domains, generic
    port names, or BFD timers of its own."""
    return (lab_domains(design) < design.hb_count or not lab_names_ok(design)
            or lab_bfd_interval_ms(design) != design.bfd_interval_ms)


def sliced(design: Design) -> Design:
    """The design the lab runs: the first lab_domains() domains, all rails, at lab_radix().
    Generic switches (same Clos, ports named as generic switches name them) when a catalog
    model's port names cannot be Linux names, or when the lab's radix is not the model's."""
    n = lab_domains(design)
    k = lab_radix(design)
    generic = not lab_names_ok(design) or (k != design.radix and (design.switch_model != GENERIC or design.models))
    design = dataclasses.replace(design, bfd_interval_ms=lab_bfd_interval_ms(design))
    if n == design.hb_count and not generic:
        return design
    values = copy.deepcopy(design.values)
    if generic:
        values["switch"].update(model=GENERIC, breakout=None, model_by_tier={})
        design = dataclasses.replace(design, switch_model=GENERIC, breakout=None, models={})
        if n == design.hb_count:
            return dataclasses.replace(design, values=values)
    values.setdefault("hb_domain", {})["count"] = n
    values["hb_domain"]["planned"] = None  # the lab's Clos is the one its N domains need
    values.setdefault("switch", {})["radix"] = k
    values.setdefault("lab", {})["domains"] = n
    return dataclasses.replace(design, hb_count=n, hb_planned=None, lab_domains=n, radix=k, values=values)


def with_lab_domains(design: Design, n: int | None) -> Design:
    """Apply `--lab-domains N` from the command line (InputError when out of range)."""
    if n is None:
        return design
    if not 1 <= n <= design.hb_count:
        where = f" of {design.file}" if design.file else ""
        raise InputError([Problem(  # the flag's fault, not the design file's
            "--lab-domains", f"must be between 1 and hb_domain.count{where} ({design.hb_count}), got {n}",
            f"use --lab-domains {min(SLICE_DEFAULT, design.hb_count)}", None, "command line",
        )])
    values = copy.deepcopy(design.values)
    values.setdefault("lab", {})["domains"] = n
    return dataclasses.replace(design, lab_domains=n, values=values)


def _tiers_text(s: dict) -> str:
    where = " per rail" if s["per_rail"] else ""
    if s["tiers"] == 1:
        return f"1 tier ({s['leaves']} switch{where})"
    parts = [f"{s['leaves']} leaves", f"{s['spines']} spines"] + ([f"{s['cores']} cores"] if s["cores"] else [])
    return f"{s['tiers']} tiers{where} ({', '.join(parts)})"


def _uplinks(s: dict, radix: int) -> str:
    """A leaf's uplinks and the distinct switches they reach (builder wiring: round robin
    over the spines in two tiers, over the leaf's pod's spines in three)."""
    half = radix // 2
    reach = s["spines"] if s["tiers"] == 2 else min(half, s["leaves"])
    return f"{half} uplinks to {min(half, reach)} spines"


def _bfd_text(design: Design) -> str:
    """Why the lab's BFD interval is not the design's ("" when it is)."""
    ms = lab_bfd_interval_ms(design)
    if ms == design.bfd_interval_ms:
        return ""
    ends = bfd_session_ends(design, lab_domains(design), lab_radix(design))
    return (f"the design's BFD interval of {design.bfd_interval_ms} ms: BFD runs every {ms:,} ms"
            f" (x{routing.BFD_MULTIPLIER}), as {ends:,} session ends at {design.bfd_interval_ms} ms would send"
            f" {ends * 1000 // design.bfd_interval_ms:,} packets/s, more than the {routing.LAB_BFD_PACKETS_PER_S:,}"
            f" a lab host gives BFD")


def describe(design: Design) -> str:
    """The summary lines of `railonly compile` about the lab: what it keeps of the design and what it drops."""
    n = lab_domains(design)
    eos_names = "" if lab_names_ok(design) else "EOS ports under generic names (Linux interface names cannot hold '/')"
    bfd = _bfd_text(design)
    if n == design.hb_count:
        if not (eos_names or bfd):
            return f"  lab       whole design ({design.gpus:,} GPUs) in {clab_yml(design.name)}"
        return "\n".join([f"  lab       whole design ({design.gpus:,} GPUs) in {clab_yml(design.name)} and {SLICE_DIR}/"]
                         + [f"            drops {t}" for t in (eos_names, bfd) if t])
    k = lab_radix(design)
    prod = design_shape(design)
    lab = clos.shape(design.topology, design.hb_size, n, k)
    lines = [f"  lab       a slice: {n} of {design.hb_count:,} HB domains, all {design.hb_size} rails "
             f"({n * design.hb_size:,} GPUs) at radix {k} in {clab_yml(design.name)} and {SLICE_DIR}/ "
             f"(set lab.domains or --lab-domains to change)"]
    routed = _routed(design)
    kept = [_tiers_text(lab) + f" as the design's {_tiers_text(prod)}"] if _same_shape(lab, prod) else []
    if kept and prod["tiers"] > 1:
        kept.append(f"ECMP from every leaf over {_uplinks(lab, k)} (the design: {_uplinks(prod, design.radix)})")
    kept += ["the ASN scheme" + (" and eBGP between every two tiers" if lab["tiers"] > 1 else "") if routed else "L2 rails",
             "the same config renderers and roles", "every rail"]
    dropped = [f"{design.hb_count - n:,} HB domains"]
    if k != design.radix:
        model = "" if design.switch_model == GENERIC and not design.models else f", not the {design.switch_model} model's"
        dropped.append(f"{design.radix - k} of {design.radix} ports per switch (radix {k}; the platform's port map"
                       f" and SKU are those of a generic {k}-port switch{model})")
    if eos_names:
        dropped.append(eos_names)
    if bfd:
        dropped.append(bfd)
    if prod["tiers"] > 1 and lab["spines"] < prod["spines"]:
        dropped.append(f"{prod['spines'] - lab['spines']} of {prod['spines']} spines" + (" per rail" if prod["per_rail"] else ""))
    if not _same_shape(lab, prod):
        dropped.append(f"the design's shape: the lab has {_tiers_text(lab)}, the design {_tiers_text(prod)}"
                       f" ({n} domains build no Clos of the design's shape at any radix; use more --lab-domains)")
    lines.append(f"            keeps {'; '.join(kept)}")
    lines.append(f"            drops {'; '.join(dropped)}")
    return "\n".join(lines)
