"""`railonly analyze`: a training job on the fabric (pure: no processes, no I/O but reading inputs).

Public API (stable; extended, never renamed):

    from railonly.fabric.analysis import (
        load_job, parse_job, Job,                 # job file (docs/reference/job.md) -> Job (InputError lists every problem)
        Cluster,                                  # K, HB domains, NIC and HB Gb/s: Cluster.from_design(design),
                                                  #   Cluster.from_fabric(fab), Cluster.from_fabric_json(text)
                                                  #   or Cluster(K, count, nic_gbps, hb_gbps)
        Rates,                                    # per-GPU bytes/s: Rates.of(cluster) or Rates.from_gbps(nic, hb, efficiency=1.0)
        place, place_auto, Placement,             # ranks -> GPUs, groups (numpy rows of GPU indices), kinds, problems
        layout,                                   #   the same without the verdict (no problems looked for: faster)
        phase_list, Phase,                        # the iteration's collectives in schedule order with groups,
                                                  #   class, bytes per GPU and the model's seconds at given rates
        evaluate, Result, NETWORKS,               # iteration time on rail-only / rail-optimized / ideal
    )

    job = load_job("labs/jobs/gpt-small.yml")
    cluster = Cluster.from_fabric(railonly.fabric.read_outdir(outdir).read_fabric())
    pl = place(job, cluster)                      # pl.problems, pl.groups["tp"|"dp"|"ep"|"edp"|"pp"]
    rates = Rates.from_gbps(0.1, 0.9, efficiency=1.0)   # e.g. a lab's shaped NIC and HB rates
    for ph in phase_list(job, pl, rates, "rail-only"):
        ph.name, ph.groups, ph.kind, ph.bytes_per_gpu, ph.model_s
    results = evaluate(job, pl, rates)            # {"rail-only": Result, "rail-optimized": ..., "ideal": ...}

Modules: job (docs/reference/job.md), compute (FLOPs, kernels, optimizer step), presets (GPU and model data files), untrusted (bounded
reading), cluster, placement (groups and classes), verdict (problems and
fixes), autoplace (--place auto), traffic (collectives and
bytes by class), network (the three networks' paths), timing (compute, bubble,
MFU/HFU), phases (replay view), memory, cost, matrix (HB-domain traffic matrix),
search (--search, --sweep), launcher (rank map, NCCL settings), report
(the JSON of docs/reference/outdir.md and the human table), plots.

May import: input, platforms, design, graph, cost (never devices, outputs, outdir or validate).
"""

from .autoplace import auto_order
from .cluster import Cluster
from .job import Gpu, Job, Model, Parallel, load_job, parse_job
from .network import NETWORKS, Rates
from .phases import Phase, phase_list
from .placement import Placement, layout
from .presets import load_presets
from .timing import Result, evaluate, iteration
from .verdict import place, place_auto

__all__ = [
    "Cluster", "Gpu", "Job", "Model", "NETWORKS", "Parallel", "Phase", "Placement", "Rates", "Result",
    "auto_order", "evaluate", "iteration", "layout", "load_job", "load_presets", "parse_job", "phase_list", "place", "place_auto",
]
