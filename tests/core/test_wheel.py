"""railonly stands on its own: a wheel built from the repository, installed into
a fresh virtual environment in an empty folder, compiles and validates every
example design (SONiC and EOS) with the YANG checks run, seeing nothing of the
repository.

The new environment gets railonly from the wheel only (`pip install --no-deps`);
its third-party dependencies come from this environment's site-packages through
a plain path entry (a .pth line), so nothing is downloaded twice and the
editable install of this checkout (a finder hook run from *this* environment's
own .pth files) is not loaded there. The test asserts where railonly and its
YANG models are imported from, and that no sys.path entry lies in the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from ..conftest import REPO

pytestmark = pytest.mark.slow


def _run(argv, cwd, timeout=900, env=None):
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(python, railonly, work dir) of a fresh venv with the wheel installed."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    # Build from a copy of the tracked files: setuptools writes build/ and *.egg-info
    # into the source tree, which must stay untouched (and shared by parallel runs).
    files = _run(["git", "ls-files", "-z"], REPO)
    if files.returncode == 0:
        for rel in filter(None, files.stdout.split("\0")):
            if (REPO / rel).is_file():
                (src / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / rel, src / rel)
    else:  # not a git checkout (an unpacked sdist): copy what is there
        shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".venv", ".git", "site", "build", "dist", "*.egg-info"))
    built = _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(root / "dist"), str(src)], root)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    wheel = next((root / "dist").glob("railonly-*.whl"))

    venv = root / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], root)
    assert made.returncode == 0, made.stderr
    py = venv / "bin" / "python"
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root).stdout.strip())
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "zz_dependencies.pth").write_text("".join(f"{p}\n" for p in sorted(ours)))
    pip = _run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index",
                str(wheel)], root)
    if pip.returncode != 0 and "no such option: --python" in pip.stderr:  # pip < 22.3
        pip = _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--target", str(site), str(wheel)], root)
    assert pip.returncode == 0, pip.stderr[-3000:]
    script = venv / "bin" / "railonly"
    if not script.exists():  # --target installs no entry point: call the CLI module instead
        script.write_text(f"#!{py}\nimport sys\nfrom railonly.cli import main\nsys.exit(main())\n")
        script.chmod(0o755)

    work = root / "empty"
    work.mkdir()
    for design in sorted((REPO / "labs").glob("*.yml")):
        shutil.copy2(design, work / design.name)
    return py, script, work


def _env() -> dict:
    """This environment without what could point the installed railonly at the checkout, but
    with the suite's cache folder (conftest): its compiles record there, not in the home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "RAILONLY_", "VIRTUAL_ENV"))}
    return {**env, "NO_COLOR": "1", "RAILONLY_CACHE_DIR": os.environ["RAILONLY_CACHE_DIR"]}


def test_the_installed_package_sees_nothing_of_the_repository(installed):
    py, _, work = installed
    probe = _run([str(py), "-c", (
        "import json, sys, railonly\n"
        "from railonly.fabric.validate import sonic_yang, lab_schemas\n"
        "from railonly.cli.commands import demo\n"
        "print(json.dumps({'pkg': railonly.__file__, 'yang': str(sonic_yang.YANG_DIR),\n"
        "  'schema': str(lab_schemas.CLAB_SCHEMA), 'demo': str(demo.DEFAULT_DESIGN), 'path': sys.path,\n"
        "  'finders': [type(f).__name__ + ' ' + getattr(f, '__name__', '') for f in sys.meta_path]}))")],
        work, env=_env())
    assert probe.returncode == 0, probe.stderr
    seen = json.loads(probe.stdout)
    venv = str(py.parent.parent)
    for key in ("pkg", "yang", "schema", "demo"):
        assert seen[key].startswith(venv), (key, seen[key])
    deps = {str(Path(p).resolve()) for p in (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])}
    # Only the dependency folder (this environment's site-packages) may lie inside the
    # checkout (.venv/); no source folder of the repository is on the path.
    inside = [p for p in seen["path"] if p and Path(p).resolve().is_relative_to(REPO) and str(Path(p).resolve()) not in deps]
    assert not inside, inside
    assert not [f for f in seen["finders"] if "editable" in f.lower()], seen["finders"]


def test_every_example_design_compiles_and_validates(installed):
    _, railonly, work = installed
    designs = sorted(work.glob("*.yml"))
    assert len(designs) >= 8
    platforms = set()
    for design in designs:
        out = work / "out" / design.stem
        # validate runs the full YANG/FRR pass right after, so compile's own self-check
        # (one switch per shape) runs on the mini designs only: minutes saved on the 32k ones.
        check = [] if design.stem.startswith("mini-") else ["--no-check"]
        done = _run([str(railonly), "-q", "compile", design.name, "-o", str(out), *check], work, env=_env())
        assert done.returncode == 0, f"compile {design.name}: {done.stderr[-2000:]}"
        report = work / f"{design.stem}.json"
        checked = _run([str(railonly), "-q", "validate", str(out), "--json", str(report)], work, env=_env())
        assert checked.returncode == 0, f"validate {design.name}: {checked.stdout[-2000:]}{checked.stderr[-2000:]}"
        doc = json.loads(report.read_text())
        fabric = json.loads((out / "fabric.json").read_text())
        kinds = {n.get("platform") for n in fabric["nodes"] if n.get("role") == "switch"}
        platforms |= kinds
        yang = [r for r in doc["results"] if r["check"] == "yang"]
        if "sonic" in kinds:  # the YANG pass ran, on every SONiC switch, and passed
            assert yang and all(r["passed"] for r in yang), design.name
            assert len(yang) == sum(1 for n in fabric["nodes"] if n.get("platform") == "sonic"), design.name
        assert doc["failed"] == 0
        shutil.rmtree(out)  # the 32k designs write hundreds of MB: keep one at a time
    assert {"sonic", "eos"} <= platforms
