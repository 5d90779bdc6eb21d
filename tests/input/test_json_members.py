"""parse_json_members: json.loads' value and errors, plus each top-level member's text."""

from __future__ import annotations

import json

import pytest

from railonly.fabric.input.jsonsource import UntrustedFile, parse_json, parse_json_members


@pytest.mark.parametrize("text", [
    '{}', ' { } ', '{"a": 1}', '{"a":{"b":[1,2,{"c":null}]},"d":"x"}',
    '{"a": 1, "a": {"x": 2}, "b": 3}',  # a repeated name: the last value, in the first one's place
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
