"""The facts of a fabric the analysis needs, from a Design or from fabric.json.

Only four numbers shape a job's traffic and time: K (GPUs per HB domain =
rails), the number of HB domains, and the per-GPU NIC and HB rates (one
direction). The network variants the model compares share them; only the
path a flow takes differs (network.py).
"""

from __future__ import annotations

from dataclasses import dataclass

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
    def from_fabric_json(cls, doc: dict, file: str = "fabric.json") -> "Cluster":
        """From a compiled OUTDIR's fabric.json (docs/reference/outdir.md). The lab's emulated
        rates are the caller's to pass to the time model (network.Rates)."""
        problems = []
        try:
            K, count = int(doc["hb_domain_size"]), int(doc["hb_domain_count"])
            rail = [lk["gbps"] for lk in doc.get("links", []) if lk.get("kind") == "rail"]
            hb = [lk["gbps"] for lk in doc.get("links", []) if lk.get("kind") == "hb"]
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError([Problem("", f"fabric.json lacks {exc}", "recompile the OUTDIR with railonly compile", None, file)]) from None
        if K < 1 or count < 1:
            problems.append(Problem("hb_domain_size", "must be at least 1", "recompile the OUTDIR", None, file))
        if problems:
            raise InputError(problems)
        nic = float(max(rail)) if rail else 400.0
        hbg = float(max(hb)) if hb else 3600.0
        return cls(K, count, nic, hbg, str(doc.get("name", "fabric")), str(doc.get("topology", "rail-only")))
