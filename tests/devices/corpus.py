"""The vendor reference corpora (tests/data/*_forms.yaml) and the configs they judge.

Every EOS startup-config and SONiC config_db.json railonly emits for the example
designs (labs/*.yml, each also compiled with EOS switches) and the golden cases
(tests/devices/cases.py), plus a few shapes the examples lack (three tiers at lab
size, every NIC speed).
"""

from __future__ import annotations

import json
import re
import sys
from functools import lru_cache
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"


@lru_cache(maxsize=None)
def eos_corpus() -> dict:
    doc = yaml.safe_load((DATA / "eos_forms.yaml").read_text())
    doc["compiled"] = [re.compile(f["form"]) for f in doc["forms"]]
    return doc


@lru_cache(maxsize=None)
def sonic_corpus() -> dict:
    return yaml.safe_load((DATA / "sonic_forms.yaml").read_text())


def eos_unmatched(text: str) -> list[str]:
    """'line N: <line>' for every line no corpus form matches."""
    forms = eos_corpus()["compiled"]
    return [f"line {n}: {line!r}" for n, line in enumerate(text.splitlines(), 1)
            if not any(f.match(line) for f in forms)]


def eos_section_problems(text: str) -> list[str]:
    """Top-level sections out of the corpus order (the order EOS prints)."""
    order = [re.compile(p) for p in eos_corpus()["section_order"]]
    last, out = -1, []
    for n, line in enumerate(text.splitlines(), 1):
        if not line or line[0] in " !":
            continue
        rank = next((i for i, p in enumerate(order) if p.match(line)), None)
        if rank is None:
            out.append(f"line {n}: {line!r} is no section the corpus orders")
        elif rank < last:
            out.append(f"line {n}: {line!r} comes after a later section")
        else:
            last = rank
    return out


def sonic_unmatched(doc: dict) -> list[str]:
    """'TABLE|key.field' for every table, key shape, field or value the corpus does not hold."""
    tables = sonic_corpus()["tables"]
    out = []
    for table, entries in doc.items():
        spec = tables.get(table)
        if spec is None:
            out.append(f"{table}: table not in the corpus")
            continue
        keys = [re.compile(k) for k in spec["keys"]]
        names = re.compile(spec["field_names"]) if "field_names" in spec else None
        for key, fields in entries.items():
            if not any(k.match(key) for k in keys):
                out.append(f"{table}|{key}: key shape not in the corpus")
            for name, value in fields.items():
                if names is not None:
                    form = spec["fields"]["*"] if names.match(name) else None
                else:
                    form = spec["fields"].get(name)
                if isinstance(form, dict):
                    form = form["value"]
                if form is None:
                    out.append(f"{table}|{key}.{name}: field not in the corpus")
                elif not re.match(form, str(value)):
                    out.append(f"{table}|{key}.{name}: value {value!r} does not match {form}")
    return out


def _design(text: str, platform: str | None = None) -> str:
    d = yaml.safe_load(text)
    if platform:
        d.setdefault("switch", {})["platform"] = platform
        d["switch"].pop("platform_by_tier", None)
    return yaml.safe_dump(d, sort_keys=False)


# Shapes the examples lack, at lab size
EXTRA = {
    "eos-routed-3tier": "name: e3\nhb_domain: {size: 2, count: 12}\nswitch: {radix: 4, platform: eos}\n",
    "sonic-routed-3tier": "name: s3\nhb_domain: {size: 2, count: 12}\nswitch: {radix: 4}\n",
    **{f"{p}-l2-shared": f"name: {p[0]}sh\nhb_domain: {{size: 4, count: 3}}\n"
                         f"switch: {{radix: 8, platform: {p}, share_rails: true}}\nrail: {{mode: l2}}\n" for p in ("eos", "sonic")},
    **{f"eos-l2-{g}g": f"name: e{g}\nhb_domain: {{size: 2, count: 3}}\nnic: {{gbps: {g}}}\n"
                       f"switch: {{radix: 4, platform: eos}}\nrail: {{mode: l2}}\n" for g in (100, 200, 800)},
}
# 15-20 s per compile each (2,560 switches; 32,768 hosts): the lab-sized extras
# have their shapes (three tiers; one-tier L2 rails, shared or not, radix-wide VLANs)
SKIP_EXAMPLES = {"dgx-h100-32k", "gh200-32k", "gh200-32k-shared"}


@lru_cache(maxsize=None)
def designs() -> dict[str, str]:
    """name -> design text: every example as written, again with EOS switches, the golden cases, EXTRA."""
    sys.path.insert(0, str(REPO / "tests" / "devices"))
    from cases import CASES

    from railonly.fabric.platforms import catalog

    out = {}
    for path in sorted((REPO / "labs").glob("*.yml")):
        if path.stem in SKIP_EXAMPLES:
            continue
        text = path.read_text()
        out[f"labs/{path.stem}"] = text
        model = (yaml.safe_load(text).get("switch") or {}).get("model", "generic")
        if model == "generic" or "eos" in catalog.shipped()[model].os:  # a catalog model runs the OSes it lists
            out[f"labs/{path.stem}+eos"] = _design(text, "eos")
    out.update({f"case/{k}": v for k, v in CASES.items()})
    out.update({f"extra/{k}": v for k, v in EXTRA.items()})
    return out


@lru_cache(maxsize=None)
def compiled(name: str) -> dict[str, bytes]:
    from railonly.fabric.compiler import compile_design
    from railonly.fabric.design.design import parse_design

    _, files = compile_design(parse_design(designs()[name], f"{name}.yml"))
    return files


def eos_configs(files: dict[str, bytes]) -> dict[str, str]:
    return {p: b.decode() for p, b in files.items() if p.endswith("/startup-config")}


def sonic_configs(files: dict[str, bytes]) -> dict[str, dict]:
    return {p: json.loads(b) for p, b in files.items() if p.endswith("/config_db.json")}
