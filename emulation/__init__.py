"""The lab: compiled OUTDIRs deployed, checked, loaded and re-configured (every side effect of railonly).

Rooms, lowest first: lab (the Lab and its names), runtime (the protocol, registry, containerlab and the
netns runtime in runtime/netns), checks, traffic, push. The switch config readers are
railonly.fabric.devices.readback.
Each may import the rooms before it, railonly.fabric (pure) and railonly.proc; never the other way.
"""
