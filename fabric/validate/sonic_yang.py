"""Validate a SONiC ConfigDB document (config_db.json) against the SONiC YANG models.

ConfigDB is `{TABLE: {"k1|k2": {field: value}}}`; the models want YANG JSON
`{"sonic-x:sonic-x": {TABLE: {TABLE_LIST: [{key1: k1, key2: k2, field: value}]}}}`.
The translation is driven by the table layout read from the models
(:mod:`yang_tables`), and the result is judged by libyang. Every outcome is a
list of :class:`Problem`; nothing here raises on bad input.
"""

from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from .yang_memo import YangMemo, c_json_encoder
from .yang_reach import load_reach
from .yang_tables import ListSchema, TableSchema, load_table_map

# The models ship inside the package (data/sonic-yang, with their SOURCES.md);
# RAILONLY_SONIC_YANG_DIR points at another copy (e.g. newer models) instead.
PACKAGED_YANG_DIR = Path(__file__).resolve().parent / "data" / "sonic-yang"
YANG_DIR = Path(os.environ.get("RAILONLY_SONIC_YANG_DIR") or PACKAGED_YANG_DIR)

# Grouping-only module: loading it directly crashed the binding; importers pull it in.
_SKIP_MODULES = {"sonic-bgp-common"}
# Leaf-lists ConfigDB keeps as one string ("a,b"), split before the models judge them, as
# SONiC's own translation does (sonic-net/sonic-buildimage 086b03bd70f9e211aaaf5f6aefe0790b508d2a94
# src/sonic-yang-mgmt/sonic_yang_ext.py, LEAF_LIST_WITH_STRING_VALUE_DICT): table -> field -> separator.
STRING_LEAF_LISTS: dict[str, dict[str, str]] = {
    "MIRROR_SESSION": {"src_ip": ","},
    "NTP": {"src_intf": ";"},
    "BGP_ALLOWED_PREFIXES": {"prefixes_v4": ",", "prefixes_v6": ","},
    "BUFFER_PORT_EGRESS_PROFILE_LIST": {"profile_list": ","},
    "BUFFER_PORT_INGRESS_PROFILE_LIST": {"profile_list": ","},
    "PORT": {"adv_speeds": ",", "adv_interface_types": ","},
}


@dataclass(frozen=True)
class Problem:
    table: str | None
    key: str | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = "|".join(p for p in (self.table, self.key) if p) or "<document>"
        return f"{where}{'.' + self.field if self.field else ''}: {self.message}"


@dataclass
class _Models:
    ctx: Any  # oopt_gnpy_libyang.Context
    tables: dict[str, TableSchema]
    lock: threading.Lock  # a libyang context and its error store are not thread-safe


class YangUnavailable(RuntimeError):
    """The YANG pass cannot run on this machine (the CLI maps it to exit 3)."""


def require() -> None:
    """Raise YangUnavailable when the YANG pass cannot run here: the libyang
    binding is not installed or the models folder is absent. Called before any
    work, so an incomplete install is never reported as failing configs."""
    try:
        import oopt_gnpy_libyang  # noqa: F401
    except ImportError as exc:
        raise YangUnavailable(f"the libyang Python binding is not importable ({exc}); install it with "
                          "'pip install oopt-gnpy-libyang==0.1.1' (a railonly dependency; ./setup.sh "
                          "installs it), or skip the check with 'railonly compile --no-check'") from None
    if not any(YANG_DIR.glob("*.yang")):
        raise YangUnavailable(f"no SONiC YANG models in {YANG_DIR}: reinstall railonly"
                          + (" or unset RAILONLY_SONIC_YANG_DIR" if os.environ.get("RAILONLY_SONIC_YANG_DIR") else ""))


@lru_cache(maxsize=4)
def _models(yang_dir: Path = YANG_DIR) -> _Models:
    """Load every module once per process (the context is reused by all calls)."""
    import oopt_gnpy_libyang as ly

    ly.set_log_options(ly.LogOptions.Store)  # keep libyang quiet on stderr
    ctx = ly.Context(str(yang_dir), ly.ContextOptions.AllImplemented | ly.ContextOptions.NoYangLibrary)
    for path in sorted(yang_dir.glob("*.yang")):
        if path.stem not in _SKIP_MODULES:
            ctx.load_module(path.stem)
    ctx.clean_all_errors()  # load-time warnings (DHCP relay defaults) are not ours
    tables, _clashes = load_table_map(yang_dir)
    # Tables without lists or containers are event schemas, not ConfigDB tables.
    tables = {n: t for n, t in tables.items() if t.lists or t.containers}
    return _Models(ctx, tables, threading.Lock())


