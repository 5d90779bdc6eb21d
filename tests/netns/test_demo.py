"""`railonly demo` end to end on a real lab: short output that ends with the summary table."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ..conftest import design_text, skip_reason, unique

pytestmark = [pytest.mark.netns, pytest.mark.slow]

MAX_LINES = 40  # what a newcomer reads after `make demo` (setup adds two or three)


@pytest.mark.skipif(skip_reason("ip", "tc", "vtysh", "iperf3") is not None,
                    reason=skip_reason("ip", "tc", "vtysh", "iperf3") or "")
def test_demo_prints_a_phase_per_line_and_ends_with_the_table(tmp_path):
    name = unique("demo")
    design = tmp_path / "demo.yml"
    design.write_text(design_text("labs/mini-routed.yml", name))
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-c", "import sys; from railonly.cli import main; sys.exit(main())",
                           "demo", str(design)], capture_output=True, text=True, timeout=900, env=env)
    lines = (proc.stdout + proc.stderr).rstrip("\n").splitlines()
    text = "\n".join(lines)
    # the traffic phases' timing is judged against the placed model: pass, or fail (exit 1), or
    # inconclusive when the host's CPU was saturated (not a failure of the demo)
    assert proc.returncode in (0, 1), text
    assert len(lines) <= MAX_LINES, f"{len(lines)} lines:\n{text}"
    for phase in ("compile", "validate", "lab deploy", "lab check", "lab destroy"):
        assert any(line.startswith(phase + " ") and " ok " in line for line in lines), (phase, text)
    table = lines.index(next(line for line in lines if line.startswith("pattern ")))
    rows = lines[table + 1:table + 3]
    assert [r.split()[0] for r in rows] == ["ring-allreduce", "all-to-all"], text
    for r in rows:
        cols = r.split()
        assert "," in cols[2] and cols[4] == cols[6] == cols[8] == "s", r  # bytes with separators; three times
        verdict = cols[9]
        assert verdict in ("pass", "fail", "inconclusive"), r
        # one line saying why measured differs from the model
        assert "beyond the placement" in r and (verdict != "inconclusive" or "host CPU" in r), r
    assert lines[table + 3].startswith("pass = ") and lines[table + 4].startswith("measured = ")
    assert lines[-2].startswith("result: ok" if proc.returncode == 0 else "result: FAILED"), text
    assert lines[-1].startswith("files: removed "), text
    assert not os.path.exists(lines[-1].split()[2])
    assert not [ln for ln in lines if "->" in ln and ln.lstrip().startswith(".. [")], "per-flow lines need -v"
