"""parse_json_members: json.loads' value and errors, plus each top-level member's text."""

from __future__ import annotations

import json

import pytest

from railonly.fabric.input.jsonsource import UntrustedFile, parse_json, parse_json_members


@pytest.mark.parametrize("text", [
    '{}', ' { } ', '{"a": 1}', '{"a":{"b":[1,2,{"c":null}]},"d":"x"}',
    '\n{\n  "PORT": {"Ethernet0": {"mtu": "9100"}},\n  "\\u00e9t\\"e": "v"\n}\n',
    '[1, 2]', '"text"', '3', 'null',
])
def test_value_is_json_loads_and_members_are_the_written_texts(text):
    doc, members = parse_json_members(text, "f.json")
    want = json.loads(text)
    assert doc == want
    if not isinstance(want, dict):
        assert members is None
    else:
        assert list(doc) == list(want)  # the members' order too
        assert list(members) == list(doc)
        assert all(json.loads(members[k]) == v for k, v in doc.items())


@pytest.mark.parametrize("text", [
    '', '{', '{"a"}', '{"a": 1,}', '{"a": 1} x', '{"a": NaN}', '{"a": Infinity}', "{'a': 1}",
    '{"a": 1 "b": 2}', '{"a": [' * 100000,
])
def test_errors_are_parse_json_s_own(text):
    with pytest.raises(UntrustedFile) as want:
        parse_json(text, "f.json")
    with pytest.raises(UntrustedFile) as got:
        parse_json_members(text, "f.json")
    assert got.value.problems == want.value.problems


@pytest.mark.parametrize("text, key, line", [
    ('{"a": 1, "a": {"x": 2}, "b": 3}', "a", 1),  # json.loads kept the last value without a word
    ('{\n "files": {\n  "README.md": "bad",\n  "README.md": "5d94"\n }\n}', "README.md", 4),
    ('{"PORT": {"E0": {"mtu": "9100",\n "mtu": "1500"}},\n "X": {}}', "mtu", 2),  # inside a member
    ('[{"n": {}},\n {"z": 1,\n  "z" : 3}]', "z", 3),  # not an object at the top
    ('{"a": 1,\n "\\u0061": 2}', "a", 2),  # the same name however it is escaped
])
def test_a_repeated_name_is_refused_naming_it_and_its_line(text, key, line):
    """OUTDIR JSON is machine-written: a name given twice in one object hides a value from
    whoever reads the first (validate saw the last of MANIFEST.json's two hashes)."""
    for parse in (parse_json, parse_json_members):
        with pytest.raises(UntrustedFile) as got:
            parse(text, "f.json")
        p = got.value.problems[0]
        assert p.file == "f.json" and p.line == line and f"the name {key!r} is given twice in one object" in p.message
    with pytest.raises(UntrustedFile):  # a top-level table repeated, after one remembered
        _docs_through_one_cache(['{"Q": {"a": 1}}', '{"Q": {"a": 1}, "Q": {"a": 1}}'])


def test_load_json_file_is_none_for_a_repeated_name(tmp_path):
    from railonly.fabric.input.jsonsource import load_json_file

    (tmp_path / "m.json").write_text('{"files": {"a": "1", "a": "2"}}')
    (tmp_path / "ok.json").write_text('{"files": {"a": "1"}}')
    assert load_json_file(str(tmp_path / "m.json"), 100) is None
    assert load_json_file(str(tmp_path / "ok.json"), 100) == {"files": {"a": "1"}}


def _docs_through_one_cache(texts):
    from railonly.fabric.input.jsonsource import RepeatedMembers

    repeated = RepeatedMembers()
    return [parse_json_members(t, "f.json", repeated) for t in texts]


@pytest.mark.parametrize("later", [
    '{"Q": {"a": {"x": "1"}}, "P": {"p": 1}}',  # the same tables: values reused
    '{"Q": {"a": {"x": "2"}}, "P": {"p": 1}}',  # one value changed inside a repeated table
    '{"Q": {"a": {"x": "1"}, "b": {}}, "P": {"p": 1}}',  # the earlier text is a prefix of the table's
    '{"Q": {"a": {"x": "1"}} , "P": {"p": 1}}',  # other whitespace after it
    '{"Q":{"a": {"x": "1"}}, "P": {"p": 1}}',
    '{"P": {"p": 1}, "Q": {"a": {"x": "1"}}}',  # other order
    '{"Q": {"a": {"x": "1"}}, "P": {"p": 10}}',  # 1 is a prefix of 10
    '{"Q": {"a": {"x": "1"}}, "P": [1]}',
])
def test_repeated_members_decode_as_json_loads(later):
    """A member whose text starts like one decoded before is only reused when it is that text:
    every document equals json.loads', whatever was remembered from the ones before it."""
    first = '{"Q": {"a": {"x": "1"}}, "P": {"p": 1}, "N": 1, "S": "a"}'
    texts = [first, later, first, later, '{"N": 10, "S": "a\\\\"}']  # a number or string text ends nothing
    for text, (doc, members) in zip(texts, _docs_through_one_cache(texts)):
        want = json.loads(text)
        assert doc == want and list(doc) == list(want) and list(members) == list(want)
        assert all(json.loads(members[k]) == v for k, v in doc.items())


@pytest.mark.parametrize("later", ['{"Q": {"a": {"x": "1"}}, "P": {"p": 1}', '{"Q": {"a": {"x": "1"}}, "P": NaN}',
                                   '{"Q": {"a": {"x": "1"}}} x'])
def test_repeated_members_keep_parse_json_s_errors(later):
    """A document that breaks after a repeated table fails as parse_json says, cache or not."""
    with pytest.raises(UntrustedFile) as want:
        parse_json(later, "f.json")
    with pytest.raises(UntrustedFile) as got:
        _docs_through_one_cache(['{"Q": {"a": {"x": "1"}}}', later])
    assert got.value.problems == want.value.problems


def test_repeated_members_are_bounded():
    """At most PER_NAME texts per name, the latest used first; beyond MAX_CHARS all forgotten."""
    from railonly.fabric.input.jsonsource import RepeatedMembers

    repeated = RepeatedMembers()
    texts = [json.dumps({"T": {"k": i}}) for i in range(RepeatedMembers.PER_NAME + 3)]
    for doc, _members in (parse_json_members(t, "f.json", repeated) for t in texts + texts[::-1]):
        assert doc in [json.loads(t) for t in texts]
    assert len(repeated._by_name["T"]) == RepeatedMembers.PER_NAME
    small = RepeatedMembers()
    small.MAX_CHARS = 40
    for t in texts:
        assert parse_json_members(t, "f.json", small)[0] == json.loads(t)
    assert small._chars <= 40
    assert small._chars == sum(len(t) for kept in small._by_name.values() for t, _v in kept)
