"""YAML loading that remembers the line of every mapping key.

Error messages point at lines, so the loader returns plain dicts/lists plus a
side table {key path: line}. Only the safe YAML subset is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from .problems import InputError, Problem


@dataclass
class Source:
    data: object
    lines: dict[str, int] = field(default_factory=dict)
    file: str | None = None

    def line(self, path: str) -> int | None:
        # Fall back to the nearest enclosing key that has a line.
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path.rpartition(".")[0]
        return None


class _Loader(yaml.SafeLoader):
    pass


def _no_duplicates(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key '{key}'", key_node.start_mark
            )
        seen[key] = True
    return loader.construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def _collect_lines(node: yaml.Node, prefix: str, out: dict[str, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            path = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
            out[path] = key_node.start_mark.line + 1
            _collect_lines(value_node, path, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            path = f"{prefix}[{i}]"
            out[path] = item.start_mark.line + 1
            _collect_lines(item, path, out)


def parse_yaml(text: str, file: str | None = None) -> Source:
    try:
        node = yaml.compose(text, Loader=_Loader)
        data = yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        msg = exc.problem or str(exc)
        raise InputError(
            [Problem("", f"YAML syntax error: {msg}", "check indentation and quoting near that line", line, file)]
        ) from None
    except yaml.YAMLError as exc:
        raise InputError([Problem("", f"YAML error: {exc}", "", None, file)]) from None
    lines: dict[str, int] = {}
    if node is not None:
        _collect_lines(node, "", lines)
    return Source(data, lines, file)


def load_yaml_file(path: str, what: str = "design", example: str = "labs/mini-routed.yml") -> Source:
    """Read and parse the YAML file at `path`; `what` it is (design, price book ...)
    names it in the messages, `example` is a path the fix can suggest."""
    import os

    if os.path.isdir(path):
        inside = sorted(f for f in os.listdir(path) if f.endswith((".yml", ".yaml")))[:3]
        hint = (f"give a {what} file, e.g. {os.path.join(path, inside[0])}" if inside
                else f"give the path of a {what} YAML file, e.g. {example}")
        raise InputError([Problem("", f"is a directory, not a {what} file", hint, None, path)])
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise InputError([Problem("", f"{what} file not found", f"give the path of a {what} YAML file, e.g. {example}",
                                  None, path)]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError([Problem("", f"cannot read the {what} file: {exc}", "", None, path)]) from None
    return parse_yaml(text, path)
