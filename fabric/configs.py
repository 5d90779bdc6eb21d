"""Producers of switch configs (SONiC or EOS, per switch platform) and host configs."""

from __future__ import annotations

import json

from . import eos, hosts, qos, sonic
from .model import Fabric
from .progress import Progress


def switch_configs(fab: Fabric, progress: Progress) -> dict[str, str]:
    q = qos.plan(fab.design)
    out: dict[str, str] = {}
    total = len(fab.switches)
    for i, sw in enumerate(fab.switches):
        if sw.platform == "sonic":
            _, files = sonic.render_switch(fab, sw, q)
        else:
            _, files = eos.render_switch(fab, sw, q)
        out.update(files)
        if i % 256 == 0:
            progress.step("rendering switch configs", i, total)
    progress.step("rendering switch configs", total, total)
    return out


def host_configs(fab: Fabric, progress: Progress) -> dict[str, str]:
    return hosts.render_hosts(fab)


def parse_back(files: dict[str, str]) -> None:
    """JSON artifacts must parse before anything is written (a renderer bug stops here)."""
    for path, text in files.items():
        if path.endswith(".json"):
            json.loads(text)
