"""A small declarative schema for YAML inputs (design files, price books).

Each field knows its type, bounds, default and a hint. :func:`check` walks a
mapping, collects every problem (with key path and line) and returns the
normalised values; unknown keys get a "did you mean". Kept tiny on purpose:
the inputs are small and the messages matter more than generality.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any

from .problems import Problem, did_you_mean, short
from .yamlsource import Source

_MISSING = object()


# Ranges no pool may touch: hosts cannot be numbered from them.
UNUSABLE = (
    (ipaddress.IPv4Network("0.0.0.0/8"), "'this network' (0.0.0.0/8)"),
    (ipaddress.IPv4Network("127.0.0.0/8"), "loopback (127.0.0.0/8)"),
    (ipaddress.IPv4Network("169.254.0.0/16"), "link-local (169.254.0.0/16)"),
    (ipaddress.IPv4Network("224.0.0.0/4"), "multicast (224.0.0.0/4)"),
    (ipaddress.IPv4Network("240.0.0.0/4"), "reserved class E and broadcast (240.0.0.0/4)"),
)


def unusable(net: ipaddress.IPv4Network) -> str | None:
    """What reserved range `net` overlaps, or None when hosts can use it."""
    for bad, what in UNUSABLE:
        if net.overlaps(bad):
            return what
    return None


@dataclass
class Field:
    kind: str  # int | str | bool | choice | cidr | number | map | section | list
    required: bool = False
    default: Any = None
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()
    pattern: str | None = None  # full-match regex for str
    pattern_text: str = ""  # the pattern, said in words
    hint: str = ""
    fields: dict[str, "Field"] = field(default_factory=dict)  # for section
    item: "Field | None" = None  # for map values and list items
    key_kind: str = "str"  # map keys: "str" or "int"
    optional: bool = False  # a section that is None when absent (its required keys apply only when given)


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return short(repr(value))
    if value is None:
        return "nothing (null)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


class Checker:
    def __init__(self, source: Source):
        self.source = source
        self.problems: list[Problem] = []

    def problem(self, path: str, message: str, hint: str = "") -> None:
        # The line from the full path; the path shown as written (a `null:` key is None here)
        # and cut (a hostile key may be long).
        self.problems.append(Problem(short(self.source.shown(path), 120), message, hint, self.source.line(path),
                                     self.source.file))

    def value(self, spec: Field, value: Any, path: str) -> Any:
        kind = spec.kind
        if kind in ("section", "map"):
            if value is None:
                value = {}
            if not isinstance(value, dict):
                self.problem(path, f"must be a mapping of keys, got {_type_name(value)}", spec.hint)
                return _MISSING
            if kind == "section":
                return self.section(spec.fields, value, path)
            out = {}
            for key, item in value.items():
                sub = f"{path}.{key}"
                if spec.key_kind == "int" and not (isinstance(key, int) and not isinstance(key, bool)):
                    self.problem(sub, f"key must be a whole number, got {_type_name(key)}", spec.hint)
                    continue
                v = self.value(spec.item, item, sub) if spec.item else item
                if v is not _MISSING:
                    out[key] = v
            return out
        if kind == "list":
            if not isinstance(value, list):
                self.problem(path, f"must be a list, got {_type_name(value)}", spec.hint)
                return _MISSING
            out_list = []
            for i, item in enumerate(value):
                v = self.value(spec.item, item, f"{path}[{i}]") if spec.item else item
                if v is not _MISSING:
                    out_list.append(v)
            return out_list
        if kind == "bool":
            if not isinstance(value, bool):
                self.problem(path, f"must be true or false, got {_type_name(value)}", spec.hint)
                return _MISSING
            return value
        if kind in ("int", "number"):
            ok = isinstance(value, int) and not isinstance(value, bool)
            if kind == "number":
                ok = ok or isinstance(value, float)
            if not ok:
                what = "a whole number" if kind == "int" else "a number"
                self.problem(path, f"must be {what}{self._range(spec)}, got {_type_name(value)}", spec.hint)
                return _MISSING
            if (spec.min is not None and value < spec.min) or (spec.max is not None and value > spec.max):
                self.problem(path, f"must be{self._range(spec)}, got {value}", spec.hint)
                return _MISSING
            return value
        if kind == "choice":
            if value not in spec.choices:
                close = did_you_mean(value[:100], list(spec.choices)) if isinstance(value, str) else ""
                self.problem(
                    path,
                    f"must be one of {', '.join(spec.choices)}, got {_type_name(value)}",
                    (close + " " if close.startswith("did") else "") + spec.hint,
                )
                return _MISSING
            return value
        if kind == "str":
            if not isinstance(value, str):
                self.problem(path, f"must be text, got {_type_name(value)}", spec.hint)
                return _MISSING
            if spec.pattern and not re.fullmatch(spec.pattern, value, re.ASCII):  # \d: 0-9 only
                self.problem(path, f"must be {spec.pattern_text}, got {short(repr(value))}", spec.hint)
                return _MISSING
            return value
        if kind == "cidr":
            try:
                if not isinstance(value, str):
                    raise ValueError
                net = ipaddress.IPv4Network(value, strict=True)
            except ValueError:
                self.problem(path, f"must be an IPv4 prefix like 10.0.0.0/8 with no host bits set, got {_type_name(value)}", spec.hint)
                return _MISSING
            reserved = unusable(net)
            if reserved:
                self.problem(path, f"{net} overlaps {reserved}, which hosts cannot use",
                             "use a private pool, e.g. inside 10.0.0.0/8, 172.16.0.0/12 or 100.64.0.0/10")
                return _MISSING
            return net
        raise AssertionError(f"unknown field kind {kind}")

    @staticmethod
    def _range(spec: Field) -> str:
        def n(x: float) -> str:
            return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"

        if spec.min is not None and spec.max is not None:
            return f" from {n(spec.min)} to {n(spec.max)}"
        if spec.min is not None:
            return f" of at least {n(spec.min)}"
        if spec.max is not None:
            return f" of at most {n(spec.max)}"
        return ""

    def section(self, fields: dict[str, Field], data: dict, path: str) -> dict:
        out: dict[str, Any] = {}
        for key in data:
            if key not in fields:
                sub = f"{path}.{key}" if path else str(key)
                if isinstance(key, str):
                    self.problem(sub, f"unknown key {short(repr(key))}", did_you_mean(key[:100], list(fields)))
                    continue
                # as written, `null`, `true`, `1.50`, not None, True, 1.5 (a key may hold a dot)
                written = self.source.shown(sub)[len(self.source.shown(path)) + 1 if path else 0:]
                self.problem(sub, f"unknown key {short(written)} (YAML reads it as {_type_name(key)}, not text)",
                             did_you_mean(written[:100], list(fields)))
        for name, spec in fields.items():
            sub = f"{path}.{name}" if path else name
            if name not in data:
                if spec.required:
                    self.problem(sub, "is required but missing", spec.hint)
                    continue
                if spec.kind == "section" and not spec.optional:
                    out[name] = self.section(spec.fields, {}, sub)
                else:
                    out[name] = spec.default
                continue
            v = self.value(spec, data[name], sub)
            if v is not _MISSING:
                out[name] = v
        return out


def check(fields: dict[str, Field], source: Source, example: str = "an example in labs/") -> tuple[dict, list[Problem]]:
    """`example`: what a file of this kind can start from, for the fix of an empty or shapeless one."""
    checker = Checker(source)
    data = source.data
    if data is None:
        checker.problem("", "the file is empty", f"start from {example}")
        return {}, checker.problems
    if not isinstance(data, dict):
        checker.problem("", f"the top level must be a mapping of keys, got {_type_name(data)}", f"start from {example}")
        return {}, checker.problems
    return checker.section(fields, data, ""), checker.problems
