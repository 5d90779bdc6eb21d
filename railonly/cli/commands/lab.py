"""`railonly lab ACTION OUTDIR`: run the OUTDIR's lab in an emulation runtime.

One subcommand per action; each action is a (name, help, add_arguments, run)
entry in ACTIONS, so adding one (check, traffic, fault) is one function pair
and one line. Every action gets OUTDIR and --runtime from :func:`common`.
Exit codes: 0 ok, 1 something is not as it should be, 2 bad OUTDIR, 3 runtime failure.

OUTDIR is untrusted (a pull request may have written it): every action runs
under the lab's lock (emulation/runtime/lock.py, outside OUTDIR), exclusive for
deploy, destroy and fault, shared for check and traffic.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from typing import Callable

from railonly import console
from railonly.cli.commands import lab_inspect, number, positive
from railonly.fabric.input.problems import InputError, Problem
from railonly.reportfile import refuse_targets


def common(p, optional: bool = False) -> None:
    from railonly.emulation.runtime.registry import DEFAULT_RUNTIME, RUNTIMES

    p.add_argument("outdir", metavar="OUTDIR", help="the OUTDIR of railonly compile", **({"nargs": "?"} if optional else {}))
    p.add_argument("--runtime", default=DEFAULT_RUNTIME, choices=sorted(RUNTIMES),
                   help=f"emulation runtime (default {DEFAULT_RUNTIME}: network namespaces, needs root)")


def open_lab(args, deploying: bool = False):
    """(runtime, lab) for an action; LabError (exit 2) / RuntimeProblem (exit 3) on failure.
    A running lab is the one the runtime recorded at deploy (Runtime.running_lab): status,
    check, traffic and fault act on what runs, and a changed or hostile OUTDIR (a symlink
    planted in it) cannot stop them. Otherwise the OUTDIR is loaded; the lab carries the name
    it was deployed under (rundir.bind): an OUTDIR whose lab name is deployed from another
    OUTDIR is refused (exit 2), that lab untouched."""
    from railonly.emulation.lab import load_lab
    from railonly.emulation.runtime.registry import get_runtime

    rt = get_runtime(args.runtime)
    running = None if deploying else rt.running_lab(args.outdir)
    if running is not None:
        return rt, running
    return rt, rt.bind_lab(load_lab(args.outdir), getattr(args, "lab_name", None), deploying=deploying)


def with_lab(action: Callable) -> Callable:
    """An action written as (args, runtime, lab), as one taking args."""
    return lambda args: action(args, *open_lab(args))


def nothing_deployed(rt, lab) -> bool:
    """Nothing of the lab exists (a deploy that failed early): its lock file may go. Asked of
    the runtime's status; a status that cannot be had keeps the lock file."""
    from railonly.emulation.runtime.protocol import RuntimeProblem

    try:
        return rt.status(lab).state == "absent"
    except RuntimeProblem:
        return False


def locked(lab, shared: bool = False, remove=False):
    """The lab's lock (lab_lock), where it can be taken: root only (it lives in /run)."""
    from railonly.emulation.runtime import lock as lab_lock

    if os.geteuid() != 0:
        return contextlib.nullcontext()
    return lab_lock.hold(lab.name, shared=shared, remove=remove)


# --- deploy -------------------------------------------------------------------------------


def deploy_args(p) -> None:
    p.add_argument("--dry-run", action="store_true", help="print the deploy plan and exit (no root needed)")
    p.add_argument("--lab-name", metavar="NAME", help="deploy under this lab name (namespaces clab-NAME-*), e.g. a"
                   " second OUTDIR of a design whose lab name is already deployed from another OUTDIR")


def deploy(args) -> int:
    rt, lab = open_lab(args, deploying=True)
    if args.dry_run:
        sys.stdout.write(rt.dry_run(lab))
        return 0
    try:
        with locked(lab, remove=lambda: nothing_deployed(rt, lab)), console.reporter() as bar:
            # a runtime that deploys in phases reports each; others deploy in one go
            res = rt.deploy(lab, hook=lambda phase, _batch: bar.step(f"deploy: {phase}"))
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (proc.Terminated)
        from railonly.proc import interrupt_exit

        code = interrupt_exit(exc)
        print(f"{'terminated' if code == 143 else 'interrupted'}: what was created so far is recorded;"
              f" remove it with: railonly lab destroy --lab {lab.name}", file=sys.stderr)
        return code
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
    if getattr(res, "replaced", False):  # an outage of the running lab: say so, not only the new figures
        lines.insert(0, f"lab {lab.name}: the OUTDIR changed since it was deployed: the running lab was removed and"
                        " deployed again (every process restarted, faults set with lab fault gone)")
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


