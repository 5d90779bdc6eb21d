"""The fabric graph: nodes, ports and links with addresses and ASNs (model), built
from a Design (build, addressing), checked (invariants) and written as fabric.json.

Every later stage reads this graph; nothing here renders a device or a file but fabric.json.
May import: input, platforms, design.
"""
