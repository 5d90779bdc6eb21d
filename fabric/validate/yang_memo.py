"""Judge many ConfigDB documents of one fabric, paying libyang only for what is new.

The switches of a fabric repeat each other: the QUEUE, PFC_WD, PORT_QOS_MAP and
buffer tables of two leaves are byte for byte the same, while INTERFACE, PORT
descriptions and DEVICE_METADATA differ. libyang's verdict on a table depends only
on the table's own data and on what its constraints read (:mod:`yang_reach`). So a
table is keyed by its data plus the parts of other tables its constraints name, and
a key that passed libyang once passes again: its data and everything it can read
are the same.

For a document, the tables whose keys were judged before are left out; the rest,
with every table they read (and what those read, to a fixed point), go to libyang
as one document. It passes: the whole document passes, and its keys are
remembered. It fails: the whole document is judged again as it is, so the problems
reported are exactly the full pass's. The first document of each shape is always
judged whole.

Two kinds of leaf count in a key only as "fits its type": leaves their own table's
constraints do not read, typed as a plain string, by patterns alone or as an unsigned
number (a hostname, a MAC address, an ASN: `yang_reach.ValueFormat`; a reader in another
table keys its cut of them by their text), and key leaves typed by patterns alone
or plain `string` that constraints read at most with `contains()` (the IP prefix of an
INTERFACE key). A value that does not fit is keyed as itself, so libyang still judges it.

A table with free leaves and no key fits is cut for its readers once per canonical form
(`_by_canonical`): the cut holds its keys and the leaves read, never a free one.

INTERFACE's canonical form (new on every switch: its addresses) is made from its JSON
text where that text is plain (`_TextCanonical`): the fitting key parts replaced at C
speed, the result hashed. Equal canonical texts parse to equal canonical data, so the
digest keys exactly what the walk keys; a text the rule does not cover takes the walk.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import operator
import re
from itertools import repeat
from json import encoder
from typing import Any, Callable

from .yang_reach import Reach, TableReach, ValueFormat
from .yang_tables import TableSchema

# Keys remembered per process (a fabric has a few dozen shapes per table; this only
# bounds a hostile OUTDIR of all-different documents).
MAX_KEYS = 200_000
# Texts kept per table with their digests (`YangMemo._text_print`): a fabric's switch shapes.
TEXTS_PER_TABLE = 8
MAX_TEXT_CHARS = 16 << 20  # all kept texts (32k GPUs: ~5 M); beyond it all are forgotten (a hostile file)


def c_json_encoder(sort_keys: bool, separators: tuple[str, str]) -> Callable[[Any], str]:
    """json.dumps without building an encoder per call (millions of entries at 32k GPUs):
    the C encoder made once. No cycle check: the values come from JSON."""
    if encoder.c_make_encoder is None:
        return json.JSONEncoder(sort_keys=sort_keys, separators=separators).encode
    enc = encoder.c_make_encoder(None, json.JSONEncoder().default, encoder.encode_basestring_ascii, None,
                                 separators[1], separators[0], sort_keys, False, True)
    return lambda v: "".join(enc(v, 0))


# A key is the data as read, input order kept: a reordered table is a new key, never a wrong hit.
_DUMP = c_json_encoder(False, (",", ":"))
_ABSENT = object()
_NOTHING = {d is None: hashlib.blake2b(marshal.dumps(d, 2), digest_size=20).digest() for d in ({}, None)}


def _all_of_type(values: Any, kind: type) -> bool:
    """all(type(v) is kind for v in values), the types gathered at C speed (2x faster on a
    PORT table's 64 entries; every document's per-switch tables go through it)."""
    return {*map(type, values)} <= {kind}


def _fits(value: Any, form: "tuple[int, int] | _FormatTest") -> bool:
    """A value libyang takes for a free leaf: a plain string of this length (printable ASCII:
    nothing to argue about in what libyang accepts), or one its format's test passes."""
    if type(form) is not tuple:
        return type(value) is str and form(value)
    return type(value) is str and form[0] <= len(value) <= form[1] and value.isascii() and value.isprintable()


