"""A lab compiled and deployed for one benchmark run, destroyed however the run ends.

The benches that measure a deployed lab share this: the design (labs/<design>.yml) is renamed
to PREFIX plus the process id, so runs of one bench, or of several benches, on one host never
share namespaces; ``RAILONLY_BENCH_LAB_PREFIX`` replaces PREFIX where a host needs every lab
under a prefix of its own. Needs root (network namespaces).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def deployed_lab(prefix: str, settle_s: float, design: str = "mini-routed") -> Iterator[str]:
    """Compile labs/<design>.yml under a unique name, deploy it, wait settle_s (BGP up), yield the
    OUTDIR; the lab is destroyed and the OUTDIR removed on the way out."""
    import yaml

    from railonly.cli import main as cli

    d = yaml.safe_load((ROOT / "labs" / f"{design}.yml").read_text())
    d["name"] = f"{os.environ.get('RAILONLY_BENCH_LAB_PREFIX', prefix)}{os.getpid() % 10000}"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / f"{d['name']}.yml"
        src.write_text(yaml.safe_dump(d))
        out = str(Path(tmp) / "out")
        assert cli(["compile", str(src), "-o", out, "-q"]) == 0
        try:
            assert cli(["lab", "deploy", out, "-q"]) == 0
            time.sleep(settle_s)
            yield out
        finally:
            cli(["lab", "destroy", out, "-q"])
