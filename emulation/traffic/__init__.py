"""Load on a deployed lab: collective patterns and their model (pure), the iperf3 runner, and faults.

May import: lab, runtime.protocol, checks, netns (pids, frr), railonly.proc; never push.
"""
