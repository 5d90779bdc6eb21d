"""The Runtime protocol every lab runtime honours, the registry --runtime chooses from, and containerlab.

May import: railonly.emulation.lab, railonly.proc; never netns (registered by name, imported on use).
"""
