"""What a launcher needs: the rank-to-GPU map and the NCCL settings for the job's paths."""

from __future__ import annotations

import csv
import io

from .placement import Placement


def launcher_csv(pl: Placement) -> str:
    buf = io.StringIO()
    rows = pl.rank_to_gpu()
    w = csv.DictWriter(buf, list(rows[0]) if rows else ["rank"], lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def nccl_settings(design_topology: str, cross_rail_bytes: float, sp: bool) -> dict:
    env, why = {}, {}
    if design_topology == "rail-only":
        env["NCCL_CROSS_NIC"] = "0"
        why["NCCL_CROSS_NIC"] = "rails share no switch: a ring or tree channel must use the same NIC (rail) at both ends"
        env["NCCL_PXN_DISABLE"] = "0"
        why["NCCL_PXN_DISABLE"] = "PXN forwards a cross-rail message over NVLink to the peer on the destination's rail"
        if cross_rail_bytes > 0:
            env["NCCL_P2P_PXN_LEVEL"] = "2"
            why["NCCL_P2P_PXN_LEVEL"] = "this job sends bytes across rails: always route them through PXN (no path exists otherwise)"
    else:
        env["NCCL_CROSS_NIC"] = "2"
        why["NCCL_CROSS_NIC"] = "the spine joins rails; NCCL may pick either (its default)"
    if sp:
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
        why["CUDA_DEVICE_MAX_CONNECTIONS"] = "Megatron's sequence parallel orders communication and compute kernels"
    return {"env": env, "why": why}


def env_file(launcher: dict, job: str, design: str) -> str:
    """NCCL settings as a file a launcher can source (values are fixed strings, never input)."""
    lines = [f"# NCCL settings for job {job} on {design} (railonly analyze)"]
    for key, value in launcher["env"].items():
        lines += [f"# {launcher['why'][key]}", f"export {key}={value}"]
    return "\n".join(lines) + "\n"
