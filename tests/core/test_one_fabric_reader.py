"""fabric.json is parsed in one module (railonly.fabric.graph.fabric_json), read from the code (AST).

Every other module gets the typed graph from it (``OutdirReader.read_fabric``,
``fabric_json.parse``) and never decodes the file itself. The scan fails on

- the file name spelled as a path (``"fabric.json"``, ``f"{base}/fabric.json"``) outside
  the modules that own the name (the parser, and the OUTDIR reader that finds the lab's
  copy); everyone else asks them (``fabric_json.FILE``, ``lab_fabric_rel``);
- a JSON decode (json.load/loads, parse_json, read_json) of a value that comes from the
  file's name: the argument mentions it, or a name assigned from it in the same function
  (``fabric_file = ...``, ``with open(fabric_file) as fh``, ``json.load(fh)``).

The typed readers' results carry no taint: a switch read back names config files, not fabric.json.
"""

from __future__ import annotations

import ast
from pathlib import Path

from ..conftest import REPO
from .test_layers import _copy_of_the_house, project_modules

PARSER = "railonly.fabric.graph.fabric_json"
NAME_OWNERS = {PARSER, "railonly.fabric.outdir.reader", "railonly.fabric.outdir_layout"}  # the layout defines the name
DECODERS = {"load", "loads", "parse_json", "read_json"}
TYPED_READERS = {"read_fabric", "parse", "from_doc"}  # their result is the typed graph, not the file
PATH_OF_THE_FILE = {"lab_fabric_rel", "lab_files"}  # the reader's answers: where the lab's fabric.json is


def _names_the_file(value: str) -> bool:
    return value == "fabric.json" or value.endswith("/fabric.json")


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _mentions(expr: ast.AST, tainted: set[str]) -> bool:
    """Does `expr` carry the file's name (a literal, fabric_json.FILE, the reader's path, a tainted name)?"""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call) and _call_name(node) in TYPED_READERS:
            continue
        if isinstance(node, ast.Call) and _call_name(node) in PATH_OF_THE_FILE:
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "fabric.json" in node.value:
            return True
        if isinstance(node, ast.Attribute) and node.attr == "FILE" and isinstance(node.value, ast.Name) \
                and node.value.id == "fabric_json":
            return True
        if isinstance(node, (ast.Name, ast.Attribute)) and getattr(node, "id", getattr(node, "attr", "")) == "FABRIC_JSON":
            return True  # railonly.fabric.outdir_layout's name for it
        if isinstance(node, ast.Name) and node.id in tainted:
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def _targets(node: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
    """(target, value) pairs a statement binds."""
    if isinstance(node, ast.Assign):
        return [(t, node.value) for t in node.targets]
    if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
        return [(node.target, node.value)]
    if isinstance(node, (ast.For, ast.comprehension)):
        return [(node.target, node.iter)]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [(node.optional_vars, node.context_expr)]
    return []


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of a module or function body, without the bodies of the functions inside it
    (each is a scope of its own: one function's `text` is not another's)."""
    out, stack = [], list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return out


def _decodes_in(scope: ast.AST) -> list[int]:
    """Lines of `scope` (a function or module body) that decode a value from fabric.json's name."""
    tainted: set[str] = set()
    nodes = _own_nodes(scope)
    grew = True
    while grew:  # names assigned from tainted values, to a fixed point
        grew = False
        for node in nodes:
            for target, value in _targets(node):
                if _mentions(value, tainted):
                    for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
                        if name not in tainted:
                            tainted.add(name)
                            grew = True
    return [node.lineno for node in nodes
            if isinstance(node, ast.Call) and _call_name(node) in DECODERS
            and any(_mentions(a, tainted) for a in [*node.args, *(k.value for k in node.keywords)])]


def fabric_json_readers(root: Path = REPO) -> list[str]:
    """Every place outside the parser that reads fabric.json by itself."""
    out = []
    for mod, path in sorted(project_modules(root).items()):
        if mod == PARSER:
            continue
        tree = ast.parse(path.read_text(), str(path))
        rel = path.relative_to(root)
        if mod not in NAME_OWNERS:
            out += [f"{rel}:{n.lineno}: spells {n.value!r} as a path; use fabric_json.FILE or the OUTDIR reader "
                    "(OutdirReader.read_fabric, lab_fabric_rel)"
                    for n in ast.walk(tree)
                    if isinstance(n, ast.Constant) and isinstance(n.value, str) and _names_the_file(n.value)]
        scopes = [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        lines = sorted({line for s in scopes for line in _decodes_in(s)})
        out += [f"{rel}:{line}: decodes fabric.json itself; read it through fabric_json.parse "
                "(OutdirReader.read_fabric for an OUTDIR)" for line in lines]
    return out


def test_fabric_json_is_parsed_in_one_module():
    assert fabric_json_readers() == []


def test_the_scan_finds_a_second_reader(tmp_path):
    """The scan on a copy of the house, with three ways back to raw JSON added to one module."""
    root = _copy_of_the_house(tmp_path)
    assert fabric_json_readers(root) == []
    plan = root / "emulation" / "checks" / "check_plan.py"
    base = plan.read_text()
    cases = {
        "open and json.load": ("\n\ndef _raw(outdir):\n    import json\n    path = outdir + '/fabric.json'\n"
                               "    with open(path) as fh:\n        return json.load(fh)\n", 2),  # the name, the decode
        "the reader's path, raw JSON": ("\n\ndef _raw(reader):\n    from railonly.fabric.outdir.reader import lab_fabric_rel\n"
                                        "    rel = lab_fabric_rel(reader)\n    return reader.read_json(rel)\n", 1),
        "the name in a constant": ("\n\nFABRIC = 'fabric.json'\n", 1),
    }
    for what, (code, found) in cases.items():
        plan.write_text(base + code)
        bad = fabric_json_readers(root)
        assert len(bad) == found and all(b.startswith("emulation/checks/check_plan.py:") for b in bad), (what, bad)
    # the typed reader's result is not the file: walking it to its switches' configs is fine
    plan.write_text(base + "\n\ndef _typed(reader):\n    from railonly.fabric.outdir.reader import parse_json\n"
                    "    fab = reader.read_fabric()\n    for sw in fab.switches:\n"
                    "        parse_json(reader.read_text(f'configs/{sw.name}/config_db.json'), sw.name)\n")
    assert fabric_json_readers(root) == []
