"""The fabric graph: nodes, ports and links with addresses and ASNs (model), built
from a Design (build, addressing), checked (invariants), written as fabric.json and parsed
back from it (fabric_json: the one parser of the file).

Every later stage reads this graph; nothing here renders a device or a file but fabric.json.
May import: input, platforms, design.
"""
