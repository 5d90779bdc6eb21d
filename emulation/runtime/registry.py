"""Runtimes by name: the registry ``--runtime`` chooses from.

Entries are ``"module:attribute"`` strings (imported on use, so a runtime's
dependencies load only when it is chosen) or factories registered at run time.
"""

from __future__ import annotations

import importlib
from typing import Callable

from ..lab import LabError
from .protocol import Runtime, RuntimeProblem

RUNTIMES: dict[str, "str | Callable[[], Runtime]"] = {
    "netns": "railonly.emulation.runtime.netns.runtime:NetnsRuntime",
    "containerlab": "railonly.emulation.runtime.containerlab:ContainerlabRuntime",
}
DEFAULT_RUNTIME = "netns"


def register(name: str, factory: "str | Callable[[], Runtime]") -> None:
    RUNTIMES[name] = factory


def get_runtime(name: str = DEFAULT_RUNTIME, **options) -> Runtime:
    """A runtime by name. Unknown name: LabError (exit 2); not importable: RuntimeProblem (exit 3)."""
    factory = RUNTIMES.get(name)
    if factory is None:
        raise LabError("--runtime", f"unknown runtime {name!r}", f"use one of: {', '.join(sorted(RUNTIMES))}")
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        try:
            factory = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise RuntimeProblem(f"runtime {name!r} is not available in this installation ({exc})") from None
    return factory(**options)
