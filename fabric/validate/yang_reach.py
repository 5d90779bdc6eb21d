"""What each ConfigDB table's YANG constraints can read: the basis of the YANG memo.

libyang's verdict on a table's nodes depends on the table's own data and on the data
its constraints name: `must` and `when` expressions, leafref `path`s and `unique`, in the table's
lists and containers, with groupings (`uses`) and typedefs (`type`) expanded. This
reads those expressions from the .yang text (the minimal statement reader of
:mod:`yang_tables`) and keeps, per table member (a list or a container), the other
tables named and every identifier named (a superset of the leaves read). Anything
that can read data without naming it (a `*` or `//` step, `deref()`, an
instance-identifier) makes the member read everything.

Groupings and typedefs are found by local name across all modules (one of the same
name in another module is expanded too), and an unprefixed name counts for both the
module defining the expression and the table's. Each of these can only add reads,
never lose one, so a memo keyed on them stays sound.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .yang_tables import Stmt, parse_yang

_IDENT = re.compile(r"[A-Za-z_][\w.\-]*")
_QNAME = re.compile(r"(?:([A-Za-z_][\w.\-]*):)?([A-Za-z_][\w.\-]*)")
# Steps that read nodes without naming them: `//` and deref(); a `*` name test is found
# by _has_name_wildcard.
_READS_ANYTHING = re.compile(r"//|\bderef\s*\(")
# XPath 1.0 (3.7): `*` multiplies only after an operand; after nothing, an operator,
# `@`, `::`, `(`, `[` or `,` it is a name test.
_OPERATOR_WORDS = re.compile(r"(?:^|[\s(])(?:and|or|mod|div)\s*$")


def _has_name_wildcard(text: str) -> bool:
    for i, ch in enumerate(text):
        if ch != "*":
            continue
        before = text[:i].rstrip()
        if not before or before[-1] in "@:([,/|+-=<>*!" or _OPERATOR_WORDS.search(before):
            return True
    return False
# `unique` names leaves too: their values are compared across entries
_EXPRESSIONS = ("must", "when", "path", "unique")
# `contains(../NAME, 'literal')`: reads of the sibling NAME that only ask whether it holds the literal
_PROBE = re.compile(r"""contains\(\s*\.\./(?:([A-Za-z_][\w.\-]*):)?([A-Za-z_][\w.\-]*)\s*,\s*(?:'([^']*)'|"([^"]*)")\s*\)""")


@dataclass(frozen=True)
class Reach:
    """What the constraints of one table member can read outside the member's own table."""

    tables: frozenset[str] = frozenset()  # other tables named
    names: frozenset[str] = frozenset()  # identifiers named (leaf names among them)
    everything: bool = False
    # (module, identifier) named: a prefix resolved through the defining module's imports;
    # no prefix counts for the defining module and the table's; "*": a prefix not resolved
    qualified: frozenset[tuple[str, str]] = frozenset()
    # The qualified names read otherwise than by a probe `contains(../NAME, 'literal')`,
    # and the probes: ((module, identifier), literal). A leaf only probed is read only as
    # "does it contain the literal".
    loose: frozenset[tuple[str, str]] = frozenset()
    probes: frozenset[tuple[tuple[str, str], str]] = frozenset()

    def __or__(self, other: "Reach") -> "Reach":
        return Reach(self.tables | other.tables, self.names | other.names, self.everything or other.everything,
                     self.qualified | other.qualified, self.loose | other.loose, self.probes | other.probes)


@dataclass(frozen=True)
class TableReach:
    table: str
    module: str  # "module:top" as yang_tables names it
    lists: dict[str, Reach]  # list name -> reach (read only when the list has entries)
    containers: Reach  # container members and statements outside any member: always read
    # Leaves an entry cannot go without (keys, `mandatory true`), over all its lists
    required: frozenset[str] = frozenset()
    # Plain `type string` leaves (at most a `length`, no pattern, when, must or default;
    # directly or through typedefs) of the lists and containers -> (min, max) length: their
    # values are judged by length alone
    strings: dict[str, tuple[int, int]] | None = None
    # list name -> {key leaf: its type as pattern alternatives}: a value is valid when, for
    # one alternative (a union member), it matches every pattern of it (:func:`_key_patterns`)
    key_patterns: dict[str, dict[str, tuple[tuple[str, ...], ...]]] | None = None
    # Leaves of the lists and containers typed by patterns alone or as an unsigned integer (no
    # when, must or default, directly or through typedefs) -> the form a value of the type has
    formats: "dict[str, ValueFormat] | None" = None


