"""vtysh asked once per distinct (node, line): every file told exactly what a run of it alone says.

The ground truth in each test is vtysh run on each file by itself; the memoised check
must report the same problems, file by file and line by line, on real configs and on
configs mangled in the ways a hand edit or a hostile pull request would.
"""

from __future__ import annotations

import random
import re
import string
from pathlib import Path

import pytest

from railonly import proc
from railonly.fabric.validate import frr_memo
from railonly.fabric.validate.frr_memo import FrrMemo, check_texts
from railonly.fabric.validate.frr_syntax import check_frr_text

pytestmark = pytest.mark.skipif(proc.which("vtysh") is None, reason="FRR (vtysh) not installed")

GOLDEN = Path(__file__).parents[1] / "golden" / "configs"
CONFIGS = sorted(GOLDEN.glob("*/configs/*/frr.conf"))


def alone(named):
    """Ground truth: vtysh on each file by itself."""
    return [(p.file, p.line, p.command, p.message) for name, text in named for p in check_frr_text(text, name)]


def memoised(named, memo=None, shards=1):
    memo = memo or FrrMemo()
    found = [p for k in range(shards) for p in check_texts(named[k::shards], memo)]
    order = {name: i for i, (name, _t) in enumerate(named)}
    found.sort(key=lambda p: order[p.file])  # stable: each file keeps its own order
    return [(p.file, p.line, p.command, p.message) for p in found]


# A switch's own numbers and name, in forms the keys' rules set aside and forms they must not.
OWN = ["router bgp 04200000004", "router bgp 4294967296", "router bgp 4294967295", "router bgp 1 vrf x",
       " bgp router-id 10.0.0.01", " bgp router-id 10.0.0.256", " bgp router-id 0.0.0.0",
       " neighbor 10.0.0.1 remote-as 042", " neighbor 10.0.0.1 remote-as 4294967296 ",
       " neighbor 10.0.0.1 remote-as 4294967295", "  network 10.0.0.0/33", "  network 10.0.0.256/8",
       "  network 10.0.0.1/24", "  network 10.0.0.0/08", "  network 10.0.0.0/32 x", "hostname a b",
       "hostname é", "hostname", "hostname 1-x",
       # digits of other scripts, which Python's \d takes and FRR does not (Arabic-Indic 5, 1, 0)
       "router bgp 6\u0665000", " neighbor 10.0.0.1 remote-as 6\u0665000", " bgp router-id 10.0.0.\u0661",
       "  network 10.0.0.\u0660/24", " neighbor 10.0.0.\u0661 remote-as 65000"]


def mangle(text: str, rng: random.Random) -> str:
    lines = text.split("\n")[:-1]
    i = rng.randrange(len(lines))
    line = lines[i]
    words = line.split()
    op = rng.randrange(12)
    if op == 0:
        del lines[i]
    elif op == 1:
        lines.insert(rng.randrange(len(lines)), line)
    elif op == 2:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], line
    elif op == 3 and words:
        junk = rng.choice(["foo", "999999999999", "10.0.0.256", "010.0.0.1", "1.2.3", "-1", "4294967296", "x:y"])
        words[rng.randrange(len(words))] = junk
        lines[i] = " " + " ".join(words)
    elif op == 4:
        lines.insert(i, rng.choice(["exit", " exit", "exit-address-family", "end", "!", ""]))
    elif op == 5:
        lines[i] = line[: rng.randrange(len(line) + 1)]
    elif op == 6:  # a neighbor's description, emptied or odd
        tail = rng.choice(["", "a ! b # c", '"quoted', "x" * 50, "   ", "é"])
        lines.insert(i, f" neighbor 10.1.{rng.randrange(256)}.1 description {tail}")
    elif op == 7:  # another address, in the forms FRR takes and does not
        a = rng.choice(["0.0.0.0", "255.255.255.255", "10.0.0.01", "192.168.1.1", "1.1.1.1/32"])
        lines.insert(i, f" neighbor {a} remote-as {rng.choice(['65000', '0', 'external', '4294967295'])}")
    elif op == 8:  # whitespace that vtysh ignores and keys do not
        lines[i] = "\t" + line.replace(" ", "  ")
    elif op == 9:
        lines.insert(i, rng.choice(["router bgp 1", "route-map X permit 10", "interface Ethernet0",
                                    "address-family ipv4 unicast", "configure terminal"]))
    elif op == 10:
        lines.insert(i, "neighbor " + "".join(rng.choice(string.printable[:94]) for _ in range(8)))
    else:
        lines.insert(i, rng.choice(OWN))
    return "\n".join(lines) + "\n"


