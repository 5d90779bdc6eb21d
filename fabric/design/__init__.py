"""The design file (keys, defaults, validation, the Design object) and what follows
from it without a graph: the Clos counting model, cable plant facts (tiers, optics,
lengths, floor names) and the lab slice.

May import: input, platforms.
"""