@dataclass(frozen=True)
class ValueFormat:
    """The values of a type recognised here without libyang: printable ASCII that matches every
    pattern (the `_SAFE_PATTERN` syntax, which XSD and Python's `re` read alike), or an
    unsigned integer in canonical decimal (no sign, no leading zero) up to `uint_max`. libyang
    accepts every such value; it may accept more (it reads `042` as a uint32), and those
    are left to it."""

    patterns: tuple[str, ...] = ()
    uint_max: int | None = None


_UINT_MAX = {"uint8": 2**8 - 1, "uint16": 2**16 - 1, "uint32": 2**32 - 1}
# Types of the modules libyang builds in, which SONiC's leaves name but the model directory
# does not hold, as RFC 6991 defines them: ietf-yang-types' mac-address (section 3) and
# ietf-inet-types' as-number (section 4, a uint32).
_BUILTIN_TYPES = {
    ("ietf-yang-types", "mac-address"): ValueFormat(patterns=("[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}",)),
    ("ietf-inet-types", "as-number"): ValueFormat(uint_max=_UINT_MAX["uint32"]),
}


@dataclass(frozen=True)
class _Module:
    name: str
    prefixes: dict[str, str]  # prefix -> module name, its own included


def _module_info(root: Stmt) -> _Module | None:
    mod = root.first("module") or root.first("submodule")
    if mod is None or not mod.arg:
        return None
    own = mod.first("prefix")
    prefixes = {own.arg: mod.arg} if own and own.arg else {}
    for imp in mod.all("import"):
        pfx = imp.first("prefix")
        if imp.arg and pfx and pfx.arg:
            prefixes[pfx.arg] = imp.arg
    return _Module(mod.arg, prefixes)


class _Defs:
    """Groupings and typedefs of every module, by local name, with the module defining each."""

    def __init__(self, roots: list[Stmt]):
        self.groupings: dict[str, list[Stmt]] = {}
        self.typedefs: dict[str, list[Stmt]] = {}
        self.module_of: dict[int, _Module] = {}
        self.amended = False  # an augment or deviation anywhere: a key leaf may gain constraints elsewhere
        for root in roots:
            info = _module_info(root) or _Module("*", {})
            for stmt in _walk(root):
                if stmt.keyword in ("augment", "deviation"):
                    self.amended = True
                if stmt.keyword == "grouping" and stmt.arg:
                    self.groupings.setdefault(stmt.arg, []).append(stmt)
                    self.module_of[id(stmt)] = info
                elif stmt.keyword == "typedef" and stmt.arg:
                    self.typedefs.setdefault(stmt.arg, []).append(stmt)
                    self.module_of[id(stmt)] = info


def _walk(stmt: Stmt):
    yield stmt
    for sub in stmt.subs:
        yield from _walk(sub)


def _expressions(stmt: Stmt, defs: _Defs, seen: set[int], mod: _Module) -> tuple[list[tuple[str, _Module]], bool]:
    """Every XPath text below `stmt` (uses and typedefs expanded) with the module that
    defines it, and whether an instance-identifier lets it point anywhere."""
    texts: list[tuple[str, _Module]] = []
    anywhere = False
    for sub in _walk(stmt):
        if sub.keyword in _EXPRESSIONS and sub.arg:
            texts.append((sub.arg, mod))
        elif sub.keyword in ("type", "uses") and sub.arg:
            local = sub.arg.split(":")[-1]
            if sub.keyword == "type" and local == "instance-identifier":
                anywhere = True
            found = defs.typedefs.get(local, ()) if sub.keyword == "type" else defs.groupings.get(local, ())
            for d in found:
                if id(d) not in seen:
                    seen.add(id(d))
                    more, any_more = _expressions(d, defs, seen, defs.module_of[id(d)])
                    texts += more
                    anywhere |= any_more
    return texts, anywhere