@lru_cache(maxsize=4)
def _memo(yang_dir: Path = YANG_DIR) -> YangMemo:
    """The table keys that passed in this process (forked workers start from the parent's)."""
    # _models() as every caller spells it: lru_cache keys _models(YANG_DIR) apart from it
    return YangMemo(load_reach(yang_dir), (_models() if yang_dir == YANG_DIR else _models(yang_dir)).tables)


def load_models() -> float:
    """Load (or reuse) the models and the memo built on them; returns seconds spent,
    for callers that report it (and that load them before forking workers)."""
    import time

    t = time.perf_counter()
    _memo()
    return time.perf_counter() - t


def known_tables() -> list[str]:
    return sorted(_models().tables)


def _scalar(value: Any) -> Any:
    # ConfigDB stores strings; ints are what a generator may slip in and SONiC
    # stringifies them on load, so accept them. Booleans would become "True".
    if isinstance(value, bool):
        raise TypeError("boolean (ConfigDB wants a string such as \"true\")")
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
        return [str(v) for v in value]  # leaf-list
    raise TypeError(f"{type(value).__name__} value")


def _fold_inner(node: dict, lst: ListSchema) -> None:
    """Move map-style fields ({"26": "3"}) into the nested YANG list (DSCP_TO_TC_MAP)."""
    inner = [i for i in lst.inner if i.value]
    if len(inner) != 1:
        return
    il = inner[0]
    extra = [f for f in node if f not in lst.leaves and f not in lst.keys]
    if extra:
        node[il.name] = [{il.key: f, il.value: node.pop(f)} for f in extra]


def to_yang_json(doc: dict) -> tuple[dict, list[Problem]]:
    """Translate ConfigDB JSON to YANG instance form; untranslatable parts become problems.

    Lists hold (ConfigDB key, entry) pairs so errors can be traced back to the
    key; :func:`_render` turns this into the JSON text libyang parses.
    """
    models = _models()
    out: dict[str, dict] = {}
    problems: list[Problem] = []
    if not isinstance(doc, dict):
        return out, [Problem(None, None, None, "document is not a JSON object")]
    for table, entries in doc.items():
        schema = models.tables.get(table)
        if schema is None:
            problems.append(Problem(table, None, None, f"unknown table {table!r} (no SONiC YANG model defines it)"))
            continue
        if not isinstance(entries, dict):
            problems.append(Problem(table, None, None, "table is not a JSON object"))
            continue
        tab = out.setdefault(schema.module, {}).setdefault(table, {})
        split = STRING_LEAF_LISTS.get(table)
        for key, fields in entries.items():
            if not isinstance(fields, dict):
                problems.append(Problem(table, key, None, "entry is not a JSON object"))
                continue
            if all(type(v) is str for v in fields.values()):  # what compile writes: no conversion
                node: dict[str, Any] = dict(fields)
            else:
                node = {}
                for f, v in fields.items():
                    try:
                        node[f] = _scalar(v)
                    except TypeError as exc:  # drop the field, keep the entry: no cascade of leafref errors
                        problems.append(Problem(table, key, f, f"bad value: {exc}"))
            if split:
                for f, sep in split.items():
                    if type(node.get(f)) is str:
                        node[f] = [x.strip() for x in node[f].split(sep)]
            if key in schema.containers:
                tab[key] = node
                continue
            parts = key.split("|")
            lst = schema.list_for(len(parts))
            if lst is None:
                shapes = ", ".join("|".join(l.keys) for l in schema.lists) or ", ".join(schema.containers)
                problems.append(Problem(table, key, None, f"key has {len(parts)} part(s); table expects {shapes}"))
                continue
            node.update(zip(lst.keys, parts))  # key leaves win over same-named fields
            if lst.inner:
                _fold_inner(node, lst)
            tab.setdefault(lst.name, []).append((key, node))
    return out, problems


_PATH = re.compile(
    r"^/[^/]+/(?:[^/:]+:)?(?P<table>[^/\[]+)"
    r"(?:/(?P<node>[^/\[]+)(?P<preds>(?:\[[^\]]*\])*))?"
    r"""(?:/(?P<field>[^/\[]+)(?:\[[^=\]]+=(?:'(?P<ik1>[^']*)'|"(?P<ik2>[^"]*)")\])?)?"""
)
_PRED = re.compile(r"""\[(?:[^=\]:]+:)?([^=\]]+)=(?:'([^']*)'|"([^"]*)")\]""")


