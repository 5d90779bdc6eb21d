"""Producers of switch configs (SONiC or EOS, per switch platform) and host configs."""

from __future__ import annotations

from .. import parallel
from ..graph.model import Fabric
from ..progress import Progress
from . import eos_render, hosts, qos, sonic_render


def switch_configs(fab: Fabric, progress: Progress) -> dict[str, bytes]:
    total = len(fab.switches)
    progress.step(f"rendering switch configs ({parallel.jobs()} workers)", 0, total)
    out: dict[str, bytes] = {}
    for part in parallel.map_shards(_switch_shard, fab, total, min_items=128):
        out.update(part)
    progress.step(f"rendering switch configs ({parallel.jobs()} workers)", total, total)
    return out


def _switch_shard(fab: Fabric, i: int, n: int) -> dict[str, bytes]:
    # Encoded in the worker: bytes cross the process boundary as one copy.
    q = qos.plan(fab.design)
    out: dict[str, bytes] = {}
    for sw in fab.switches[i::n]:
        render = sonic_render.render_switch if sw.platform == "sonic" else eos_render.render_switch
        for path, text in render(fab, sw, q)[1].items():
            out[path] = text.encode()
    return out


def host_configs(fab: Fabric, progress: Progress) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for part in parallel.map_shards(_host_shard, fab, len(fab.hbs), min_items=512):
        out.update(part)
    return out


def _host_shard(fab: Fabric, i: int, n: int) -> dict[str, bytes]:
    return {path: text.encode() for path, text in hosts.render_hosts(fab, i, n).items()}
