"""Plant and lab artifacts of an OUTDIR besides configs: cabling.csv, NetBox
imports, README.md and topology.svg, the containerlab topology and its
clabernetes manifest.

May import: input, platforms, design, graph, devices, cost.
"""
