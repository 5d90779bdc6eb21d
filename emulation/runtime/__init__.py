"""The Runtime protocol every lab runtime honours, the registry --runtime chooses from, and containerlab;
what every runtime shares: one lock per lab (lock), the lab's run directory with its identity and
records (rundir), writing below a directory without following a symlink (outdir_writer).

May import: railonly.emulation.lab, railonly.proc; never netns (registered by name, imported on use).
"""
