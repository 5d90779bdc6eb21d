"""The one way a command writes a report file (--json, --junit, analyze's outputs).

A report path may already hold anything: in CI, the workspace is a pull
request's checkout, so `report.json` can be a symlink to a file root must not
touch, or a FIFO that would block; on any host, `--json /dev/null` or
`/dev/stdout` names a device or a link the whole system uses. A report replaces
only a regular file: at a symlink, a FIFO, a device or a socket it is refused
(exit 2) before the work, and neither written through nor put in its place. It
is written to a new temporary file beside the path (O_EXCL: never an existing
file), then renamed over it, so a reader sees the old report or the new one,
never half of one. A path that cannot be written is exit 2 naming the path,
never a traceback. A missing folder is not created: as root, a typo must not
make directories anywhere on the host. Leaf utility: imports nothing of railonly.
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


def _not_a_file(path: str) -> "str | None":
    """Why a report may not go to `path` as it is now (None: absent or a regular file)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory; give a file name"
    kind = ("a symbolic link" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a device")
    return (f"is {kind}: a report replaces only a regular file, and is never written through a link "
            "or into a device; give the path of a file (or none)")


def refuse_targets(reports: "dict[str, str | None]", reads: "dict[str, str | None] | None" = None,
                   outdirs: "tuple[str, ...]" = ()) -> None:
    """ReportNotWritten, checked before the work so that a long run does not end in a refusal,
    when one of `reports` (what writes it -> its path; None: not asked for) is empty, names
    a folder (`out/`) or lies in a folder that is not there; lies
    inside one of `outdirs` (a file railonly did not compile there fails the next validate);
    is a file this command reads (`reads`: what it is -> its path), which the report would
    replace; is where another of the reports goes; or is there already, and is not a
    regular file."""
    taken: dict[str, str] = {}
    read_at = {os.path.realpath(p): what for what, p in (reads or {}).items() if p}
    for what, path in reports.items():
        if path is None:
            continue
        if not path:
            raise ReportNotWritten(f"'' ({what})", "is empty; give a file name")
        if os.path.basename(path) in ("", ".", ".."):
            raise ReportNotWritten(f"{path} ({what})", "names a folder, not a file; give a file name")
        given_folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(given_folder):
            raise ReportNotWritten(f"{path} ({what})", f"its folder {given_folder} does not exist (railonly makes no "
                                   "folder for a report); create it first or give another path")
        folder = os.path.realpath(given_folder)
        for outdir in outdirs:
            top = os.path.realpath(outdir).rstrip("/") + "/"
            if (folder.rstrip("/") + "/").startswith(top):
                raise ReportNotWritten(f"{path} ({what})", f"lies inside OUTDIR {outdir}, where railonly writes "
                                       "nothing after compile; give a path outside it")
        # where the rename lands: the folder resolved, the name as given (a link there is refused below)
        at = os.path.join(folder, os.path.basename(path))
        if at in read_at:
            raise ReportNotWritten(f"{path} ({what})", f"it is {read_at[at]}, which this command reads; give another path")
        if at in taken:
            raise ReportNotWritten(f"{path} ({what})", f"{taken[at]} writes there too; give each report its own file")
        taken[at] = what
        why = _not_a_file(path)
        if why:
            raise ReportNotWritten(f"{path} ({what})", why)


def write_report(path: str, data: "bytes | str", mode: int = 0o644) -> None:
    """Atomically replace ``path`` with ``data``; ReportNotWritten names the path."""
    if not path:
        raise ReportNotWritten("''", "is empty; give a file name")
    if isinstance(data, str):
        data = data.encode("utf-8")
    why = _not_a_file(path)  # again: the path may have changed since refuse_targets
    if why:
        raise ReportNotWritten(path, why)
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
