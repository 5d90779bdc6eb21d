"""Check FRR configuration text with FRR's own parser (`vtysh -C`, a dry run).

Facts this relies on (FRR 8.4, checked on this machine):
* `vtysh -C -f FILE` needs no running daemon and works as root or any user;
  it parses every line against vtysh's command tables and exits 0 (clean),
  2 (some line rejected) or non-zero otherwise (11: file unreadable).
* Rejected lines go to stderr as `line N: % Unknown command[NODE]: <text>`
  (also `% Command incomplete`, `% Ambiguous command`); NODE is the CLI node id.
* It is syntax only: an undefined peer-group or route-map name passes.
* vtysh reads <config_dir>/vtysh.conf first; we point --config_dir at an empty
  private dir so /etc/frr (mode 0750, frr-owned) is neither needed nor read.
* After a line that only matches a parent node, vtysh stays in that parent, so
  a config-level line between files resets the node: that makes batching many
  files into one process safe (line numbers are mapped back per file).
* A top-level `exit` leaves config mode; a second `exit` (or `quit`) there ends
  vtysh, which then reads no further line and exits 0. A probe line after the
  last file tells whether vtysh read to the end: if not, the files run one by one,
  and a file vtysh stops reading is a problem (on a switch, what follows is never
  applied either).
"""

from __future__ import annotations

import os
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, NamedTuple

from railonly import proc

# Valid only at the top config node: any file left inside `router bgp` or an
# address-family is popped back to the top before the next file starts.
_SEPARATOR = "hostname railonly-dryrun-separator"
# No FRR command starts so: rejected in every node as `% Unknown command[NODE]`, naming the node.
PROBE = "railonly-node-probe"
STOPPED = "vtysh stops reading this file before its end (config mode left twice: a top-level `exit`, " \
          "then `exit` or `quit`); on a switch the lines after are never applied"
_LINE = re.compile(r"^line (\d+): (.*?)\s*$")
_MSG = re.compile(r"^(%[^\[:]*?)(?:\[(\d+)\])?: ?(.*)$")


@dataclass(frozen=True)
class FrrProblem:
    file: str
    line: int | None  # 1-based line in that file; None for whole-file failures
    command: str | None  # the rejected line, stripped
    message: str  # e.g. "% Unknown command"

    def __str__(self) -> str:
        at = f"{self.file}:{self.line}" if self.line else self.file
        return f"{at}: {self.message}" + (f": {self.command}" if self.command else "")


def _vtysh_argv(path: str, config_dir: str) -> list[str]:
    return [proc.require("vtysh", "frr"), "--config_dir", config_dir, "-C", "-f", path]


class Complaint(NamedTuple):
    line: int  # in the file vtysh read
    command: str | None  # the rejected line, stripped
    message: str  # e.g. "% Unknown command"
    node: int | None  # the CLI node vtysh judged the line in, where it says


def complaints(res: proc.Result) -> list[Complaint]:
    """Each complaint in a vtysh -C run's output."""
    found = []
    for raw in (res.stderr + "\n" + res.stdout).splitlines():
        m = _LINE.match(raw)
        if not m:
            continue
        text = m.group(2)
        mm = _MSG.match(text)
        if mm:
            node = mm.group(2)
            found.append(Complaint(int(m.group(1)), mm.group(3).strip() or None, mm.group(1).strip(),
                                   None if node is None else int(node)))
        else:
            found.append(Complaint(int(m.group(1)), None, text, None))
    return found


def run_script(lines: list[str], timeout: float) -> proc.Result:
    """One `vtysh -C` run over these lines (none may hold a newline)."""
    with tempfile.TemporaryDirectory(prefix="railonly-vtysh-") as tmp:
        Path(tmp, "vtysh.conf").write_text("")  # empty: no /etc/frr dependency
        conf = Path(tmp, "check.conf")
        conf.write_text("\n".join(lines) + "\n")
        return proc.run(_vtysh_argv(str(conf), tmp), timeout=timeout)


def require_vtysh() -> None:
    """ToolMissing (exit 3) naming FRR's package when vtysh is not installed."""
    proc.require("vtysh", "frr")


