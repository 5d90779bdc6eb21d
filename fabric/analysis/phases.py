"""The iteration as phases a replay can run: who talks to whom, how much, how long.

One Phase per collective of the iteration, in schedule order (tp, ep, pp per
micro-batch, then dp). Bytes and seconds are per iteration: a replay that runs
each phase's groups with `bytes_per_gpu` can compare its measured time with
`model_s` at the rates it shaped (pass them as Rates, e.g.
Rates.from_gbps(nic_mbps / 1000, hb_mbps / 1000, efficiency=1.0)).
"""

from __future__ import annotations

from dataclasses import dataclass

from .job import Job
from .network import Rates
from .placement import CLASSES, Placement
from .traffic import Collective, collectives


@dataclass(frozen=True)
class Phase:
    name: str  # unique: "tp.all-gather", "ep.all-to-all", "pp.send-recv", "dp.all-reduce.dense", ...
    parallelism: str  # tp | ep | pp | dp
    op: str  # all-reduce | all-gather | reduce-scatter | all-to-all | send-recv
    kind: str  # the worst class a group of it uses: hb | rail | hb+rail | cross-rail | none
    groups: tuple[tuple[int, ...], ...]  # member GPU indices (pp: each pipeline in stage order)
    calls: float  # how often it runs per GPU per iteration
    payload_bytes: float  # S of one call
    bytes_per_gpu: dict  # per iteration, by pair class (hb, rail, cross_rail), averaged over its GPUs
    model_s: float  # the model's seconds per iteration for this phase: calls x one call's time
    collective: Collective  # the model's object behind it (steps per group type)

    @property
    def total_bytes_per_gpu(self) -> float:
        return sum(self.bytes_per_gpu.values())


def phase_list(job: Job, pl: Placement, rates: Rates, network: str = "rail-only") -> list[Phase]:
    out = []
    for c in collectives(job, pl):
        name = f"{c.parallelism}.{c.op}" + (f".{c.params}" if c.params else "")
        per_call = c.bytes_per_gpu()
        out.append(Phase(
            name=name, parallelism=c.parallelism, op=c.op, kind=c.kind(),
            groups=tuple(tuple(int(x) for x in row) for row in c.groups.tolist()),
            calls=c.calls, payload_bytes=c.payload,
            bytes_per_gpu={k: float(v * c.calls) for k, v in zip(CLASSES, per_call)},
            model_s=c.calls * c.time(network, rates), collective=c))
    return out
