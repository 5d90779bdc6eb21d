"""The README documents every design key (the key table must keep up with FIELDS)."""

from railonly.fabric.design import FIELDS

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
