"""Every EOS line railonly emits is a form seen in a public EOS config (tests/data/eos_forms.yaml)."""

from __future__ import annotations

import re

import pytest

from corpus import compiled, designs, eos_configs, eos_corpus, eos_section_problems, eos_unmatched

# The NVL72 example (576 GPUs, 72 rails) takes 9-10 s a run: kept out of the fast lane.
NAMES = sorted(designs())
PARAMS = [pytest.param(n, marks=pytest.mark.slow) if "nvl72" in n else n for n in NAMES]


def test_every_form_names_a_known_source():
    doc = eos_corpus()
    for f in doc["forms"]:
        assert f["source"] in doc["sources"], f
        src = doc["sources"][f["source"]]
        assert ("repo" in src and "path" in src) or "locator" in src, src
        re.compile(f["form"])


@pytest.mark.parametrize("name", PARAMS)
def test_every_emitted_eos_line_is_a_known_form(name):
    configs = eos_configs(compiled(name))
    if not configs:
        pytest.skip("no EOS switch in this design")
    seen: dict[str, str] = {}  # each distinct text once (most switches of a design share their lines)
    for path, text in configs.items():
        seen.setdefault(text, path)
    for text, path in seen.items():
        assert not eos_unmatched(text), f"{path}: lines no public EOS form holds:\n" + "\n".join(eos_unmatched(text)[:20])
        assert not eos_section_problems(text), f"{path}: " + "\n".join(eos_section_problems(text))


@pytest.mark.parametrize("name", [p for p, n in zip(PARAMS, NAMES) if n.startswith("labs/")])
def test_example_eos_ports_print_lanes_and_gpu_ports_are_edge_ports(name):
    for path, text in eos_configs(compiled(name)).items():
        assert not re.search(r"^   speed \d+g$", text, re.M), f"{path}: a speed without its lane count"
        for block in text.split("\n!\n"):
            if block.startswith("interface Ethernet") and "   switchport access vlan " in block:
                assert "   spanning-tree portfast\n" in block and "   spanning-tree bpduguard enable\n" in block, \
                    f"{path}: GPU port without edge settings:\n{block}"


class _Injected:
    """A template whose output gets one extra line after every `mtu` line."""

    def __init__(self, real, line: str):
        self.real, self.line = real, line

    def render(self, **kw) -> str:
        return re.sub(r"^(   mtu \d+\n)", r"\1" + self.line + "\n", self.real.render(**kw), flags=re.M)


@pytest.mark.parametrize("line", ["   speed 400g", "   spanning-tree portfast edge", "  mtu 9100"])
def test_a_line_the_corpus_does_not_hold_fails(monkeypatch, line):
    from railonly.fabric.compiler import compile_design
    from railonly.fabric.design.design import parse_design
    from railonly.fabric.devices import eos_render as eos

    real = eos.template
    monkeypatch.setattr(eos, "template", lambda name: _Injected(real(name), line))
    _, files = compile_design(parse_design(designs()["case/eos-routed-1tier"], "x.yml"))
    text = files["configs/er1-rail0-leaf0/startup-config"].decode()
    bad = eos_unmatched(text)
    assert bad and all(repr(line) in b for b in bad), bad


def test_a_section_out_of_order_fails():
    text = eos_configs(compiled("case/eos-routed-1tier"))["configs/er1-rail0-leaf0/startup-config"]
    qos = "".join(ln + "\n" for ln in text.splitlines() if ln.startswith("qos map "))
    moved = text.replace(qos, "").replace("hostname ", qos + "!\nhostname ", 1)
    assert not eos_unmatched(moved) and eos_section_problems(moved)
