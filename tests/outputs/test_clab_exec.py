"""The clab exec-line grammar is one module: rendered, allowed and parsed from the same items."""

from __future__ import annotations

import re

import pytest

from railonly.fabric.outdir.reader import check_exec_line
from railonly.fabric.outputs import clab_exec

from ..conftest import REPO

LINES = ["ip link set dev eth1 mtu 9000", "ip link set dev br0 up", "ip link set dev gpu0 master br0",
         "ip link add name br0 type bridge", "ip addr add 10.0.0.2/29 dev eth1",
         "ip route add 10.64.0.0/10 via 172.16.0.2 dev hb0",
         "ip route add 10.64.0.0/10 via 172.16.0.2 dev hb0 src 10.0.0.2",
         "sysctl -w net.ipv4.conf.all.rp_filter=0"]


@pytest.mark.parametrize("line", LINES)
def test_a_form_renders_what_it_parses_and_the_reader_allows_it(line):
    assert str(clab_exec.parse(line)) == line and check_exec_line(line) is None


@pytest.mark.parametrize("line, why", [("sh -c reboot", "not a command the compiler emits"),
                                       ("sysctl -w kernel.panic=1", "not on the allow-list"),
                                       ("ip route add 10.0.0.0/8 via 1.2.3.4 dev eth1 table 5", "not a command"),
                                       # digits Python's \d takes and `ip` does not (Arabic-Indic 9999, 1)
                                       ("ip link set dev eth1 mtu \u0669\u0669\u0669\u0669", "not a command"),
                                       ("ip addr add \u0661.0.0.2/29 dev eth1", "not a command"),
                                       ("ip addr add 10.0.0.2/\u0669 dev eth1", "not a command")])
def test_the_reader_and_the_parser_refuse_alike(line, why):
    with pytest.raises(clab_exec.ExecLineError):
        clab_exec.parse(line)
    assert why in check_exec_line(line)


def test_no_other_module_spells_an_exec_line():
    """The forms live in clab_exec alone: no other module of fabric/ or emulation/ writes or matches
    one as text (runtime commands are argv lists, never an exec line). host_forms.py holds the
    lines of the servers' own scripts (rails.sh), which validate matches: not exec lines."""
    form = re.compile(r"""["'](ip (link set dev|link add name|addr add|route add)|sysctl -w) """)
    found = [str(f.relative_to(REPO)) for top in ("fabric", "emulation") for f in sorted((REPO / top).rglob("*.py"))
             if f.name not in ("clab_exec.py", "host_forms.py") and form.search(f.read_text())]
    assert found == []


def test_every_form_is_one_row_and_has_a_sample_above():
    """Each form of the table renders, parses and is allowed from its one row: a new row
    without a sample line in LINES fails here."""
    assert sorted(type(clab_exec.parse(line)).__name__ for line in LINES if "src" not in line) == \
        sorted(form.__name__ for form in clab_exec.FORMS)
