"""railonly installs under its own namespace, beside the Fabric SSH library."""

from __future__ import annotations

import os
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
