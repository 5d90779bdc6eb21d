"""The house's shape, read from the code's own imports (AST, nothing imported).

Every import statement counts, also one inside a function (a lazy import is
still a dependency). The walk fails on an import cycle among the project's
modules and on an import that crosses a layer the wrong way:

- railonly.fabric is the pure core: it never imports railonly.emulation, the
  CLI or ``subprocess``; the one tool it asks (``vtysh -C`` for FRR syntax)
  goes through railonly.proc from a single module;
- ``subprocess`` is imported by railonly.proc alone;
- the rooms of railonly.emulation import only the rooms below them.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from ..conftest import REPO

# room -> rooms it may import (besides itself, railonly.fabric and railonly.proc)
EMULATION_ROOMS: dict[str, set[str]] = {
    "lab": set(),
    "switchcfg": set(),
    "runtime": {"lab"},
    "netns": {"lab", "runtime", "switchcfg"},
    "checks": {"lab", "runtime", "netns"},
    "traffic": {"lab", "runtime", "netns", "checks"},
    "push": {"lab", "runtime", "netns"},
}
PROCESS_GATEWAY = "railonly.proc"
FABRIC_TOOL_USERS = {"railonly.fabric.validate.frr_syntax"}  # the compiler's one outside tool (vtysh -C)


def project_modules() -> dict[str, Path]:
    """module name -> file, from pyproject's package-dir (the installed layout)."""
    conf = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    out: dict[str, Path] = {}
    for package, folder in conf["package-dir"].items():
        for f in sorted((REPO / folder).glob("*.py")):
            out[package if f.stem == "__init__" else f"{package}.{f.stem}"] = f
    return out


def imports_of(name: str, path: Path) -> set[str]:
    """Every module ``name`` imports (absolute names; ``from X import y`` gives X and X.y)."""
    is_package = path.stem == "__init__"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def import_graph() -> dict[str, set[str]]:
    """Project module -> the project modules it imports (a package's __init__ is not an edge
    of its own children: importing railonly.emulation.netns.engine names the package too)."""
    mods = project_modules()
    graph = {}
    for name, path in mods.items():
        targets = {m for m in imports_of(name, path) if m in mods and m != name}
        graph[name] = {t for t in targets if not name.startswith(t + ".")}
    return graph


def external_imports(name: str) -> set[str]:
    mods = project_modules()
    return {m.split(".")[0] for m in imports_of(name, mods[name]) if m not in mods}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def room_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["railonly", "emulation"] or len(parts) < 3:
        return None
    return parts[2]


def layer_violations(graph: dict[str, set[str]], external: dict[str, set[str]]) -> list[str]:
    bad = []
    for mod, targets in sorted(graph.items()):
        for t in sorted(targets):
            if mod.startswith("railonly.fabric"):
                if t.startswith("railonly.emulation") or t.startswith("railonly.cli.commands") or t == "railonly.cli":
                    bad.append(f"{mod} imports {t}: the pure compiler depends on no edge")
                if t == PROCESS_GATEWAY and mod not in FABRIC_TOOL_USERS:
                    bad.append(f"{mod} imports {t}: only {sorted(FABRIC_TOOL_USERS)} may ask a tool")
            if mod.startswith("railonly.emulation") and (t.startswith("railonly.cli.commands") or t == "railonly.cli"):
                bad.append(f"{mod} imports {t}: the emulation never imports the CLI")
            src, dst = room_of(mod), room_of(t)
            if src and dst and src != dst and dst not in EMULATION_ROOMS.get(src, set()):
                bad.append(f"{mod} imports {t}: room {src} may import only {sorted(EMULATION_ROOMS.get(src, set()))}")
    for mod, ext in sorted(external.items()):
        if "subprocess" in ext and mod != PROCESS_GATEWAY:
            bad.append(f"{mod} imports subprocess: processes start in {PROCESS_GATEWAY} alone")
    return bad


# --- the house ---------------------------------------------------------------------------


def test_the_walk_sees_the_whole_house():
    graph = import_graph()
    assert "railonly.emulation.netns.engine" in graph and "railonly.fabric.compiler" in graph
    assert "railonly.emulation.netns.setns" in graph["railonly.emulation.netns.engine"]
    # a lazy import inside a function is an edge too
    assert "railonly.emulation.checks.run" in graph["railonly.emulation.traffic.iperf3"]
    assert set(EMULATION_ROOMS) == {room_of(m) for m in graph if room_of(m)}


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_layers_hold():
    graph = import_graph()
    assert layer_violations(graph, {m: external_imports(m) for m in graph}) == []


# --- the walk can fail ---------------------------------------------------------------------


def test_a_cycle_is_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("edge, external, word", [
    (("railonly.fabric.outputs.clab", "railonly.emulation.lab"), {}, "pure compiler"),
    (("railonly.fabric.compiler", "railonly.proc"), {}, "may ask a tool"),
    (("railonly.emulation.netns.engine", "railonly.emulation.checks.plan"), {}, "room netns"),
    (("railonly.emulation.lab", "railonly.emulation.runtime.protocol"), {}, "room lab"),
    (("railonly.emulation.push.run", "railonly.cli"), {}, "never imports the CLI"),
    (None, {"railonly.fabric.validate.frr_syntax": {"subprocess"}}, "subprocess"),
])
def test_a_layer_violation_is_found(edge, external, word):
    graph = {edge[0]: {edge[1]}} if edge else {}
    bad = layer_violations(graph, external)
    assert len(bad) == 1 and word in bad[0]


def test_relative_imports_resolve(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("from . import a\nfrom ..lab import Lab\ndef g():\n    from .b import c\n")
    got = imports_of("railonly.emulation.netns.x", f)
    assert {"railonly.emulation.netns.a", "railonly.emulation.lab", "railonly.emulation.netns.b.c"} <= got
