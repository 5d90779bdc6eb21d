"""The README documents every design key (the key table must keep up with FIELDS)."""

from railonly.fabric.design.design import FIELDS

from ..conftest import REPO


def _paths(fields, prefix=""):
    for name, f in fields.items():
        if f.kind == "section":
            yield from _paths(f.fields, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}"


def test_every_design_key_is_documented():
    readme = (REPO / "README.md").read_text()
    missing = [p for p in _paths(FIELDS) if f"| `{p}` |" not in readme]
    assert not missing, f"README.md lacks rows for design keys: {missing}"


def test_first_screen_has_the_two_commands():
    head = "\n".join((REPO / "README.md").read_text().splitlines()[:25])
    assert "make demo" in head and "make test" in head
    assert "make test" in (REPO / ".ci" / "run").read_text()


def test_readme_names_no_file_outside_the_repository():
    import re

    readme = (REPO / "README.md").read_text()
    outside = re.findall(r"\.\./[\w./-]+|\b(?:ARCHITECTURE|EMULATION|PAPER|ANALYSIS)\.md\b", readme)
    assert outside == [], f"README.md points outside the repository: {outside}"


def test_readme_has_one_figure_per_measurement():
    """The 1,024-GPU lab check was "about 140 s" in one section and "about 15 s" in another."""
    readme = (REPO / "README.md").read_text()
    assert "about 140 s" not in readme and "about 15 s" not in readme
    assert readme.count("52-112 s") == 2


def test_the_command_list_names_every_option_of_the_parser():
    """The Commands block kept `compile -o OUTDIR [--force]` while --lab-domains, lab traffic
    --schedule and others were added (README sections used them, the list did not)."""
    import argparse

    from railonly import cli

    block = (REPO / "README.md").read_text().split("## Commands", 1)[1].split("```", 2)[1]
    common = {"-h", "--help", "-q", "--quiet", "-v", "--verbose", "--no-color", "--version"}

    def leaves(parser, path=()):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield path, parser
        for action in subs:
            for name, sub in action.choices.items():
                yield from leaves(sub, (*path, name))

    missing = [f"{' '.join(path)} {a.option_strings[-1]}" for path, p in leaves(cli.build_parser())
               for a in p._actions if a.option_strings and not set(a.option_strings) & common
               and not any(o in block for o in a.option_strings)]
    assert not missing, f"README.md Commands lacks: {missing}"
