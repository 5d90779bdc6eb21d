"""JSON from a hostile file: malformed, NaN/Infinity, nested too deep or a member name given
twice in one object is UntrustedFile (exit 2).

The OUTDIR reader (outdir/reader.py) and the fabric.json parser (graph/fabric_json.py)
decode through :func:`parse_json`; the caller bounds the text's size when it reads it.
:func:`load_json_file` is the yes-or-no form for a small record (a MANIFEST.json that
marks a railonly OUTDIR, the incremental compile's record): anything off is None.
"""

from __future__ import annotations

import json
import json.scanner
import os
import stat

from .problems import InputError, Problem, short


class UntrustedFile(InputError):
    """A file in OUTDIR that must not be used: exit 2, the file named."""

    def __init__(self, file: str, message: str, hint: str = "", line: int | None = None):
        super().__init__([Problem("", message, hint, line, file)])
        self.file = file

    def __reduce__(self):  # picklable across forked workers
        p = self.problems[0]
        return (UntrustedFile, (p.file, p.message, p.hint, p.line))


def parse_json(text: str, file: str):
    """JSON from OUTDIR: malformed, NaN/Infinity, too deep or a repeated name is UntrustedFile."""
    try:
        return loads(text)
    except RecursionError:
        raise UntrustedFile(file, "is not valid JSON: nested too deep", "recompile the design") from None
    except RepeatedName as exc:
        raise UntrustedFile(file, f"is not valid JSON as railonly writes it: {exc.msg}", "recompile the design",
                            _repeat_line(text, exc.key)) from None
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        msg = getattr(exc, "msg", str(exc))
        raise UntrustedFile(file, f"is not valid JSON: {short(msg, 120)}", "recompile the design", line) from None


def loads(text: str):
    """json.loads refusing NaN/Infinity and a repeated name (RepeatedName, a ValueError): the one
    decode of a file railonly wrote, for the readers that report a ValueError their own way."""
    return _DECODER.decode(text)


class RepeatedName(ValueError):
    """A member name twice in one object: json keeps the last value without a word, so an edit
    could hide a value (a MANIFEST.json hash, a config_db field) from a reader that sees the first."""

    def __init__(self, key: str):
        self.key, self.msg = key, f"the name {short(repr(key), 80)} is given twice in one object"
        super().__init__(self.msg)


