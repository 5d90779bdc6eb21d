"""The lab checks: check_plan (pure), probe agent and checker (evidence from a deployed lab), judge and check_report (pure).

May import: lab, the runtime's doors (runtime.protocol, registry, lock, outdir_writer): nodes are reached
through the Runtime protocol only (exec, door, daemon_argv, settle_links); never traffic or push.
"""
