"""railonly.fabric: the pure compiler, design -> fabric graph -> artifacts, in rooms by stage.

Rooms, from the bottom up; each imports only rooms below it (tests/core/test_layers.py):

- ``input``: hostile input read safely (bounded YAML with lines, schema, problems);
- ``platforms``: vendor facts (port names, lanes, EOS speed forms, the platform catalog);
- ``design``: the design file, the Clos counting model, the cable plant, the lab slice;
- ``graph``: the fabric graph (model, build, addressing, invariants, fabric.json);
- ``devices``: switch and host configs (SONiC, EOS, QoS, hosts);
- ``cost``: inventory, price book, BOM, comparison and sweep;
- ``outputs``: cabling, NetBox, README/diagram, containerlab and clabernetes files;
- ``outdir``: the OUTDIR writer, the untrusted-OUTDIR reader, the change plan;
- ``validate``: artifacts read back and judged;
- ``analysis``: training jobs on the fabric (imports input to graph, and cost).

Directly in this folder: this facade, :mod:`compiler` (every producer, in order),
and the edge utilities :mod:`parallel` (fork pool), :mod:`progress`,
:mod:`results` and :mod:`version`, which import no room.

Nothing here touches the network. Processes and system calls stay at a few named
edges: the fork pool (:mod:`parallel`), ``vtysh -C`` (validate.frr_syntax, through
railonly.proc), libyang (validate.sonic_yang) and the atomic OUTDIR swap
(:mod:`railonly.fabric.outdir.writer`, the one module that writes files).

The facade below is the short way in. Its imports are made on first use, so
importing railonly.fabric stays cheap; no room imports this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .version import __version__

if TYPE_CHECKING:
    from .design.design import Design
    from .graph.model import Fabric
    from .outdir.reader import OutdirReader
    from .progress import Progress
    from .results import Result

__all__ = ["__version__", "build_fabric", "compile_design", "load_design", "read_outdir", "validate_outdir"]


def load_design(path: str) -> Design:
    """The design file at ``path``, validated; InputError (exit 2) lists every problem."""
    from .design.design import load_design as load

    return load(path)


def build_fabric(design: Design) -> Fabric:
    """The fabric graph of a design: every node, port, link, address and ASN."""
    from .graph.build import build_fabric as build

    return build(design)


def compile_design(design: Design, progress: Progress | None = None) -> tuple[Fabric, dict[str, bytes]]:
    """The graph and every artifact of the design's OUTDIR, as {relative path: bytes}; nothing is written."""
    from .compiler import compile_design as compile_

    return compile_(design, progress)


def read_outdir(outdir: str) -> OutdirReader:
    """A reader of an OUTDIR as untrusted input: bounded reads, no link followed."""
    from .outdir.reader import OutdirReader

    return OutdirReader(outdir)


def validate_outdir(outdir: str, manifest: bool = True) -> list[Result]:
    """`railonly validate OUTDIR`: every artifact read back and judged, as results."""
    from .validate.run import validate_outdir as validate

    return validate(outdir, manifest)
