"""The embedded netns runtime: plan, engine (setns, rtnetlink, pids), FRR, the lab sshd and switch shell.

May import: lab, the rest of runtime, railonly.fabric (devices.readback, outputs.clab_exec), railonly.proc;
never checks, traffic or push. No room but runtime imports this package (tests/core/test_layers.py).
"""
