"""The one Jinja2 environment: templates compiled once per process, StrictUndefined.

Templates only print what the structured config says; every choice is made in
Python before rendering. `trim_blocks`/`lstrip_blocks` keep block tags from
leaving blank lines, so a template's layout is the config's layout.
"""

from __future__ import annotations

from functools import lru_cache

from jinja2 import Environment, PackageLoader, StrictUndefined


@lru_cache(maxsize=1)
def environment() -> Environment:
    return Environment(
        loader=PackageLoader("railonly.templates", "."),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


@lru_cache(maxsize=None)
def template(name: str):
    """A compiled template, cached: compiling is the expensive part."""
    return environment().get_template(name)


def render(name: str, **context) -> str:
    return template(name).render(**context)
