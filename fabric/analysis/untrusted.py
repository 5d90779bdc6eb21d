"""Reading job and preset files as hostile input, by the design loader's rules.

One loader for every YAML input (fabric/input/yamlsource.py): a regular file only (no FIFO,
device or directory), at most MAX_BYTES, and a bounded document (nesting, aliases,
values with aliases expanded, NaN, duplicate keys). Only the size differs: a job file
is a few dozen lines.
"""

from __future__ import annotations

from dataclasses import replace

from ..input.yamlsource import DESIGN_LIMITS, Source, decode_utf8, parse_yaml, read_regular_file

MAX_BYTES = 256 * 1024
JOB_LIMITS = replace(DESIGN_LIMITS, max_bytes=MAX_BYTES)


def read_text(path: str, what: str = "job") -> str:
    """The file's text, if it is a regular UTF-8 file within MAX_BYTES."""
    return decode_utf8(read_regular_file(path, MAX_BYTES, f"a {what} YAML file"), path)


def parse_untrusted(text: str, file: str) -> Source:
    return parse_yaml(text, file, JOB_LIMITS)


def load_untrusted(path: str, what: str = "job") -> tuple[Source, str]:
    text = read_text(path, what)
    return parse_untrusted(text, path), text
