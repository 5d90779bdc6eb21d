"""YAML loading of hostile input that remembers the line of every mapping key.

Error messages point at lines, so the loader returns plain dicts/lists plus a
side table {key path: line}. Only the safe YAML subset is accepted, and every
input is treated as hostile: a regular file only (a FIFO would block, a device
never ends), a size limit, and bounds on nesting, aliases, the size of the
document with every alias expanded (a 517-byte "billion laughs" must not take
minutes), scalar lengths and integer digits. NaN and infinity, unhashable or
structured keys and duplicate keys (named by their full path; `null` and `~`, `true`
and `1` are one key) are refused.

Checking happens on the composed node graph before anything is constructed,
and walks it once per distinct node, so a hostile document costs time linear
in its bytes. :data:`DESIGN_LIMITS` suit design, job and price files;
callers with bigger inputs (a compiled OUTDIR's `.clab.yml`) pass their own
:class:`Limits`.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass, field

import yaml

from ..safe_text import printable
from .problems import InputError, Problem, short

_FAST = getattr(yaml, "CSafeLoader", None)


def _loader(limits: "Limits") -> type:
    """libyaml (about 30x faster: a hostile 1 MB file of small items takes
    0.3 s, not 15 s in the pure-Python parser) unless a caller asks otherwise."""
    return (_FAST or yaml.SafeLoader) if limits.fast else yaml.SafeLoader


@dataclass(frozen=True)
class Limits:
    max_bytes: int = 1 << 20  # of the file
    max_depth: int = 32  # nested collections
    max_aliases: int = 100  # `*name` references
    max_nodes: int = 50_000  # scalars + collections with every alias expanded (a design has ~100)
    max_scalar: int = 4096  # characters of one scalar
    max_int_digits: int = 30
    fast: bool = True  # parse with libyaml (when installed)
    # every key and value plain text: no control, format or separator character (an escape
    # sequence, a newline forging an `error:` line, U+202E reversing what a terminal shows,
    # which names carry into configs, CSV files and messages); an OUTDIR's lab files keep
    # their multi-line values, and are judged by their own allow-lists
    plain_text: bool = True


DESIGN_LIMITS = Limits()


@dataclass
class Source:
    data: object
    lines: dict[str, int] = field(default_factory=dict)
    file: str | None = None
    text: str = ""  # what was parsed (for hashes: the file is read once)
    # {path as the checkers spell it: path as written}, where they differ: a `null:` key
    # reaches them as None, `true:` as True, `1.50:` as 1.5 (see _Walk.also_as)
    written: dict[str, str] = field(default_factory=dict)

    def shown(self, path: str) -> str:
        """`path` (built from the Python keys) as the file writes it."""
        return self.written.get(path, path)

    def line(self, path: str) -> int | None:
        # Fall back to the nearest enclosing key that has a line.
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path.rpartition(".")[0]
        return None


_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = "tag:yaml.org,2002:float"
_MERGE = "tag:yaml.org,2002:merge"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_NONFINITE = {".nan", ".inf", "+.inf", "-.inf"}


def _problem(file: str | None, line: int | None, message: str, hint: str, path: str = "") -> InputError:
    return InputError([Problem(path, message, hint, line, file)])


def _too_many(file: str | None, line: int, limits: Limits) -> InputError:
    return _problem(file, line, f"the document expands to more than {limits.max_nodes:,} values (aliases included)",
                    "write a smaller file; a railonly input never needs that many values")


def _scan_events(text: str, file: str | None, limits: Limits) -> None:
    """Nesting and alias counts from the event stream (iterative: deep nesting
    cannot exhaust the stack here, unlike the recursive composer)."""
    depth = aliases = nodes = 0
    loader = _loader(limits)(text)
    try:
        while loader.check_event():
            ev = loader.get_event()
            if isinstance(ev, (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                nodes += 1
                if nodes > limits.max_nodes:
                    raise _too_many(file, ev.start_mark.line + 1, limits)
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > limits.max_depth:
                    raise _problem(file, ev.start_mark.line + 1, f"nesting deeper than {limits.max_depth} levels",
                                   "flatten the document; no railonly file nests that deep")
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
            elif isinstance(ev, yaml.AliasEvent):
                aliases += 1
                if aliases > limits.max_aliases:
                    what = "aliases (*name)" if limits.max_aliases else "an alias (*name)"
                    allowed = f"more than {limits.max_aliases}" if limits.max_aliases else "any"
                    raise _problem(file, ev.start_mark.line + 1, f"has {what}: {allowed} is refused",
                                   "write the values out instead of using &anchors and *aliases")
    finally:
        loader.dispose()


def _scalar_key(node: yaml.Node) -> str | None:
    return node.value if isinstance(node, yaml.ScalarNode) else None


class _Walk:
    """One pass over the composed graph: limits, duplicate keys, key lines."""

    def __init__(self, file: str | None, limits: Limits, want_lines: bool):
        self.file = file
        self.limits = limits
        self.size: dict[int, int] = {}  # id(node) -> expanded node count
        self.lines: dict[str, int] | None = {} if want_lines else None
        self.problems: list[Problem] = []
        self.written: dict[str, str] = {}  # Python path -> written path, where they differ
        self.python: dict[str, str] = {}  # written path -> Python path, where they differ
        self._constructor: yaml.constructor.SafeConstructor | None = None

    def key_value(self, key_node: yaml.ScalarNode) -> object:
        """The key as the data has it: a `null`, `~`, `true`, `on`, `1.50` key is None, True, 1.5."""
        if key_node.tag == _STR:
            return key_node.value
        if self._constructor is None:
            self._constructor = yaml.constructor.SafeConstructor()
        try:
            return self._constructor.construct_object(key_node)
        except (yaml.YAMLError, ValueError, TypeError, AttributeError, IndexError):
            return key_node.value  # a bad tagged value: scalar() names it

    def also_as(self, sub: str, py: str) -> None:
        """Record `py`, the path the checkers build for `sub` from the Python keys, with its
        line and its written spelling, when the two differ."""
        if py != sub:
            self.python[sub] = py
            self.written.setdefault(py, sub)
            if self.lines is not None and sub in self.lines:
                self.lines.setdefault(py, self.lines[sub])

    def bad(self, node: yaml.Node, path: str, message: str, hint: str) -> None:
        self.problems.append(Problem(path, message, hint, node.start_mark.line + 1, self.file))

    def scalar(self, node: yaml.ScalarNode, path: str) -> None:
        v = node.value
        if self.limits.plain_text and not v.isprintable():
            ch = next(c for c in v if not c.isprintable())
            self.bad(node, path, f"holds the character {printable(ch, lines=False)} (U+{ord(ch):04X}), which is not "
                     "plain text", "remove it: railonly's input files hold plain text only (no control character, "
                     "newline or tab inside a value)")
        elif len(v) > self.limits.max_scalar:
            self.bad(node, path, f"a value of {len(v):,} characters is longer than {self.limits.max_scalar:,}",
                     "shorten it; no railonly key needs that much text")
        elif node.tag == _INT and len(v.lstrip("+-").replace("_", "")) > self.limits.max_int_digits:
            self.bad(node, path, f"the number {short(v)} has more than {self.limits.max_int_digits} digits",
                     "use a number within the key's range")
        elif node.tag == _INT and not _DECIMAL.fullmatch(v):
            try:  # an explicit `!!int abc` is no number at all
                meant = yaml.constructor.SafeConstructor().construct_yaml_int(node)
            except (ValueError, IndexError):
                self.bad(node, path, f"{short(v)!r} is tagged as a whole number (!!int) but is not one",
                         "write the number in decimal digits, or drop the tag if it is text")
                return
            # YAML 1.1 reads 010 as 8, 1:30 as 90, 0x10 as 16: never what a count or an ASN meant
            self.bad(node, path, f"the number {short(v)} is not written in decimal: YAML reads it as {meant} (a leading "
                     "0 is octal, 0x hex, ':' base 60, '_' dropped)",
                     f"write it in plain decimal digits ({meant} if that is the value meant), or quote it if it is text")
        elif node.tag == _FLOAT:
            if ":" in v:  # YAML 1.1 reads 1:30.5 as 5430.5 (base 60): never what a rate or a size meant
                self.bad(node, path, f"the number {short(v)} is not written in decimal: YAML reads ':' as base 60",
                         "write it in plain decimal digits, or quote it if it is text")
                return
            try:
                finite = v.lower() not in _NONFINITE and abs(float(v.replace("_", ""))) != float("inf")
            except ValueError:  # an explicit `!!float abc`
                self.bad(node, path, f"{short(v)!r} is tagged as a number (!!float) but is not one",
                         "write a plain number, or drop the tag if it is text")
                return
            if not finite:
                self.bad(node, path, f"must be a finite number, got {short(v)}", "give a plain number")
        elif node.tag == _TIMESTAMP:
            try:
                yaml.constructor.SafeConstructor().construct_yaml_timestamp(node)
            except (ValueError, TypeError, AttributeError):  # `!!timestamp 2019-13-45`, or not a date at all
                self.bad(node, path, f"{short(v)!r} is not a date YAML can read (year-month-day)",
                         "quote it: railonly reads no dates")

    def walk(self, node: yaml.Node, path: str) -> int:
        """Expanded size of `node`; each distinct node is visited once."""
        key = id(node)
        if key in self.size:
            if self.size[key] < 0:
                self.bad(node, path, "an alias refers to a collection that contains it (a cycle)",
                         "write the values out instead of using &anchors and *aliases")
                return 0
            return self.size[key]
        self.size[key] = -1  # in progress: meeting it again is a cycle
        total = 1
        if isinstance(node, yaml.ScalarNode):
            self.scalar(node, path)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                sub = f"{path}[{i}]"
                if self.lines is not None:
                    self.lines[sub] = item.start_mark.line + 1
                if path in self.python:
                    self.also_as(sub, f"{self.python[path]}[{i}]")
                total += self.walk(item, sub)
        elif isinstance(node, yaml.MappingNode):
            # by the key the data gets: `null` and `~`, `true` and `1` are one key to YAML
            seen: dict[object, tuple[int, str]] = {}
            for key_node, value_node in node.value:
                name = _scalar_key(key_node)
                if key_node.tag == _MERGE:
                    total += self.walk(value_node, path)
                    continue
                if name is None:
                    self.bad(key_node, path, "a key must be text or a number, got a list or mapping",
                             "write the key as plain text")
                    continue
                sub = f"{path}.{name}" if path else name
                value = self.key_value(key_node)
                try:
                    first = seen.get(value)
                except TypeError:  # an unhashable value YAML would refuse to construct anyway
                    value, first = name, seen.get(name)
                if first is not None:
                    same = "" if first[1] == name else f" (YAML reads it as the same key as '{short(first[1])}')"
                    self.bad(key_node, sub, f"duplicate key '{short(name)}'{same} (first at line {first[0]})",
                             "keep one of them; YAML would silently drop the first")
                else:
                    seen[value] = (key_node.start_mark.line + 1, name)
                if self.lines is not None:
                    self.lines[sub] = key_node.start_mark.line + 1
                if key_node.tag != _STR or path in self.python:  # (text keys below text keys: the same path)
                    parent = self.python.get(path, path)
                    self.also_as(sub, f"{parent}.{value}" if parent else str(value))
                total += self.walk(key_node, sub) + self.walk(value_node, sub)
        if total > self.limits.max_nodes:
            raise _too_many(self.file, node.start_mark.line + 1, self.limits)
        self.size[key] = total
        return total


def _syntax_error(exc: yaml.YAMLError, file: str | None, text: str = "") -> InputError:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        msg = exc.problem or str(exc)
        return _problem(file, line, f"YAML syntax error: {short(msg, 200)}", "check indentation and quoting near that line")
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML refuses: its line, not its offset
        line = text.count("\n", 0, exc.position) + 1 if text else None
        return _problem(file, line, f"holds the character {chr(exc.character)!r}, which YAML does not allow in a file",
                        "remove it (a NUL or another control character: was the file saved as text?)")
    return _problem(file, None, f"YAML error: {short(str(exc), 200)}", "")


def compose_checked(text: str, file: str | None = None, limits: Limits = DESIGN_LIMITS,
                    want_lines: bool = True) -> tuple[yaml.Node | None, dict[str, int], dict[str, str]]:
    """The composed, bounded-checked node graph, {key path: line} and {Python path: written
    path} (Source.written).

    Raises InputError with every problem the walk found (all at once)."""
    try:
        _scan_events(text, file, limits)
        loader = _loader(limits)(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, file, text) from None
    except RecursionError:  # belt and braces: the event scan bounds depth first
        raise _problem(file, None, "nesting too deep", "flatten the document") from None
    if node is None:
        return None, {}, {}
    w = _Walk(file, limits, want_lines)
    w.walk(node, "")
    if w.problems:
        raise InputError(w.problems)
    return node, w.lines or {}, w.written


def construct(node: yaml.Node | None, file: str | None = None):
    """Plain Python data from a node graph that passed :func:`compose_checked`."""
    if node is None:
        return None
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_document(node)
    except yaml.YAMLError as exc:  # e.g. a bad timestamp or base64 value
        raise _syntax_error(exc, file) from None
    except (ValueError, TypeError, OverflowError) as exc:
        raise _problem(file, None, f"YAML value error: {short(str(exc), 200)}", "check the values") from None
    finally:
        loader.dispose()


def parse_yaml(text: str, file: str | None = None, limits: Limits = DESIGN_LIMITS) -> Source:
    if len(text) > limits.max_bytes:
        raise _problem(file, None, f"is {len(text):,} characters, more than the limit of {limits.max_bytes:,}",
                       "a railonly input file is small; is this the right file?")
    node, lines, written = compose_checked(text, file, limits, want_lines=True)
    return Source(construct(node, file), lines, file, text, written)


def read_regular_file(path: str, max_bytes: int, what: str = "a design YAML file", within: str | None = None) -> bytes:
    """The bytes of a regular file (not a link to one), at most `max_bytes`; InputError otherwise.

    Opened non-blocking, then judged by fstat: a FIFO, a device, a socket or a
    directory is refused at once instead of hanging or reading forever. With `within`
    (a real folder path), the file opened must lie inside it: judged on the open file,
    so a folder on the path swapped for a link after the caller's check is caught too."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY | os.O_NOFOLLOW)
    except FileNotFoundError:
        # named by its path, so a missing price book is not called a design
        raise _problem(path, None, "file not found", f"give the path of {what}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link could make a root process read and quote another file
            raise _problem(path, None, "is a symbolic link; railonly does not follow links in input files",
                           "give the path of the file the link points to") from None
        raise _problem(None, None, f"cannot read {path}: {exc.strerror}", f"give the path of {what}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = file_kind(st.st_mode)
            raise _problem(path, None, f"is {kind}, not a regular file", _fix_for(path, st.st_mode, what))
        if within is not None and not _opened_inside(fd, within):
            raise _problem(path, None, f"is not inside {within} (a folder on its path leads out of it)",
                           "give a path that stays inside that folder, without a symbolic link out of it")
        if st.st_size > max_bytes:
            raise _problem(path, None, f"is {st.st_size:,} bytes, more than the limit of {max_bytes:,}",
                           "a railonly input file is small; is this the right file?")
        os.set_blocking(fd, True)
        data = read_at_most(fd, max_bytes)
        if len(data) > max_bytes:  # grew while we read
            raise _problem(path, None, f"is more than the limit of {max_bytes:,} bytes", "")
        return data
    except OSError as exc:
        raise _problem(path, None, f"cannot read: {exc.strerror}", "") from None
    finally:
        os.close(fd)


def _opened_inside(fd: int, folder: str) -> bool:
    """Whether the file open at `fd` lies below `folder`, by the kernel's own name for it."""
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # no /proc: the caller's check of the path before the open stands alone
        return True
    return real.startswith(folder.rstrip("/") + "/")


def _fix_for(path: str, mode: int, what: str) -> str:
    """The fix for a path that is not a file: for a directory, a YAML file inside it, or the
    name of one (never a folder named like a file, e.g. plat/dir.yaml, or a link: both refused)."""
    if stat.S_ISDIR(mode):
        try:
            names = sorted(f for f in os.listdir(path) if f.endswith((".yml", ".yaml")))
        except OSError:
            names = []
        for name in names:
            try:
                if stat.S_ISREG(os.lstat(os.path.join(path, name)).st_mode):
                    return f"give {what} inside it, e.g. {os.path.join(path, name)}"
            except OSError:
                continue
        example = next((e for e in (os.path.join(path, f"my-file{n}.yaml") for n in ("", *range(2, 100)))
                        if not os.path.lexists(e)), None)
        if example:
            return f"give the path of {what} (this folder holds no YAML file), e.g. {example}"
    return f"give the path of {what}"


def read_at_most(fd: int, limit: int) -> bytes:
    """At most `limit` + 1 bytes from `fd`: one byte more than allowed tells a file that grew."""
    chunks, left = [], limit + 1
    while left > 0:
        chunk = os.read(fd, min(left, 8 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def file_kind(mode: int) -> str:
    """What a file is, in words (for every refusal of one that is not what was asked for)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def decode_utf8(data: bytes, file: str | None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _problem(file, None, f"is not UTF-8 text (byte {exc.start:,})", "save the file as UTF-8") from None


def load_yaml_file(path: str, limits: Limits = DESIGN_LIMITS, what: str = "a design YAML file",
                   within: str | None = None) -> Source:
    text = decode_utf8(read_regular_file(path, limits.max_bytes, what, within), path)
    return parse_yaml(text, path, limits)
