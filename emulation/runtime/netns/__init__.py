"""The embedded netns runtime: plan, engine (setns, rtnetlink, pids), FRR, the lab sshd and switch shell.

May import: lab, runtime.protocol, switchcfg, railonly.proc; never checks, traffic or push.
"""
