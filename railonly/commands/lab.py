"""`railonly lab ACTION OUTDIR`: run the OUTDIR's lab in an emulation runtime.

One subcommand per action; each action is a (name, help, add_arguments, run)
entry in ACTIONS, so adding one (check, traffic, fault) is one function pair
and one line. Every action gets OUTDIR and --runtime from :func:`common`.
Exit codes: 0 ok, 1 something is not as it should be, 2 bad OUTDIR, 3 runtime failure.
"""

from __future__ import annotations

import re
import sys
from typing import Callable

from railonly import console
from railonly.commands import lab_inspect, positive


def common(p) -> None:
    from railonly.emulation.runtime.registry import DEFAULT_RUNTIME, RUNTIMES

    p.add_argument("outdir", metavar="OUTDIR", help="the OUTDIR of railonly compile")
    p.add_argument("--runtime", default=DEFAULT_RUNTIME, choices=sorted(RUNTIMES),
                   help=f"emulation runtime (default {DEFAULT_RUNTIME}: network namespaces, needs root)")


def open_lab(args):
    """(runtime, lab) for an action; LabError (exit 2) / RuntimeProblem (exit 3) on failure."""
    from railonly.emulation.lab import load_lab
    from railonly.emulation.runtime.registry import get_runtime

    return get_runtime(args.runtime), load_lab(args.outdir)


def with_lab(action: Callable) -> Callable:
    """An action written as (args, runtime, lab), as one taking args."""
    return lambda args: action(args, *open_lab(args))


# --- deploy -------------------------------------------------------------------------------


def deploy_args(p) -> None:
    p.add_argument("--dry-run", action="store_true", help="print the deploy plan and exit (no root needed)")


def deploy(args) -> int:
    rt, lab = open_lab(args)
    if args.dry_run:
        if hasattr(rt, "dry_run"):
            sys.stdout.write(rt.dry_run(lab))
        else:
            print(" ".join(rt.deploy_argv(lab)))
        return 0
    try:
        with console.reporter() as bar:
            # The netns runtime reports each phase of its plan; other runtimes deploy in one go.
            hook = {"hook": lambda phase, _batch: bar.step(f"deploy: {phase}")} if rt.name == "netns" else {}
            res = rt.deploy(lab, **hook)
    except KeyboardInterrupt:
        print(f"interrupted: what was created so far is recorded; remove it with: railonly lab destroy {args.outdir}",
              file=sys.stderr)
        return 130
    rc = 1 if getattr(res, "bgp_converged", None) is False else 0
    if rc or not args.quiet:
        console.out(format_deploy(lab, res))
    return rc


def format_deploy(lab, res) -> str:
    if res is None:  # a runtime that reports nothing (containerlab)
        return f"lab {lab.name}: deployed ({len(lab.nodes)} nodes)"
    if res.noop:
        return f"lab {lab.name}: already deployed and unchanged ({res.seconds:.2f} s check)"
    lines = [f"lab {lab.name}: {res.namespaces} namespaces, {res.processes} processes in {res.seconds:.2f} s"
             f" ({', '.join(f'{k} {v:.2f}' for k, v in res.phases.items())})"]
    if res.bgp_converged is not None:
        sessions = sum(len(v) for v in res.bgp.values())
        up = sum(s == "Established" for v in res.bgp.values() for s in v.values())
        word = "converged" if res.bgp_converged else "NOT converged"
        lines.append(f"  bgp {word}: {up}/{sessions} sessions Established on {len(res.bgp)} switches"
                     f" after {res.bgp_seconds:.1f} s")
        if not res.bgp_converged:
            lines += [f"    {sw}: {st}" for sw, st in res.bgp.items()
                      if not st or any(s != "Established" for s in st.values())][:10]
    lines += [f"  warning: {w}" for w in res.warnings]
    return "\n".join(lines)


# --- destroy ------------------------------------------------------------------------------


def destroy(args) -> int:
    rt, lab = open_lab(args)
    rep = rt.destroy(lab)  # RuntimeProblem (exit 3) lists what could not be removed
    if args.quiet:
        pass
    elif rep is None:
        print(f"lab {lab.name}: destroyed")
    elif rep.lab is None:
        print(f"lab {lab.name}: nothing to destroy (no state file)")
    else:
        print(f"lab {lab.name}: removed {len(rep.deleted)} namespaces, stopped {len(rep.killed)} processes"
              + (f", restored {', '.join(rep.restored)}" if rep.restored else "") + f" in {rep.seconds:.2f} s")
    return 0


# --- check / traffic / fault (emulation/checks/, emulation/traffic/) --------------------


def check_args(p) -> None:
    from railonly.emulation.checks.plan import CHECKS

    p.add_argument("--json", metavar="FILE", help="write the results as JSON (Contract 4)")
    p.add_argument("--junit", metavar="FILE", help="write the results as JUnit XML (one testcase per id)")
    p.add_argument("--timeout", type=positive(float), default=60.0, help="seconds to wait for convergence (default 60)")
    p.add_argument("--only", action="append", choices=CHECKS, help="run only this check (repeatable)")


