"""The house's shape, read from the code's own imports (AST, nothing imported).

Every import statement counts, also one inside a function (a lazy import is
still a dependency). Module names come from pyproject's package-dir, so the
installed names (railonly.fabric.graph.model) resolve to their folders
(fabric/graph/model.py). The walk fails on an import cycle among the project's
modules and on an import that crosses a layer the wrong way:

- railonly.fabric is the pure core: it never imports railonly.emulation, the
  CLI (railonly.cli and its commands) or ``subprocess``; the one tool it asks
  (``vtysh -C`` for FRR syntax) goes through railonly.proc from a single module;
- fabric's rooms import only the rooms below them (:data:`FABRIC_ROOMS`); the
  modules directly in fabric/ are the facade, the compiler and edge utilities
  that import no room and no other module of fabric but safe_text (the escaping
  of outside text, a leaf); no room imports the facade;
- ``subprocess`` is imported by railonly.proc alone; railonly.proc and
  railonly.console are leaves that import nothing of the CLI or the emulation;
- the rooms of railonly.emulation import only the rooms below them;
- the CLI reaches a runtime through its doors (:data:`RUNTIME_DOORS`: the Runtime
  protocol, the registry, the lock and run dir every runtime shares), never the
  netns runtime's internals.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

from ..conftest import REPO

# fabric's rooms, bottom up: room -> the rooms it may import (besides itself)
_STAGES = ["input", "platforms", "design", "graph"]
FABRIC_ROOMS: dict[str, set[str]] = {
    "input": set(),
    "platforms": {"input"},
    "design": {"input", "platforms"},
    "graph": {"input", "platforms", "design"},
    "devices": set(_STAGES),
    "cost": set(_STAGES),
    "outputs": set(_STAGES) | {"devices", "cost"},
    "outdir": set(_STAGES) | {"devices", "cost", "outputs"},
    "validate": set(_STAGES) | {"devices", "cost", "outputs", "outdir"},
    "analysis": set(_STAGES) | {"cost"},
}
FABRIC = "railonly.fabric"  # the facade (fabric/__init__.py)
FABRIC_COMPILER = "railonly.fabric.compiler"  # the top: every producer, in order
# Edge utilities directly in fabric/ (and outdir_layout, the OUTDIR's file names): any room
# may use them; they import no room.
FABRIC_EDGE = {f"railonly.fabric.{m}" for m in ("parallel", "progress", "results", "safe_text", "version", "outdir_layout")}
FABRIC_LEAF = "railonly.fabric.safe_text"  # below the edge utilities too: the JUnit form escapes with it
MAX_FABRIC_TOP_MODULES = 12
LEAF_UTILITIES = {"railonly.proc", "railonly.console"}  # below the CLI and the emulation

# emulation room -> rooms it may import (besides itself, railonly.fabric and railonly.proc)
EMULATION_ROOMS: dict[str, set[str]] = {
    "lab": set(),
    "runtime": {"lab"},
    "checks": {"lab", "runtime"},
    "traffic": {"lab", "runtime", "checks"},
    "push": {"lab", "runtime"},
}
# The runtime's doors: the only modules of railonly.emulation.runtime another room may
# import. Checks, traffic, replay, faults and push reach nodes through the Runtime
# protocol; the netns runtime's internals (setns, frr, pids, sshd ...) are its own.
RUNTIME_DOORS = {f"railonly.emulation.runtime.{m}" for m in ("protocol", "registry", "lock", "outdir_writer", "rundir")}
RUNTIME_DOORS.add("railonly.emulation.runtime")
PROCESS_GATEWAY = "railonly.proc"
FABRIC_TOOL_USERS = {"railonly.fabric.validate.frr_syntax"}  # the compiler's one outside tool (vtysh -C)


def project_modules(root: Path = REPO) -> dict[str, Path]:
    """module name -> file, from pyproject's package-dir (the installed layout)."""
    conf = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    out: dict[str, Path] = {}
    for package, folder in conf["package-dir"].items():
        for f in sorted((root / folder).glob("*.py")):
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


def import_graph(root: Path = REPO) -> dict[str, set[str]]:
    """Project module -> the project modules it imports (a package's __init__ is not an edge
    of its own children: importing railonly.emulation.runtime.netns.engine names the package too)."""
    mods = project_modules(root)
    graph = {}
    for name, path in mods.items():
        targets = {m for m in imports_of(name, path) if m in mods and m != name}
        graph[name] = {t for t in targets if not name.startswith(t + ".")}
    return graph


def external_imports(name: str, root: Path = REPO) -> set[str]:
    mods = project_modules(root)
    return {m.split(".")[0] for m in imports_of(name, mods[name]) if m not in mods}


