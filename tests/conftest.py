"""Shared test helpers: repo paths, golden-file comparison, compiling a design into an
OUTDIR, lab names nobody else uses, and why a test that needs root and tools skips.

Goldens are regenerated only on purpose: `REGEN=1 make test` (or REGEN=1
pytest ...) rewrites them; otherwise a difference fails with a diff.
"""

from __future__ import annotations

import difflib
import os
import shutil
from pathlib import Path

import pytest

from railonly.emulation.runtime.protocol import Runtime

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "golden"


@pytest.fixture(autouse=True, scope="session")
def _compile_records_in_a_temp_cache(tmp_path_factory):
    """Incremental compiles record what they wrote in railonly's cache (fabric/outdir/previous.py);
    the suite's hundreds of OUTDIRs keep theirs in a temporary one, not the user's home.
    Set in the environment, so a railonly the tests start as a process uses it too."""
    if "RAILONLY_CACHE_DIR" in os.environ:
        yield
        return
    os.environ["RAILONLY_CACHE_DIR"] = str(tmp_path_factory.mktemp("railonly-cache"))
    try:
        yield
    finally:
        os.environ.pop("RAILONLY_CACHE_DIR", None)


@pytest.fixture(autouse=True)
def _old_outdirs_removed():
    """A big OUTDIR's previous tree is removed by a detached process after the compile
    returns (cli/commands/compile.py): each test ends with those removals done."""
    yield
    from railonly.cli.commands import compile as compile_command

    compile_command.wait_for_removals()


def assert_golden(path: Path, actual: str | bytes) -> None:
    """Compare `actual` with the golden file at `path` byte for byte."""
    data = actual.encode() if isinstance(actual, str) else actual
    if os.environ.get("REGEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return
    if not path.exists():
        pytest.fail(f"golden {path.relative_to(REPO)} is missing; run with REGEN=1 to create it")
    expected = path.read_bytes()
    if expected != data:
        diff = difflib.unified_diff(
            expected.decode(errors="replace").splitlines(), data.decode(errors="replace").splitlines(),
            "golden", "actual", lineterm="", n=2,
        )
        text = "\n".join(list(diff)[:60])
        pytest.fail(f"{path.relative_to(REPO)} differs (REGEN=1 regenerates on purpose):\n{text}")


def compile_to(text: str, outdir: Path, source: str = "design.yml") -> Path:
    """Compile design YAML ``text`` into ``outdir`` (as `railonly compile` writes it)."""
    from railonly.fabric.compiler import compile_design
    from railonly.fabric.design.design import parse_design
    from railonly.fabric.outdir.writer import write_outdir

    design = parse_design(text, source)
    _, files = compile_design(design)
    write_outdir(str(outdir), files, design.sha256)
    return outdir


def design_text(path: str, name: str) -> str:
    """The design file at ``path`` (relative to the repo) with its name replaced."""
    lines = (REPO / path).read_text().splitlines()
    return "\n".join(f"name: {name}" if ln.startswith("name:") else ln for ln in lines) + "\n"


def unique(tag: str, prefix: str | None = None) -> str:
    """A lab name nobody else uses: per process (design names: at most 20 characters). The
    prefix is ``nt`` unless RAILONLY_TEST_LAB_PREFIX names another (a developer's labs apart from CI's)."""
    prefix = prefix or os.environ.get("RAILONLY_TEST_LAB_PREFIX") or "nt"
    return f"{prefix}{os.getpid() % 10000}{tag}"[:20]


def skip_reason(*tools: str, why: str = "network namespaces") -> str | None:
    """Why a test that needs root and ``tools`` cannot run here (None: it can)."""
    if os.geteuid() != 0:
        return f"needs root ({why})"
    for tool in tools:
        if shutil.which(tool) is None:
            return f"'{tool}' is not installed"
    return None


@pytest.fixture
def repo() -> Path:
    return REPO


class FakeRuntime(Runtime):
    """A Runtime that starts nothing: ``exec`` answers from handlers and records every call.

    For the logic above Runtime.exec (the checks' table reads, traffic, faults)
    without root. In addition to the real netns tests, never instead of them:
    those prove that a lab answers what these tests feed the logic.
    """

    name = "fake"

    def __init__(self, state: str = "running"):
        self.state = state
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.handlers: list[tuple[tuple[str, ...], object]] = []

    def on(self, prefix: tuple[str, ...], answer) -> "FakeRuntime":
        """argv starting with ``prefix`` get ``answer``: (rc, output), or a function
        (node, argv) -> (rc, output). The last matching handler wins."""
        self.handlers.append((tuple(prefix), answer))
        return self

    def deploy(self, lab, hook=None) -> None:
        self.state = "running"

    def exec(self, node, argv, timeout: float = 30.0) -> tuple[int, str]:
        from railonly.emulation.lab import target

        ns, argv = target(node), tuple(argv)
        self.calls.append((ns, argv))
        for prefix, answer in reversed(self.handlers):
            if argv[:len(prefix)] == prefix:
                return answer(ns, argv) if callable(answer) else answer
        return 127, f"fake runtime: nothing answers {' '.join(argv)}"

    def destroy(self, lab) -> None:
        self.state = "absent"

    def status(self, lab):
        from railonly.emulation.runtime.protocol import LabStatus

        node_state = "running" if self.state == "running" else "missing"
        return LabStatus(lab.name, self.state, {n: node_state for n in lab.nodes}, "fake")

    def ran(self, *prefix: str) -> list[tuple[str, tuple[str, ...]]]:
        """The recorded calls whose argv starts with ``prefix``."""
        return [(ns, argv) for ns, argv in self.calls if argv[:len(prefix)] == prefix]


def cpu_sampler(share: float):
    """A host.Sampler whose CPUs are ``share`` busy between any two samples (for judging logic)."""
    state = {"t": 0}

    def sample() -> tuple[int, int]:
        state["t"] += 1000
        return int(state["t"] * share), state["t"]

    return sample


# Fixtures that deploy a lab, start daemons or create namespaces (folder of the
# conftest that defines them -> names): a test using one needs root and must carry
# the `netns` marker, so `make test-fast` (-m "not netns and not slow") never waits
# on one. Checked at collection: a missing marker is an error naming the test
# (docs/developer/testing.md).
ROOT_FIXTURES = {"checks": {"routed", "l2", "routed_shared"}, "emulation": {"labs", "module_labs"},
                 "netns": {"deployer"}, "push": {"pushlab", "eos_device"}, "trust": {"bystanders"}}


def _uses_root_fixture(item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    for name, defs in (info.name2fixturedefs.items() if info else ()):
        used = defs[-1]  # the closest definition wins (a module may define its own `routed`)
        folder = Path(getattr(used, "baseid", "") or "").name
        if name in ROOT_FIXTURES.get(folder, ()):
            return True
    return False


def pytest_collection_modifyitems(config, items):
    unmarked = [item.nodeid for item in items if item.get_closest_marker("netns") is None and _uses_root_fixture(item)]
    if unmarked:
        raise pytest.UsageError("these tests use a lab fixture but lack @pytest.mark.netns:\n  " + "\n  ".join(unmarked))
