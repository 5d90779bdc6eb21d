"""Size caps checked before any work: a design, an OUTDIR or a lab too large for this tool.

Every input is hostile: a schema-valid design of 512 million GPUs would make
compile allocate gigabytes before anything else could stop it, and a lab of
12,480 nodes would be planned and deployed namespace by namespace. Each cap
is checked from counts alone (:func:`railonly.fabric.cost.inventory.check_caps`
counts switches with cost.inventory.from_design, without building the graph),
before building, and a design over a cap is exit 2 naming the cap, the count
and how to raise it.

A cap is raised by the operator, never by the input: an environment variable
(a design key would let the design lift its own cap).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..safe_text import whole


@dataclass(frozen=True)
class Cap:
    env: str
    default: int
    what: str

    @property
    def value(self) -> int:
        raw = os.environ.get(self.env, "")
        n = whole(raw)
        return n if n else self.default

    def message(self, count: int, whose: str = "the design") -> tuple[str, str]:
        return (f"{whose} has {count:,} {self.what}, more than the cap of {self.value:,} ({self.env})",
                f"split the design, or raise the cap for this run: {self.env}={count} railonly ...")


# ~16x the largest design of the paper (32k GPUs): every artifact stays below a few GB
GPUS = Cap("RAILONLY_MAX_GPUS", 1 << 20, "GPUs")
SWITCHES = Cap("RAILONLY_MAX_SWITCHES", 1 << 16, "switches")
# files of an OUTDIR (written by compile, walked by validate/diff/lab): two per switch,
# three per HB domain, a few dozen more
FILES = Cap("RAILONLY_MAX_FILES", 1 << 20, "files")
# namespaces of one lab on one host (each GPU, HB domain and switch is one, with FRR per switch)
LAB_NODES = Cap("RAILONLY_MAX_LAB_NODES", 4096, "lab nodes")
# clusters one `railonly sweep` prices (HB sizes x cluster sizes x radices): ~1 ms each, so
# about a minute; 1.3 million ran for an hour without a word
SWEEP_POINTS = Cap("RAILONLY_MAX_SWEEP_POINTS", 50_000, "clusters")


# One unit's price and power, bounded above so that every total stays a finite number (a
# price of 1e308 made `$inf` in the BOM and Infinity in --json, which no JSON parser reads).
MAX_PRICE_USD = 10_000_000
MAX_POWER_W = 100_000


def estimated_files(switches: int, hb_domains: int) -> int:
    """An upper bound of an OUTDIR's files (configs/<switch>/ holds 2, hosts/<hb>/ 3)."""
    return 2 * switches + 3 * hb_domains + 64
