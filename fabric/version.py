"""railonly's version: one leaf module, so the OUTDIR writer can stamp it without
importing the fabric facade (which reaches every room)."""

__version__ = "0.1.0"
