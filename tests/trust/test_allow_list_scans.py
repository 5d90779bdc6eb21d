"""The allow-list scans' quick paths decide exactly as the careful paths they skip.

validate runs these over every file of a 32k-GPU OUTDIR, so each has a fast test for the
clean case (a str method, one regex over the whole text) before the walk or per-line
loop that names each finding; here a hostile text must still be named as before."""

from __future__ import annotations

import ipaddress
import itertools
import json

import pytest

from railonly.fabric.outdir import reader
from railonly.fabric.validate.rendered import check_inert


@pytest.mark.parametrize("value, named", [
    ("bell\x07", "'bell\\x07'"),  # decoded from the escape \u0007
    ("tab\there", "'tab\\there'"),
    ("caf\u00e9", "'café'"),
    ("del\x7f", "'del\\x7f'"),  # JSON allows DEL unescaped: the quick scan must not miss it
])
def test_a_config_db_value_with_a_control_or_non_ascii_character_is_named(value, named):
    doc = {"DEVICE_METADATA": {"localhost": {"hostname": "leaf0"}}, "PORT": {"Ethernet0": {"description": value}}}
    for text in (json.dumps(doc), json.dumps(doc, ensure_ascii=False)):
        found = reader.check_config_db(json.loads(text), "configs/leaf0/config_db.json", text)
        assert [p.path for p in found] == ["PORT.Ethernet0.description"], text
        assert named in found[0].message


def test_a_clean_config_db_is_passed_by_the_quick_scan_as_by_the_walk():
    doc = {"DEVICE_METADATA": {"localhost": {"hostname": "leaf0"}}, "PORT": {"Ethernet0": {"alias": "a/b \"c\""}}}
    text = json.dumps(doc)  # an escaped quote: a backslash, still nothing odd
    assert reader.check_config_db(json.loads(text), "f", text) == reader.check_config_db(json.loads(text), "f") == []


def test_the_quick_address_form_is_ipaddress_s_own_spelling():
    """fabric_json's regex takes an IPv4 address with its prefix length exactly when ipaddress
    reads it and writes it back the same (the compiler writes str(IPv4Interface))."""
    from railonly.fabric.graph import fabric_json

    octets = ["0", "9", "10", "99", "100", "199", "249", "250", "255", "256", "300", "00", "01", "010", "1000", "٣"]
    lengths = ["0", "9", "10", "29", "32", "33", "00", "08", "100", "", " 8"]
    for a, b, plen in itertools.product(octets, octets, lengths):
        value = f"{a}.1.{b}.1/{plen}"
        try:
            want = str(ipaddress.IPv4Interface(value)) == value
        except ValueError:
            want = False
        assert bool(fabric_json._INTERFACE(value)) is want, value
    assert not fabric_json._INTERFACE("2001:db8::1/64") and not fabric_json._INTERFACE("10.0.0.1")


def test_text_findings_keep_their_lines_past_the_quick_scan():
    long_line = "x" * (reader.MAX_LINE + 1)
    clean = "\n".join(["hostname leaf0"] * 2000)  # longer than one line's limit, no long line
    assert reader._text_problems(clean, "f") == []
    found = reader._text_problems(clean + "\n" + long_line + "\nbad\x01\n", "f")
    assert [(p.line, p.message.split(" ")[0]) for p in found] == [(2001, "line"), (2002, "holds")]


@pytest.mark.parametrize("cell", ["=1+1", "+cmd", "@SUM(A1)", "\tx", '"=1', "-2+3", "-cmd|' /C calc'!A0", '"-@SUM(1)"', "-"])
def test_a_formula_cell_is_named_with_its_line(tmp_path, cell):
    (tmp_path / "cabling.csv").write_text(f"a,b\nx,y\nz,{cell}\n")
    (tmp_path / "bom.csv").write_text("a,b\n1,2\n")
    found = check_inert(str(tmp_path))
    assert [r.id for r in found] == ["trust/cabling.csv"]
    assert found[0].detail.startswith("cabling.csv: line 3: a cell starts with")


@pytest.mark.parametrize("cell", ["-5", "-0.25", '"-3"', "a-b", "x -1"])
def test_a_negative_number_or_an_inner_dash_is_no_formula(tmp_path, cell):
    (tmp_path / "bom.csv").write_text(f"a,b\nx,{cell}\n1,-2\r\n")
    assert check_inert(str(tmp_path)) == []
