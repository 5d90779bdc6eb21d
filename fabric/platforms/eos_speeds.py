"""EOS `speed` forms (``400g-8``): the table in fabric/platforms/data/eos_speeds.yaml, read once.

The generator writes ``speed_form(gbps)``; readers turn any accepted form back
into Gbit/s with ``parse_speed`` (None: not a form EOS prints for these speeds).
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

import yaml

_FORM = re.compile(r"^(\d+)g-(\d+)$", re.ASCII)
_FORCED = re.compile(r"^(\d+)gfull$", re.ASCII)  # older EOS: `speed forced 100gfull`


@lru_cache(maxsize=1)
def _table() -> dict:
    text = resources.files("railonly.fabric.platforms.data").joinpath("eos_speeds.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def speed_form(gbps: int) -> str:
    """The form railonly writes for a port at `gbps` (its default port type's lanes)."""
    t = _table()
    pt = t["port_types"][t["default_port_type"][int(gbps)]]
    return f"{pt['gbps']}g-{pt['lanes']}"


@lru_cache(maxsize=1)
def accepted_forms() -> dict[str, int]:
    """Every accepted form -> Gbit/s (shared: do not modify)."""
    return {f"{g}g-{n}": int(g) for g, splits in _table()["lane_splits"].items() for n in splits}


def parse_speed(words: list[str]) -> int | None:
    """Gbit/s of a `speed ...` line's arguments, None when it is not an accepted form."""
    if words[:1] == ["auto"] and len(words) == 2:  # `speed auto 400g-8`: negotiates only that speed
        words = words[1:]
    if len(words) == 1 and _FORM.match(words[0]):
        return accepted_forms().get(words[0])
    if len(words) == 2 and words[0] == "forced" and (m := _FORCED.match(words[1])):
        g = int(m.group(1))
        return g if g in _table()["lane_splits"] else None
    return None