def facade_names(root: Path = REPO) -> set[str]:
    """What fabric/__init__.py defines (the facade's functions), as railonly.fabric.<name>."""
    tree = ast.parse((root / "fabric" / "__init__.py").read_text())
    return {f"{FABRIC}.{n.name}" for n in tree.body if isinstance(n, ast.FunctionDef)}


def facade_users(root: Path = REPO) -> list[str]:
    """Modules of railonly.fabric (but the facade) that import a name of the facade: the
    facade imports every room, so such an import would close a circle."""
    names = facade_names(root)
    return sorted(f"{mod} imports {n}: no room imports the facade (it imports every room)"
                  for mod, path in project_modules(root).items()
                  if mod.startswith(FABRIC + ".") for n in sorted(imports_of(mod, path) & names))


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


def fabric_room_of(module: str) -> str | None:
    """railonly.fabric.<room>[.x] -> room; None outside fabric and for fabric's top modules."""
    parts = module.split(".")
    if parts[:2] != ["railonly", "fabric"] or len(parts) < 3 or f"{FABRIC}.{parts[2]}" in FABRIC_EDGE | {FABRIC_COMPILER}:
        return None
    return parts[2]


def is_cli(module: str) -> bool:
    return module == "railonly.cli" or module.startswith("railonly.cli.")


def layer_violations(graph: dict[str, set[str]], external: dict[str, set[str]]) -> list[str]:
    bad = []
    for mod, targets in sorted(graph.items()):
        for t in sorted(targets):
            if mod.startswith("railonly.fabric"):
                if t.startswith("railonly.emulation") or is_cli(t):
                    bad.append(f"{mod} imports {t}: the pure compiler depends on no edge")
                if t == PROCESS_GATEWAY and mod not in FABRIC_TOOL_USERS:
                    bad.append(f"{mod} imports {t}: only {sorted(FABRIC_TOOL_USERS)} may ask a tool")
                src, dst = fabric_room_of(mod), fabric_room_of(t)
                if src and dst and src != dst and dst not in FABRIC_ROOMS.get(src, set()):
                    bad.append(f"{mod} imports {t}: fabric room {src} may import only {sorted(FABRIC_ROOMS.get(src, set()))}")
                if src and t == FABRIC_COMPILER:
                    bad.append(f"{mod} imports {t}: the compiler is the top of fabric; a room imports only rooms below it")
                if mod in FABRIC_EDGE and t.startswith(FABRIC + ".") and (t != FABRIC_LEAF or mod == FABRIC_LEAF):
                    bad.append(f"{mod} imports {t}: an edge utility of fabric imports nothing of fabric")
            if mod in LEAF_UTILITIES and (is_cli(t) or t.startswith("railonly.emulation")):
                bad.append(f"{mod} imports {t}: a leaf utility imports nothing of the CLI or the emulation")
            if mod.startswith("railonly.emulation") and is_cli(t):
                bad.append(f"{mod} imports {t}: the emulation never imports the CLI")
            if is_cli(mod) and room_of(t) == "runtime" and t not in RUNTIME_DOORS:
                bad.append(f"{mod} imports {t}: the CLI reaches a runtime through its doors ({sorted(RUNTIME_DOORS)}),"
                           f" never its internals")
            src, dst = room_of(mod), room_of(t)
            if src and dst and src != dst and dst not in EMULATION_ROOMS.get(src, set()):
                bad.append(f"{mod} imports {t}: room {src} may import only {sorted(EMULATION_ROOMS.get(src, set()))}")
            elif src and src != "runtime" and dst == "runtime" and t not in RUNTIME_DOORS:
                bad.append(f"{mod} imports {t}: the runtime's internals are its own; room {src} reaches nodes "
                           f"through the Runtime protocol ({sorted(RUNTIME_DOORS)})")
    for mod, ext in sorted(external.items()):
        if "subprocess" in ext and mod != PROCESS_GATEWAY:
            bad.append(f"{mod} imports subprocess: processes start in {PROCESS_GATEWAY} alone")
    return bad


# A branch on which runtime one has: the back door the Runtime protocol closes.
RUNTIME_BRANCH = re.compile(r"\brt\.name\s*==|\bhasattr\(\s*rt\b|\bruntime\.name\s*==")


def runtime_branches(root: Path = REPO) -> list[str]:
    """file:line of every branch on a runtime's name or attributes in emulation/ and railonly/."""
    out = []
    for top in ("emulation", "railonly"):
        for f in sorted((root / top).rglob("*.py")):
            for i, line in enumerate(f.read_text().splitlines(), 1):
                if RUNTIME_BRANCH.search(line):
                    out.append(f"{f.relative_to(root)}:{i}: {line.strip()}")
    return out