class _FormatTest:
    """Whether strings are of a format (see ValueFormat), remembering the values that are: a
    fabric's switches repeat most of them (every PORT table's `index` and `fec`), so a
    column is mostly one set lookup at C speed."""

    MAX_KNOWN = 100_000  # values remembered (bounds a hostile OUTDIR of all-different values)

    def __init__(self, form: ValueFormat):
        self.form = form
        self.patterns = _KeyFit((form.patterns,), ())  # one alternative: every pattern matched
        self.known: set[str] = set()

    def _test(self, v: str) -> bool:
        high = self.form.uint_max
        if high is not None:  # the length first: bounds int()'s work on a hostile value
            return (0 < len(v) <= len(str(high)) and v.isascii() and v.isdigit() and (v[0] != "0" or v == "0")
                    and int(v) <= high)
        return self.patterns.fits(v)

    def __call__(self, v: str) -> bool:
        if v in self.known:
            return True
        if not self._test(v):
            return False
        if len(self.known) >= self.MAX_KNOWN:
            self.known.clear()
        self.known.add(v)
        return True

    def column(self, values: list[str]) -> bool:
        return self.known.issuperset(values) or all(map(self, values))


def _text_print(text: str) -> bytes:
    """A table's digest from its JSON text as written (`jsonsource.parse_json_members`):
    equal texts are equal data, and hashing text skips marshal's walk of the value. Its own
    BLAKE2b personalisation keeps it apart from `_fingerprint`'s digests of marshal bytes."""
    return hashlib.blake2b(text.encode(), digest_size=20, person=b"json-text").digest()


def _fingerprint(data: Any) -> bytes:
    """A digest that only equal data share: marshal writes the whole value, types and
    order included, and loads it back equal. Format 2: no back-references, so the bytes
    depend on the data alone, not on which objects happen to be shared."""
    if not data and (data is None or type(data) is dict):
        return _NOTHING[data is None]  # the absent tables of a present module, most of a document's
    return hashlib.blake2b(marshal.dumps(data, 2), digest_size=20).digest()


class _KeyFit:
    """How a key leaf typed by patterns is keyed: a value that fits the type becomes a
    number, 1 + which of the probed literals it contains (all a `contains` probe can see),
    so keys differing only there are one; a value that does not fit stays itself."""

    def __init__(self, alternatives: tuple[tuple[str, ...], ...], literals: tuple[str, ...]):
        self.alternatives = tuple(tuple(re.compile(p) for p in alt) for alt in alternatives)
        self.literals = literals

    def fits(self, value: Any) -> bool:
        """What libyang accepts for the type, on printable ASCII (where XSD and Python
        regexes agree on the patterns `yang_reach` lets through)."""
        if type(value) is not str or not value.isascii() or not value.isprintable():
            return False
        for alt in self.alternatives:
            for pattern in alt:
                if pattern.fullmatch(value) is None:
                    break
            else:
                return True
        return False

    def token(self, value: str) -> Any:
        if not self.fits(value):
            return value
        return 1 + sum(1 << i for i, lit in enumerate(self.literals) if lit in value)


def _confined(pattern: str) -> bool:
    """Whether every match of a `_SAFE_PATTERN` regex is made of its literals and class
    members only: no `.` outside an escape and no negated class. Such a match holds no
    quote, backslash or `|` (the classes' ranges lie between `-` and `z`)."""
    return re.search(r"(?<!\\)\.", pattern) is None and "[^" not in pattern


