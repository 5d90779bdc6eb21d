"""The lab files against their projects' published schemas: `<name>.clab.yml`
against containerlab's topology JSON Schema, the `Topology` document of
`<name>.clabernetes.yaml` against the clabernetes CRD's openAPIV3Schema.

Both schemas ship in `data/` (see data/SOURCES.md). Draft-07 validation: the
clab schema's short-link `prefixItems` is ignored by it, which is why link
endpoints are also checked by the cross-checks, not only here.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Callable

import yaml

from ..outdir_layout import clab_yml, clabernetes_yaml
from ..graph.model import Fabric
from ..outputs.clabernetes import SAFE_LOADER
from .validate_report import Result

DATA = Path(__file__).resolve().parent / "data"
CLAB_SCHEMA = DATA / "clab.schema.json"
CLABERNETES_CRD = DATA / "clabernetes-topology.crd.yaml"
_MAX_REPORTED = 10


@lru_cache(maxsize=1)
def clab_validator():
    import jsonschema

    return jsonschema.Draft7Validator(json.loads(CLAB_SCHEMA.read_text(encoding="utf-8")))


@lru_cache(maxsize=1)
def topology_validator():
    import jsonschema

    crd = yaml.load(CLABERNETES_CRD.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1")
    return jsonschema.Draft7Validator(version["schema"]["openAPIV3Schema"])


def _errors(validator, doc, path: str) -> list[str]:
    found = sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    out = [f"{path}: {'/'.join(map(str, e.absolute_path)) or '<document>'}: {e.message[:200]}"
           for e in found[:_MAX_REPORTED]]
    if len(found) > _MAX_REPORTED:
        out.append(f"{path}: ... and {len(found) - _MAX_REPORTED} more")
    return out


def _load(read: Callable[[str], "str | None"], path: str, topology_only: bool = False):
    """(document, problem): parsed with OUTDIR's bounds (no aliases, bounded
    depth and size), since OUTDIR is untrusted; (None, None) when absent.
    `topology_only`: of a multi-document manifest, only the `kind: Topology`
    document (the ConfigMaps are files as values: the CRD does not cover them)."""
    from ..outdir.reader import MAX_FILE_BYTES, OUTDIR_YAML_LIMITS, UntrustedFile, parse_yaml

    text = read(path)
    if text is None:
        return None, None
    limits = OUTDIR_YAML_LIMITS
    if topology_only:
        parts = [p for p in re.split(r"(?m)^---[ \t]*$", text) if re.search(r"(?m)^kind:[ \t]*Topology[ \t]*$", p)]
        if len(parts) != 1:
            return None, f"{path}: {len(parts)} Topology documents (expected 1)"
        text = parts[0]
        # The containerlab definition is one text value: as long as the file allows.
        limits = replace(OUTDIR_YAML_LIMITS, max_scalar=MAX_FILE_BYTES)
    try:
        return parse_yaml(text, path, limits)[0], None
    except UntrustedFile as exc:
        return None, f"{path}: {exc.problems[0].message}"


def check(fabric: Fabric, read: Callable[[str], "str | None"]) -> list[Result]:
    """One result per lab file present in OUTDIR (absent files are not ours to judge here)."""
    name = fabric.design.name
    results = []
    path = clab_yml(name)
    doc, bad = _load(read, path)
    if doc is not None or bad:
        probs = [bad] if bad else _errors(clab_validator(), doc, path)
        results.append(Result(f"schema/{path}", "schema", not probs,
                              "\n".join(probs) or "passes the containerlab topology schema"))
    path = clabernetes_yaml(name)
    topo, bad = _load(read, path, topology_only=True)
    if topo is not None or bad:
        probs = [bad] if bad else _errors(topology_validator(), topo, path)
        results.append(Result(f"schema/{path}", "schema", not probs,
                              "\n".join(probs) or "its Topology passes the clabernetes CRD schema"))
    return results
