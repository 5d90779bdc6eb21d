"""FRR syntax through `vtysh -C`: the fixture parses, typos are reported with their line."""

from __future__ import annotations

from pathlib import Path

import pytest

from railonly import proc
from railonly.fabric.validate.frr_syntax import check_frr_file, check_frr_text, check_frr_texts

pytestmark = pytest.mark.skipif(proc.which("vtysh") is None, reason="FRR (vtysh) not installed")

GOOD = Path(__file__).parent / "fixtures" / "frr_leaf.conf"


def typo(text: str, old: str, new: str) -> tuple[str, int]:
    lines = text.splitlines()
    n = next(i for i, line in enumerate(lines) if line.strip() == old)
    lines[n] = lines[n].replace(old, new)
    return "\n".join(lines) + "\n", n + 1


def test_fixture_parses():
    assert check_frr_file(GOOD) == []


def test_typo_is_reported_with_line():
    text, line = typo(GOOD.read_text(), "maximum-paths 64", "maximum-pathz 64")
    probs = check_frr_text(text, "leaf.conf")
    assert [(p.file, p.line, p.command) for p in probs] == [("leaf.conf", line, "maximum-pathz 64")]
    assert "Unknown command" in probs[0].message
    assert f"leaf.conf:{line}" in str(probs[0])


def test_incomplete_command():
    probs = check_frr_text("router bgp 65000\n neighbor 10.0.0.1 remote-as\n", "x")
    assert [(p.line, p.message) for p in probs] == [(2, "% Command incomplete")]


def test_batch_maps_lines_to_files_and_resets_context():
    bad, line = typo(GOOD.read_text(), "bgp log-neighbor-changes", "bgp log-neighbour-changes")
    # "a" ends inside an address-family; "b" must not inherit that context.
    texts = {"a": "router bgp 1\n address-family ipv4 unicast\n", "b": " maximum-paths 4\n", "good": GOOD.read_text(), "bad": bad}
    probs = check_frr_texts(texts, files_per_process=2)
    assert sorted((p.file, p.line) for p in probs) == [("b", 1), ("bad", line)]


def test_unreadable_file_is_a_problem(tmp_path):
    probs = check_frr_file(tmp_path / "missing.conf")
    assert len(probs) == 1 and probs[0].line is None


def test_file_leaving_config_mode_does_not_poison_the_batch():
    texts = {"escapes": "hostname a\nexit\n", "good": GOOD.read_text(), "bad": " maximum-paths 4\n"}
    probs = check_frr_texts(texts, files_per_process=3)
    assert sorted((p.file, p.line) for p in probs) == [("bad", 1)]


def test_empty_file_keeps_numbering():
    probs = check_frr_texts([("empty", ""), ("bad", "hostname x\nfoo bar\n")], files_per_process=2)
    assert [(p.file, p.line) for p in probs] == [("bad", 2)]