# --- the house ---------------------------------------------------------------------------


def test_the_walk_sees_the_whole_house():
    graph = import_graph()
    assert "railonly.emulation.runtime.netns.engine" in graph and "railonly.fabric.compiler" in graph
    assert "railonly.emulation.runtime.netns.setns" in graph["railonly.emulation.runtime.netns.engine"]
    # a lazy import inside a function is an edge too
    assert "railonly.emulation.checks.checker" in graph["railonly.emulation.traffic.iperf3"]
    assert set(EMULATION_ROOMS) == {room_of(m) for m in graph if room_of(m)}
    assert "railonly.fabric.graph.model" in graph["railonly.fabric.graph.build"]
    assert "railonly.cli.commands.compile" in graph


def test_every_fabric_module_is_in_a_room_or_named_at_the_top():
    """A new module goes into the room of its stage; the top of fabric/ stays small."""
    graph = import_graph()
    assert set(FABRIC_ROOMS) == {fabric_room_of(m) for m in graph if fabric_room_of(m)}
    top = sorted(m for m in graph if m.startswith(FABRIC) and not fabric_room_of(m))
    assert top == sorted(FABRIC_EDGE | {FABRIC, FABRIC_COMPILER})
    assert len(list((REPO / "fabric").glob("*.py"))) <= MAX_FABRIC_TOP_MODULES
    for room in FABRIC_ROOMS:
        doc = ast.get_docstring(ast.parse((REPO / "fabric" / room / "__init__.py").read_text()))
        assert doc and "May import" in doc, f"fabric/{room}/__init__.py says its job and what it may import"


def test_fabric_rooms_are_stages():
    """The allowed imports themselves form floors: no room may import one that may import it."""
    assert cycles({r: set(allowed) for r, allowed in FABRIC_ROOMS.items()}) == []
    assert all(allowed <= set(FABRIC_ROOMS) for allowed in FABRIC_ROOMS.values())
    # allowed sets are closed downwards: a room may use what its rooms below may use
    for room, allowed in FABRIC_ROOMS.items():
        for below in allowed:
            assert FABRIC_ROOMS[below] <= allowed, (room, below)


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_layers_hold():
    graph = import_graph()
    assert layer_violations(graph, {m: external_imports(m) for m in graph}) == []


def test_nothing_branches_on_the_runtime():
    assert runtime_branches() == []


def test_no_room_imports_the_facade():
    assert facade_names() >= {f"{FABRIC}.load_design", f"{FABRIC}.compile_design", f"{FABRIC}.validate_outdir"}
    assert facade_users() == []


# --- the walk can fail ---------------------------------------------------------------------


def test_a_cycle_is_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("edge, external, word", [
    (("railonly.fabric.outputs.clab", "railonly.emulation.lab"), {}, "pure compiler"),
    (("railonly.fabric.design.design", "railonly.fabric.graph.model"), {}, "fabric room design"),
    (("railonly.fabric.input.schema", "railonly.fabric.graph.addressing"), {}, "fabric room input"),
    (("railonly.fabric.cost.bom", "railonly.fabric.devices.device"), {}, "fabric room cost"),
    (("railonly.fabric.analysis.job", "railonly.fabric.outdir.reader"), {}, "fabric room analysis"),
    (("railonly.fabric.outputs.docs", "railonly.fabric.compiler"), {}, "top of fabric"),
    (("railonly.fabric.parallel", "railonly.fabric.graph.model"), {}, "edge utility"),
    (("railonly.fabric.graph.build", "railonly.cli.commands.compile"), {}, "pure compiler"),
    (("railonly.proc", "railonly.cli"), {}, "leaf utility"),
    (("railonly.console", "railonly.emulation.lab"), {}, "leaf utility"),
    (("railonly.fabric.compiler", "railonly.proc"), {}, "may ask a tool"),
    (("railonly.emulation.runtime.netns.engine", "railonly.emulation.checks.check_plan"), {}, "room runtime"),
    (("railonly.emulation.lab", "railonly.emulation.runtime.protocol"), {}, "room lab"),
    (("railonly.emulation.push.pusher", "railonly.cli"), {}, "never imports the CLI"),
    (("railonly.emulation.checks.probe", "railonly.emulation.runtime.netns.setns"), {}, "runtime's internals"),
    (("railonly.emulation.traffic.faults", "railonly.emulation.runtime.netns.frr"), {}, "runtime's internals"),
    (("railonly.emulation.push.targets", "railonly.emulation.runtime.containerlab"), {}, "runtime's internals"),
    (("railonly.cli.commands.lab", "railonly.emulation.runtime.netns.runtime"), {}, "CLI reaches a runtime"),
    (("railonly.cli.commands.push", "railonly.emulation.runtime.containerlab"), {}, "CLI reaches a runtime"),
    (None, {"railonly.fabric.validate.frr_syntax": {"subprocess"}}, "subprocess"),
])
def test_a_layer_violation_is_found(edge, external, word):
    graph = {edge[0]: {edge[1]}} if edge else {}
    bad = layer_violations(graph, external)
    assert len(bad) == 1 and word in bad[0]


