"""Re-programming one deployed switch of a netns lab from a config directory.

Config push re-applies pushed files through the same readers and plan items
as deploy (switch_plan); only the switch's L2/L3 config and FRR change, the
veths and shaping stay.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from railonly import proc
from railonly.fabric.input.problems import InputError

from ...lab import Lab, LabError, run_dir
from ..protocol import NotDeployed, RuntimeProblem
from railonly.fabric.devices.readback.intent import ConfigReadError
from railonly.fabric.outdir.reader import switch_file_problems

from .. import rundir
from . import engine, frr, lab_plan, setns
from . import ns_plan as nsplan
from .runtime import check_environment, owner, state_path
from .switch_plan import switch_items


@dataclass
class ApplyReport:
    switch: str
    config_dir: str
    seconds: float = 0.0
    frr_restarted: bool = False
    warnings: list[str] = field(default_factory=list)


def _ns_devices(ns: str) -> list[dict]:
    res = proc.run(["ip", "-d", "-j", "link", "show"], netns=ns, timeout=20)
    if not res.ok:
        raise RuntimeProblem(f"cannot list devices of {ns}: {res.stderr.strip()}")
    return json.loads(res.stdout or "[]")


def reprogram_script(netns: str, items: list, cabled: list[str], bridges_now: list[str]) -> str:
    """One ``ip -batch`` that resets a switch namespace's L2/L3 config and applies ``items``
    as deploy would (the plan's renderer). Pure (unit-tested): bridges are recreated,
    global addresses flushed, ports re-set."""
    lines = [f"link del dev {b}\n" for b in bridges_now]
    lines += [f"addr flush dev {d} scope global\n" for d in [*cabled, "lo"]]
    bridges = [it for it in items if isinstance(it, nsplan.Bridge)]
    links = [it for it in items if isinstance(it, nsplan.Link)]
    addresses = [it for it in items if isinstance(it, nsplan.Address)]
    return "".join(lines) + nsplan.config_script(netns, bridges, links, addresses)


def apply_switch_config(lab: Lab, switch_name: str, config_dir: str) -> ApplyReport:
    """Re-program deployed switch ``switch_name`` from the config files in ``config_dir``
    (config_db.json + frr.conf, or startup-config): bridges, addresses, port MTU and
    admin state, sysctls, then an FRR restart with the new config. Shaping and the
    veths stay. New daemons are recorded in the lab's state file first, so
    ``destroy`` still removes everything."""
    t0 = time.perf_counter()
    path = state_path(lab)
    rundir.check_state_dir(lab)
    checked = engine.check_state(path, owner(lab))
    if checked.problems:
        raise LabError(path, "the lab's state file is not usable:\n  " + "\n  ".join(checked.problems[:10]),
                       f"redeploy: railonly lab destroy {lab.outdir}; railonly lab deploy {lab.outdir}")
    state = checked.state
    node = lab.node(switch_name)
    if node.role != "switch":
        raise LabError(switch_name, f"{switch_name} is a {node.role}, not a switch")
    if state is None or not setns.exists(node.netns):
        raise NotDeployed(lab, f"no {path} or no namespace {node.netns}")
    check_environment(None, shaping=False)
    # the pushed files pass the same checks as `validate` before anything applies them
    refused = switch_file_problems(config_dir, lab_plan.platform_of(node), run_dir(lab.name))
    if refused:
        raise InputError(refused)
    try:
        intent = lab_plan.read_switch(node, config_dir)
    except ConfigReadError as exc:
        raise LabError(exc.path, str(exc).split(": ", 1)[-1]) from None
    cabled = [p.port for p in lab.ports(switch_name)]
    si = switch_items(intent, node.netns, cabled, run_dir(lab.name), switch_name)
    rep = ApplyReport(switch_name, config_dir, warnings=list(si.warnings))

    old = frr.instance(run_dir(lab.name), switch_name, node.netns)
    left = frr.stop(old)
    if left:
        raise RuntimeProblem(f"{switch_name}: FRR daemons survived stop: {left}")
    bridges_now = [d["ifname"] for d in _ns_devices(node.netns)
                   if (d.get("linkinfo") or {}).get("info_kind") == "bridge"]
    script = reprogram_script(node.netns, si.items, cabled, bridges_now)
    setns.call_in(node.netns, lambda: setns.write_sysctls(si.sysctls))
    res = proc.run(["ip", "-n", node.netns, "-batch", "-"], input=script, timeout=60)
    if not res.ok:
        raise RuntimeProblem(f"{switch_name}: re-programming failed: {res.stderr.strip()}")

    procs = [it for it in si.items if isinstance(it, nsplan.Process)]
    if procs:
        engine.start_processes(path, procs, owner=owner(lab))  # recorded in the state file first, zebra first
        rep.frr_restarted = True
    rep.seconds = time.perf_counter() - t0
    return rep
