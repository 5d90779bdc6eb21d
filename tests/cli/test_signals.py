"""SIGTERM while a command runs raises Terminated in the command's own process only: the
processes it forks (pool workers, Background) die of it as they always did."""

from __future__ import annotations

import subprocess
import sys

# A command's shape: workers forked while the handler is held, then the pool's terminate()
# (Pool.__exit__) SIGTERMs the idle ones. Results large enough to fill a pipe.
SCRIPT = """
from railonly.fabric import parallel
from railonly.proc import terminate_as_interrupt

def shard(state, i, n):
    return b"x" * 4_000_000

with terminate_as_interrupt():
    for _ in range(4):
        parts = parallel.map_shards(shard, None, 64, min_items=1)
print("done", len(parts))
"""


def test_forked_workers_die_of_sigterm_not_of_terminated():
    p = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120,
                       env={"RAILONLY_JOBS": "2", "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0 and p.stdout.startswith("done"), p.stderr
    assert "Terminated" not in p.stderr and "Traceback" not in p.stderr, p.stderr
