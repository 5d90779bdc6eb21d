"""Design (and job, price) files are hostile input: special files, size, and the
bounded YAML loader the job loader shares. The YAML attacks themselves (alias
bomb, NaN, nesting, duplicate keys ...) are in bad_designs/ with their golden
messages; speed is in bench/bench_hostile_yaml.py."""

from __future__ import annotations

import os

import pytest

from railonly.cli import main
from railonly.fabric.input.problems import InputError
from railonly.fabric.input.yamlsource import DESIGN_LIMITS, Limits, Source, load_yaml_file, parse_yaml

from ..conftest import REPO

BAD = REPO / "tests" / "input" / "bad_designs"


def _compile(path, tmp_path, capsys) -> tuple[int, str]:
    out = tmp_path / "out"
    rc = main(["compile", str(path), "-o", str(out), "-q"])
    err = capsys.readouterr().err
    assert not out.exists(), "nothing may be written for a bad design"
    assert "Traceback" not in err
    return rc, err


def test_fifo_is_refused_without_blocking(tmp_path, capsys):
    fifo = tmp_path / "design.yml"
    os.mkfifo(fifo)  # no writer: a plain open() would block forever
    rc, err = _compile(fifo, tmp_path, capsys)
    assert rc == 2 and "is a FIFO (named pipe), not a regular file" in err and str(fifo) in err


@pytest.mark.parametrize("path,kind", [("/dev/zero", "a device"), ("/dev/null", "a device")])
def test_device_is_refused(path, kind, tmp_path, capsys):
    rc, err = _compile(path, tmp_path, capsys)
    assert rc == 2 and f"is {kind}, not a regular file" in err


def test_directory_is_refused(tmp_path, capsys):
    rc, err = _compile(tmp_path, tmp_path, capsys)
    assert rc == 2 and "is a directory, not a regular file" in err


def test_oversized_file_is_refused_before_parsing(tmp_path, capsys):
    big = tmp_path / "big.yml"
    big.write_text("name: big\n# " + "x" * DESIGN_LIMITS.max_bytes + "\n")
    rc, err = _compile(big, tmp_path, capsys)
    assert rc == 2 and "more than the limit of 1,048,576" in err


def test_not_utf8_is_refused(tmp_path, capsys):
    bad = tmp_path / "latin1.yml"
    bad.write_bytes(b"name: caf\xe9\n")
    rc, err = _compile(bad, tmp_path, capsys)
    assert rc == 2 and "is not UTF-8 text" in err


@pytest.mark.parametrize("name", ["alias-bomb", "nan-inf", "class-e-pool"])
def test_named_attacks_exit_2(name, tmp_path, capsys):
    """The issue's must-show list (alias bomb, NaN, class-E pool): exit 2 with the reason."""
    rc, err = _compile(BAD / f"{name}.yml", tmp_path, capsys)
    assert rc == 2
    assert {"alias-bomb": "expands to more than", "nan-inf": "must be a finite number",
            "class-e-pool": "class E"}[name] in err


def test_alias_bomb_is_refused_by_the_loader_itself():
    text = (BAD / "alias-bomb.yml").read_text()
    with pytest.raises(InputError) as exc:
        parse_yaml(text, "bomb.yml")
    assert "aliases included" in exc.value.problems[0].message


def test_a_few_aliases_still_work():
    src = parse_yaml("a: &x [1, 2]\nb: *x\nc: {<<: {k: 1}, j: 2}\n", "ok.yml")
    assert src.data == {"a": [1, 2], "b": [1, 2], "c": {"k": 1, "j": 2}}
    assert src.lines["b"] == 2 and src.line("c.j") == 3


def test_limits_are_per_caller():
    """A caller with bigger inputs passes its own limits (the OUTDIR reader does)."""
    text = "a: &x [1]\nb: *x\n"
    with pytest.raises(InputError):
        parse_yaml(text, "f", Limits(max_aliases=0))
    assert parse_yaml(text, "f").data == {"a": [1], "b": [1]}


def test_source_api_is_what_loaders_use(tmp_path):
    """The job loader (issue 11) and price books use parse_yaml/load_yaml_file -> Source."""
    f = tmp_path / "x.yml"
    f.write_text("name: x\nnested:\n  key: 3\n")
    src = load_yaml_file(str(f))
    assert isinstance(src, Source) and src.file == str(f) and src.text == f.read_text()
    assert src.data == {"name": "x", "nested": {"key": 3}} and src.line("nested.key") == 3


def test_messages_shorten_offending_values(tmp_path, capsys):
    rc, err = _compile(BAD / "long-values.yml", tmp_path, capsys)
    assert rc == 2 and "(302 characters)" in err and "a" * 100 not in err