def test_the_golden_configs_are_told_what_vtysh_says():
    named = [(str(p.relative_to(GOLDEN)), p.read_text()) for p in CONFIGS]
    assert len(named) >= 20
    assert memoised(named, shards=3) == alone(named) == []


def test_mangled_configs_get_vtysh_s_own_verdicts():
    rng = random.Random(20261203)
    bases = [p.read_text() for p in CONFIGS]
    named = []
    for n in range(120):
        text = rng.choice(bases)
        for _ in range(rng.randrange(1, 4)):
            text = mangle(text, rng)
        named.append((f"m{n}", text))
    truth = alone(named)
    assert len({f for f, *_ in truth}) > 40  # most mangles are errors vtysh names
    memo = FrrMemo()
    assert memoised(named, memo, shards=4) == truth
    assert memoised(named, memo, shards=1) == truth  # and again from a full memo, no question asked


def test_own_numbers_and_names_in_every_form_get_vtysh_s_own_verdicts():
    """Each form of OWN in the BGP node's and the address family's lines of a real config,
    and at its top: the rules set aside only what vtysh judges alike."""
    base = next(p for p in CONFIGS if "router bgp" in p.read_text()).read_text().split("\n")
    at_bgp = next(i for i, line in enumerate(base) if line.startswith("router bgp")) + 1
    at_family = next(i for i, line in enumerate(base) if line.startswith(" address-family ipv4")) + 1
    named = []
    for k, line in enumerate(OWN):
        for at in (2, at_bgp, at_family):
            named.append((f"own{k}-{at}", "\n".join(base[:at] + [line] + base[at:])))
    truth = alone(named)
    assert len({f for f, *_ in truth}) > len(OWN)  # most are errors vtysh names somewhere
    assert memoised(named, shards=2) == truth


def test_one_bad_line_in_many_files_is_reported_in_each_at_its_own_line():
    base = CONFIGS[0].read_text().split("\n")
    named = []
    for n in range(6):
        lines = list(base)
        lines.insert(5 + n, " maximum-pathz 4")
        named.append((f"f{n}", "\n".join(lines)))
    assert memoised(named) == alone(named)
    assert [(f, line) for f, line, *_ in memoised(named)] == [(f"f{n}", 6 + n) for n in range(6)]


def test_most_lines_are_not_sent_again():
    named = [(str(p), p.read_text()) for p in CONFIGS]
    memo = FrrMemo()
    memoised(named, memo)
    lines = sum(t.count("\n") for _n, t in named)
    assert memo.asked < lines  # fewer lines asked than the files hold, probes included
    asked = memo.asked
    memoised(named, memo)
    assert memo.asked == asked  # all known: vtysh not run


def test_files_vtysh_reads_otherwise_run_whole():
    good = CONFIGS[0].read_text()
    named = [("cr", good.replace("\n", "\r\n", 3)), ("nul", good + "hostname a\x00b\n"),
             ("long", good + " neighbor 10.0.0.1 description " + "x" * 5000 + "\n"),
             ("vt", good + "hostname a\x0bb\n")]
    assert all(frr_memo._prepare(n, t) is None for n, t in named)
    assert memoised(named) == alone(named)


# The facts of FRR's grammar the keys rely on, against this vtysh.
def test_every_canonical_address_after_neighbor_is_judged_alike():
    rng = random.Random(7)
    addrs = ["0.0.0.0", "255.255.255.255", "192.0.2.1"] + [
        ".".join(str(rng.randrange(256)) for _ in range(4)) for _ in range(40)]
    for a in addrs:
        assert frr_memo._IPV4.fullmatch(f"neighbor {a}")
    text = "router bgp 65000\n" + "".join(
        f" neighbor {a} remote-as 65001\n neighbor {a} description x\n neighbor {a} bfd\n" for a in addrs)
    assert check_frr_text(text) == []