def _reach(stmts: list[Stmt], table: str, mod: _Module, all_tables: frozenset[str], defs: _Defs) -> Reach:
    texts: list[tuple[str, _Module]] = []
    anywhere = False
    for stmt in stmts:
        more, any_more = _expressions(stmt, defs, set(), mod)
        texts += more
        anywhere |= any_more
    names: set[str] = set()
    qualified: set[tuple[str, str]] = set()
    loose: set[tuple[str, str]] = set()
    probes: set[tuple[tuple[str, str], str]] = set()

    def resolve(prefix: str, ident: str, where: _Module) -> tuple[tuple[str, str], ...]:
        if not prefix:
            return (where.name, ident), (mod.name, ident)
        return ((where.prefixes.get(prefix, "*"), ident),)

    for text, where in texts:
        if _READS_ANYTHING.search(text) or _has_name_wildcard(text):
            anywhere = True
        names.update(_IDENT.findall(text))
        for prefix, ident in _QNAME.findall(text):
            qualified.update(resolve(prefix, ident, where))
        for m in _PROBE.finditer(text):
            literal = m.group(3) if m.group(3) is not None else m.group(4)
            probes.update((q, literal) for q in resolve(m.group(1) or "", m.group(2), where))
        for prefix, ident in _QNAME.findall(_PROBE.sub(" ", text)):
            loose.update(resolve(prefix, ident, where))
    return Reach(frozenset(names & all_tables - {table}), frozenset(names), anywhere, frozenset(qualified),
                 frozenset(loose), frozenset(probes))


_LENGTH = re.compile(r"^\s*(\d+)\s*\.\.\s*(\d+|max)\s*$")
_STRING_MAX = 2**32  # YANG's `max` for a string length (a bound no value reaches)


def _leaf_type(leaf: Stmt, defs: _Defs, mod: _Module) -> "tuple[int, int] | ValueFormat | None":
    """What a leaf's values are judged by when its type is all that constrains it: (min, max)
    length of a plain string, a ValueFormat, or None (libyang judges every value)."""
    if any(s.keyword in ("when", "must", "default", "if-feature") for s in leaf.subs):
        return None
    types = leaf.all("type")
    return _type_form(types[0], defs, mod) if len(types) == 1 else None


def _type_form(type_stmt: Stmt, defs: _Defs, mod: _Module, depth: int = 0) -> "tuple[int, int] | ValueFormat | None":
    """`_leaf_type` of one type statement, through typedefs that add nothing but their type."""
    name = type_stmt.arg or ""
    if depth > 16:
        return None
    if name == "string":
        if all(sub.keyword == "pattern" for sub in type_stmt.subs) and type_stmt.subs:
            alternatives = _string_alternatives(type_stmt, defs, mod, depth)
            return ValueFormat(patterns=alternatives[0]) if alternatives else None
        bounds = (0, _STRING_MAX)
        for sub in type_stmt.subs:
            m = _LENGTH.match(sub.arg or "") if sub.keyword == "length" else None
            if m is None:
                return None  # a pattern beside a length, several ranges, anything else: libyang judges it
            bounds = (int(m.group(1)), _STRING_MAX if m.group(2) == "max" else int(m.group(2)))
        return bounds
    if name in _UINT_MAX:
        return ValueFormat(uint_max=_UINT_MAX[name]) if not type_stmt.subs else None
    prefix, _, local = name.rpartition(":")
    if type_stmt.subs:
        return None  # a restriction on a typedef, or a builtin this does not read
    module = mod.prefixes.get(prefix) if prefix else mod.name
    if (module, local) in _BUILTIN_TYPES:
        return _BUILTIN_TYPES[(module, local)]
    found = defs.typedefs.get(local, [])
    where = defs.module_of.get(id(found[0])) if len(found) == 1 else None
    if where is None or module != where.name or found[0].first("default") is not None:
        return None  # ambiguous, unresolved, another module's, or with a default of its own
    inner = found[0].all("type")
    return _type_form(inner[0], defs, where, depth + 1) if len(inner) == 1 else None


