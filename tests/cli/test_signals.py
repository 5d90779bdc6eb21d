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


def test_a_child_forked_while_the_handler_is_held_has_sigterms_default():
    # a Python handler runs only between bytecodes: a pool worker stuck on a lock it inherited
    # held never ran it, and Pool.terminate() waited on it for ever (the script above hung 2
    # runs in 33 on a loaded host). The child gets the default action at fork, the parent keeps
    # its handler, and neither is left with SIGTERM blocked
    import os
    import signal

    from railonly.proc import terminate_as_interrupt

    with terminate_as_interrupt():
        pid = os.fork()
        if pid == 0:
            ok = signal.getsignal(signal.SIGTERM) == signal.SIG_DFL and \
                signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)
        assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    # without the handler held, a fork changes nothing
    before = signal.getsignal(signal.SIGTERM)
    pid = os.fork()
    if pid == 0:
        os._exit(0 if signal.getsignal(signal.SIGTERM) == before else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