def _locate(data_path: str | None, tables: dict[str, TableSchema]) -> tuple[str | None, str | None, str | None]:
    """Turn libyang's data path into ConfigDB (table, key, field)."""
    if not data_path:
        return None, None, None
    m = _PATH.match(data_path)
    if not m:
        return None, None, None
    table, node, preds, field = m.group("table"), m.group("node"), m.group("preds"), m.group("field")
    if field and ":" in field:
        field = field.split(":", 1)[1]
    schema = tables.get(table)
    if schema and node in schema.containers:
        return table, node, field
    key = "|".join((a if a is not None else b) for _, a, b in _PRED.findall(preds or "")) or None
    inner_key = m.group("ik1") if m.group("ik1") is not None else m.group("ik2")
    if field and inner_key is not None and schema and any(field == i.name for l in schema.lists for i in l.inner):
        field = inner_key  # DSCP_TO_TC_MAP[dscp='26'] is ConfigDB field "26"
    if field and schema and any(field in l.keys for l in schema.lists):
        field = None  # a key leaf: the key already names it
    return table, key, field


_DUMP = c_json_encoder(True, (", ", ": "))  # one-shot encoding of each document for libyang


def _nested(entry: dict) -> dict:
    """The fields of an entry that are folded inner lists (DSCP_TO_TC_MAP items)."""
    if all(type(v) is str for v in entry.values()):
        return {}  # the common case: plain leaves only
    return {f: v for f, v in entry.items() if isinstance(v, list) and v and isinstance(v[0], dict)}


def _render(yang: dict) -> tuple[str, dict[int, tuple[str, str, str | None]]]:
    """YANG JSON text with one ConfigDB entry per line, and line -> (table, key, field).

    Parse-time errors (bad types) come with a list path but no key predicate;
    their line number is what ties them back to the entry.
    """
    lines: list[str] = ["{"]
    where: dict[int, tuple[str, str]] = {}
    dump = _DUMP  # one encoder for every value: json.dumps(sort_keys=) builds one per call
    mods = list(yang.items())
    for mi, (mod, tables) in enumerate(mods):
        lines.append(f"{dump(mod)}: {{")
        for ti, (table, body) in enumerate(tables.items()):
            lines.append(f"{dump(table)}: {{")
            items = list(body.items())
            for ii, (name, val) in enumerate(items):
                sep = "," if ii < len(items) - 1 else ""
                if isinstance(val, dict):  # container entry (DEVICE_METADATA|localhost)
                    where[len(lines) + 1] = (table, name, None)
                    lines.append(f"{dump(name)}: {dump(val)}{sep}")
                    continue
                lines.append(f"{dump(name)}: [")
                for ei, (key, entry) in enumerate(val):
                    tail = "," if ei < len(val) - 1 else ""
                    where[len(lines) + 1] = (table, key, None)
                    nested = _nested(entry)
                    if not nested:
                        lines.append(dump(entry) + tail)
                        continue
                    # map-style entries (DSCP_TO_TC_MAP): one map item per line, so a
                    # bad item is named by its ConfigDB field ("26")
                    flat = {f: v for f, v in entry.items() if f not in nested}
                    lines.append(dump(flat)[:-1] + ("," if flat else ""))
                    for ni, (f, items) in enumerate(nested.items()):
                        lines.append(f"{dump(f)}: [")
                        for xi, item in enumerate(items):
                            where[len(lines) + 1] = (table, key, str(next(iter(item.values()))))
                            lines.append(dump(item) + ("," if xi < len(items) - 1 else ""))
                        lines.append("]" + ("," if ni < len(nested) - 1 else ""))
                    lines.append("}" + tail)
                lines.append("]" + sep)
            lines.append("}" + ("," if ti < len(tables) - 1 else ""))
        lines.append("}" + ("," if mi < len(mods) - 1 else ""))
    lines.append("}")
    return "\n".join(lines), where


_FIELD_IN_MSG = re.compile(r'^(?:Node|Mandatory node) "([^"]+)"')


def _is_echo(p: Problem, earlier: list[Problem]) -> bool:
    """libyang repeats a rejected value as "mandatory node missing" / "missing its key"."""
    if p.message.startswith("Mandatory node"):
        return any((e.table, e.key, e.field) == (p.table, p.key, p.field) for e in earlier)
    if p.message.startswith("List instance is missing its key"):
        return any(e.table == p.table for e in earlier)
    return False


