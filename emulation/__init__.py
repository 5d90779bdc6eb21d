"""The lab: compiled OUTDIRs deployed, checked, loaded and re-configured (every side effect of railonly).

Rooms, lowest first: lab (the Lab and its names), switchcfg, runtime, netns, checks, traffic, push.
Each may import the rooms before it, railonly.fabric (pure) and railonly.proc; never the other way.
"""
