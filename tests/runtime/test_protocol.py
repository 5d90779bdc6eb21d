"""Each registered runtime's methods have the Runtime protocol's signatures (no lab deployed)."""

from __future__ import annotations

import importlib
import inspect

import pytest

from railonly.emulation.runtime.protocol import Runtime
from railonly.emulation.runtime.registry import RUNTIMES

from ..conftest import FakeRuntime

PROTOCOL_METHODS = ("deploy", "exec", "destroy", "status")


def runtime_class(name: str) -> type:
    module, _, attr = RUNTIMES[name].partition(":")
    return getattr(importlib.import_module(module), attr)


def signature_problems(cls: type) -> list[str]:
    """Each Protocol method must exist with the Protocol's parameters (names, kinds,
    defaults) in order; a runtime may add parameters only with defaults."""
    out = []
    for meth in PROTOCOL_METHODS:
        if not callable(getattr(cls, meth, None)):
            out.append(f"{cls.__name__} has no {meth}")
            continue
        want = list(inspect.signature(getattr(Runtime, meth)).parameters.values())
        have = list(inspect.signature(getattr(cls, meth)).parameters.values())
        if [(p.name, p.kind, p.default) for p in have[:len(want)]] != [(p.name, p.kind, p.default) for p in want]:
            out.append(f"{cls.__name__}.{meth}{inspect.signature(getattr(cls, meth))} differs from "
                       f"Runtime.{meth}{inspect.signature(getattr(Runtime, meth))}")
        extra = [p.name for p in have[len(want):]
                 if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if extra:
            out.append(f"{cls.__name__}.{meth}: parameters without a default beyond the protocol's: {extra}")
    return out


@pytest.mark.parametrize("name", sorted(RUNTIMES))
def test_methods_match_the_protocol(name):
    cls = runtime_class(name)
    assert cls.name == name
    assert signature_problems(cls) == []


def test_the_fake_runtime_honours_the_protocol_too():
    assert signature_problems(FakeRuntime) == []


def test_a_mismatch_is_seen():
    class Wrong:
        name = "wrong"

        def deploy(self, lab, force): ...  # an extra parameter without a default

        def exec(self, node, argv, timeout=10.0): ...  # another default

        def status(self, lab): ...  # and no destroy

    problems = signature_problems(Wrong)
    assert len(problems) == 3, problems
    assert any("force" in p for p in problems) and any("no destroy" in p for p in problems)