def _copy_of_the_house(tmp_path: Path) -> Path:
    root = tmp_path / "house"
    root.mkdir()
    (root / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    for top in ("fabric", "emulation", "railonly"):
        for f in (REPO / top).rglob("*.py"):
            dest = root / f.relative_to(REPO)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(f.read_text())
    return root


def test_the_real_walk_fails_when_a_room_imports_upwards(tmp_path):
    """The whole walk on a copy of the house, with one import added that runs back up."""
    root = _copy_of_the_house(tmp_path)
    graph = import_graph(root)
    assert layer_violations(graph, {m: external_imports(m, root) for m in graph}) == []
    clos = root / "fabric" / "design" / "clos.py"
    clos.write_text(clos.read_text() + "\n\ndef _late():\n    from ..graph.model import Fabric\n    return Fabric\n")
    graph = import_graph(root)
    bad = layer_violations(graph, {m: external_imports(m, root) for m in graph})
    assert bad == ["railonly.fabric.design.clos imports railonly.fabric.graph.model: "
                   "fabric room design may import only ['input', 'platforms']"]


def test_the_real_walk_finds_a_circle_and_a_facade_user(tmp_path):
    root = _copy_of_the_house(tmp_path)
    model = root / "fabric" / "graph" / "model.py"
    model.write_text(model.read_text() + "\n\nfrom .build import build_fabric  # noqa\n")
    assert ["railonly.fabric.graph.build", "railonly.fabric.graph.model"] in cycles(import_graph(root))
    sweep = root / "fabric" / "cost" / "sweep.py"
    sweep.write_text(sweep.read_text() + "\n\nfrom railonly.fabric import load_design  # noqa\n")
    assert facade_users(root) == ["railonly.fabric.cost.sweep imports railonly.fabric.load_design: "
                                  "no room imports the facade (it imports every room)"]


def test_relative_imports_resolve(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("from . import a\nfrom ..lab import Lab\ndef g():\n    from .b import c\n")
    got = imports_of("railonly.emulation.checks.x", f)
    assert {"railonly.emulation.checks.a", "railonly.emulation.lab", "railonly.emulation.checks.b.c"} <= got


def test_the_real_walk_fails_on_a_back_door(tmp_path):
    """A check that imports the netns runtime's internals, or branches on the runtime's name, fails."""
    root = _copy_of_the_house(tmp_path)
    assert runtime_branches(root) == []
    checker = root / "emulation" / "checks" / "checker.py"
    checker.write_text(checker.read_text() + "\n\ndef _late(rt):\n    from ..runtime.netns import setns\n"
                       "    return setns if rt.name == \"netns\" else None\n")
    graph = import_graph(root)
    bad = layer_violations(graph, {m: external_imports(m, root) for m in graph})
    assert bad and all("the runtime's internals" in b for b in bad)
    assert any(b.startswith("railonly.emulation.checks.checker imports railonly.emulation.runtime.netns.setns:")
               for b in bad)
    assert runtime_branches(root) == ["emulation/checks/checker.py:" + str(len(checker.read_text().splitlines()))
                                      + ': return setns if rt.name == "netns" else None']


def test_the_real_walk_fails_when_the_cli_imports_netns_internals(tmp_path):
    """A command that takes a helper from the netns runtime's internals, even lazily, fails."""
    root = _copy_of_the_house(tmp_path)
    command = root / "railonly" / "cli" / "commands" / "lab.py"
    command.write_text(command.read_text() + "\n\ndef _late(lab):\n"
                       "    from railonly.emulation.runtime.netns.runtime import lab_namespaces\n"
                       "    return lab_namespaces(lab)\n")
    graph = import_graph(root)
    bad = layer_violations(graph, {m: external_imports(m, root) for m in graph})
    assert bad == ["railonly.cli.commands.lab imports railonly.emulation.runtime.netns.runtime: the CLI reaches a "
                   f"runtime through its doors ({sorted(RUNTIME_DOORS)}), never its internals"]
