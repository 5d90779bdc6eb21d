"""One switch's config, parsed once: the facts validate cross-checks and the intent the lab deploys.

Each vendor has one parser (sonic.parse_config_db, eos.parse_startup_config) that walks
the files once and returns a :class:`SwitchConfig`. Its two views are cheap: ``facts``
is filled during the walk; ``intent()`` assembles a SwitchIntent from what the walk kept,
or raises the first problem the lab cannot program around (validate reports the same
problem through the facts, or through the cross-check). Pure: text in, data out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .facts import DeviceFacts
from .intent import ConfigReadError, SwitchIntent


@dataclass
class SwitchConfig:
    facts: DeviceFacts  # what validate's cross-check compares (problems collected, never raised)
    assemble: Callable[[], SwitchIntent] | None = None  # the lab's view, built on demand
    errors: list[ConfigReadError] = field(default_factory=list)  # what stops the lab's view

    def error(self, where: str, message: str) -> None:
        self.errors.append(ConfigReadError(where, message))

    def intent(self) -> SwitchIntent:
        """What the lab deploys and push re-applies; ConfigReadError for a file it cannot program."""
        if self.errors:
            raise self.errors[0]
        assert self.assemble is not None
        return self.assemble()
