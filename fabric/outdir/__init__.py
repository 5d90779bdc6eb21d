"""The OUTDIR on disk: the one writer (all files at once or none), the reader of
an untrusted OUTDIR (bounded reads, no link followed, allow-list checks), and the
change plan between two OUTDIRs (`railonly diff`).

May import: input, platforms, design, graph, devices, cost, outputs.
"""
