"""The facts of a fabric the analysis needs, from a Design or from a compiled fabric graph.

Only four numbers shape a job's traffic and time: K (GPUs per HB domain =
rails), the number of HB domains, and the per-GPU NIC and HB rates (one
direction). The network variants the model compares share them; only the
path a flow takes differs (network.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..graph import fabric_json
from ..graph.model import Fabric
from ..input.problems import InputError, Problem


@dataclass(frozen=True)
class Cluster:
    hb_size: int  # K: GPUs per HB domain = rails
    hb_count: int  # HB domains
    nic_gbps: float  # per-GPU NIC, one direction
    hb_gbps: float  # per-GPU HB (NVLink), one direction
    name: str = "fabric"
    topology: str = "rail-only"  # what the design itself builds

    @property
    def gpus(self) -> int:
        return self.hb_size * self.hb_count

    def domain(self, gpu: int) -> int:
        return gpu // self.hb_size

    def rail(self, gpu: int) -> int:
        return gpu % self.hb_size

    @classmethod
    def from_design(cls, design) -> "Cluster":
        return cls(design.hb_size, design.hb_count, float(design.nic_gbps), float(design.hb_gbps), design.name, design.topology)

    @classmethod
    def from_fabric(cls, fab: Fabric, file: str = fabric_json.FILE) -> "Cluster":
        """From a compiled fabric graph, e.g. an OUTDIR's fabric.json read back
        (``OutdirReader.read_fabric``). The lab's emulated rates are the caller's to pass to
        the time model (network.Rates)."""
        head = fab.design
        K, count = head.hb_size, head.hb_count
        if K < 1 or count < 1:
            raise InputError([Problem("hb_domain_size" if K < 1 else "hb_domain_count", "must be at least 1",
                                      "recompile the OUTDIR", None, file)])
        rail = [lk.gbps for lk in fab.links if lk.kind == "rail"]
        hb = [lk.gbps for lk in fab.links if lk.kind == "hb"]
        nic = float(max(rail)) if rail else 400.0
        hbg = float(max(hb)) if hb else 3600.0
        return cls(K, count, nic, hbg, head.name, head.topology)

    @classmethod
    def from_fabric_json(cls, doc: str | dict, file: str = fabric_json.FILE) -> "Cluster":
        """From fabric.json's text (or its decoded document), parsed by graph/fabric_json.py:
        InputError names the file and each bad field."""
        fab = fabric_json.parse(doc, file) if isinstance(doc, str) else fabric_json.from_doc(doc, file)
        return cls.from_fabric(fab, file)
