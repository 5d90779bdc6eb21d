"""Reading a user's YAML file as hostile input (job files and preset files).

The design loader's rules, applied before any YAML is built: only a regular
file (no FIFO, device or directory; a symlink is not followed), at most
MAX_BYTES, and a bounded document (nesting depth, node count, no aliases: a
job file never needs them and they are how "billion laughs" documents grow).
Every refusal is a Problem with the file, the constraint and a fix.
"""

from __future__ import annotations

import os
import stat

import yaml

from ..problems import InputError, Problem
from ..yamlsource import Source, parse_yaml

MAX_BYTES = 256 * 1024
MAX_DEPTH = 16
MAX_NODES = 20_000


def _refuse(path: str, message: str, fix: str) -> InputError:
    return InputError([Problem("", message, fix, None, path)])


def read_text(path: str, what: str = "job") -> str:
    """The file's text, if it is a regular file within MAX_BYTES (symlinks refused)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise _refuse(path, f"file not found: {path}", f"give the path of a {what} YAML file") from None
    except OSError as exc:
        if os.path.islink(path):
            raise _refuse(path, "is a symbolic link; railonly does not follow links in input files",
                          "give the path of the file the link points to") from None
        raise _refuse(path, f"cannot open: {exc.strerror}", f"give a readable {what} YAML file") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(path, "is not a regular file", f"give the path of a {what} YAML file")
        if st.st_size > MAX_BYTES:
            raise _refuse(path, f"is {st.st_size:,} bytes, more than the {MAX_BYTES:,} a {what} file may have",
                          f"a {what} file is a few dozen lines; check the path")
        data = os.read(fd, MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise _refuse(path, f"has more than {MAX_BYTES:,} bytes", f"a {what} file is a few dozen lines; check the path")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refuse(path, f"is not UTF-8 text (byte {exc.start})", "save the file as UTF-8") from None


def _bounded(text: str, file: str) -> None:
    """Refuse aliases, deep nesting and huge documents before constructing objects."""
    depth, nodes = 0, 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                raise InputError([Problem("", "uses a YAML alias (*name)", "write the value out in full",
                                          event.start_mark.line + 1, file)])
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise InputError([Problem("", f"nests deeper than {MAX_DEPTH} levels", "flatten the document",
                                              event.start_mark.line + 1, file)])
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
            if isinstance(event, (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                nodes += 1
                if nodes > MAX_NODES:
                    raise InputError([Problem("", f"has more than {MAX_NODES:,} YAML nodes", "check the file",
                                              event.start_mark.line + 1, file)])
    except yaml.MarkedYAMLError:
        return  # parse_yaml reports syntax errors with their line


def parse_untrusted(text: str, file: str) -> Source:
    _bounded(text, file)
    return parse_yaml(text, file)


def load_untrusted(path: str, what: str = "job") -> tuple[Source, str]:
    text = read_text(path, what)
    return parse_untrusted(text, path), text