# The regex syntax whose meaning is the same in XSD (YANG's patterns, which libyang
# anchors at both ends) and in Python's `re` under fullmatch, for values of printable
# ASCII: literals, `\.` and `\-`, groups, alternation, quantifiers, `.` and character
# classes of literals and ranges. Anything else (`\p{..}`, `\d`, `^`/`$` outside a class,
# `(?`) leaves the type to libyang.
_SAFE_PATTERN = re.compile(r"(?:[A-Za-z0-9:/,%_@=]|\\[.\-]|[(){}|*+?.]|\[\^?(?:[A-Za-z0-9:._\-]|\\[.\-])+\])*")
# `a*+` is possessive in Python and no XSD at all: never two quantifiers in a row
_STACKED_QUANTIFIERS = re.compile(r"[*+?}][*+?{]")
_PATTERN_DETAILS = ("error-message", "error-app-tag", "description", "reference")


def _string_alternatives(type_stmt: Stmt, defs: _Defs, mod: _Module, depth: int = 0) -> tuple[tuple[str, ...], ...] | None:
    """A type that is a string with patterns only, or a union of such (through typedefs):
    its alternatives, each the patterns a value must all match. None: any other type.
    `mod`: the module the type is written in, whose imports give its prefix a meaning."""
    name = type_stmt.arg or ""
    if depth > 16:
        return None
    if name == "union":
        members = type_stmt.all("type")
        if not members or len(members) != len(type_stmt.subs):
            return None
        out: list[tuple[str, ...]] = []
        for member in members:
            alts = _string_alternatives(member, defs, mod, depth + 1)
            if alts is None:
                return None
            out += alts
        return tuple(out)
    if name == "string":
        patterns = []
        for sub in type_stmt.subs:
            if (sub.keyword != "pattern" or not sub.arg or "(?" in sub.arg or not _SAFE_PATTERN.fullmatch(sub.arg)
                    or _STACKED_QUANTIFIERS.search(sub.arg)
                    or any(d.keyword not in _PATTERN_DETAILS for d in sub.subs)):
                return None  # a length, an invert-match modifier, syntax not shown equal
            patterns.append(sub.arg)
        return (tuple(patterns),)
    prefix, _, local = name.rpartition(":")
    found = defs.typedefs.get(local, [])
    if type_stmt.subs or len(found) != 1:
        return None  # a builtin other than string, a restriction on a typedef, an ambiguous name
    where = defs.module_of.get(id(found[0]))
    if where is None or (mod.prefixes.get(prefix) if prefix else mod.name) != where.name:
        return None  # the name means another module's type (one libyang holds: inet:...) or is unresolved
    inner = found[0].all("type")
    return _string_alternatives(inner[0], defs, where, depth + 1) if len(inner) == 1 else None


def _key_patterns(lst: Stmt, keys: set[str], defs: _Defs, mod: _Module) -> dict[str, tuple[tuple[str, ...], ...]]:
    """The key leaves of `lst` typed by patterns alone (no when, must or if-feature of their own,
    none added by a refine, augment or deviation; one type wherever the name is defined)."""
    if defs.amended:
        return {}
    refined = _refined(lst, defs)
    seen: dict[str, tuple | None] = {}
    for leaf in _leaves(lst, defs):
        if leaf.keyword != "leaf" or leaf.arg not in keys:
            continue
        types = leaf.all("type")
        alts = None
        if (leaf.arg not in refined and len(types) == 1
                and not any(s.keyword in ("when", "must", "if-feature") for s in leaf.subs)):
            alts = _string_alternatives(types[0], defs, mod)
        seen[leaf.arg] = alts if seen.get(leaf.arg, alts) == alts else None  # two definitions that differ: none
    return {name: alts for name, alts in seen.items() if alts is not None}