def _object(pairs: list) -> dict:
    # the dict json builds, and one length test for a repeated name: ~+35% on a decode
    # (fabric.json at 32k GPUs: 0.27 -> 0.37 s), where a Python-level scanner would be ~10x
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set = set()
        raise RepeatedName(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return obj


def _repeat_line(text: str, key: str) -> int | None:
    """The line of the second `key` in the first object that repeats a name (the error path
    only: the pure-Python scanner, which knows where each object starts)."""
    at: list[int] = []

    def parse_object(s_and_end, strict, scan_once, object_hook, object_pairs_hook, memo=None):
        try:
            return json.decoder.JSONObject(s_and_end, strict, scan_once, object_hook, object_pairs_hook, memo)
        except RepeatedName:
            if not at:  # the innermost object: its members decode (the repeat was found after them)
                at.append(_second_name(s_and_end[0], s_and_end[1], key, scan_once))
            raise

    decoder = json.JSONDecoder(parse_constant=_no_constant, object_pairs_hook=_object)
    decoder.parse_object = parse_object
    decoder.scan_once = json.scanner.py_make_scanner(decoder)
    try:
        decoder.decode(text)
    except (ValueError, RecursionError):
        pass
    return text.count("\n", 0, at[0]) + 1 if at and at[0] is not None else None


def _second_name(text: str, at: int, key: str, scan_once) -> int | None:
    """Where the second member named `key` starts, in the object whose members start at `at`."""
    seen = False
    while True:
        at = _SPACE(text, at).end()
        name, end = json.decoder.scanstring(text, at + 1)
        if name == key:
            if seen:
                return at
            seen = True
        _, end = scan_once(text, _SPACE(text, _SPACE(text, end).end() + 1).end())
        at = _SPACE(text, end).end() + 1  # past the comma (a repeat is before the closing brace)


def _no_constant(name: str):
    raise ValueError(f"{name} is not allowed")


_DECODER = json.JSONDecoder(parse_constant=_no_constant, object_pairs_hook=_object)
_SPACE = json.decoder.WHITESPACE.match


class RepeatedMembers:
    """Top-level member values decoded before, by member name: the text each was decoded
    from and its value. config_db.json's QoS tables (QUEUE, PORT_QOS_MAP, PFC_WD: 65% of
    a 32k-GPU fabric's config_db bytes) are byte for byte the same on every switch of a
    shape, and a text that starts with a whole object's text decodes to that object, so it
    is compared, not decoded again. The values are shared between the documents that hold
    them: callers must not change a document they got with one (validate only reads them)."""

    PER_NAME = 8  # texts kept per member name: a fabric's switch shapes (8 rails' leaves)
    MAX_CHARS = 16 << 20  # all texts kept (32k GPUs: ~5 M); beyond it all are forgotten (a hostile file)

    def __init__(self) -> None:
        self._by_name: dict[str, list[tuple[str, object]]] = {}
        self._chars = 0

    def match(self, name: str, text: str, start: int) -> tuple[str, object] | None:
        """(text, value) of a member `name` decoded before whose text `text` holds at `start`."""
        kept = self._by_name.get(name)
        if kept:
            for i, pair in enumerate(kept):
                if text.startswith(pair[0], start):
                    if i:
                        kept.insert(0, kept.pop(i))  # the next switch's is most likely the same
                    return pair
        return None

    def add(self, name: str, member: str, value: object) -> None:
        """Remember an object's text (only objects: their text ends where the value ends,
        so a text that starts with it holds that value and nothing more of it)."""
        if member[:1] != "{" or len(member) > self.MAX_CHARS:
            return
        if self._chars + len(member) > self.MAX_CHARS:
            self._by_name.clear()
            self._chars = 0
        kept = self._by_name.setdefault(name, [])
        kept.insert(0, (member, value))
        self._chars += len(member)
        if len(kept) > self.PER_NAME:
            self._chars -= len(kept.pop()[0])


def parse_json_members(text: str, file: str, repeated: RepeatedMembers | None = None
                       ) -> tuple[object, dict[str, str] | None]:
    """:func:`parse_json`, and for a top-level object the text of each member's value as
    written (None otherwise): equal texts are equal values, so a caller can key a value
    by its text without walking it. Errors are exactly parse_json's (it is asked again).
    `repeated`: member values decoded before, reused (and shared) where the text repeats
    one, remembered otherwise."""
    try:
        doc: dict = {}
        members: dict[str, str] = {}
        at = _SPACE(text, 0).end()
        if text[at:at + 1] != "{":
            return parse_json(text, file), None
        at = _SPACE(text, at + 1).end()
        if text[at:at + 1] == "}":
            at += 1
        else:
            while True:
                if text[at:at + 1] != '"':
                    raise ValueError("not a member name")
                name, at = json.decoder.scanstring(text, at + 1)
                at = _SPACE(text, at).end()
                if text[at:at + 1] != ":":
                    raise ValueError("no colon")
                start = _SPACE(text, at + 1).end()
                seen = repeated.match(name, text, start) if repeated is not None else None
                if seen is not None:
                    member, value = seen
                    at = start + len(member)
                else:
                    value, at = _DECODER.raw_decode(text, start)
                    member = text[start:at]
                    if repeated is not None:
                        repeated.add(name, member, value)
                if name in doc:
                    raise RepeatedName(name)  # parse_json, asked again below, names its line
                doc[name] = value
                members[name] = member
                at = _SPACE(text, at).end()
                if text[at:at + 1] == ",":
                    at = _SPACE(text, at + 1).end()
                    continue
                if text[at:at + 1] != "}":
                    raise ValueError("no comma")
                at += 1
                break
        if _SPACE(text, at).end() != len(text):
            raise ValueError("extra data")
        return doc, members
    except (ValueError, RecursionError):
        return parse_json(text, file), None  # raises parse_json's own message (or parses: no members)


def load_json_file(path: str, limit: int, owner_uid: int | None = None):
    """The decoded JSON of the regular file at `path`, or None when it is absent, a symlink,
    not a regular file, over `limit` bytes, not owned by `owner_uid` (when given) or not JSON."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit or (owner_uid is not None and st.st_uid != owner_uid):
            return None
        with os.fdopen(os.dup(fd), "rb") as fh:
            return json.loads(fh.read(limit + 1), object_pairs_hook=_object)  # a repeated name: None too
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)
