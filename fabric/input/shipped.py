"""Data files that ship inside the package (price book, failure rates, presets, the switch
catalog), read, and named the one way every message, JSON field and doc names them: their
path in the repository (fabric/cost/data/prices.yaml), which is also where they lie in an
installed package under railonly/."""

from __future__ import annotations

from importlib import resources

PACKAGE = "railonly"


def shipped_name(package: str, name: str) -> str:
    """'railonly.fabric.cost.data', 'prices.yaml' -> 'fabric/cost/data/prices.yaml'."""
    head, _, rest = package.partition(".")
    if head != PACKAGE or not rest:
        raise ValueError(f"{package!r} is not a package of {PACKAGE}")
    return "/".join([*rest.split("."), name])


def read_shipped(package: str, name: str) -> tuple[str, str]:
    """The text of a shipped data file and its name (shipped_name)."""
    return resources.files(package).joinpath(name).read_text(encoding="utf-8"), shipped_name(package, name)
