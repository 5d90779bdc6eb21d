"""Fixtures for real netns labs: every deploy is destroyed by a finalizer, even
when the test fails, and the finalizer asserts nothing of the lab remains."""

from __future__ import annotations

import os

import pytest

from railonly.emulation.runtime.netns import engine, setns

from ..conftest import skip_reason


def netns_skip_reason() -> str | None:
    return skip_reason("ip", "tc")


@pytest.fixture
def lab_name(request):
    # unique per test and run, always under the rotest prefix: never someone else's
    base = "".join(c for c in request.node.name.lower() if c.isalnum())[:10]
    return f"rotest{os.getpid() % 10000}{base}"


class Labs:
    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.states: list[str] = []

    def state(self, lab: str) -> str:
        path = str(self.tmp / f"{lab}.lab-state.json")
        if path not in self.states:
            self.states.append(path)
        return path

    def deploy(self, plan, **kw):
        return engine.deploy(plan, self.state(plan.lab), **kw)

    def destroy_all(self) -> list[str]:
        problems = []
        for path in reversed(self.states):
            state = engine.load_state(path)
            rep = engine.destroy(path)
            problems += rep.leftovers
            if state:
                problems += [f"namespace {n} remains" for n in state["namespaces"] if setns.exists(n)]
        return problems


@pytest.fixture
def labs(tmp_path):
    reason = netns_skip_reason()
    if reason:
        pytest.skip(reason)
    lb = Labs(tmp_path)
    yield lb
    problems = lb.destroy_all()
    assert not problems, problems


@pytest.fixture(scope="module")
def module_labs(tmp_path_factory):
    """Labs shared by one test module (one deploy, many tests), destroyed at its end."""
    reason = netns_skip_reason()
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("labs")
    os.chmod(tmp, 0o755)
    lb = Labs(tmp)
    yield lb
    problems = lb.destroy_all()
    assert not problems, problems
