"""The lab checks: plan (pure), probe agent and run (evidence from a deployed lab), judge and report (pure).

May import: lab, runtime.protocol, netns (setns, frr); never traffic or push.
"""
