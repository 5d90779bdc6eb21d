"""The README and the docs site: the README is short and points into docs/; the
design and job references are generated from the schemas and up to date; the
command synopsis names every option of the parser; no page points outside the
repository; the site builds with mkdocs --strict."""

import argparse
import os
import re
import shutil
import subprocess
import sys

import pytest

from railonly.fabric.design.design import FIELDS

from ..conftest import REPO

DOCS = REPO / "docs"


def _pages() -> dict[str, str]:
    return {p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8") for p in sorted(DOCS.rglob("*.md"))}


def _paths(fields, prefix=""):
    for name, f in fields.items():
        if f.kind == "section":
            yield from _paths(f.fields, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}"


def test_every_design_key_is_documented():
    page = (DOCS / "reference" / "design.md").read_text()
    missing = [p for p in _paths(FIELDS) if f"| `{p}` |" not in page]
    assert not missing, f"docs/reference/design.md lacks rows for design keys: {missing}"


def test_generated_references_are_up_to_date():
    """docs/reference/{design,job}.md are written by tools/docs_reference.py from the schemas."""
    run = subprocess.run([sys.executable, str(REPO / "tools" / "docs_reference.py"), "--check"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_readme_is_short_and_has_the_two_commands_first():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines (at most 150; details go to docs/)"
    head = "\n".join(lines[:40])
    assert "make demo" in head and "make test" in head
    assert "make test" in (REPO / ".ci" / "run").read_text()


def test_readme_links_every_command_to_a_docs_page_that_exists():
    readme = (REPO / "README.md").read_text()
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert links and all((REPO / link).is_file() for link in links), \
        [link for link in links if not (REPO / link).is_file()]
    from railonly import cli

    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = [name for name in sub.choices if f"`railonly {name}" not in readme]
    assert not missing, f"README.md's command table lacks: {missing}"


def test_no_page_points_outside_the_repository():
    pat = re.compile(r"\.\./shared|\b(?:ARCHITECTURE|EMULATION|PAPER|ANALYSIS)\.md\b|\bContract [1-6]\b")
    pages = {"README.md": (REPO / "README.md").read_text(), **_pages()}
    outside = {name: pat.findall(text) for name, text in pages.items() if pat.search(text)}
    assert not outside, f"pages point outside the repository: {outside}"


def test_docs_name_no_folder_that_does_not_exist():
    """The README listed templates/clab/ long after it was gone."""
    text = "\n".join(_pages().values()) + (REPO / "README.md").read_text()
    named = set(re.findall(r"(?<![\w/.:-])((?:templates|fabric|emulation|railonly|labs|tests|bench|tools)/[\w./-]*[\w/])", text))
    gone = sorted(n for n in named if "<" not in n and "*" not in n and not (REPO / n.rstrip("/")).exists())
    assert not gone, f"docs name paths that do not exist: {gone}"


def test_one_figure_per_measurement():
    """The 1,024-GPU lab check was "about 140 s" in one section and "about 15 s" in another."""
    text = "\n".join(_pages().values())
    assert "about 140 s" not in text and "about 15 s" not in text
    assert text.count("52-112 s") == 2


def test_the_command_synopsis_names_every_option_of_the_parser():
    """The Commands block kept `compile -o OUTDIR [--force]` while --lab-domains, lab traffic
    --schedule and others were added (pages used them, the list did not)."""
    from railonly import cli

    block = (DOCS / "commands" / "index.md").read_text().split("```", 2)[1]
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
    assert not missing, f"docs/commands/index.md lacks: {missing}"


def test_every_command_has_its_page():
    from railonly import cli

    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = [name for name in sub.choices if not (DOCS / "commands" / f"{name}.md").is_file()]
    assert not missing, f"docs/commands/ lacks a page for: {missing}"


_JOB_EXAMPLE = re.compile(r"```yaml\n(?P<job>.*?)```\s*\nSaved as `job\.yml`, it runs as printed: "
                          r"`railonly analyze (?P<design>\S+) job\.yml`\s*\n\((?P<model>model: [^;]+); [^;]+; "
                          r"(?P<memory>[\d.]+ of \d+ GB) per GPU; exit (?P<rc>\d)\)", re.S)


def test_the_analyze_job_examples_run_as_printed(tmp_path, capsys):
    """docs/analyze.md's example job was named llama3-70b but carried a gpt-3-175b preset and
    64 experts: run as printed it was a 3.6-trillion-parameter model that did not fit (exit 1).
    Every job example on the page runs as the sentence after it says: the design, the
    parameter count, the memory per GPU and the exit code."""
    from railonly.cli import main

    page = (DOCS / "analyze.md").read_text()
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", page, re.S) if "parallel:" in b]
    examples = list(_JOB_EXAMPLE.finditer(page))
    assert len(examples) == len(blocks) >= 2, "every job example in docs/analyze.md is followed by how it runs"
    for ex in examples:
        job = tmp_path / "job.yml"
        job.write_text(ex["job"])
        rc = main(["analyze", str(REPO / ex["design"]), str(job)])
        out = capsys.readouterr().out
        assert rc == int(ex["rc"]), out
        assert f"\n{ex['model']}\n" in out, out
        assert f"memory per GPU: {ex['memory']}" in out, out


@pytest.mark.slow
def test_the_site_builds_strict(tmp_path):
    mkdocs = shutil.which("mkdocs", path=os.path.dirname(sys.executable))
    if mkdocs is None:
        pytest.fail("mkdocs is not installed in this environment: install the docs extra (./setup.sh does)")
    run = subprocess.run([mkdocs, "build", "--strict", "-q", "-d", str(tmp_path / "site")], cwd=REPO,
                         capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / "site" / "reference" / "outdir" / "index.html").is_file()