def destroy_args(p) -> None:
    p.add_argument("--lab", "--lab-name", dest="lab", metavar="NAME",
                   help="the lab to destroy, by name (no OUTDIR needed: its identity is recorded under"
                   " /run/railonly/NAME); --lab-name as deploy spells it")


def destroy(args) -> int:
    """Exit 0 when the lab is gone; 2 when it is gone but its records asked for more
    than is provably the lab's (each refusal named), or the OUTDIR's lab name belongs to
    a lab deployed from another OUTDIR (not touched); 3 when something stayed.

    Needs only the lab's identity (rundir.for_destroy): whatever happened to the OUTDIR
    since the deploy (edited, recompiled, removed), the recorded lab is removed."""
    from railonly.emulation.runtime import rundir
    from railonly.emulation.runtime.registry import get_runtime

    if not args.outdir and not args.lab:
        raise InputError([Problem("", "give the OUTDIR or --lab NAME", "e.g. railonly lab destroy OUTDIR", None,
                                  "command line")])
    rt = get_runtime(args.runtime)
    lab = rt.lab_to_destroy(args.outdir, args.lab) or open_lab(args)[1]
    with locked(lab, remove=True):
        rep = rt.destroy(lab)  # RuntimeProblem (exit 3) lists what could not be removed
    if rep is None:
        if not args.quiet:
            print(f"lab {lab.name}: destroyed")
        return 0
    namespaces = [d for d in rep.deleted if not d.startswith("/")]
    if args.quiet:
        pass
    elif not namespaces and not rep.killed and not rep.restored:
        print(f"lab {lab.name}: nothing to destroy" + ("" if rep.deleted else " (no namespace of it exists)"))
    else:
        print(f"lab {lab.name}: removed {len(namespaces)} namespaces, stopped {len(rep.killed)} processes"
              + (f", restored {', '.join(rep.restored)}" if rep.restored else "") + f" in {rep.seconds:.2f} s")
        # the namespaces named (the count above is theirs), then the run directory and what else went
        gone = namespaces[:8]
        print("  removed: " + ", ".join(gone) + (f" and {len(namespaces) - len(gone)} more" if len(namespaces) > 8 else "")
              + "".join(f"; {d}" for d in rep.deleted if d.startswith("/")))
    for r in rep.refused:
        print(f"error: refused: {r}", file=sys.stderr)
    if rep.refused:
        print(f"lab {lab.name}: everything provably the lab's is removed; the {len(rep.refused)} entries above were "
              "not touched (not the lab's, or unreadable)", file=sys.stderr)
        return 2
    return 0


# --- check / traffic / fault (emulation/checks/, emulation/traffic/) --------------------


def check_args(p) -> None:
    from railonly.emulation.checks.check_plan import CHECKS

    p.add_argument("--json", metavar="FILE", help="write the results as JSON (docs/reference/outdir.md)")
    p.add_argument("--junit", metavar="FILE", help="write the results as JUnit XML (one testcase per id)")
    p.add_argument("--timeout", type=positive(float), default=60.0, help="seconds to wait for convergence (default 60)")
    p.add_argument("--only", action="append", choices=CHECKS, help="run only this check (repeatable)")
    p.add_argument("--failover", metavar="SWITCH",
                   help="take SWITCH down as 'lab fault --node' does, report the time until every pair passes "
                        "again, then restore it (docs/bgp.md)")


def check(args) -> int:
    from railonly.emulation.checks import check_report as report
    from railonly.emulation.checks import checker as checks_run
    from railonly.emulation.checks.check_plan import CHECKS

    refuse_targets({"--json": args.json, "--junit": args.junit}, outdirs=(args.outdir,))
    if args.failover and args.only:  # it was taken and not used: --failover runs its own probes
        from railonly.emulation.lab import LabError

        raise LabError("command line", "--only picks checks of a full check; --failover runs only the failover"
                       " measurement (reachability rounds, then BGP and BFD after the restore)",
                       "leave out --only, or run the checks and the failover as two commands")
    rt, lab = open_lab(args)
    if args.failover:
        from railonly.emulation.runtime.protocol import deployed_status
        from railonly.emulation.traffic import failover

        # as fault: nothing to fail over in a lab that is not there (exit 3 saying so, before the
        # lock: it was "/run/netns/clab-...: No such file or directory" and a lock file left)
        deployed_status(rt, lab)
        with locked(lab), console.reporter() as bar:  # exclusive: it changes the lab, as fault does
            run = failover.measure(lab, rt, args.failover, timeout=args.timeout, progress=bar.step)
    else:
        from railonly.emulation.traffic import faults

        with locked(lab, shared=True), console.reporter() as bar:
            run = checks_run.run(lab, rt, timeout=args.timeout, checks=tuple(args.only or CHECKS), progress=bar.step,
                                 faulted=bool(faults.active(lab, rt)))
    if run.failed or not args.quiet:
        console.out(report.table(lab.name, run.results, run.timings, run.notes))
    if args.json:
        report.write_json(args.json, report.as_json(lab.name, run.results, run.timings, run.notes))
    if args.junit:
        report.write_text(args.junit, report.as_junit(lab.name, run.results, run.timings))
    return 1 if run.failed else 0


