"""The OUTDIR's file names are spelt in one module: railonly.fabric.outdir_layout.

Every other product module (fabric/, emulation/, railonly/) names an OUTDIR file
through it. A string literal that is a path naming one of the layout's files
(``"config_db.json"``, ``f"{d}/frr.conf"``, ``f"{lab}.clab.yml"``) or one of its
folders written as a path (``"configs/"``, ``"lab/x"``) fails here. Prose is left
alone: a literal with a space is a message or help text, not a path; a template's
name (``hosts/rails.sh.j2``) names a package file, and docstrings are text.
"""

from __future__ import annotations

import ast

from railonly.fabric import outdir_layout

from ..conftest import REPO

PRODUCT = ("fabric", "emulation", "railonly")
LAYOUT = "fabric/outdir_layout.py"
# (module, literal) spelt on purpose, with why
ALLOWED = {
    ("fabric/outputs/clab.py", "startup-config"): "containerlab's node key: spelt like EOS's file, another fact",
}
# fabric.json's readers belong to issue 20's "fabric.json parsed in one module" (another
# change, in flight): until it lands, these modules still spell the name they read.
FABRIC_JSON_READERS: set[str] = set()  # fabric.json: named through the layout like every file (its one parser: graph/fabric_json.py)


def layout_names() -> tuple[set[str], set[str], tuple[str, ...]]:
    """(file names, folder names, suffixes) the layout module defines."""
    files: set[str] = set()
    folders: set[str] = set()
    suffixes: list[str] = []
    for name, value in vars(outdir_layout).items():
        if not name.isupper():
            continue
        for v in value if isinstance(value, tuple) else (value,):
            if v.startswith("/"):
                continue  # a switch's own path: its file name is listed on its own
            if v.startswith("."):
                suffixes.append(v)
            elif "." in v or "-" in v:
                files.add(v)
            else:
                folders.add(v)
    return files, folders, tuple(suffixes)


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def spelt_names(source: str) -> list[tuple[int, str]]:
    """(line, literal) of every string literal in `source` that spells an OUTDIR name as a path."""
    files, folders, suffixes = layout_names()
    tree = ast.parse(source)
    docs = _docstrings(tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in docs:
            continue
        s = node.value
        if not s or any(c.isspace() for c in s) or s.endswith(".j2"):
            continue
        parts = [p for p in s.split("/") if p]
        if any(p in files or p.endswith(suffixes) for p in parts) or s.endswith(suffixes) \
                or ("/" in s and any(p in folders for p in parts)):
            out.append((node.lineno, s))
    return sorted(out)


def product_modules() -> list[str]:
    return sorted(str(p.relative_to(REPO)) for d in PRODUCT for p in (REPO / d).rglob("*.py"))


def test_layout_names_each_file_once():
    values = [v for k, v in vars(outdir_layout).items() if k.isupper() and isinstance(v, str)]
    assert len(values) == len(set(values)), values
    files, folders, suffixes = layout_names()
    assert {"MANIFEST.json", "config_db.json", "frr.conf", "startup-config", "cabling.csv", "fabric.json"} <= files
    assert {"configs", "hosts", "lab"} <= folders and ".clab.yml" in suffixes


def test_no_product_module_spells_an_outdir_file_name():
    bad = []
    for rel in product_modules():
        if rel == LAYOUT:
            continue
        for line, literal in spelt_names((REPO / rel).read_text(encoding="utf-8")):
            if (rel, literal) in ALLOWED:
                continue
            if rel in FABRIC_JSON_READERS and literal.strip("/").split("/")[-1] == outdir_layout.FABRIC_JSON:
                continue
            bad.append(f"{rel}:{line}: {literal!r} (name it through railonly.fabric.outdir_layout)")
    assert not bad, "\n".join(bad)


def test_the_check_fails_on_a_spelt_name():
    # the rule is able to fail: each form a path takes in code is caught, prose is not
    source = '''"""A docstring may say config_db.json."""
A = "config_db.json"
B = f"{base}/frr.conf"
C = f"{lab}.clab.yml"
D = "configs/" + name
E = f"lab/{name}"
F = "no frr.conf here"
G = "hosts/rails.sh.j2"
H = "configs"
'''
    assert [lit for _, lit in spelt_names(source)] == ["config_db.json", "/frr.conf", ".clab.yml", "configs/", "lab/"]


def test_allowances_are_still_needed():
    # an allowance whose literal is gone is stale: drop it
    for (rel, literal) in ALLOWED:
        assert literal in [lit for _, lit in spelt_names((REPO / rel).read_text(encoding="utf-8"))], (rel, literal)
