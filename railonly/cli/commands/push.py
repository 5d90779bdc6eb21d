"""`railonly push OUTDIR`: roll the generated switch configs out over SSH (netmiko), or diff them.

A rollout (docs/push.md): a canary switch, then waves with at most
--max-per-group switches of one rail and tier at once; each switch drained
before a disruptive change, applied (EOS: configure session + commit timer,
confirmed after verify; SONiC: a config DB patch and vtysh, a reload only
where needed), verified, undrained. The first failure stops the rollout.

Exit codes: 0 every device ok (and, with --dry-run, in sync); 1 a device
failed, or --dry-run found a difference; 2 invalid input (inventory, a changed
device --only-changed cannot push, unknown --device); 3 environment (no deployed lab
to push to, netmiko missing).
"""

from __future__ import annotations

import contextlib
import os
import sys

from railonly.cli.commands import number, refuse_empty


def register(sub) -> None:
    p = sub.add_parser("push", help="push generated configs to switches over SSH (SONiC, EOS); --dry-run shows diffs")
    p.add_argument("outdir", metavar="OUTDIR", help="the OUTDIR of railonly compile")
    p.add_argument("--device", action="append", metavar="NAME", default=[],
                   help="push only to this device (repeatable; default: all)")
    p.add_argument("--only-changed", metavar="OLD_OUTDIR",
                   help="push only the devices whose configs differ from OLD_OUTDIR's (the devices 'railonly diff' names)")
    p.add_argument("--dry-run", action="store_true", help="connect, read the running config, print diffs, change nothing (exit 1 if any differ)")
    p.add_argument("--inventory", metavar="FILE",
                   help="YAML with devices: {NAME: {host, port, platform}} (default: the lab deployed from OUTDIR)")
    p.add_argument("--key", metavar="FILE", help="SSH private key (default: RAILONLY_SSH_KEY; the lab's own key for a lab)")
    p.add_argument("--insecure-no-host-key-check", action="store_true",
                   help="accept any host key (default: check against known_hosts, or the lab's known_hosts)")
    p.add_argument("--max-per-group", type=number(int), default=1, metavar="N",
                   help="switches of one rail and tier changed at once (default 1); a canary switch goes first")
    p.add_argument("--workers", type=number(int), default=64, metavar="N", help="at most N switches of a wave pushed at once (default 64)")
    p.add_argument("--verify-timeout", type=number(float), default=60.0, metavar="S",
                   help="seconds for BGP, interfaces and BFD to be as before the change (default 60)")
    p.add_argument("--drain-wait", type=number(float), default=3.0, metavar="S",
                   help="seconds after a drain or undrain for traffic to move (default 3)")
    p.add_argument("--commit-timer", default="00:05:00", metavar="HH:MM:SS",
                   help="EOS: a committed session rolls back unless confirmed within this (default 00:05:00)")
    p.add_argument("--probe", action="store_true",
                   help="lab only: ping across the spines of every rail during the rollout and count lost probes per wave")
    p.add_argument("--timeout", type=number(float), default=10.0, metavar="S", help="connect/login timeout per device (default 10)")
    p.set_defaults(func=run)


def _only_changed(devices: list, old_outdir: str, outdir, lab, inventory: "str | None", named: bool) -> list:
    """The devices the change plan from OLD_OUTDIR names (new or changed configs). A changed
    device the inventory lacks would stay on its old config while the push says all is done:
    exit 2 naming it, unless --device (`named`) picked the devices to push."""
    from railonly.fabric.input.problems import InputError, Problem
    from railonly.fabric.outdir.changeplan import changed_devices

    # lab.outdir is OUTDIR resolved (a relative or linked OUTDIR as given is not a prefix of it)
    folder = lab.configs_dir.relative_to(lab.outdir).as_posix()  # configs, or lab/configs of a slice
    names = changed_devices(old_outdir, str(outdir), folder)  # UntrustedFile: exit 2, the file named
    known = {d.name for d in devices}
    missing = [n for n in names if n not in known]
    shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10:,} more" if len(missing) > 10 else "")
    if missing and not named:
        raise InputError([Problem("--only-changed", f"{len(missing):,} of the {len(names):,} devices whose configs differ "
                                  f"from {old_outdir} are not in the {'inventory' if inventory else 'lab'}: {shown}",
                                  "add them to the inventory, or name the devices to push with --device",
                                  None, inventory or "command line")])
    if missing:
        print(f"{len(missing):,} changed device(s) not named by --device are not pushed: {shown}")
    names = set(names)
    return [d for d in devices if d.name in names]


