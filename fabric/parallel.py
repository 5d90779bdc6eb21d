"""Fan pure per-item work out over forked worker processes.

Big compiles spend most of their time in per-switch and per-server work that
shares nothing but the (read-only) fabric graph. Forked workers inherit the
graph without pickling it; each renders one shard and sends back bytes.
Results come back in shard order, so output stays deterministic whatever the
worker count. `RAILONLY_JOBS=1` runs everything in-process (and small jobs
always do: a fork costs more than it saves).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
from contextlib import contextmanager
from typing import Any, Callable

from .safe_text import whole

_TASK: tuple[Callable, Any] | None = None  # set just before the fork, read by workers


@contextmanager
def no_cyclic_gc():
    """The cyclic collector paused for a command's big, short-lived work. The fabric
    graph is millions of small acyclic objects: the collector only rescans them (it
    halves build time at 65,536 GPUs), and in forked workers its bookkeeping writes
    copy the inherited graph's pages."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def jobs() -> int:
    n = whole(os.environ.get("RAILONLY_JOBS", ""))
    if n:
        return n
    return max(1, min(os.cpu_count() or 1, 8))


def _run(shard: tuple[int, int]):
    fn, state = _TASK
    return fn(state, *shard)


def map_shards(fn: Callable[[Any, int, int], Any], state: Any, items: int, min_items: int = 256,
               shards_per_job: int = 1, arrived: Callable[[Any, int, int], None] | None = None) -> list:
    """[fn(state, i, n) for i in range(n)], n shards over forked workers.

    `fn(state, i, n)` must handle items i, i+n, i+2n, ... of its own work list
    and return something picklable (bytes pickle fastest). `shards_per_job` > 1 cuts
    the work finer: `arrived(result, finished, n)` is called as each shard's result comes
    back, in shard order (progress, or work on it while the pool goes on), and a slow shard
    holds up less; the returned list is in shard order either way.
    """
    n = jobs()
    if n <= 1 or items < min_items or "fork" not in multiprocessing.get_all_start_methods():
        out = [fn(state, 0, 1)]
        if arrived:
            arrived(out[0], 1, 1)
        return out
    shards = min(items, n * max(1, shards_per_job))
    global _TASK
    _TASK = (fn, state)
    try:
        with multiprocessing.get_context("fork").Pool(n) as pool:
            out = []
            for part in pool.imap(_run, [(i, shards) for i in range(shards)]):
                out.append(part)
                if arrived:
                    arrived(part, len(out), shards)
            return out
    finally:
        _TASK = None


class Background:
    """fn(*args) running in a forked (non-daemon) process, so it may fan out
    itself; `result()` returns its value or re-raises its exception."""

    def __init__(self, fn: Callable, *args: Any):
        ctx = multiprocessing.get_context("fork")
        self._recv, send = ctx.Pipe(duplex=False)
        self._proc = ctx.Process(target=self._main, args=(send, fn, args))
        self._proc.start()
        send.close()

    @staticmethod
    def _main(send, fn: Callable, args: tuple) -> None:
        try:
            send.send((True, fn(*args)))
        except BaseException as exc:  # noqa: BLE001 - handed to the parent as is
            send.send((False, exc))
        finally:
            send.close()

    def result(self) -> Any:
        try:
            ok, value = self._recv.recv()  # read before join: a large result fills the pipe
        except EOFError:
            ok, value = False, RuntimeError(f"background worker died (exit {self._proc.exitcode})")
        finally:
            self._proc.join()
        if not ok:
            raise value
        return value

    def cancel(self) -> None:
        if self._proc.is_alive():
            self._proc.terminate()
        self._proc.join()
        self._recv.close()
