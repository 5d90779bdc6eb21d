"""Fix imports and references after merging the `outdirmodel` and `clabx` moves into your branch.

Run from your worktree root:  python3 tools/outdirmodel_fix_imports.py [--dry-run]

The moves (pure git mv on branch outdirmodel, issue 20):
  emulation/netns/            -> emulation/runtime/netns/   (netns/plan.py -> netns/ns_plan.py)
  emulation/switchcfg/        -> fabric/devices/readback/   (with fabric/validate/facts.py)
  emulation/checks/plan.py    -> emulation/checks/check_plan.py
  emulation/checks/run.py     -> emulation/checks/checker.py
  emulation/checks/report.py  -> emulation/checks/check_report.py
  emulation/push/inventory.py -> emulation/push/targets.py
  emulation/push/run.py       -> emulation/push/pusher.py
  emulation/traffic/model.py  -> emulation/traffic/completion_time.py
  fabric/validate/run.py      -> fabric/validate/validator.py
  fabric/validate/report.py   -> fabric/validate/validate_report.py
  fabric/analysis/report.py   -> fabric/analysis/analysis_report.py
  fabric/analysis/untrusted.py-> fabric/analysis/job_files.py
and, on branch clabx (one name per concept: no two modules of one name meaning different things):
  emulation/traffic/completion.py -> emulation/traffic/completion_time.py  (not the CLI's shell completion)
  fabric/outdir/rollout.py    -> fabric/outdir/rollout_rules.py  (the rules; emulation/push/rollout.py runs them)
  fabric/devices/sonic.py     -> fabric/devices/sonic_render.py  (devices/readback/sonic.py reads back)
  fabric/devices/eos.py       -> fabric/devices/eos_render.py    (devices/readback/eos.py reads back)
Rewrites `from X import y` statements that no longer resolve (relative ones stay relative),
then dotted names (railonly.emulation.netns.x) and paths (emulation/netns/x.py) in the
text of tracked files (not tests/golden). Idempotent; prints each file it changes.
"""
import ast, re, subprocess, sys
from pathlib import Path

MOVES = {  # old path (file or folder) -> new path
    "emulation/netns/plan.py": "emulation/runtime/netns/ns_plan.py",
    "emulation/netns": "emulation/runtime/netns",
    "fabric/validate/facts.py": "fabric/devices/readback/facts.py",
    "emulation/switchcfg": "fabric/devices/readback",
    "emulation/checks/plan.py": "emulation/checks/check_plan.py",
    "emulation/checks/run.py": "emulation/checks/checker.py",
    "emulation/checks/report.py": "emulation/checks/check_report.py",
    "emulation/push/inventory.py": "emulation/push/targets.py",
    "emulation/push/run.py": "emulation/push/pusher.py",
    "emulation/traffic/model.py": "emulation/traffic/completion_time.py",
    "fabric/validate/run.py": "fabric/validate/validator.py",
    "fabric/validate/report.py": "fabric/validate/validate_report.py",
    "fabric/analysis/report.py": "fabric/analysis/analysis_report.py",
    "fabric/analysis/untrusted.py": "fabric/analysis/job_files.py",
    "emulation/traffic/completion.py": "emulation/traffic/completion_time.py",
    "fabric/outdir/rollout.py": "fabric/outdir/rollout_rules.py",
    "fabric/devices/sonic.py": "fabric/devices/sonic_render.py",
    "fabric/devices/eos.py": "fabric/devices/eos_render.py",
}
DRY = "--dry-run" in sys.argv


def dotted(path):
    parts = list(Path(path.removesuffix(".py")).parts)
    if parts[0] in ("fabric", "emulation", "templates"):
        parts = ["railonly"] + parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MOD = {dotted(o): dotted(n) for o, n in MOVES.items()}
NEWPATH_OLD = {}  # new file path -> old file path (for relative imports inside moved files)


def old_path_of(path):
    for o, n in MOVES.items():
        if n.endswith(".py"):
            if path == n:
                return o
        elif path.startswith(n + "/"):
            cand = o + path[len(n):]
            if not any(k.endswith(".py") and MOVES[k] != path and k == cand for k in MOVES):
                return cand
    return path