class _TextCanonical:
    """The canonical form (`YangMemo._canonical`) of a table like INTERFACE (keys of one
    part, and of two whose second is a fit) made from its JSON text by one
    C-speed substitution: each key's second part that matches the type's first alternative
    becomes its token, `|\\x01<token>"`, when all have one token. Only for texts with no
    backslash (every quote ends a string), no array and objects only as entries, so every
    string followed by a colon is an entry's key or a field's, and the count of `|` tells
    whether each is an entry key's only one. Anything else: None (the walk keys it).
    A free leaf in the text (INTERFACE's mac_addr, which compile never writes) stays as
    written: a finer key than the walk's, so a miss, never a wrong hit.

    The walk over such a table costs more than the substitution (0.43-0.50 s against
    0.17-0.21 s for 2,576 INTERFACE tables); tables with free leaves and no key fits (PORT:
    six columns scanned in text) have no text rule: the walk is the faster there."""

    def __init__(self, key_fits: dict[str, dict[int, _KeyFit]], schema):
        self.found: re.Pattern | None = None
        two = schema.list_for(2) if schema else None
        one = schema.list_for(1) if schema else None
        fits = key_fits.get(two.name) if two is not None else None
        if (fits is None or set(fits) != {1} or len(key_fits) != 1 or (one is not None and one.name in key_fits)
                or len(fits[1].alternatives[0]) != 1 or not _confined(fits[1].alternatives[0][0].pattern)):
            return
        self.literals = fits[1].literals
        inner = fits[1].alternatives[0][0].pattern.replace("(", "(?:")  # no `(?` in a safe pattern: each ( a group
        # the part after a `|`, up to the string's end, where a key ends (a colon follows)
        self.found = re.compile(r"\|(" + inner + r')"(?=\s*:)')

    def digest(self, text: str, entries: dict) -> bytes | None:
        if ("\\" in text or "[" in text or "\x01" in text or text.count("{") != len(entries) + 1
                or not _all_of_type(entries.values(), dict)):
            return None
        pipes = text.count("|")
        if pipes:
            parts = self.found.findall(text)
            # every | a key's part before a fit (entry keys, not field names), one a key
            if len(parts) != pipes or sum(map(operator.contains, entries, repeat("|"))) != pipes:
                return None
            token = 1
            for i, literal in enumerate(self.literals):
                holding = sum(map(operator.contains, parts, repeat(literal)))
                if holding == pipes:
                    token += 1 << i
                elif holding:
                    return None  # tokens differ from key to key: the walk keys them
            text = self.found.sub(f'|\x01{token}"', text)  # \x01: in no JSON text (a raw control character)
        return hashlib.blake2b(text.encode(), digest_size=20, person=b"json-canon").digest()


