"""Money: switch and cable counts (inventory), the price book (data/prices.yaml),
the BOM, and rail-only against the rail-optimized baseline (compare, sweep).

May import: input, platforms, design, graph (never devices or outputs).
"""