def traffic_args(p) -> None:
    from railonly.emulation.traffic.patterns import PATTERNS, SCHEDULES

    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--pattern", choices=PATTERNS, help="a synthetic collective on every GPU")
    what.add_argument("--job", metavar="JOB.yml", help="replay a training job's iteration (a job file of railonly analyze)")
    p.add_argument("--bytes", type=positive(int), default=None, help="bytes per flow (default: 2 s of the emulated NIC rate, at least 0.5 s a step)")
    p.add_argument("--schedule", choices=SCHEDULES, default=None,
                   help="all-to-all: phased (default; one peer per GPU per step, as NCCL), concurrent (all"
                        " flows at once), two-phase (rail-only: HB shuffle, then rail steps; store-and-forward)")
    p.add_argument("--json", metavar="FILE", help="write the traffic report as JSON (docs/reference/outdir.md)")
    p.add_argument("--iterations", type=number(int), default=None, help="--job: iterations to replay (default 1; medians reported)")
    p.add_argument("--time-scale", type=number(float), default=None,
                   help="--job: lab seconds per modelled second (default: the shortest phase lasts 0.5 s)")
    p.add_argument("--tolerance", type=number(float), default=0.10,
                   help="measured network time passes within this share of the placement-aware model (default 0.10)")
    p.add_argument("--reroute", action="store_true",
                   help="--job: send the flows of GPUs whose rail NIC is down (lab fault --link) through an HB"
                        " sibling's NIC, as NCCL's PXN does, and put the slowdown beside analyze --fail's")
    p.add_argument("--streams", type=number(int), default=None,
                   help="parallel TCP streams per transfer (default: NCCL's channels per network peer for the"
                        " design's NIC, 4 at 400G), each hashed by ECMP on its own")


def traffic(args) -> int:
    from railonly.emulation.checks import check_report as report
    from railonly.emulation.traffic import iperf3
    from railonly.emulation.traffic.patterns import SCHEDULES

    _check_timing_options(args)
    if getattr(args, "reroute", False) and not args.job:
        from railonly.emulation.lab import LabError

        raise LabError("command line", "--reroute replays a job's flows through HB siblings", "add --job JOB.yml")
    if args.schedule is not None and args.pattern != "all-to-all":  # it was taken and not used, without a word
        from railonly.emulation.lab import LabError

        raise LabError("command line", f"--schedule orders an all-to-all's flows; {args.job and '--job' or args.pattern}"
                       " runs its own", "leave out --schedule, or use --pattern all-to-all")
    # an option of the other form was taken and not used, without a word (as --schedule was)
    unused = ([f"--{o.replace('_', '-')}" for o in ("iterations", "time_scale") if getattr(args, o) is not None]
              if args.pattern else (["--bytes"] if args.bytes is not None else []))
    if unused:
        from railonly.emulation.lab import LabError

        raise LabError("command line", f"{' and '.join(unused)} {'is' if len(unused) == 1 else 'are'} for"
                       f" {'--job' if args.pattern else '--pattern'}; {args.pattern or '--job'} does not use"
                       f" {'it' if len(unused) == 1 else 'them'}",
                       f"leave out {' and '.join(unused)}" + (", or use --job JOB.yml" if args.pattern else
                                                              " (a job's bytes come from its model; --time-scale stretches them)"))
    refuse_targets({"--json": args.json}, {"the job": args.job}, outdirs=(args.outdir,))
    if args.job:
        return traffic_job(args)
    rt, lab = open_lab(args)
    with locked(lab, shared=True), console.reporter() as bar:
        rep = iperf3.run(lab, rt, args.pattern, args.bytes, schedule=args.schedule or SCHEDULES[0], streams=args.streams,
                         tolerance=args.tolerance, progress=lambda s: _flow_step(bar, s))
    if rep["verdict"] == "fail" or not args.quiet:  # -q: inconclusive is exit 3 and the JSON's figures
        console.out(iperf3.format_report(rep))
    if args.json:
        report.write_json(args.json, rep)
    return VERDICT_EXIT[rep["verdict"]]