def test_any_printable_description_text_is_accepted():
    rng = random.Random(11)
    tails = ["x", "!", "#", "! x", '"', "a  b", "~" * 300] + [
        "".join(rng.choice(string.printable[:95]) for _ in range(rng.randrange(1, 80))).strip() or "y"
        for _ in range(60)]
    text = "router bgp 65000\n" + "".join(f" neighbor 192.0.2.1 description {t}\n" for t in tails)
    assert check_frr_text(text) == []
    assert all(frr_memo._DESCRIPTION.search(f"\n neighbor 192.0.2.1 description {t}") for t in tails)


def test_the_asn_pattern_is_frr_s_range_in_canonical_decimal():
    rng = random.Random(3)
    numbers = [0, 1, 9, 10, 999999999, 1000000000, 3999999999, 4199999999, 4294967295, 4294967296,
               4294967299, 4294967300, 4300000000, 9999999999, 10000000000] + [rng.randrange(1, 1 << 33) for _ in range(2000)]
    for n in numbers:
        assert bool(re.fullmatch(frr_memo._ASN, str(n))) == (1 <= n <= 4294967295), n
    for text in ("01", "+1", "-1", "1.5", " 1", "4200000004 ", "6\u0665000"):
        assert not re.fullmatch(frr_memo._ASN, text)


def test_every_canonical_asn_router_id_and_network_is_judged_alike():
    """`router bgp N` enters the BGP node for every N the rule sets aside (the lines after it
    are BGP commands), and remote-as, router-id and network take every value it sets aside."""
    rng = random.Random(5)
    asns = [1, 4294967295, 65000, 4200000004] + [rng.randrange(1, 1 << 32) for _ in range(30)]
    text = ""
    for n, peer in zip(asns, reversed(asns)):
        a = ".".join(str(rng.randrange(256)) for _ in range(4))
        prefix = f"{a}/{rng.randrange(33)}"
        line = f"\nrouter bgp {n}"
        assert frr_memo._ROUTER_BGP.match(line + "\n").end() == len(line)
        assert frr_memo._ROUTER_ID.fullmatch(f"bgp router-id {a}") and frr_memo._NETWORK.fullmatch(f"network {prefix}")
        text += (f"router bgp {n}\n bgp router-id {a}\n neighbor 192.0.2.1 remote-as {peer}\n"
                 f" address-family ipv4 unicast\n  network {prefix}\n exit-address-family\nexit\n")
    assert check_frr_text(text) == []


def test_any_printable_word_is_a_hostname_and_stays_in_the_config_node():
    rng = random.Random(13)
    names = ["x", "1", "-", "!", "~" * 300] + ["".join(rng.choice(string.printable[:94]) for _ in range(rng.randrange(1, 70)))
                                               for _ in range(60)]
    # a config-node command after each: vtysh is still there
    text = "".join(f"hostname {h}\nip prefix-list P seq 5 permit 10.0.0.0/8\n" for h in names)
    assert check_frr_text(text) == []
    assert all(frr_memo._HOSTNAME.match(f"\nhostname {h}\n") for h in names)


def test_files_of_one_shape_are_each_told_their_own_line():
    """Files that key alike share one verdict (`FrrMemo.told`), yet each problem quotes the
    file's own line: the same bad neighbor line with each switch's own address."""
    base = next(p for p in CONFIGS if "router bgp" in p.read_text()).read_text().split("\n")
    at_bgp = next(i for i, line in enumerate(base) if line.startswith("router bgp")) + 1
    named = [(f"s{n}", "\n".join(base[:at_bgp] + [f" neighbor 10.9.0.{n} remote-az 65000"] + base[at_bgp:]))
             for n in range(1, 5)]
    memo = FrrMemo()
    found = memoised(named, memo)
    assert found == alone(named)
    assert [c for _f, _l, c, _m in found] == [f"neighbor 10.9.0.{n} remote-az 65000" for n in range(1, 5)]
    assert len(memo.told) == 1