def folder_of(mod):
    parts = mod.split(".")
    if parts[:1] == ["railonly"] and len(parts) > 1 and parts[1] in ("fabric", "emulation", "templates"):
        parts = parts[1:]
    return Path(*parts)


def exists(mod):
    p = folder_of(mod)
    return p.with_suffix(".py").exists() or (p / "__init__.py").exists()


def map_mod(name):
    parts = name.split(".")
    for i in range(len(parts), 1, -1):
        pre = ".".join(parts[:i])
        if pre in MOD:
            return ".".join([MOD[pre]] + parts[i:])
    return name


def resolve(pkg, level, module):
    base = pkg.split(".")
    base = base[: len(base) - level + 1]
    return ".".join(base + ([module] if module else []))


def rel(from_pkg, target):
    a, b = from_pkg.split("."), target.split(".")
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return "." * (len(a) - n + 1) + ".".join(b[n:])


def fix_imports(path, src):
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return src
    is_pkg = path.endswith("__init__.py")
    new_name, old_name = dotted(path), dotted(old_path_of(path))
    new_pkg = new_name if is_pkg else new_name.rsplit(".", 1)[0]
    old_pkg = old_name if is_pkg else old_name.rsplit(".", 1)[0]
    lines = src.splitlines(keepends=True)
    edits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            if not new_name.startswith("railonly"):
                continue
            now = resolve(new_pkg, node.level, node.module)
            if exists(now) and not any(f"{now}.{a.name}" in MOD for a in node.names) and (
                    node.module is not None or all(exists(f"{now}.{a.name}") for a in node.names)):
                continue
            mod = resolve(old_pkg, node.level, node.module)
        else:
            mod = node.module or ""
            if not mod.startswith("railonly") or (exists(mod) and not any(f"{mod}.{a.name}" in MOD for a in node.names)):
                continue
        groups, order = {}, []
        for a in node.names:
            full = map_mod(f"{mod}.{a.name}")
            if full != f"{mod}.{a.name}" and exists(full):
                base, name = full.rsplit(".", 1)
                alias = f"{name} as {a.asname}" if a.asname else (f"{name} as {a.name}" if name != a.name else name)
            else:
                base, alias = map_mod(mod), (f"{a.name} as {a.asname}" if a.asname else a.name)
            if base not in groups:
                groups[base] = []
                order.append(base)
            groups[base].append(alias)
        if not all(exists(b) for b in order):
            print(f"{path}:{node.lineno}: cannot resolve {mod}; fix by hand", file=sys.stderr)
            continue
        first = lines[node.lineno - 1]
        indent = first[: len(first) - len(first.lstrip())]
        out = []
        for b in order:
            same_top = b.split(".")[:2] == new_pkg.split(".")[:2]
            modtext = rel(new_pkg, b) if node.level and same_top else b
            out.append(f"{indent}from {modtext} import {', '.join(groups[b])}\n")
        edits.append((node.lineno, node.end_lineno, "".join(out)))
    for s, e, t in sorted(edits, reverse=True):
        lines[s - 1:e] = [t]
    return "".join(lines)


DOTTED = sorted(MOD.items(), key=lambda kv: -len(kv[0]))
PATHS = sorted(((o.removesuffix(".py"), n.removesuffix(".py")) for o, n in MOVES.items()), key=lambda kv: -len(kv[0]))


def fix_text(src):
    for o, n in DOTTED:
        src = re.sub(r"(?<![\w.])" + re.escape(o) + r"(?![\w])", n, src)
    for o, n in PATHS:
        src = re.sub(r"(?<![\w/])" + re.escape(o) + r"(?![\w])", n, src)
    return src


def main():
    files = subprocess.run(["git", "ls-files"], capture_output=True, text=True).stdout.split()
    for f in files:
        if f.startswith("tests/golden/") or f == "tools/outdirmodel_fix_imports.py" or not f.endswith((".py", ".md", ".toml", ".yml", ".yaml", ".txt", ".cfg", ".ini")) and Path(f).name != "Makefile":
            continue
        p = Path(f)
        if not p.is_file():
            continue
        src = p.read_text()
        new = fix_text(fix_imports(f, src) if f.endswith(".py") else src)
        if new != src:
            print(("would change " if DRY else "changed ") + f)
            if not DRY:
                p.write_text(new)


main()
