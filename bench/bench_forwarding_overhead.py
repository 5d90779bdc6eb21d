"""The forwarding overhead of rail-only, measured: the same all-to-all on a rail-only
lab and on the rail-optimized lab of the same cluster (labs/mini-routed.yml vs
labs/mini-baseline.yml: 12 GPUs, 2 rails, NIC:HB = 400:3600 scaled to the lab's
shaped rates), printed beside the model and the paper (8.2% DGX A100, 11.2% DGX H100).

Needs root (network namespaces). Each lab is compiled under a unique name,
deployed, run REPS times, and destroyed in a finally.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
REPS = int(os.environ.get("REPS", "3"))


def run_design(tmp: Path, design: str, nbytes: int | None) -> tuple[list[dict], int]:
    from railonly.cli import main
    from railonly.emulation import traffic
    from railonly.emulation.runtime import get_runtime, load_lab

    d = yaml.safe_load((ROOT / "labs" / f"{design}.yml").read_text())
    d["name"] = f"bfo{os.getpid() % 10000}{design[-1]}"
    src = tmp / f"{d['name']}.yml"
    src.write_text(yaml.safe_dump(d))
    out = tmp / d["name"]
    assert main(["compile", str(src), "-o", str(out)]) == 0
    rt, lab = get_runtime("netns"), load_lab(out)
    reps = []
    try:
        rt.deploy(lab)
        for _ in range(REPS):
            reps.append(traffic.run(lab, rt, "all-to-all", nbytes))
            nbytes = reps[0]["bytes_per_flow"]
    finally:
        traffic.stop_servers(lab)
        rt.destroy(lab)
    return reps, nbytes


def main() -> int:
    if os.geteuid() != 0:
        print("bench_forwarding_overhead: needs root (network namespaces); skipped")
        return 0
    with tempfile.TemporaryDirectory(prefix="railonly-bfo-") as t:
        tmp = Path(t)
        os.chmod(tmp, 0o755)
        rail, nbytes = run_design(tmp, "mini-routed", None)
        base, _ = run_design(tmp, "mini-baseline", nbytes)
    tr = statistics.median(r["completion_s"] for r in rail)
    tb = statistics.median(r["completion_s"] for r in base)
    r0, b0 = rail[0], base[0]
    ratio = r0["nic_hb_ratio"]
    print(f"all-to-all, 12 GPUs (2 rails x 6 HB domains), {len(r0['flows'])} flows of {nbytes} bytes,"
          f" NIC {r0['nic_gbps_emulated'] * 1000:g} Mbit/s, HB {r0['hb_gbps_emulated'] * 1000:g} Mbit/s, median of {REPS}")
    print(f"  {'':<22}{'measured s':>11}{'pipelined model s':>19}{'store-forward model s':>23}")
    print(f"  {'rail-only':<22}{tr:>11.3f}{r0['model_completion_s']:>19.3f}{r0['model_store_forward_s']:>23.3f}")
    print(f"  {'rail-optimized':<22}{tb:>11.3f}{b0['model_completion_s']:>19.3f}{b0['model_store_forward_s']:>23.3f}")
    print(f"  overhead measured {100 * (tr / tb - 1):+.1f}%  (runs: rail-only {[r['completion_s'] for r in rail]},"
          f" baseline {[r['completion_s'] for r in base]})")
    print(f"  overhead models: pipelined {100 * (r0['model_completion_s'] / b0['model_completion_s'] - 1):+.1f}%,"
          f" store-and-forward {100 * (r0['model_store_forward_s'] / b0['model_store_forward_s'] - 1):+.1f}%,"
          f" NIC/HB ratio {100 * ratio:.1f}%")
    print("  paper: 8.2% (DGX A100, 200/2400 = 8.3%), 11.2% (DGX H100, 400/3600 = 11.1%)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
