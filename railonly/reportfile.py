"""The one way a command writes a report file (--json, --junit, analyze's outputs).

A report path may already hold anything: in CI, the workspace is a pull
request's checkout, so `report.json` can be a symlink to a file root must not
touch, or a FIFO that would block. The report is written to a new temporary
file beside it (O_EXCL: never an existing file), then renamed over the path:
a rename replaces a symlink or FIFO, it never writes through one, and a reader
sees the old report or the new one, never half of one. A path that cannot be
written is an InputError naming the option and the path (exit 2), never a
traceback. A missing folder is not created: as root, a typo must not make
directories anywhere on the host. Leaf utility: imports nothing of railonly.
"""

from __future__ import annotations

import os
import stat
import tempfile


class ReportNotWritten(Exception):
    """The report path cannot be written (a directory, a missing or read-only folder, a full disk)."""

    def __init__(self, path: str, why: str):
        self.path, self.why = path, why
        super().__init__(f"cannot write {path}: {why}")


def refuse_targets(reports: "dict[str, str | None]", reads: "dict[str, str | None] | None" = None,
                   outdirs: "tuple[str, ...]" = ()) -> None:
    """ReportNotWritten, checked before the work so that a long run does not end in a refusal,
    when one of `reports` (what writes it -> its path; None: not asked for) is empty; lies
    inside one of `outdirs` (a file railonly did not compile there fails the next validate);
    is a file this command reads (`reads`: what it is -> its path), which the report would
    replace; or is where another of the reports goes."""
    taken: dict[str, str] = {}
    read_at = {os.path.realpath(p): what for what, p in (reads or {}).items() if p}
    for what, path in reports.items():
        if path is None:
            continue
        if not path:
            raise ReportNotWritten(f"'' ({what})", "is empty; give a file name")
        folder = os.path.realpath(os.path.dirname(os.path.abspath(path)))
        for outdir in outdirs:
            top = os.path.realpath(outdir).rstrip("/") + "/"
            if (folder.rstrip("/") + "/").startswith(top):
                raise ReportNotWritten(f"{path} ({what})", f"lies inside OUTDIR {outdir}, where railonly writes "
                                       "nothing after compile; give a path outside it")
        # where the rename lands: a link at the path is replaced, so only its folder resolves
        at = os.path.join(folder, os.path.basename(path))
        if at in read_at:
            raise ReportNotWritten(f"{path} ({what})", f"it is {read_at[at]}, which this command reads; give another path")
        if at in taken:
            raise ReportNotWritten(f"{path} ({what})", f"{taken[at]} writes there too; give each report its own file")
        taken[at] = what


def write_report(path: str, data: "bytes | str", mode: int = 0o644) -> None:
    """Atomically replace ``path`` with ``data``; ReportNotWritten names the path."""
    if not path:
        raise ReportNotWritten("''", "is empty; give a file name")
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise ReportNotWritten(path, exc.strerror or str(exc)) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise ReportNotWritten(path, "is a directory; give a file name")
    folder = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".railonly-report-", dir=folder)  # O_EXCL|O_NOFOLLOW, 0600
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise ReportNotWritten(path, exc.strerror or str(exc)) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