def _plain(yang: dict) -> dict:
    """The YANG JSON of `yang` without the ConfigDB keys kept beside each list entry."""
    return {mod: {table: {name: [entry for _key, entry in val] if isinstance(val, list) else val
                          for name, val in body.items()}
                  for table, body in tables.items()}
            for mod, tables in yang.items()}


def _libyang_errors(text: str, models: _Models) -> tuple[list[tuple[str | None, int, str]], str] | None:
    """None when libyang accepts `text`, else its errors (data path, line, message) and the exception's text."""
    import oopt_gnpy_libyang as ly

    ctx = models.ctx
    parse = ly.ParseOptions.Strict | ly.ParseOptions.JsonStringDataTypes
    # Present: only modules with data are validated (others would just add noise);
    # MultiError: report everything, not the first failure.
    valid = ly.ValidationOptions.NoState | ly.ValidationOptions.Present | ly.ValidationOptions.MultiError
    with models.lock:
        ctx.clean_all_errors()
        try:
            ctx.parse_data(text, ly.DataFormat.JSON, parse, valid)
            return None
        except Exception as exc:  # details are in libyang's error store; the exception is generic
            errs = [(e.data_path, e.line, str(e.message)) for e in ctx.errors() if e.level == ly.LogLevel.Error]
            fallback = str(exc)
        finally:
            ctx.clean_all_errors()
    return errs, fallback


def _libyang_problems(yang: dict, models: _Models) -> list[Problem]:
    # libyang judges the same data in one C-encoded text (a passing document, nearly every
    # one, costs no more); only a rejected one is parsed again from the one-entry-per-line
    # text of _render, whose line numbers tie each error back to its ConfigDB entry.
    if _libyang_errors(_DUMP(_plain(yang)), models) is None:
        return []
    text, where = _render(yang)
    found = _libyang_errors(text, models)
    if found is None:  # cannot be: the same data in other whitespace
        return [Problem(None, None, None, "libyang rejected the document once and accepted it once (internal error)")]
    errs, fallback = found
    out: list[Problem] = []
    for data_path, line, message in errs:
        table, key, field = _locate(data_path, models.tables)
        if line in where:  # parse errors: the line names the exact entry
            table, key, item = where[line]
            field = item or field
        m = _FIELD_IN_MSG.match(message)
        if field is None and m:
            field = m.group(1)
        p = Problem(table, key, field, message.strip())
        if p in out or _is_echo(p, out):
            continue
        out.append(p)
    return out or [Problem(None, None, None, f"libyang rejected the document: {fallback}")]


def _passes_by_memo(doc: dict, keys: dict[str, bytes], models: _Models) -> bool:
    """True when the tables judged before (:mod:`yang_memo`) and libyang's verdict on
    the rest pass the document; False: judge it whole (a new shape, or a problem)."""
    memo = _memo()
    rest = memo.residual(doc, keys)
    if rest:
        yang, problems = to_yang_json(rest)
        if problems or (yang and _libyang_errors(_DUMP(_plain(yang)), models) is not None):
            return False
    memo.remember(keys)
    return True


def validate_config_db(doc: dict, memo: bool = True, texts: dict[str, str] | None = None) -> list[Problem]:
    """All problems of one ConfigDB document; [] means it passes the models.
    `memo=False` judges the whole document even where the memo knows its tables;
    `texts`: each table's JSON text as read (`jsonsource.parse_json_members`), for the memo."""
    try:
        models = _models()
    except Exception as exc:
        return [Problem(None, None, None, f"could not load SONiC YANG models from {YANG_DIR}: {exc}")]
    try:
        # None: no memo, or a table whose reads cannot be keyed (judged whole every time)
        keys = _memo().keys(doc, texts) if memo and isinstance(doc, dict) else None
        if keys is not None and _passes_by_memo(doc, keys, models):
            return []
        yang, problems = to_yang_json(doc)
        if yang:
            problems += _libyang_problems(yang, models)
        if keys is not None and not problems:
            _memo().remember(keys)
        return problems
    except Exception as exc:  # the caller gets data, never a crash from the binding
        return [Problem(None, None, None, f"internal validator error: {type(exc).__name__}: {exc}")]


def validate_config_db_file(path: str | os.PathLike) -> list[Problem]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return [Problem(None, None, None, f"cannot read {path}: {exc}")]
    return validate_config_db(doc)
