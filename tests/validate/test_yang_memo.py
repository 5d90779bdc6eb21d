"""The YANG memo: what each table reads, and that a remembered table never hides a problem.

Every edit below changes one table of a document whose other tables the memo has
already seen pass; the memo's verdict must equal libyang's on the whole document.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from railonly.fabric.validate import sonic_yang, yang_memo
from railonly.fabric.validate.sonic_yang import validate_config_db
from railonly.fabric.validate.yang_memo import YangMemo
from railonly.fabric.validate.yang_reach import load_reach

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def routed() -> dict:
    return json.loads((FIXTURES / "leaf_routed.json").read_text())


def test_reach_is_read_from_the_models():
    reach = load_reach(sonic_yang.YANG_DIR)
    queue = reach["QUEUE"].lists["QUEUE_LIST"]
    assert {"PORT", "DEVICE_METADATA", "SCHEDULER", "WRED_PROFILE"} <= queue.tables
    assert "switch_type" in queue.names and not queue.everything
    # VLAN_MEMBER's must reads INTERFACE_LIST: a port can't be both
    assert "INTERFACE" in reach["VLAN_MEMBER"].lists["VLAN_MEMBER_LIST"].tables
    assert reach["INTERFACE"].lists["INTERFACE_IPPREFIX_LIST"].tables == {"PORT"}
    # prefixes resolve through the module's imports: DEVICE_NEIGHBOR reads sonic-port's `name`, not its own
    neighbor = reach["DEVICE_NEIGHBOR"].lists["DEVICE_NEIGHBOR_LIST"].qualified
    assert ("sonic-port", "name") in neighbor and ("sonic-device_neighbor", "name") not in neighbor
    # sonic-bgp-common's grouping (uses bgpcmn:sonic-bgp-cmn-neigh) is expanded: local_addr's leafrefs
    assert {"PORT", "PORTCHANNEL", "LOOPBACK_INTERFACE"} <= reach["BGP_NEIGHBOR"].lists["BGP_NEIGHBOR_LIST"].tables


def _models(tmp_path: Path, body: str) -> Path:
    (tmp_path / "t.yang").write_text(
        "module t { namespace urn:t; prefix t;\n"
        "  typedef portref { type leafref { path /t:t/t:PORT/t:PORT_LIST/t:name; } }\n"
        "  container t {\n"
        "    container PORT { list PORT_LIST { key name; leaf name { type string; } } }\n"
        f"    container OTHER {{ list OTHER_LIST {{ key name; leaf name {{ type string; }} {body} }} }}\n"
        "  }\n}\n")
    return tmp_path


@pytest.mark.parametrize("body, tables, everything", [
    ("leaf p { type portref; }", {"PORT"}, False),  # a typedef's leafref is expanded
    ('leaf x { type string; must "../name != \'a\'"; }', set(), False),
    ('leaf x { type string; must "count(../../*) > 0"; }', set(), True),  # a `*` step reads anything
    ('leaf x { type string; must "//name"; }', set(), True),
    ('leaf x { type string; must "(../a * 3) > 1"; }', set(), False),  # multiplication is not a step
    ('leaf x { type string; must "count(../child::*) > 0"; }', set(), True),
    ('leaf x { type string; must "../a = 1 and * = 2"; }', set(), True),
    ('leaf x { type string; must "t:* = 2"; }', set(), True),
    ('leaf x { type string; must "deref(../p)/../name"; }', set(), True),
    ("leaf x { type instance-identifier; }", set(), True),
])
def test_reach_of_synthetic_models(tmp_path, body, tables, everything):
    reach = load_reach(_models(tmp_path, body))["OTHER"].lists["OTHER_LIST"]
    assert set(reach.tables) == tables and reach.everything is everything


def _edits():
    """(edit, whether the edited document fails: None when only equality is asserted)."""
    def drop_port_queue_uses(d):  # QUEUE unchanged, the port it names is gone
        del d["PORT"]["Ethernet0"]

    def switch_type_voq(d):  # QUEUE's `when` reads DEVICE_METADATA
        d["DEVICE_METADATA"]["localhost"]["switch_type"] = "voq"

    def vlan_port_routed(d):  # VLAN_MEMBER unchanged; its must reads INTERFACE_LIST
        member = next(iter(d["VLAN_MEMBER"])).split("|")[1]
        d["INTERFACE"][member] = {}

    def interface_on_missing_port(d):  # PORT is only context (cut) for the new INTERFACE
        d["INTERFACE"]["Ethernet999"] = {}
        d["INTERFACE"]["Ethernet999|10.99.0.0/31"] = {}

    def scheduler_gone(d):  # QUEUE and PORT_QOS_MAP name it
        d["SCHEDULER"].pop(next(iter(d["SCHEDULER"])))

    def long_description(d):  # a free leaf's value that does not fit: libyang judges it
        d["PORT"]["Ethernet0"]["description"] = "x" * 256

    def null_description(d):
        d["PORT"]["Ethernet0"]["description"] = None

    def unicode_description(d):
        d["PORT"]["Ethernet0"]["description"] = "gpu-é"

    def control_description(d):
        d["PORT"]["Ethernet0"]["description"] = "gpu\x01"

    def neighbor_name_too_long(d):  # DEVICE_NEIGHBOR's name: free (only sonic-port's `name` is read)
        d["DEVICE_NEIGHBOR"][next(iter(d["DEVICE_NEIGHBOR"]))]["name"] = "n" * 256

    def description_changed(d):  # fits: PORT's key is the one seen
        d["PORT"]["Ethernet0"]["description"] = "another peer"

    def hostname_changed(d):  # a passing change: the memo may skip the rest
        d["DEVICE_METADATA"]["localhost"]["hostname"] = "rail0-leaf9"

    return [(drop_port_queue_uses, True), (switch_type_voq, True), (vlan_port_routed, True),
            (interface_on_missing_port, True), (scheduler_gone, True), (long_description, True),
            (null_description, True), (neighbor_name_too_long, True), (unicode_description, None), (control_description, None),
            (description_changed, False), (hostname_changed, False)]


@pytest.mark.parametrize("edit, fails", _edits(), ids=lambda e: getattr(e, "__name__", str(e)))
def test_memo_verdict_equals_the_whole_documents(routed, edit, fails):
    assert validate_config_db(routed) == []  # the memo has seen every table of it pass
    doc = copy.deepcopy(routed)
    edit(doc)
    whole = validate_config_db(doc, memo=False)
    assert validate_config_db(doc) == whole
    if fails is not None:
        assert bool(whole) is fails


def test_a_known_document_skips_libyang(routed, monkeypatch):
    assert validate_config_db(routed) == []
    calls = []
    real = sonic_yang._libyang_errors
    monkeypatch.setattr(sonic_yang, "_libyang_errors", lambda *a: calls.append(1) or real(*a))
    assert validate_config_db(copy.deepcopy(routed)) == []
    assert calls == []
    doc = copy.deepcopy(routed)
    # a switch's own hostname, MAC and ASN fit their types: the key is the one seen
    doc["DEVICE_METADATA"]["localhost"].update(hostname="rail0-leaf7", mac="02:00:00:00:00:07", bgp_asn="4200000007")
    assert validate_config_db(doc) == [] and calls == []
    doc["DEVICE_METADATA"]["localhost"]["type"] = "ToRRouter"  # typed by a pattern and a length: libyang's
    assert validate_config_db(doc) == [] and len(calls) == 1  # only what changed, and what it reads


def test_residual_holds_what_new_tables_read(routed):
    reach = load_reach(sonic_yang.YANG_DIR)
    memo = YangMemo(reach, sonic_yang._models().tables)
    keys = memo.keys(routed)
    assert memo.residual(routed, keys) == routed  # nothing known: the whole document
    memo.remember(keys)
    doc = copy.deepcopy(routed)
    doc["INTERFACE"]["Ethernet0|10.99.0.0/31"] = {}
    rest = memo.residual(doc, memo.keys(doc))
    assert "INTERFACE" in rest and "PORT" in rest  # INTERFACE's leafref reads PORT
    assert "QUEUE" not in rest and "PFC_WD" not in rest
    # PORT is there as INTERFACE's context only: its entries cut to the leaves read and required
    assert set(rest["PORT"]) == set(routed["PORT"])
    assert {f for e in rest["PORT"].values() for f in e} <= {"lanes", "speed", "name"}
    # a description that fits its plain string type is not part of PORT's key
    doc["PORT"]["Ethernet0"]["description"] = "elsewhere"
    assert memo.keys(doc)["PORT"] == keys["PORT"]
    assert memo.free["DEVICE_NEIGHBOR"].keys() >= {"name", "port"} and "name" not in memo.free["PORT"]


def test_unknown_tables_are_judged_whole(routed):
    doc = copy.deepcopy(routed)
    doc["NO_SUCH_TABLE"] = {"x": {}}
    memo = YangMemo(load_reach(sonic_yang.YANG_DIR), sonic_yang._models().tables)
    assert memo.keys(doc) is None
    assert validate_config_db(doc) == validate_config_db(doc, memo=False) != []


# IP prefixes around the edges of sonic-types' ip4/ip6 patterns: libyang is the judge
_PREFIXES = [
    "10.0.0.1/31", "0.0.0.0/0", "255.255.255.255/32", "1.2.3.4/9", "199.249.200.10/30",
    "256.0.0.1/31", "10.0.0.1/33", "10.0.0.01/31", "010.0.0.1/31", "10.0.0.1", "10.0.0/24",
    "10.0.0.1/031", "10.0.0.1/-1", " 10.0.0.1/31", "10.0.0.1/31 ", "10.0.0.1/3a", "a.b.c.d/1",
    "10.0.0.1//31", "10.0.0.1/31/", "1.2.3.4.5/32", "",
    "2001:db8::1/64", "::/0", "::1/128", "fe80::/10", "::ffff:10.0.0.1/96", "1:2:3:4:5:6:7:8/128",
    "2001:DB8::/32", "1:2:3:4:5:6:1.2.3.4/96", "2001:db8::1/129", "2001:db8::1", "2001:::1/64",
    "1:2:3:4:5:6:7:8:9/64", "12345::/64", "g::/64", ":/64", "1::2::3/64", "::/00", "::/099",
    "2001:db8::1/64x", "::ffff:300.0.0.1/96", "1:2:3:4:5:6:7::/64", ":::/64", "::%eth0/64",
    "10.0.0.1/3\u0662", "\u0661\u0660.0.0.1/31", "10.0.0.1/31\n", "10.0.0.1\t/31", "::/1\u0968",
]


def _with_prefix(routed: dict, prefix: str, fields: dict | None = None) -> dict:
    """Ethernet16's address replaced in place (the table's order kept)."""
    doc = copy.deepcopy(routed)
    doc["INTERFACE"] = {(f"Ethernet16|{prefix}" if k.startswith("Ethernet16|") else k):
                        (fields or {} if k.startswith("Ethernet16|") else v) for k, v in doc["INTERFACE"].items()}
    return doc


@pytest.mark.parametrize("prefix", _PREFIXES)
def test_ip_prefix_fit_is_what_libyang_accepts(routed, prefix):
    """The memo keys a fitting prefix by its fit alone: a fit must be exactly a value
    libyang accepts (on printable ASCII; any other value is keyed as itself)."""
    fit = sonic_yang._memo().key_fits["INTERFACE"]["INTERFACE_IPPREFIX_LIST"][1]
    assert fit.literals == (".", ":")  # what `family`'s must probes
    accepted = validate_config_db(_with_prefix(routed, prefix), memo=False) == []
    if prefix.isascii() and prefix.isprintable():
        assert fit.fits(prefix) is accepted
    else:
        assert not fit.fits(prefix)


@pytest.mark.parametrize("prefix", _PREFIXES)
def test_memo_verdict_on_each_prefix_equals_the_whole_documents(routed, prefix):
    assert validate_config_db(routed) == []
    doc = _with_prefix(routed, prefix)
    assert validate_config_db(doc) == validate_config_db(doc, memo=False)


@pytest.mark.parametrize("prefix, family", [
    ("2001:db8::1/64", "IPv4"), ("10.9.0.0/31", "IPv6"), ("::ffff:10.0.0.1/96", "IPv4"),
    ("::ffff:10.0.0.1/96", "IPv6"), ("10.9.0.0/31", "IPv4"), ("2001:db8::1/64", "IPv6")])
def test_family_probe_after_the_memo_saw_prefixes_pass(routed, prefix, family):
    """`family`'s must reads the prefix only as "contains ':' / '.'": a prefix of the other
    family, after one of each family passed with its own, is still judged."""
    for seen, fam in (("10.7.0.0/31", "IPv4"), ("2001:db8:7::/64", "IPv6")):
        assert validate_config_db(_with_prefix(routed, seen, {"family": fam})) == []
    doc = _with_prefix(routed, prefix, {"family": family})
    whole = validate_config_db(doc, memo=False)
    assert validate_config_db(doc) == whole
    assert bool(whole) is (family == "IPv4" and ":" in prefix and "." not in prefix
                           or family == "IPv6" and ":" not in prefix)


def test_prefix_keys_differing_only_in_fitting_addresses_share_a_key(routed):
    memo = YangMemo(load_reach(sonic_yang.YANG_DIR), sonic_yang._models().tables)
    a, b = memo.keys(routed), memo.keys(_with_prefix(routed, "10.200.3.4/31"))
    assert a["INTERFACE"] == b["INTERFACE"] and a["PORT"] == b["PORT"]
    assert memo.keys(_with_prefix(routed, "10.200.3.4/33"))["INTERFACE"] != a["INTERFACE"]
    assert memo.keys(_with_prefix(routed, "2001:db8::/64"))["INTERFACE"] != a["INTERFACE"]  # ':' probed


def test_a_reordered_or_shared_document_keys_alike(routed):
    """Fingerprints depend on the data alone: a copy keys as the original, a reordered table anew."""
    memo = YangMemo(load_reach(sonic_yang.YANG_DIR), sonic_yang._models().tables)
    keys = memo.keys(routed)
    assert memo.keys(copy.deepcopy(routed)) == keys == memo.keys(json.loads(json.dumps(routed)))
    doc = copy.deepcopy(routed)
    doc["QUEUE"] = dict(reversed(list(doc["QUEUE"].items())))
    assert memo.keys(doc)["QUEUE"] != keys["QUEUE"]
    doc = copy.deepcopy(routed)
    first = next(iter(doc["QUEUE"]))
    doc["QUEUE"][first] = {k: int(v) if v.isdigit() else v for k, v in doc["QUEUE"][first].items()} | {"x": 1}
    assert memo.keys(doc)["QUEUE"] != keys["QUEUE"]


@pytest.mark.parametrize("edit", [
    lambda d: None,
    lambda d: d["PORT"]["Ethernet0"].pop("description"),
    lambda d: d["PORT"]["Ethernet0"].update(description="gpu-é"),
    lambda d: d["PORT"]["Ethernet0"].update(description="x" * 256),
    lambda d: d["PORT"]["Ethernet0"].update(description=7),
    lambda d: d["PORT"]["Ethernet0"].update(alias=""),
    lambda d: d["PORT"].update(EthernetX="not an entry"),
])
def test_free_columns_make_what_the_walk_makes(routed, edit, monkeypatch):
    memo = YangMemo(load_reach(sonic_yang.YANG_DIR), sonic_yang._models().tables)
    doc = copy.deepcopy(routed)
    edit(doc)
    by_columns = {t: memo._canonical(t, e) for t, e in doc.items()}
    monkeypatch.setattr(YangMemo, "_free_columns", staticmethod(lambda free, entries: None))
    assert by_columns == {t: memo._canonical(t, e) for t, e in doc.items()}


def test_an_empty_table_is_not_an_absent_one(routed):
    """What a constraint reads of an absent table ("-") and of an empty one ("[]") differ;
    their fingerprints must too, or a cached projection would stand for the other.
    VLAN is absent from a module with data (VLAN_MEMBER's), so it is keyed as well."""
    assert "VLAN_MEMBER" in routed
    memo = YangMemo(load_reach(sonic_yang.YANG_DIR), sonic_yang._models().tables)
    doc = copy.deepcopy(routed)
    doc.pop("VLAN")
    absent = memo.keys(doc)
    doc["VLAN"] = {}
    empty = memo.keys(doc)
    assert absent["VLAN_MEMBER"] != empty["VLAN_MEMBER"]  # its leafref reads VLAN
    assert YangMemo(memo.reach, memo.tables).keys(doc) == empty


@pytest.mark.parametrize("pattern, kept", [
    ("'[0-9]{1,3}(\\.[0-9]{1,3}){3}'", True), ("'[^:]+:[a-f]*'", True), ("'a|b|(c)?'", True),
    ("'a*+'", False), ("'a{2}{3}'", False), ("'\\d+'", False), ("'\\p{L}+'", False), ("'^a$'", False),
    ("'(?:a)'", False), ("'[a-z-[aeiou]]'", False)])
def test_only_patterns_read_alike_by_xsd_and_python_key_by_fit(tmp_path, pattern, kept):
    (tmp_path / "t.yang").write_text(
        "module t { namespace urn:t; prefix t;\n  container t {\n"
        f"    container K {{ list K_LIST {{ key id; leaf id {{ type string {{ pattern {pattern}; }} }} }} }}\n"
        "  }\n}\n")
    reach = load_reach(tmp_path)["K"]
    assert bool((reach.key_patterns or {}).get("K_LIST")) is kept


_TYPES = ("module ty { namespace urn:ty; prefix ty;\n"
          "  typedef word { type string { pattern '[a-z]+'; } }\n}\n")


@pytest.mark.parametrize("key_type, extra, kept", [
    ("ty:word", "", True),  # the imported module's typedef, through its import prefix
    ("other:word", "", False),  # a prefix the module does not import: not sonic's typedef
    ("word", "", False),  # unprefixed names the module's own typedefs only
    ("ty:word", "grouping g { leaf id { type string; } }\n    ", False),  # `id` defined twice, differently
    ("ty:word", "augment /t:t/t:K/t:K_LIST { leaf more { type string; } }\n    ", False),  # constraints from elsewhere
])
def test_key_fits_only_where_the_type_is_known_whole(tmp_path, key_type, extra, kept):
    """Keys keyed by fit are the ones whose type the memo reads exactly: the prefix resolved
    through the module's imports, one definition, nothing added by an augment or deviation."""
    (tmp_path / "ty.yang").write_text(_TYPES)
    uses = " uses g;" if "grouping g" in extra else ""
    (tmp_path / "t.yang").write_text(
        "module t { namespace urn:t; prefix t; import ty { prefix ty; }\n"
        f"    {extra}container t {{\n"
        f"    container K {{ list K_LIST {{ key id; leaf id {{ type {key_type}; }}{uses} }} }}\n"
        "  }\n}\n")
    reach = load_reach(tmp_path)["K"]
    assert bool((reach.key_patterns or {}).get("K_LIST")) is kept


def test_a_refined_leaf_is_not_judged_by_length_alone():
    """A refine may add a must, default or mandatory the leaf does not show (BGP_MONITORS
    refines its grouping's `name`)."""
    reach = load_reach(sonic_yang.YANG_DIR)
    assert "name" not in (reach["BGP_MONITORS"].strings or {})
    assert "name" in (reach["DEVICE_NEIGHBOR"].strings or {})


@pytest.mark.parametrize("edit, fails", _edits(), ids=lambda e: getattr(e, "__name__", str(e)))
def test_memo_keyed_by_table_texts_gives_the_same_verdict(routed, edit, fails):
    """The keys from each table's JSON text as written (validate reads them so): same verdicts."""
    from railonly.fabric.input.jsonsource import parse_json_members

    _doc, texts = parse_json_members(json.dumps(routed), "config_db.json")
    assert validate_config_db(routed, texts=texts) == []
    doc = copy.deepcopy(routed)
    edit(doc)
    doc, texts = parse_json_members(json.dumps(doc, indent=1), "config_db.json")  # other bytes, same data
    assert validate_config_db(doc, texts=texts) == validate_config_db(doc, memo=False)


def test_table_text_digests_kept_per_table_are_each_text_s_own(routed):
    """The digests kept by text (`YangMemo._text_print`): a table text changed in one byte,
    or seen again after more than TEXTS_PER_TABLE others, keys as a fresh memo keys it."""
    from railonly.fabric.input.jsonsource import RepeatedMembers, parse_json_members
    from railonly.fabric.validate import yang_memo

    memo, repeated = sonic_yang._memo(), RepeatedMembers()
    variants = []
    for i in range(yang_memo.TEXTS_PER_TABLE + 2):
        doc = copy.deepcopy(routed)
        doc["DEVICE_METADATA"]["localhost"]["hostname"] = f"rail0-leaf{i}"
        doc["PORT"]["Ethernet0"]["mtu"] = str(9000 + i)
        variants.append(json.dumps(doc))
    bad = copy.deepcopy(routed)
    bad["PORT"]["Ethernet0"]["mtu"] = "9x00"
    for text in variants + [json.dumps(bad)] + variants[:3]:
        doc, texts = parse_json_members(text, "config_db.json", repeated)
        fresh = YangMemo(memo.reach, memo.tables)
        assert memo.keys(doc, texts) == fresh.keys(doc, texts)
        assert validate_config_db(doc, texts=texts) == validate_config_db(doc, memo=False)
    assert validate_config_db(bad, memo=False)  # the bad one fails, memo or not
    assert all(len(kept) <= yang_memo.TEXTS_PER_TABLE for kept in memo._text_prints.values())
    assert memo._text_chars == sum(map(len, (t for kept in memo._text_prints.values() for t in kept)))


def test_table_text_digests_are_bounded_in_characters(routed, monkeypatch):
    """Beyond MAX_TEXT_CHARS of kept texts all are forgotten; the keys stay a fresh memo's."""
    from railonly.fabric.input.jsonsource import parse_json_members
    from railonly.fabric.validate import yang_memo

    memo = YangMemo(sonic_yang._memo().reach, sonic_yang._memo().tables)
    monkeypatch.setattr(yang_memo, "MAX_TEXT_CHARS", 3 * len(json.dumps(routed["PORT"])))
    for i in range(6):
        doc = copy.deepcopy(routed)
        doc["PORT"]["Ethernet0"]["mtu"] = str(9000 + i)
        doc, texts = parse_json_members(json.dumps(doc), "config_db.json")
        assert memo.keys(doc, texts) == YangMemo(memo.reach, memo.tables).keys(doc, texts)
        assert memo._text_chars <= yang_memo.MAX_TEXT_CHARS


def _with_port_descriptions(doc: dict, text: str) -> dict:
    doc = copy.deepcopy(doc)
    for entry in doc["PORT"].values():
        if isinstance(entry, dict) and "description" in entry:
            entry["description"] = text
    return doc


def test_port_projections_are_made_once_per_shape(routed, monkeypatch):
    """PORT's projections (what QUEUE, CABLE_LENGTH... read of it) keyed by its canonical
    form: switches differing only in free leaves (descriptions) share them, and every key
    is what a fresh memo makes."""
    memo = YangMemo(load_reach(sonic_yang.YANG_DIR), sonic_yang._models().tables)
    made = []
    real = YangMemo._projection
    monkeypatch.setattr(YangMemo, "_projection", lambda self, doc, table, *a: made.append(table) or real(self, doc, table, *a))
    memo.keys(routed)
    assert "PORT" in made
    other = _with_port_descriptions(routed, "to another peer")
    fresh = YangMemo(memo.reach, memo.tables).keys(other)
    made.clear()
    assert memo.keys(other) == fresh
    assert "PORT" not in made


@pytest.mark.parametrize("edit", [
    lambda d: d["PORT"]["Ethernet0"].update(description="x" * 300),  # does not fit: keyed as itself
    lambda d: d["PORT"]["Ethernet0"].update(mtu="1500"),
    lambda d: d["PORT"]["Ethernet0"].update(speed=400000),
    lambda d: d["PORT"].update(EthernetX="not an entry"),  # projected whole, free leaves and all
    lambda d: d["PORT"].update(Ethernet999={"description": "x"}),
    lambda d: d["PORT"].pop("Ethernet0"),
    lambda d: d.update(PORT=dict(reversed(list(d["PORT"].items())))),
])
def test_port_projection_keys_are_a_fresh_memo_s(routed, edit):
    """After a memo saw documents of one shape, each edit of PORT keys as a fresh memo keys
    it, then the same edit with other descriptions too (a document whose PORT holds a
    non-object entry projects it whole: its descriptions count there)."""
    memo = YangMemo(load_reach(sonic_yang.YANG_DIR), sonic_yang._models().tables)
    memo.keys(routed)
    for text in ("first peer", "second peer"):
        doc = _with_port_descriptions(routed, text)
        edit(doc)
        assert memo.keys(doc) == YangMemo(memo.reach, memo.tables).keys(doc)


def test_a_projection_that_reads_a_free_leaf_is_keyed_by_its_text(routed):
    """Models where a reader of PORT names `description` (a free leaf: no qualified name
    reads it): its projection holds the descriptions, so it cannot be keyed by the
    canonical form, where they are all 0."""
    import dataclasses

    reach = dict(load_reach(sonic_yang.YANG_DIR))
    cable = reach["CABLE_LENGTH"]
    lists = {name: dataclasses.replace(r, names=r.names | {"description"}) for name, r in cable.lists.items()}
    reach["CABLE_LENGTH"] = dataclasses.replace(cable, lists=lists)
    memo = YangMemo(reach, sonic_yang._models().tables)
    assert "description" in memo.free["PORT"]
    first = memo.keys(_with_port_descriptions(routed, "first peer"))
    doc = _with_port_descriptions(routed, "second peer")
    second = memo.keys(doc)
    assert second == YangMemo(reach, memo.tables).keys(doc)
    assert second["CABLE_LENGTH"] != first["CABLE_LENGTH"] and second["PORT"] == first["PORT"]


def _interface_text(routed: dict, text: str) -> tuple[dict, dict]:
    """The routed document with INTERFACE written as `text`, parsed as validate parses it."""
    from railonly.fabric.input.jsonsource import parse_json_members

    doc = dict(routed)
    doc["INTERFACE"] = "@"
    whole = json.dumps(doc, indent=1).replace('"@"', text)
    return parse_json_members(whole, "config_db.json")


# INTERFACE texts its text rule must leave to the walk (`yang_memo._TextCanonical`): None
_NOT_PLAIN = [
    '{"Ethernet16": {}, "Ethernet16|2001:db8::/64": {}}',  # a part of the type's other alternative
    '{"Ethernet16": {}, "Ethernet16|10.0.0.1/33": {}}',  # a part that does not fit
    '{"Ethernet16": {"vrf_name": "x|10.0.0.1/31"}, "Ethernet16|10.0.0.0/31": {}}',  # a | in a value
    '{"Ethernet16": {"x|10.0.0.1/31": "v"}, "Ethernet16|10.0.0.0/31": {}}',  # a | in a field name
    '{"Ethernet16": {}, "Ethernet16|a|10.0.0.0/31": {}}',  # a key of three parts
    '{"Ethernet16": {"x": {"y": 1}}, "Ethernet16|10.0.0.0/31": {}}',  # an object below an entry
    '{"Ethernet16": {"x": ["y"]}, "Ethernet16|10.0.0.0/31": {}}',  # an array
    '{"\\u0045thernet16": {}, "Ethernet16|10.0.0.0/31": {}}',  # an escape
    '{"Ethernet16": {"x": "{"}, "Ethernet16|10.0.0.0/31": {}}',  # a brace in a string
]


@pytest.mark.parametrize("text", _NOT_PLAIN)
def test_interface_text_the_rule_does_not_cover_goes_to_the_walk(routed, text):
    memo = YangMemo(load_reach(sonic_yang.YANG_DIR), sonic_yang._models().tables)
    doc, texts = _interface_text(routed, text)
    assert memo._text_canonical("INTERFACE", texts["INTERFACE"], doc["INTERFACE"]) is None
    walk = YangMemo(memo.reach, memo.tables)
    real = walk._text_canonical
    walk._text_canonical = lambda table, *a: None if table == "INTERFACE" else real(table, *a)
    assert memo.keys(doc, texts) == walk.keys(doc, texts)  # the walk's own keys
    assert validate_config_db(doc, texts=texts) == validate_config_db(doc, memo=False)


def test_interface_texts_with_one_canonical_form_key_alike_and_only_they(routed):
    """Digests from INTERFACE's text: equal where only fitting addresses differ (as the walk's
    canonical forms are), apart wherever the walk's forms differ (a port, a field, the order).
    Other spacing gives another digest: a miss, never a wrong hit."""
    memo = YangMemo(load_reach(sonic_yang.YANG_DIR), sonic_yang._models().tables)
    base = '{"Ethernet16": {}, "Ethernet16|10.1.0.0/31": {}, "Ethernet24": {}, "Ethernet24|10.1.0.2/31": {}}'
    same = ['{"Ethernet16": {}, "Ethernet16|10.9.9.8/30": {}, "Ethernet24": {}, "Ethernet24|1.2.3.4/9": {}}']
    other = ['{"Ethernet16": {}, "Ethernet16|10.1.0.0/31": {}, "Ethernet28": {}, "Ethernet28|10.1.0.2/31": {}}',
             '{"Ethernet16": {"vrf_name": "a"}, "Ethernet16|10.1.0.0/31": {}, "Ethernet24": {}, '
             '"Ethernet24|10.1.0.2/31": {}}',
             '{"Ethernet16|10.1.0.0/31": {}, "Ethernet16": {}, "Ethernet24": {}, "Ethernet24|10.1.0.2/31": {}}']

    def digest(text):
        doc, texts = _interface_text(routed, text)
        got = memo._text_canonical("INTERFACE", texts["INTERFACE"], doc["INTERFACE"])
        assert got is not None
        return got, yang_memo._fingerprint(memo._canonical("INTERFACE", doc["INTERFACE"]))

    first = digest(base)
    for text in same:
        got = digest(text)
        assert got[0] == first[0] and got[1] == first[1]
    for text in other:
        got = digest(text)
        assert got[0] != first[0] and got[1] != first[1]
    doc, texts = _interface_text(routed, same[0])
    assert validate_config_db(doc, texts=texts) == validate_config_db(doc, memo=False) == []


# A switch's own DEVICE_METADATA values around the edges of their types: libyang is the judge
_METADATA = [
    ("bgp_asn", v) for v in ["0", "1", "4200000007", "4294967295", "4294967296", "042", "+1", " 1", "1 ", "0x10",
                             "1e3", "", "-1", "99999999999", "\u0661", "4294967295\n"]
] + [
    ("mac", v) for v in ["02:00:00:00:00:07", "02:AB:cd:Ef:00:07", "02-00-00-00-00-07", "2:00:00:00:00:07",
                         "02:00:00:00:00:07:08", "02:00:00:00:00:0g", "", " 02:00:00:00:00:07", "02:00:00:00:00:0\u0667"]
] + [
    ("hostname", v) for v in ["rail0-leaf7", "x", "h" * 63, "h" * 64, "", "a b", "leaf\u00e9", "tab\there"]
]


@pytest.mark.parametrize("leaf, value", _METADATA)
def test_device_metadata_fit_is_a_value_libyang_accepts(routed, leaf, value):
    """hostname (a typedef'd string), mac (RFC 6991's mac-address) and bgp_asn (its
    as-number, a uint32) are free leaves of DEVICE_METADATA: a value the memo keys as
    fitting must be one libyang accepts, and the memo's verdict is libyang's either way."""
    free = sonic_yang._memo().free["DEVICE_METADATA"]
    assert {"hostname", "mac", "bgp_asn"} <= free.keys()
    doc = copy.deepcopy(routed)
    doc["DEVICE_METADATA"]["localhost"][leaf] = value
    whole = validate_config_db(doc, memo=False)
    if yang_memo._fits(value, free[leaf]):
        assert whole == []
    assert validate_config_db(routed) == [] and validate_config_db(doc) == whole


def test_value_formats_are_read_from_the_models():
    reach = load_reach(sonic_yang.YANG_DIR)["DEVICE_METADATA"]
    assert reach.strings["hostname"] == (1, 63)  # stypes:hostname, a string of 1..63
    assert reach.formats["mac"].patterns == ("[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}",)
    assert reach.formats["bgp_asn"].uint_max == 4294967295
    assert "type" not in reach.strings and "type" not in reach.formats  # a length and a pattern: libyang's


def test_a_leaf_read_by_its_own_table_is_not_free(tmp_path):
    """A leaf one of its own table's constraints reads is keyed by its value; one only another
    table reads is free (that table's projection keys it by text)."""
    body = 'leaf x { type string; must "../y != \'no\'"; } leaf y { type string; } leaf z { type uint32; }'
    reach = load_reach(_models(tmp_path, body))
    memo = YangMemo(reach, {})
    assert "y" not in memo.free["OTHER"] and "z" in memo.free["OTHER"]
