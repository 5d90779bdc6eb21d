"""Producers of switch configs (SONiC or EOS, per switch platform) and host configs."""

from __future__ import annotations

import json

from railonly.emulation import proc

from . import eos, fabric_json, hosts, qos, sonic
from .model import Fabric
from .progress import Progress


def switch_configs(fab: Fabric, progress: Progress) -> dict[str, str]:
    out = render_switch_configs(fab, progress)
    progress.step("checking switch configs")
    self_check(fab, out)
    return out


def render_switch_configs(fab: Fabric, progress: Progress) -> dict[str, str]:
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


def self_check(fab: Fabric, files: dict[str, str]) -> None:
    """Compile refuses configs that `railonly validate` would fail.

    Every config is parsed back (config_db.json as JSON, frr.conf and EOS
    text by the validator's readers) and cross-checked against the graph in
    full; the YANG models and `vtysh -C` (when FRR is installed) see one
    switch per shape, since every switch of a shape comes from the same code
    (`railonly validate` runs them on every file). A failure is reported as an
    input problem: the usual cause is a design whose pools overlap.
    """
    from .problems import InputError, Problem
    from .validate import run

    blobs = {"fabric.json": fabric_json.render(fab).encode()}
    blobs.update((path, text.encode()) for path, text in files.items())
    frr = proc.which("vtysh") is not None
    results = run.validate(run.memory_reader(blobs), json.loads(blobs["fabric.json"]),
                           run.sample_per_shape(), frr=frr)
    failed = [r for r in results if not r.passed]
    if failed:
        lines = [line for r in failed for line in r.detail.splitlines()]
        shown = lines[:20] + ([f"... and {len(lines) - 20} more"] if len(lines) > 20 else [])
        raise InputError([Problem("", f"generated configs fail validation: {line}",
                                  "check that the addressing pools do not overlap; otherwise report a railonly bug")
                          for line in shown])
