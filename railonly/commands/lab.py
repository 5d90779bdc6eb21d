"""`railonly lab ACTION OUTDIR`: run the OUTDIR's lab in an emulation runtime.

One subcommand per action; each action is a (name, help, add_arguments, run)
entry in ACTIONS, so adding one (check, traffic, fault) is one function pair
and one line. Every action gets OUTDIR and --runtime from :func:`common`.
Exit codes: 0 ok, 1 something is not as it should be, 2 bad OUTDIR, 3 runtime failure.
"""

from __future__ import annotations

import sys
from typing import Callable


def common(p) -> None:
    from railonly.emulation.runtime import DEFAULT_RUNTIME, RUNTIMES

    p.add_argument("outdir", metavar="OUTDIR", help="the OUTDIR of railonly compile")
    p.add_argument("--runtime", default=DEFAULT_RUNTIME, choices=sorted(RUNTIMES),
                   help=f"emulation runtime (default {DEFAULT_RUNTIME}: network namespaces, needs root)")


def open_lab(args):
    """(runtime, lab) for an action; LabError (exit 2) / RuntimeProblem (exit 3) on failure."""
    from railonly.emulation.runtime import get_runtime, load_lab

    return get_runtime(args.runtime), load_lab(args.outdir)


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
        res = rt.deploy(lab)
    except KeyboardInterrupt:
        print(f"interrupted: what was created so far is recorded; remove it with: railonly lab destroy {args.outdir}",
              file=sys.stderr)
        return 130
    print(format_deploy(lab, res))
    return 1 if getattr(res, "bgp_converged", None) is False else 0


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


# --- status -------------------------------------------------------------------------------


def status(args) -> int:
    rt, lab = open_lab(args)
    st = rt.status(lab)
    print(f"lab {lab.name}: {st.state} ({st.detail})")
    for node, s in st.nodes.items():
        if s != "running" and st.state != "absent":
            print(f"  {node}: {s}")
    return 1 if st.state == "partial" else 0


# --- destroy ------------------------------------------------------------------------------


def destroy(args) -> int:
    rt, lab = open_lab(args)
    rep = rt.destroy(lab)  # RuntimeProblem (exit 3) lists what could not be removed
    if rep is None:
        print(f"lab {lab.name}: destroyed")
    elif rep.lab is None:
        print(f"lab {lab.name}: nothing to destroy (no state file)")
    else:
        print(f"lab {lab.name}: removed {len(rep.deleted)} namespaces, stopped {len(rep.killed)} processes"
              + (f", restored {', '.join(rep.restored)}" if rep.restored else "") + f" in {rep.seconds:.2f} s")
    return 0


# name, help, add_arguments(parser) or None, run(args) -> exit code
ACTIONS: list[tuple[str, str, Callable | None, Callable]] = [
    ("deploy", "deploy the lab (idempotent; --dry-run prints the plan)", deploy_args, deploy),
    ("status", "show whether the lab runs", None, status),
    ("destroy", "remove everything the deploy created (also after a failed or interrupted deploy)", None, destroy),
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