def run(args) -> int:
    from pathlib import Path

    from railonly import console
    from railonly.cli import EnvironmentProblem
    from railonly.fabric.input.problems import InputError, Problem, did_you_mean

    try:
        import netmiko  # noqa: F401
    except ImportError:
        raise EnvironmentProblem("netmiko is not installed (pip install netmiko)") from None
    from railonly.emulation.lab import load_lab
    from railonly.emulation.push import targets as push_inventory
    from railonly.emulation.push import pusher as push

    import re

    # an empty value is a mistake, not "option not given": no inventory pushes to the lab's switches,
    # no --only-changed to every device, no --key to RAILONLY_SSH_KEY's
    refuse_empty(("--inventory", args.inventory, "give the path of an inventory YAML file"),
                 ("--only-changed", args.only_changed, "give the OUTDIR of the compile the devices run now"),
                 ("--key", args.key, "give the path of an SSH private key"))
    for flag, value in (("--workers", args.workers), ("--max-per-group", args.max_per_group)):
        if value < 1:
            raise InputError([Problem(flag, f"must be at least 1, got {value}", "", None, "command line")])
    if not re.fullmatch(r"[0-9][0-9]:[0-5][0-9]:[0-5][0-9]", args.commit_timer):
        raise InputError([Problem("--commit-timer", f"must be hh:mm:ss, got {args.commit_timer!r}", "for example 00:05:00",
                                  None, "command line")])
    for flag, value in (("--verify-timeout", args.verify_timeout), ("--drain-wait", args.drain_wait)):
        if not 0 <= value <= 3600:
            raise InputError([Problem(flag, f"must be from 0 to 3600 seconds, got {value}", "", None, "command line")])
    if not 0 < args.timeout <= 600:  # NaN too: it compares false with every bound
        raise InputError([Problem("--timeout", f"must be above 0 and at most 600 seconds, got {args.timeout}",
                                  "for example --timeout 10 (the default)", None, "command line")])
    from railonly.fabric.outdir.reader import outdir_problem

    refused = outdir_problem(args.outdir)  # before Path(): Path("") is the current folder
    if refused is not None:
        raise refused
    outdir = Path(args.outdir)
    lab = load_lab(outdir)
    lock = contextlib.nullcontext()
    if args.inventory:
        devices = push_inventory.load_inventory(args.inventory, lab.configs_dir,
                                                {sw.name: sw.platform for sw in lab.fabric.switches},
                                                str(lab.fabric_file))
    else:
        from railonly.emulation.runtime import lock as lab_lock
        from railonly.emulation.runtime import rundir

        lab = rundir.bind(lab)  # the name it was deployed under; refused when deployed from another OUTDIR
        rundir.check_state_dir(lab)  # its key and known_hosts: root's run dir, no symlink on the way
        devices = push_inventory.lab_devices(lab)
        if os.geteuid() == 0:  # shared: the switch shells' reloads take it shared too; deploy/destroy wait
            lock = lab_lock.hold(lab.name, shared=True)
    if args.device:
        known = {d.name for d in devices}
        bad = [n for n in args.device if n not in known]
        if bad:
            raise InputError([Problem("--device", f"no device {n!r} in the {'inventory' if args.inventory else 'lab'}",
                                      did_you_mean(n, sorted(known), "devices"), None, "command line") for n in bad])
        devices = [d for d in devices if d.name in set(args.device)]
    if args.only_changed:
        devices = _only_changed(devices, args.only_changed, outdir, lab, args.inventory, bool(args.device))
        if not devices:
            print(f"no device {'named by --device ' if args.device else ''}has a config that differs from "
                  f"{args.only_changed}: nothing to push")
            return 0
    creds = push.Credentials.from_env(args.key, args.insecure_no_host_key_check)
    if creds.key_file and not os.path.isfile(creds.key_file):
        src = "--key" if args.key else "RAILONLY_SSH_KEY"
        raise InputError([Problem(src, f"SSH key file {creds.key_file} does not exist", "give the path of a private key",
                                  None, "command line")])
    # every file a push would send, judged by the checks `validate` runs, before any connection
    from railonly.emulation.lab import run_dir as lab_run_dir
    from railonly.fabric.outdir.reader import check_outdir, switch_file_problems

    run_dir = None if args.inventory else lab_run_dir(lab.name)  # a lab's FRR may log below its run dir
    problems = check_outdir(str(lab.outdir), run_dir=run_dir)
    for d in devices:
        problems += [p for p in switch_file_problems(str(lab.configs_dir / d.name), d.platform, run_dir)
                     if p not in problems]
        try:
            files = push.candidate(lab.configs_dir, d)
        except push.PushFailed:
            continue  # a missing file: that device's result says so
        problems += [p for p in push.unfit_problems(lab.configs_dir, d, files) if p not in problems]
    if problems:
        raise InputError(problems)
    from railonly.emulation.push import rollout

    progress = push.Progress(len(devices), enabled=not args.quiet)
    opts = push.Options(drain_wait=args.drain_wait, verify_timeout=args.verify_timeout, commit_timer=args.commit_timer)
    prober = None
    if args.probe:
        if args.inventory:
            raise InputError([Problem("--probe", "probes run only in a lab (no --inventory)", "leave out --probe", None, "command line")])
        from railonly.emulation.runtime.registry import get_runtime

        running = {n for n, st in get_runtime().status(lab).nodes.items() if st == "running"}
        streams = rollout.lab_streams(lab, running)
        if not streams:
            raise InputError([Problem("--probe", f"lab {lab.name} has no rail with two leaves to probe across",
                                      "use a design with spines (two tiers)", None, "command line")])
        from railonly.emulation.lab import run_dir as lab_run

        prober = rollout.Prober(streams, f"{lab_run(lab.name)}/probes")
    targets = rollout.lab_targets(lab)
    with lock:
        rep = rollout.run(devices, targets, lab.configs_dir, creds, max_per_group=args.max_per_group, workers=args.workers,
                          dry_run=args.dry_run, timeout=args.timeout, opts=opts, progress=progress, prober=prober)
    results = rep.results
    failed = not all(r.ok for r in results) or (args.dry_run and any(r.changed for r in results))
    if failed or not args.quiet:  # -q: nothing on success, as every command
        for r in results:
            if r.diff:  # dry run: what would change; push: what was applied
                sys.stdout.write(r.diff)
        sys.stdout.write(rollout.report_text(rep, args.dry_run))
        console.out(push.summary_table(results, args.dry_run).rstrip("\n"))
    if not all(r.ok for r in results):
        return 1
    # docs/commands/index.md: exit 1 when drift was found, so `push --dry-run` doubles as a CI drift check
    return 1 if args.dry_run and any(r.changed for r in results) else 0
