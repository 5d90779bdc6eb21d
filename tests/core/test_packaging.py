"""railonly installs under its own namespace, beside the Fabric SSH library."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from ..conftest import REPO


def test_fabric_ssh_library_and_railonly_import_side_by_side():
    import fabric  # the Fabric SSH library (test extra)
    import railonly.fabric

    assert hasattr(fabric, "Connection"), "the top-level 'fabric' must be the SSH library"
    assert railonly.fabric.__file__ != fabric.__file__
    assert os.path.samefile(os.path.dirname(railonly.fabric.__file__), REPO / "fabric")


@pytest.mark.slow
def test_wheel_install_beside_fabric_in_fresh_venv(tmp_path):
    """A non-editable install (a wheel) into a fresh venv that has Fabric from PyPI."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", "fabric>=3.2"], check=True, timeout=300, capture_output=True)
    # Build from a copy: setuptools writes build/ and *.egg-info into the source tree.
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info", "__pycache__", "tests"))
    wheels = tmp_path / "wheels"
    subprocess.run([py, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(src)],
                   check=True, timeout=300, capture_output=True)
    wheel = next(wheels.glob("railonly-*.whl"))
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, timeout=300, capture_output=True)
    probe = ("import fabric, railonly.fabric, railonly.templates, railonly.emulation; "
             "assert hasattr(fabric, 'Connection'); print(railonly.fabric.__file__)")
    out = subprocess.run([py, "-c", probe], check=True, timeout=60, capture_output=True, text=True, cwd=tmp_path)
    assert str(venv) in out.stdout, "railonly must load from the venv, not the source tree"


def _pyproject() -> dict:
    import tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text())


def _shipped_as_data(folder, roots, listed, package_data) -> bool:
    """A data folder (schemas, YANG models) inside a listed package whose
    package-data patterns cover every file in it."""
    from fnmatch import fnmatch

    for pkg, root in roots.items():
        if pkg in listed and folder != root and folder.is_relative_to(root):
            files = [f.relative_to(root).as_posix() for f in folder.iterdir() if f.is_file()]
            patterns = package_data.get(pkg, [])
            # setuptools' globs stop at "/" (fnmatch's * does not): "*.yml" ships no subfolder
            if files and all(any(fnmatch(f, pat) and f.count("/") == pat.count("/") for pat in patterns) for f in files):
                return True
    return False


def test_every_shipped_folder_is_a_listed_package():
    """Each folder under a mapped root that holds code or templates is in `packages`
    (else setuptools warns and, in a wheel, may leave it out)."""
    conf = _pyproject()["tool"]["setuptools"]
    listed = set(conf["packages"])
    roots = {pkg: REPO / path for pkg, path in conf["package-dir"].items()}
    missing = []
    for pkg, root in roots.items():
        for folder in [root, *sorted(p for p in root.rglob("*") if p.is_dir())]:
            if folder.name == "__pycache__" or not any(f.suffix in (".py", ".j2", ".yaml", ".yml") for f in folder.iterdir() if f.is_file()):
                continue
            name = ".".join([pkg, *folder.relative_to(root).parts])
            if name not in listed and not _shipped_as_data(folder, roots, listed, conf.get("package-data", {})):
                missing.append(name)
    assert missing == [], f"add to [tool.setuptools] packages and package-dir in pyproject.toml: {missing}"


@pytest.mark.slow
def test_wheel_has_the_templates_and_setuptools_warns_nothing(tmp_path):
    import zipfile

    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info", "__pycache__", "tests"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path / "w"), str(src)],
                          timeout=300, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # pip's own notes about this machine's index configuration are not setuptools'.
    noise = re.compile(r"^WARNING: Location '.*' is ignored")
    warnings = [line for line in (proc.stdout + proc.stderr).splitlines()
                if re.search(r"Warning\b|warning:|!!", line) and not noise.match(line)]
    assert warnings == [], "\n".join(warnings[:20])
    wheel = next((tmp_path / "w").glob("railonly-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = sorted(p.relative_to(REPO / "templates").as_posix() for p in (REPO / "templates").rglob("*.j2"))
    assert templates and [t for t in templates if f"railonly/templates/{t}" not in names] == []
    # every data file of fabric's rooms (fabric/<room>/data/*.yaml|json) ships beside its room
    data = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "fabric").glob("**/data/**/*")  # the catalog's switches/ too
                  if p.suffix in (".yaml", ".json"))
    assert data and [d for d in data if f"railonly/{d}" not in names] == []


def test_shipped_data_files_go_by_one_name_their_repository_path(tmp_path, capsys):
    """resilience's JSON said rates 'railonly/fabric/cost/data/failure_rates.yaml' and the presets
    and catalog went by 'railonly/fabric/...', while the price book, the help and the docs said
    'fabric/cost/data/prices.yaml'. One form, from input.shipped: the file's path in the repository."""
    import json

    from railonly.cli import main
    from railonly.fabric.analysis.presets import shipped as presets
    from railonly.fabric.cost.failure_rates import load_rates
    from railonly.fabric.cost.prices import default_prices
    from railonly.fabric.platforms.catalog import shipped as catalog

    names = [default_prices().file, load_rates().file, *presets().files, *(p.file for p in catalog().values())]
    assert load_rates().file == "fabric/cost/data/failure_rates.yaml"
    assert presets().files == ("fabric/analysis/data/gpus.yaml", "fabric/analysis/data/models.yaml")
    bad = [n for n in names if not (REPO / n).is_file()]
    assert not bad, f"shipped data named by no repository path: {bad}"
    assert main(["resilience", str(REPO / "labs" / "mini-routed.yml"), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["rates"] == "fabric/cost/data/failure_rates.yaml"