# pass, fail (a flow failed or the time is outside the tolerance), inconclusive (the host was saturated)
VERDICT_EXIT = {"pass": 0, "fail": 1, "inconclusive": 3}


def _check_timing_options(args) -> None:
    from railonly.emulation.lab import LabError

    where = args.job or "command line"
    if not 0 < args.tolerance < 10:
        raise LabError(where, f"--tolerance must be between 0 and 10, got {args.tolerance:g}", "e.g. --tolerance 0.1")
    if args.streams is not None and not 1 <= args.streams <= 128:
        raise LabError(where, f"--streams must be 1 to 128, got {args.streams}", "leave it out for NCCL's default")


_FLOW = re.compile(r"^\[(\d+)/(\d+)\] ")


def _flow_step(bar, message: str) -> None:
    """traffic.run reports each flow as "[i/n] step ..."; those feed the bar's count."""
    m = _FLOW.match(message)
    if m:
        bar.step("flows", int(m.group(1)), int(m.group(2)))
        console.detail(f"  .. {message}")
    else:
        bar.step(message)


def traffic_job(args) -> int:
    """--job: exit 0 pass, 1 a phase failed or communication is outside the tolerance, 2 a bad job (or one
    the lab cannot hold), 3 not deployed or the host was saturated (inconclusive)."""
    from railonly.emulation.checks import check_report as report
    from railonly.emulation.lab import LabError
    from railonly.emulation.traffic import job_plan, replay
    from railonly.fabric.analysis import load_job

    job = load_job(args.job)  # InputError: exit 2, every problem named
    if args.iterations is None:
        args.iterations = 1
    if args.iterations < 1 or args.iterations > 100:
        raise LabError(args.job, f"--iterations must be 1 to 100, got {args.iterations}", "e.g. --iterations 3")
    if args.time_scale is not None and not 0.001 <= args.time_scale <= 1e7:
        raise LabError(args.job, f"--time-scale must be 0.001 to 1e7, got {args.time_scale:g}", "leave it out for the default")
    rt, lab = open_lab(args)
    quiet, verbose = getattr(args, "quiet", None), getattr(args, "verbose", None)
    say = (lambda s: None) if quiet else (lambda s: print(f"  .. {s}", file=sys.stderr, flush=True))
    detail = (lambda s: print(f"     {s}", file=sys.stderr, flush=True)) if verbose and not quiet else (lambda s: None)
    try:
        with locked(lab, shared=True):
            rep = replay.run(lab, rt, job, iterations=args.iterations, time_scale=args.time_scale,
                             tolerance=args.tolerance, streams=args.streams,
                             reroute=args.reroute, progress=say, detail=detail)
    except job_plan.ScaleError as exc:
        fix = exc.fix or ("restore a NIC of that HB domain (lab fault --restore)" if "no detour" in str(exc)
                          else "use a job whose tensor-parallel group fits the lab's HB domain")
        raise LabError(args.job, str(exc), fix) from None
    if rep["verdict"] == "fail" or not quiet:
        console.out(replay.format_report(rep))
    if args.json:
        report.write_json(args.json, rep)
    return VERDICT_EXIT[rep["verdict"]]


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
        with locked(lab):
            done = faults.restore(lab, rt)
        print(f"lab {lab.name}: restored {len(done)} fault{'' if len(done) == 1 else 's'}" + "".join(f"\n  {d}" for d in done))
        return 0
    with locked(lab):
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
    ("destroy", "remove everything the deploy created (also after a failed or interrupted deploy; OUTDIR or --lab NAME)",
     destroy_args, destroy),
    ("check", "check reachability, isolation, paths, BGP and cabling (exit 1 on any failure)", check_args, check),
    ("traffic", "run ring all-reduce or all-to-all flows with iperf3 and compare with the model", traffic_args, traffic),
    ("fault", "inject a fault (a link or switch down) or restore", fault_args, fault),
]


def register(sub) -> None:
    p = sub.add_parser("lab", help="deploy, inspect and destroy the emulation lab of an OUTDIR")
    actions = p.add_subparsers(dest="lab_action", metavar="ACTION", parser_class=type(p))
    for name, help_, add_args, run in ACTIONS:
        a = actions.add_parser(name, help=help_)
        common(a, optional=name == "destroy")
        if add_args:
            add_args(a)
        a.set_defaults(func=run)
    p.set_defaults(func=lambda args: (p.print_help(sys.stderr), 2)[1])