def _refined(stmt: Stmt, defs: _Defs, seen: "set[int] | None" = None) -> set[str]:
    """Names of the leaves a `refine` below `stmt` (its groupings' own uses included) targets:
    a refine may add a must, a default or a mandatory the leaf itself does not show."""
    seen = set() if seen is None else seen
    out: set[str] = set()
    for sub in _walk(stmt):
        if sub.keyword == "refine":
            out.add((sub.arg or "").rsplit("/", 1)[-1].split(":")[-1])
        elif sub.keyword == "uses" and sub.arg:
            for grouping in defs.groupings.get(sub.arg.split(":")[-1], ()):
                if id(grouping) not in seen:
                    seen.add(id(grouping))
                    out |= _refined(grouping, defs, seen)
    return out


def _leaves(lst: Stmt, defs: _Defs) -> list[Stmt]:
    return [m for m in _members(lst, defs) if m.keyword in ("leaf", "leaf-list")]


def _members(table: Stmt, defs: _Defs) -> list[Stmt]:
    """The table's children as data: local `uses` expanded, choice/case flattened."""
    out: list[Stmt] = []
    for sub in table.subs:
        if sub.keyword == "uses" and sub.arg:
            for grouping in defs.groupings.get(sub.arg.split(":")[-1], ()):
                out += _members(grouping, defs)
        elif sub.keyword in ("choice", "case"):
            out += _members(sub, defs)
        else:
            out.append(sub)
    return out


@lru_cache(maxsize=4)
def load_reach(yang_dir: Path) -> dict[str, TableReach]:
    """Table name -> what its members' constraints read, over every module in yang_dir."""
    roots = [parse_yang(p.read_text(encoding="utf-8")) for p in sorted(yang_dir.glob("*.yang"))]
    defs = _Defs(roots)
    found: list[tuple[str, str, Stmt, _Module]] = []
    for root in roots:
        mod = root.first("module")
        info = _module_info(root)
        if mod is None or info is None:
            continue
        for top in mod.all("container"):
            for tab in _members(top, defs):
                if tab.keyword == "container" and tab.arg:
                    found.append((tab.arg, f"{mod.arg}:{top.arg}", tab, info))
    all_tables = frozenset(name for name, _m, _t, _i in found)
    out: dict[str, TableReach] = {}
    for name, module, tab, info in found:
        if name in out:  # a table defined twice: nothing can be assumed about it
            out[name] = TableReach(name, module, {}, Reach(everything=True))
            continue
        members = _members(tab, defs)
        list_stmts = [m for m in members if m.keyword == "list" and m.arg]
        lists = {m.arg: _reach([m], name, info, all_tables, defs) for m in list_stmts}
        rest = [m for m in members if not (m.keyword == "list" and m.arg)]
        required: set[str] = set()
        typed: dict[str, tuple[int, int] | ValueFormat] = {}
        untyped: set[str] = set()
        key_patterns = {}
        for holder in list_stmts + [m for m in rest if m.keyword == "container" and m.arg]:
            key = holder.first("key")
            keys = set((key.arg or "").split()) if key else set()
            required |= keys
            if holder.keyword == "list":
                key_patterns[holder.arg] = _key_patterns(holder, keys, defs, info)
            refined = _refined(holder, defs)
            for leaf in _leaves(holder, defs):
                if any(x.keyword == "mandatory" and x.arg == "true" for x in leaf.subs):
                    required.add(leaf.arg)
                form = (_leaf_type(leaf, defs, info) if leaf.keyword == "leaf" and leaf.arg not in keys
                        and leaf.arg not in refined and not defs.amended else None)
                if form is None or typed.get(leaf.arg, form) != form:
                    untyped.add(leaf.arg)  # the same name typed otherwise in another member: judged by libyang
                else:
                    typed[leaf.arg] = form
        free = {f: t for f, t in typed.items() if f not in untyped and f not in required}
        out[name] = TableReach(name, module, lists, _reach(rest, name, info, all_tables, defs),
                               frozenset(required), {f: t for f, t in free.items() if type(t) is tuple},
                               {n: k for n, k in key_patterns.items() if k},
                               {f: t for f, t in free.items() if type(t) is ValueFormat})
    return out