@pytest.mark.parametrize("written, read_as", [("010", 8), ("0x10", 16), ("1:30", 90), ("1_0", 10)])
def test_a_number_not_written_in_decimal_is_refused_with_what_yaml_reads(written, read_as):
    """YAML 1.1 reads these silently as other numbers: a count of 010 domains would be 8."""
    with pytest.raises(InputError) as exc:
        parse_yaml(f"hb_domain:\n  count: {written}\n", "d.yml")
    p = exc.value.problems[0]
    assert (p.path, p.line) == ("hb_domain.count", 2) and f"YAML reads it as {read_as}" in p.message
    assert parse_yaml("a: 0\nb: -3\nc: +6\nd: '010'\n", "d.yml").data == {"a": 0, "b": -3, "c": 6, "d": "010"}


@pytest.mark.parametrize("written, said", [
    ("!!int abc", "tagged as a whole number"), ('!!int ""', "tagged as a whole number"),
    ("!!int 0x", "tagged as a whole number"), ("!!float abc", "tagged as a number"),
    ("1:30.5", "YAML reads ':' as base 60"), ("!!timestamp 2019-13-45", "not a date"),
])
def test_a_tagged_value_that_is_not_its_type_is_named_with_its_line(written, said):
    """An explicit tag on text that is not of its type was a traceback from the constructor,
    and a base-60 float read as another number."""
    with pytest.raises(InputError) as exc:
        parse_yaml(f"name: x\nbgp:\n  asn_base: {written}\n", "d.yml")
    p = exc.value.problems[0]
    assert (p.path, p.line, p.file) == ("bgp.asn_base", 3, "d.yml") and said in p.message and p.hint
    assert parse_yaml("a: !!float 1e3\nb: 1_000.5\nc: 2019-01-02\n", "d.yml").data["b"] == 1000.5


@pytest.mark.parametrize("text, path", [
    ('name: x\nsite: "a\\e[31mb"\n', "site"),  # an escape sequence for the terminal
    ('name: x\nsite: "a\\nerror: forged line"\n', "site"),  # a line that looks like railonly's own
    ('name: x\nsite: "a\\u202eb"\n', "site"),  # reverses what a terminal shows
    ('switches:\n  "s\\x9b1m": {radix: 64}\n', "switches.s\x9b1m"),  # a C1 control in a key (a price book's name)
])
def test_a_value_or_key_that_is_not_plain_text_is_named_with_its_line(text, path):
    """Findings: a price book's switch name with ESC and a newline reached bom --detail's table
    raw; a job's preset with a newline forged an `error:` line; a platform file's description
    carried U+202E into bom.csv and README.md."""
    with pytest.raises(InputError) as exc:
        parse_yaml(text, "f.yml")
    p = exc.value.problems[0]
    assert p.path == path and p.line == 2 and "not plain text" in p.message, p


def test_a_character_yaml_refuses_is_named_with_its_line():
    with pytest.raises(InputError) as exc:
        parse_yaml("name: x\nsite: a\x00b\n", "d.yml")
    p = exc.value.problems[0]
    assert p.line == 2 and "'\\x00'" in p.message and p.hint


@pytest.mark.parametrize("key, said", [("null", "nothing (null)"), ("~", "nothing (null)"), ("true", "true/false"),
                                       ("1.50", "the number 1.5")])
def test_a_key_that_is_not_text_is_named_as_written_with_its_line(key, said, tmp_path, capsys):
    """`null: 4` was "y.yml: None: unknown key None", with no line: the checker named the
    Python key, and the loader kept the line under the key as written."""
    f = tmp_path / "y.yml"
    f.write_text((REPO / "labs" / "mini-l2.yml").read_text() + f"{key}: 4\nswitch_extra:\n  {key}: 1\n")
    lines = len(f.read_text().splitlines())
    rc, err = _compile(f, tmp_path, capsys)
    assert rc == 2 and f"y.yml:{lines - 2}: {key}: unknown key {key} (YAML reads it as {said}, not text)" in err, err
    assert "None" not in err and "True" not in err
    src = parse_yaml(f"switch:\n  radix: 8\n  {key}: [1]\n", "d.yml")
    (py,) = [k for k in src.data["switch"] if k != "radix"]
    assert src.line(f"switch.{py}[0]") == 3 and src.shown(f"switch.{py}") == f"switch.{key}"


def test_keys_yaml_reads_as_one_are_duplicates():
    """`null` and `~`, `true` and `on` and `1` are one key to YAML: the second silently replaced the first."""
    for a, b in (("null", "~"), ("true", "on"), ("true", "1"), ("1", "1.0")):
        with pytest.raises(InputError) as exc:
            parse_yaml(f"x:\n  {a}: 1\n  {b}: 2\n", "d.yml")
        p = exc.value.problems[0]
        assert (p.path, p.line) == (f"x.{b}", 3) and f"the same key as '{a}'" in p.message and "line 2" in p.message
    assert parse_yaml("x: {'null': 1, null: 2, '1': 3, 1: 4}\n", "d.yml").data == {"x": {"null": 1, None: 2, "1": 3, 1: 4}}