class YangMemo:
    """Table keys that passed libyang in this process, for one set of models."""

    def __init__(self, reach: dict[str, TableReach], tables: dict[str, TableSchema]):
        self.reach = reach
        self.tables = tables
        self.passed: set[bytes] = set()
        # (table, fingerprint of its data) -> (what it reads, digest of its canonical form),
        # and (table, fingerprint, names read) -> digest of the projection: the same table
        # data in the next document costs a fingerprint, not a walk (`_fingerprint`)
        self._own: dict[tuple[str, bytes], tuple[Reach | None, bytes]] = {}
        self._projected: dict[tuple[str, bytes, frozenset[str]], bytes] = {}
        # (table, names read) -> whether a projection may be keyed by the table's canonical
        # digest instead of its text (`_by_canonical`)
        self._canonical_cut: dict[tuple[str, frozenset[str]], bool] = {}
        # table -> its text rules (None: the table keys by the walk alone), and (table, digest of
        # a canonical text) -> what the table reads: one key shape, one reach (`_TextCanonical`)
        self._text_rules: dict[str, _TextCanonical | None] = {}
        self._reach_by_text: dict[tuple[str, bytes], Reach | None] = {}
        self._module_tables: dict[str, list[str]] = {}
        # table -> {text: digest}, the latest few: a table that repeats an earlier switch's
        # text (the QoS tables, the same object when `jsonsource.RepeatedMembers` gave it)
        # is found by the text's cached hash and a comparison, not hashed again with BLAKE2b
        self._text_prints: dict[str, dict[str, bytes]] = {}
        self._text_chars = 0
        # table -> (module, identifier) pairs named by the constraints that can read it
        # otherwise than by a probe, and the probes
        loose_by: dict[str, set[tuple[str, str]]] = {}
        probes_by: dict[str, set[tuple[tuple[str, str], str]]] = {}
        for name, tr in reach.items():
            self._module_tables.setdefault(tr.module, []).append(name)
            for r in (tr.containers, *tr.lists.values()):
                for other in (name, *r.tables):
                    loose_by.setdefault(other, set()).update(r.loose)
                    probes_by.setdefault(other, set()).update(r.probes)
        # Leaves the table's own constraints do not read, typed as a plain string or a format
        # (`ValueFormat`: patterns, an unsigned number): a key holds "fits" in place of a
        # value that fits, so two switches differing only there share it (their values are
        # judged here, in `_fits`). The table's own verdict depends on such a value only
        # through its type; another table reading it (a BGP neighbor's must reads bgp_asn)
        # keys its projection of this table by the text, never by this canonical form
        # (`_by_canonical`), so it is judged again when the value changes.
        tests: dict[ValueFormat, _FormatTest] = {}
        self.free = {}
        for t, tr in reach.items():
            own = frozenset().union(*(r.qualified for r in (tr.containers, *tr.lists.values())))
            self.free[t] = {f: b if type(b) is tuple else tests.setdefault(b, _FormatTest(b))
                            for f, b in {**(tr.strings or {}), **(tr.formats or {})}.items()
                            if not {(tr.module.split(":")[0], f), ("*", f)} & own}
        # Key leaves typed by patterns that constraints read at most by `contains` probes
        # (the IP prefix of INTERFACE|Ethernet0|10.0.0.1/31): table -> list -> {position: fit}
        self.key_fits: dict[str, dict[str, dict[int, _KeyFit]]] = {}
        for t, tr in reach.items():
            schema = tables.get(t)
            for lst in schema.lists if schema else ():
                for leaf, alternatives in (tr.key_patterns or {}).get(lst.name, {}).items():
                    names = {(tr.module.split(":")[0], leaf), ("*", leaf)}
                    if names & loose_by.get(t, set()) or leaf not in lst.keys:
                        continue
                    literals = sorted({lit for q, lit in probes_by.get(t, ()) if q in names})
                    fits = self.key_fits.setdefault(t, {}).setdefault(lst.name, {})
                    fits[lst.keys.index(leaf)] = _KeyFit(alternatives, tuple(literals))

    # -- keys ---------------------------------------------------------------

    def _text_print(self, table: str, text: str) -> bytes:
        kept = self._text_prints.get(table)
        if kept is None:
            kept = self._text_prints[table] = {}
        digest = kept.get(text)
        if digest is None:
            digest = _text_print(text)
            if self._text_chars + len(text) > MAX_TEXT_CHARS:
                self._text_prints.clear()
                self._text_chars = 0
                kept = self._text_prints[table] = {}
            kept[text] = digest
            self._text_chars += len(text)
            if len(kept) > TEXTS_PER_TABLE:
                self._text_chars -= len(next(iter(kept)))
                del kept[next(iter(kept))]  # the oldest
        return digest

    def _reach_of(self, table: str, entries: Any) -> Reach | None:
        """What `table`'s present members read; None: unknown (no memo for it)."""
        tr = self.reach.get(table)
        schema = self.tables.get(table)
        if tr is None or schema is None or not isinstance(entries, dict):
            return None
        reach = tr.containers
        if len(tr.lists) == 1 and len(schema.lists) == 1:
            # one list: every entry that is not a container is in it (a key of the wrong
            # shape makes a new key, and translation names it)
            if any(k not in schema.containers for k in entries):
                reach = reach | next(iter(tr.lists.values()))
        elif tr.lists:
            if not all(type(k) is str for k in entries):
                return None
            parts = {k.count("|") + 1 for k in entries if k not in schema.containers}
            for n in parts:
                lst = schema.list_for(n)
                if lst is None:
                    return None  # translation reports it; judge the document whole
                reach = reach | tr.lists.get(lst.name, Reach(everything=True))
        return None if reach.everything else reach

    def _projection(self, doc: dict, table: str, names: frozenset[str], fields_of: dict[str, frozenset]) -> str:
        """The entries of `table` in the lists `names` names, each cut to its key and the named fields."""
        entries = doc.get(table)
        if entries is None:
            return "-"
        if not isinstance(entries, dict) or not _all_of_type(entries.values(), dict):
            return _DUMP(entries)
        schema = self.tables.get(table)
        tr = self.reach.get(table)
        lists = tuple(tr.lists) if tr else ()
        named = {n for n in lists if n in names}
        keys: Any = entries
        if schema is not None and named and len(named) < len(lists):
            keep = set()
            for key in entries:
                lst = None if key in schema.containers else schema.list_for(key.count("|") + 1)
                if lst is None or lst.name in named:
                    keep.add(key)
            keys = [k for k in entries if k in keep]
        if table not in fields_of:
            fields_of[table] = frozenset().union(*entries.values())
        kept = fields_of[table] & names
        if not kept:
            return _DUMP(list(keys))
        return _DUMP([(k, {f: v for f, v in entries[k].items() if f in kept}) for k in keys])

    @staticmethod
    def _free_columns(free: dict[str, Any], entries: dict) -> dict[str, int] | None:
        """{field: 0} for the free fields, when each is in every entry or in none and all
        its values fit: then each entry's canonical form is `entry | zeros`, what the walk
        of `_canonical` makes, checked a column at a time. None: the walk decides."""
        values = list(entries.values())
        if not _all_of_type(values, dict):
            return None
        zeros: dict[str, int] = {}
        if not values:
            return zeros
        present = set().union(*values)  # every field of any entry, gathered at C speed
        for field, form in free.items():
            if field not in present:
                continue
            try:
                column = list(map(operator.itemgetter(field), values))  # C speed where every entry has it
            except KeyError:
                return None  # in some entries only: the walk decides
            if not _all_of_type(column, str):
                return None
            if type(form) is not tuple:
                if not form.column(column):
                    return None
                zeros[field] = 0
                continue
            low, high = form
            joined = "".join(column)  # printable ASCII throughout: each value is
            lengths = list(map(len, column))
            if not (joined.isascii() and joined.isprintable() and low <= min(lengths) and max(lengths) <= high):
                return None
            zeros[field] = 0
        return zeros

    def _canonical(self, table: str, entries: Any) -> Any:
        """The table as keyed: each free leaf's value as 0 when it fits its type, else
        as [value] (never equal to 0), so a key never hides a value that does not fit.
        With key leaves typed by patterns (`key_fits`), a list of [key, fields] pairs
        whose keys are lists of parts, the fitting values as numbers (never a string)."""
        free = self.free.get(table)
        key_fits = self.key_fits.get(table)
        if (not free and not key_fits) or type(entries) is not dict:
            return entries
        out = entries
        zeros = self._free_columns(free, entries) if free else None
        if zeros is not None:
            if zeros:
                out = {key: fields | zeros for key, fields in entries.items()}
        elif free:
            out = {}
            free_items = tuple(free.items())
            for key, fields in entries.items():
                if type(fields) is dict:
                    copied = None
                    for f, bounds in free_items:
                        v = fields.get(f, _ABSENT)
                        if v is not _ABSENT:
                            if copied is None:
                                copied = dict(fields)  # the field's place in the entry kept
                            copied[f] = 0 if _fits(v, bounds) else [v]
                    if copied is not None:
                        fields = copied
                out[key] = fields
        if not key_fits:
            return out
        schema = self.tables[table]
        pairs = []
        for key, fields in out.items():
            parts = key.split("|")
            lst = None if key in schema.containers else schema.list_for(len(parts))
            fits = key_fits.get(lst.name) if lst else None
            if fits:
                pairs.append([[fits[i].token(p) if i in fits else p for i, p in enumerate(parts)], fields])
            else:
                pairs.append([key, fields])
        return pairs

    def _text_canonical(self, table: str, text: str, entries: Any) -> bytes | None:
        """The digest of `table`'s canonical form made from its text, or None (the walk keys it)."""
        rules = self._text_rules.get(table, _ABSENT)
        if rules is _ABSENT:
            key_fits = self.key_fits.get(table)
            rules = _TextCanonical(key_fits, self.tables.get(table)) if key_fits else None
            rules = self._text_rules[table] = rules if rules is not None and rules.found is not None else None
        if rules is None or type(entries) is not dict:
            return None
        return rules.digest(text, entries)

    def _by_canonical(self, table: str, names: frozenset[str]) -> bool:
        """Whether `table`'s projection on `names` is a function of its canonical form (the
        form `_canonical` keys it by), so one per shape serves every switch of it (PORT,
        whose descriptions differ, is cut five ways a document). It is when the table has
        free leaves but no key fits (its canonical then differs from its data only in the
        free leaves' values; its keys, the order of entries and fields, and every other
        value are the data's) and none of its free leaves is among the names projected.
        The caller also needs every entry to be an object: `_projection` dumps anything
        else whole, free leaves and all."""
        cut = (table, names)
        ok = self._canonical_cut.get(cut)
        if ok is None:
            free = self.free.get(table)
            ok = self._canonical_cut[cut] = bool(free) and not self.key_fits.get(table) and not (free.keys() & names)
        return ok

    def keys(self, doc: dict, texts: dict[str, str] | None = None) -> dict[str, bytes] | None:
        """Table -> key, for every table of the document and every absent table of a
        module it has data in (their containers' defaults are judged too). None: some
        table reads what cannot be keyed; the document is judged whole. `texts`: each
        table's JSON text as written, where known (a cheaper fingerprint than the data's)."""
        texts = texts or {}
        text_print = self._text_print

        def fingerprint(table: str) -> bytes:
            text = texts.get(table)
            return _fingerprint(doc.get(table)) if text is None else text_print(table, text)

        present_modules = {self.reach[t].module for t in doc if t in self.reach}
        names = list(doc)
        for module in sorted(present_modules):
            names += [t for t in self._module_tables[module] if t not in doc]
        if len(self._own) + len(self._projected) + len(self._reach_by_text) > MAX_KEYS:
            self._own.clear()
            self._projected.clear()
            self._reach_by_text.clear()
        prints: dict[str, bytes] = {}
        out: dict[str, bytes] = {}
        fields_of: dict[str, frozenset] = {}

        def own_of(table: str) -> tuple[Reach | None, bytes]:
            """(what the table reads, the digest of its canonical form), by its fingerprint."""
            # an absent table and an empty one fingerprint apart: projections tell them apart
            fp = prints.get(table)
            if fp is None:
                fp = prints[table] = fingerprint(table)
            own = self._own.get((table, fp))
            if own is None:
                entries = doc.get(table, {})
                text = texts.get(table)
                digest = self._text_canonical(table, text, entries) if text is not None else None
                if digest is not None:
                    reach = self._reach_by_text.get((table, digest), _ABSENT)
                    if reach is _ABSENT:
                        reach = self._reach_by_text[(table, digest)] = self._reach_of(table, entries)
                    own = self._own[(table, fp)] = (reach, digest)
                    return own
                canonical = self._canonical(table, entries)
                own = self._own[(table, fp)] = (self._reach_of(table, entries),
                                                fp if canonical is entries and table not in texts
                                                else _fingerprint(canonical))
            return own

        for table in names:
            reach, digest = own_of(table)
            if reach is None:
                return None
            h = hashlib.blake2b(table.encode(), digest_size=20)
            h.update(b"\0" + digest)
            for other in sorted(reach.tables):
                if other not in prints:
                    prints[other] = fingerprint(other)
                entries = doc.get(other)
                if (type(entries) is dict and self._by_canonical(other, reach.names)
                        and _all_of_type(entries.values(), dict)):
                    # one projection per shape: keyed by the canonical digest (marked apart
                    # from the text prints), which fixes everything the projection holds
                    cut = (other, b"\1" + own_of(other)[1], reach.names)
                else:
                    cut = (other, prints[other], reach.names)
                projected = self._projected.get(cut)
                if projected is None:
                    text = self._projection(doc, other, reach.names, fields_of).encode()
                    projected = self._projected[cut] = hashlib.blake2b(text, digest_size=20).digest()
                h.update(b"\0" + other.encode() + b"\0" + projected)
            out[table] = h.digest()
        return out

    # -- what libyang must see ----------------------------------------------

    def residual(self, doc: dict, keys: dict[str, bytes]) -> dict:
        """The part of `doc` libyang must judge: the tables with new keys, whole, and
        what they read, cut to the leaves read and the ones an entry cannot go without
        (a table judged before is there only as the context of the new ones)."""
        whole: set[str] = set()
        cut: dict[str, set[str]] = {}
        todo: list[tuple[str, frozenset[str] | None]] = [(t, None) for t, k in keys.items() if k not in self.passed]
        while todo:
            table, names = todo.pop()
            if names is None:
                if table in whole:
                    continue
                whole.add(table)
            else:
                have = cut.get(table)
                if table in whole or (have is not None and names <= have):
                    continue
                cut[table] = (have or set()) | names
            if table not in doc:  # an absent table's defaults: its module must be there
                todo += [(t, frozenset()) for t in self._module_tables[self.reach[table].module] if t in doc]
                continue
            reach = self._reach_of(table, doc[table])
            todo += [(t, reach.names) for t in (reach.tables if reach else ())]
        out = {}
        for table, entries in doc.items():
            if table in whole:
                out[table] = entries
            elif table in cut:
                keep = cut[table] | self.reach[table].required
                out[table] = {k: ({f: v for f, v in e.items() if f in keep} if type(e) is dict else e)
                              for k, e in entries.items()}
        return out

    def remember(self, keys: dict[str, bytes]) -> None:
        if len(self.passed) + len(keys) > MAX_KEYS:
            self.passed.clear()
        self.passed.update(keys.values())
