"""Which ConfigDB table lives where in the SONiC YANG models.

The libyang binding we use exposes no schema tree walk, so the table layout is
read from the .yang text itself: a minimal YANG statement reader (RFC 7950
section 6: tokens, quoted strings with `+`, comments, nested blocks), then
for every module `container <module> { container TABLE { list X { key ..} } }`.
Only structure is read; types and constraints are left to libyang.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

_TOKEN = re.compile(
    r"""\s+|//[^\n]*|/\*.*?\*/|"((?:[^"\\]|\\.)*)"|'([^']*)'|([{};+])|([^\s{};"']+)""",
    re.S,
)


@dataclass
class Stmt:
    keyword: str
    arg: str | None
    subs: list["Stmt"] = field(default_factory=list)

    def all(self, keyword: str) -> list["Stmt"]:
        return [s for s in self.subs if s.keyword == keyword]

    def first(self, keyword: str) -> "Stmt | None":
        return next((s for s in self.subs if s.keyword == keyword), None)


def _tokens(text: str):
    """Yield ('w', word), ('s', string) or ('p', punct); adjacent `"a" + "b"` joined."""
    pending: str | None = None
    plus = False
    for m in _TOKEN.finditer(text):
        dq, sq, punct, word = m.groups()
        if dq is None and sq is None and punct is None and word is None:
            continue  # whitespace or comment
        if dq is not None or sq is not None:
            s = dq if dq is not None else sq
            if pending is not None and plus:
                pending += s
                plus = False
            else:
                if pending is not None:
                    yield ("s", pending)
                pending = s
            continue
        if punct == "+" and pending is not None:
            plus = True
            continue
        if pending is not None:
            yield ("s", pending)
            pending = None
        yield ("p", punct) if punct else ("w", word)
    if pending is not None:
        yield ("s", pending)


def parse_yang(text: str) -> Stmt:
    """Return a synthetic root whose subs are the file's top statements."""
    root = Stmt("<root>", None)
    stack = [root]
    current: Stmt | None = None
    for kind, val in _tokens(text):
        if kind == "p" and val == "{":
            if current is None:
                raise ValueError("'{' without a keyword")
            stack.append(current)
            current = None
        elif kind == "p" and val == "}":
            current = None
            stack.pop()
        elif kind == "p" and val == ";":
            current = None
        elif current is None:
            current = Stmt(val, None)
            stack[-1].subs.append(current)
        elif current.arg is None:
            current.arg = val
        else:
            current.arg += " " + val
    return root


@dataclass(frozen=True)
class InnerList:
    """A list nested in a table list: ConfigDB flattens it into fields.

    DSCP_TO_TC_MAP|AZURE {"26": "3"} is YANG DSCP_TO_TC_MAP [{dscp: 26, tc: 3}].
    """

    name: str
    key: str
    value: str | None  # the one non-key leaf, if exactly one


@dataclass(frozen=True)
class ListSchema:
    name: str
    keys: tuple[str, ...]
    leaves: frozenset[str] = frozenset()  # leaf and leaf-list names (data view)
    inner: tuple[InnerList, ...] = ()


@dataclass(frozen=True)
class TableSchema:
    table: str
    module: str
    lists: tuple[ListSchema, ...]
    containers: tuple[str, ...]  # keyed by container name (DEVICE_METADATA|localhost)

    def list_for(self, nkeys: int) -> ListSchema | None:
        """Several lists in one table differ by key count (INTERFACE)."""
        return self._by_nkeys.get(nkeys)

    @cached_property
    def _by_nkeys(self) -> dict[int, ListSchema]:  # asked once per ConfigDB entry: millions at 32k GPUs
        counts = Counter(len(l.keys) for l in self.lists)
        return {len(l.keys): l for l in self.lists if counts[len(l.keys)] == 1}


def _data_children(stmt: Stmt, groupings: dict[str, Stmt]) -> list[Stmt]:
    """Children as they appear in data: local `uses` expanded, choice/case flattened."""
    out: list[Stmt] = []
    for s in stmt.subs:
        if s.keyword == "uses" and s.arg and s.arg.split(":")[-1] in groupings:
            out += _data_children(groupings[s.arg.split(":")[-1]], groupings)
        elif s.keyword in ("choice", "case"):
            out += _data_children(s, groupings)
        else:
            out.append(s)
    return out


def _keys(stmt: Stmt) -> tuple[str, ...]:
    key = stmt.first("key")
    return tuple(key.arg.split()) if key and key.arg else ()


def _list_schema(stmt: Stmt, groupings: dict[str, Stmt]) -> ListSchema:
    leaves, inner = set(), []
    for c in _data_children(stmt, groupings):
        if c.keyword in ("leaf", "leaf-list") and c.arg:
            leaves.add(c.arg)
        elif c.keyword == "list" and c.arg:
            ikeys = _keys(c)
            vals = [x.arg for x in _data_children(c, groupings) if x.keyword == "leaf" and x.arg not in ikeys]
            if len(ikeys) == 1:
                inner.append(InnerList(c.arg, ikeys[0], vals[0] if len(vals) == 1 else None))
    return ListSchema(stmt.arg or "", _keys(stmt), frozenset(leaves), tuple(inner))


def tables_of_module(root: Stmt) -> list[TableSchema]:
    mod = root.first("module")
    if mod is None:  # submodule or not a module
        return []
    groupings = {g.arg: g for g in mod.all("grouping") if g.arg}
    tables: list[TableSchema] = []
    for top in mod.all("container"):
        for tab in _data_children(top, groupings):
            if tab.keyword != "container" or not tab.arg:
                continue
            lists, conts = [], []
            for child in _data_children(tab, groupings):
                if child.keyword == "list" and child.arg:
                    lists.append(_list_schema(child, groupings))
                elif child.keyword == "container" and child.arg:
                    conts.append(child.arg)
            tables.append(TableSchema(tab.arg, f"{mod.arg}:{top.arg}", tuple(lists), tuple(conts)))
    return tables


def load_table_map(yang_dir: Path) -> tuple[dict[str, TableSchema], list[str]]:
    """Map table name -> schema over every module in yang_dir, plus clashes found.

    `module` in TableSchema is "module:top-container" (they are equal in SONiC).
    """
    found: dict[str, TableSchema] = {}
    clashes: list[str] = []
    for path in sorted(yang_dir.glob("*.yang")):
        for t in tables_of_module(parse_yang(path.read_text(encoding="utf-8"))):
            if t.table in found and found[t.table] != t:
                clashes.append(f"{t.table}: {found[t.table].module} and {t.module}")
                continue
            found[t.table] = t
    return found, clashes