def check(args) -> int:
    from railonly.emulation.checks import report
    from railonly.emulation.checks import run as checks_run
    from railonly.emulation.checks.plan import CHECKS

    rt, lab = open_lab(args)
    with console.reporter() as bar:
        run = checks_run.run(lab, rt, timeout=args.timeout, checks=tuple(args.only or CHECKS), progress=bar.step)
    if run.failed or not args.quiet:
        console.out(report.table(lab.name, run.results, run.timings, run.notes))
    if args.json:
        report.write_json(args.json, report.as_json(lab.name, run.results, run.timings, run.notes))
    if args.junit:
        report.write_text(args.junit, report.as_junit(lab.name, run.results, run.timings))
    return 1 if run.failed else 0


def traffic_args(p) -> None:
    from railonly.emulation.traffic.patterns import PATTERNS, SCHEDULES

    p.add_argument("--pattern", required=True, choices=PATTERNS)
    p.add_argument("--bytes", type=positive(int), default=None, help="bytes per flow (default: 2 s of the emulated NIC rate)")
    p.add_argument("--schedule", choices=SCHEDULES, default=SCHEDULES[0],
                   help="all-to-all: phased (default; one peer per GPU per step, as NCCL), concurrent (all"
                        " flows at once), two-phase (rail-only: HB shuffle, then rail steps; store-and-forward)")
    p.add_argument("--json", metavar="FILE", help="write the traffic report as JSON (Contract 4)")


def traffic(args) -> int:
    from railonly.emulation.checks import report
    from railonly.emulation.traffic import iperf3

    rt, lab = open_lab(args)
    with console.reporter() as bar:
        rep = iperf3.run(lab, rt, args.pattern, args.bytes, schedule=args.schedule,
                         progress=lambda s: _flow_step(bar, s))
    if rep.get("failed_flows") or not args.quiet:
        console.out(iperf3.format_report(rep))
    if args.json:
        report.write_json(args.json, rep)
    return 1 if rep.get("failed_flows") else 0


_FLOW = re.compile(r"^\[(\d+)/(\d+)\] ")


def _flow_step(bar, message: str) -> None:
    """traffic.run reports each flow as "[i/n] step ..."; those feed the bar's count."""
    m = _FLOW.match(message)
    if m:
        bar.step("flows", int(m.group(1)), int(m.group(2)))
        console.detail(f"  .. {message}")
    else:
        bar.step(message)


def fault_args(p) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--link", metavar="NODE:PORT", help="set a link down (both ends); NODE:PORT as in fabric.json or cabling.csv (e.g. hb0:rail0)")
    g.add_argument("--node", metavar="SWITCH", help="stop a switch: every port down, FRR stopped")
    g.add_argument("--restore", action="store_true", help="undo every recorded fault")


def fault(args) -> int:
    from railonly.emulation.runtime.protocol import deployed_status
    from railonly.emulation.traffic import faults

    rt, lab = open_lab(args)
    deployed_status(rt, lab)  # nothing to break or restore in a lab that is not there: exit 3
    if args.restore:
        done = faults.restore(lab, rt)
        print(f"lab {lab.name}: restored {len(done)} faults" + "".join(f"\n  {d}" for d in done))
        return 0
    what = faults.link_down(lab, rt, args.link) if args.link else faults.node_down(lab, rt, args.node)
    print(f"lab {lab.name}: {what} (undo: railonly lab fault {args.outdir} --restore)")
    return 0


# name, help, add_arguments(parser) or None, run(args) -> exit code
ACTIONS: list[tuple[str, str, Callable | None, Callable]] = [
    ("deploy", "deploy the lab (idempotent; --dry-run prints the plan)", deploy_args, deploy),
    ("status", "one row per node: role, namespace, state, addresses, processes, BGP sessions (like containerlab inspect)",
     lab_inspect.status_args, with_lab(lab_inspect.status)),
    ("exec", "run a command in a node: railonly lab exec OUTDIR NODE -- CMD... (argv, no shell; its exit code)",
     lab_inspect.exec_args, with_lab(lab_inspect.exec_)),
    ("vtysh", "run vtysh commands in a routed switch (default: show bgp summary)", lab_inspect.vtysh_args,
     with_lab(lab_inspect.vtysh)),
    ("destroy", "remove everything the deploy created (also after a failed or interrupted deploy)", None, destroy),
    ("check", "check reachability, isolation, paths, BGP and cabling (exit 1 on any failure)", check_args, check),
    ("traffic", "run ring all-reduce or all-to-all flows with iperf3 and compare with the model", traffic_args, traffic),
    ("fault", "inject a fault (a link or switch down) or restore", fault_args, fault),
]


def register(sub) -> None:
    p = sub.add_parser("lab", help="deploy, inspect and destroy the emulation lab of an OUTDIR")
    actions = p.add_subparsers(dest="lab_action", metavar="ACTION", parser_class=type(p))
    for name, help_, add_args, run in ACTIONS:
        a = actions.add_parser(name, help=help_)
        common(a)
        if add_args:
            add_args(a)
        a.set_defaults(func=run)
    p.set_defaults(func=lambda args: (p.print_help(sys.stderr), 2)[1])