def vtysh_missing() -> FrrProblem | None:
    """The one problem to report when vtysh is not installed."""
    try:
        proc.require("vtysh", "frr")
    except proc.ToolMissing as exc:
        return FrrProblem("<all>", None, None, str(exc))
    return None


def _check_one_process(named: list[tuple[str, str]], timeout: float) -> list[FrrProblem]:
    """One vtysh run over the concatenation of `named` (name, text) pairs."""
    spans: list[tuple[int, int, str]] = []  # (first global line, last, name)
    parts: list[str] = []
    line = 1
    for i, (name, text) in enumerate(named):
        if i:  # between files only: a lone file is judged exactly as written
            parts.append(_SEPARATOR)
            line += 1
        body = text.splitlines()
        if body:  # an empty part would still add a line and shift the numbering
            parts.append("\n".join(body))
        spans.append((line, line + len(body) - 1, name))
        line += len(body)
    parts += [_SEPARATOR, PROBE]  # after the last file: did vtysh read to the end?
    end = line + 1
    res = run_script(parts, timeout)
    problems: list[FrrProblem] = []
    read_all = False
    for gline, cmd, msg, _node in complaints(res):
        if gline >= line:  # the closing separator and probe
            read_all |= gline == end
            continue
        owner = next(((s, n) for s, e, n in spans if s <= gline <= e), None)
        if owner is None:
            # The separator fails only when a file left config mode (a top-level
            # `exit`); later files would then be misjudged, so check one by one.
            if len(named) > 1:
                return _one_by_one(named, timeout)
            continue
        else:
            problems.append(FrrProblem(owner[1], gline - owner[0] + 1, cmd, msg))
    if res.returncode in (0, 2) and not read_all:
        if len(named) > 1:  # some file ended vtysh: the files after it were never read
            return _one_by_one(named, timeout)
        problems.append(FrrProblem(named[0][0], None, None, STOPPED))
    if res.returncode not in (0, 2) and not problems:
        detail = (res.stderr or res.stdout).strip() or f"exit code {res.returncode}"
        names = ", ".join(n for n, _ in named[:3]) + (" ..." if len(named) > 3 else "")
        problems.append(FrrProblem(names, None, None, f"vtysh -C failed: {detail}"))
    return problems


def _one_by_one(named: list[tuple[str, str]], timeout: float) -> list[FrrProblem]:
    return [p for item in named for p in _check_one_process([item], timeout)]


def check_frr_text(text: str, name: str = "<frr.conf>", *, timeout: float = 30.0) -> list[FrrProblem]:
    """Problems FRR's parser finds in one config text; [] means it parses."""
    try:
        return _check_one_process([(name, text)], timeout)
    except proc.ToolMissing as exc:
        return [FrrProblem(name, None, None, str(exc))]


def check_frr_file(path: str | os.PathLike, *, timeout: float = 30.0) -> list[FrrProblem]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [FrrProblem(str(path), None, None, f"cannot read: {exc}")]
    return check_frr_text(text, str(path), timeout=timeout)


def check_frr_texts(
    texts: Mapping[str, str] | Iterable[tuple[str, str]],
    *,
    files_per_process: int = 256,
    workers: int | None = None,
    timeout: float = 120.0,
) -> list[FrrProblem]:
    """Check many configs: concatenated in chunks, chunks run in parallel.

    One vtysh start costs ~20 ms, so 2,560 files one by one take ~a minute;
    chunks of a few hundred files bring that to about a second.
    """
    items = list(texts.items() if isinstance(texts, Mapping) else texts)
    if not items:
        return []
    missing = vtysh_missing()
    if missing is not None:
        return [missing]
    size = max(1, files_per_process)
    chunks = [items[i : i + size] for i in range(0, len(items), size)]
    workers = workers or min(len(chunks), os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(lambda c: _check_one_process(c, timeout), chunks))
    return [p for r in results for p in r]


def check_frr_files(paths: Iterable[str | os.PathLike], **kw) -> list[FrrProblem]:
    items, problems = [], []
    for p in paths:
        try:
            items.append((str(p), Path(p).read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(FrrProblem(str(p), None, None, f"cannot read: {exc}"))
    return problems + check_frr_texts(items, **kw)
