"""Helpers for the build-out, change-plan and packing tests."""

from __future__ import annotations

from pathlib import Path

from railonly.fabric.design.design import parse_design

REPO = Path(__file__).resolve().parents[2]
LAB_1K = REPO / "labs" / "dgx-h100-1k.yml"


def design(K: int, count: int, radix: int, planned: int | None = None, topology: str = "rail-only",
           share: bool = False, mode: str = "routed"):
    plan = f", planned: {planned}" if planned is not None else ""
    return parse_design(
        f"name: t\ntopology: {topology}\nhb_domain: {{size: {K}, count: {count}{plan}}}\n"
        f"switch: {{radix: {radix}, share_rails: {str(share).lower()}}}\nrail: {{mode: {mode}}}\n"
    )


def lab_1k(count: int, planned: int | None = None) -> str:
    """labs/dgx-h100-1k.yml with another count (and a planned size)."""
    text = LAB_1K.read_text()
    assert "  count: 128\n" in text
    extra = f"\n  planned: {planned}" if planned is not None else ""
    return text.replace("  count: 128\n", f"  count: {count}{extra}\n")
