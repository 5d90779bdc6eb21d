"""railonly.fabric: the pure compiler (design -> fabric graph -> artifacts).

Nothing in this package starts processes or touches the network; only
:mod:`railonly.fabric.outdir.writer` writes files.
"""

__version__ = "0.1.0"
