"""Load on a deployed lab: collective patterns and their model (pure), the step runner with its persistent socket agents (iperf3 for a runtime without a door), and faults.

May import: lab, the runtime's doors (runtime.protocol, outdir_writer: processes and FRR daemons through
the Runtime protocol), checks, railonly.proc; never push.
"""
