"""`vtysh -C` over thousands of configs, each distinct line judged once per CLI node.

A 32k-GPU OUTDIR holds 534,528 frr.conf lines but only a few dozen distinct ones once
addresses, ASNs and description texts are set aside: every switch repeats the same
policy, peer-group and neighbor lines with other numbers. vtysh's verdict
on a line, and the node it is in afterwards, depend only on the node it is in
before and the line itself (it keeps no other state in a dry run), so this module
asks vtysh once per distinct (node, line) and replays its answers through every
file; a file that keys like one replayed before takes that one's verdict whole. What
vtysh was asked and what each file is told are the same as a full run
(a test compares both on real and mangled configs); files this cannot follow go
to the full run.

How vtysh says which node it is in: a probe line that no node knows, which it
rejects as `% Unknown command[NODE]`. Each round sends, for every file not yet
covered, only the lines whose (node, line) is unknown (each followed by a probe)
and the known lines that take the file to another node before its next question;
everything learnt is keyed by the node vtysh reported, never by a guess.

Parts of a line are set aside by rule, each a fact of FRR's grammar checked against
this vtysh by the tests: a canonical IPv4 address as the whole token after `neighbor `
or `bgp router-id ` (every such address matches FRR's `A.B.C.D` token alike), and a
canonical IPv4 prefix after `network ` (`A.B.C.D/M`, host bits and all); in
` neighbor <that address> description TEXT` the TEXT when it is printable ASCII (a
`LINE...` argument takes any words), and the name of a whole line `hostname NAME` (a
`WORD`); and the ASN of a whole line `router bgp N` or ` neighbor <that address>
remote-as N` written in canonical decimal from 1 to 4294967295 (FRR 8's
`(1-4294967295)` range token takes every such number alike, and `router bgp` enters
the same node for each). Without the rules for a switch's own name, ASN, router-id and
networks, those were ~10,800 of 10,876 distinct lines at 32k GPUs, and every file went to
vtysh. Files with other line breaks than `\\n`, NUL or lines near vtysh's 4,096-byte read
buffer go to the full run as they are.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from functools import cached_property

from ..outputs.clab_exec import CIDR, V4
from .frr_syntax import (_SEPARATOR, PROBE, STOPPED, FrrProblem, _check_one_process, complaints, run_script,
                         vtysh_missing)

# Back to the config node from wherever a file left vtysh: `configure terminal` from outside
# config mode (a top-level `exit`), the separator from any node below (each rejected elsewhere).
_HOME = ("configure terminal", _SEPARATOR)
_NOT_A_KEY = "\n"  # a script line whose answer is not kept (keys never hold a newline)
_ENDED = -2  # the node after a line that ends vtysh
# Sought only after the literal words they follow in rendered configs: a pattern that starts
# with a literal is scanned for at C speed (5x faster here); other spellings are asked as written.
_IPV4 = re.compile(rf"neighbor {V4}(?![^ \t\n])")
_IPV4_STANDIN = "neighbor 192.0.2.1"
_ROUTER_ID = re.compile(rf"bgp router-id {V4}(?![^ \t\n])")
_ROUTER_ID_STANDIN = "bgp router-id 192.0.2.1"
_NETWORK = re.compile(rf"network {CIDR}(?![^ \t\n])")
_NETWORK_STANDIN = "network 192.0.2.0/24"
_HOSTNAME = re.compile(r"\nhostname [!-~]+(?=\n)")
_HOSTNAME_STANDIN = "\nhostname x"
# 1-4294967295 in canonical decimal (no sign, no leading zero), digit by digit below 4294967295;
# ASCII digits only (`\d` would take other scripts' digits, which FRR refuses)
_ASN = (r"(?:[1-9]\d{0,8}|[1-3]\d{9}|4(?:[01]\d{8}|2(?:[0-8]\d{7}|9(?:[0-3]\d{6}|4(?:[0-8]\d{5}|9(?:[0-5]\d{4}"
        r"|6(?:[0-6]\d{3}|7(?:[01]\d\d|2(?:[0-8]\d|9[0-5])))))))))").replace(r"\d", "[0-9]")
_ROUTER_BGP = re.compile(rf"\nrouter bgp {_ASN}(?=\n)")  # the whole line: no view or vrf words
_ROUTER_BGP_STANDIN = "\nrouter bgp 1"
_REMOTE_AS = re.compile(rf"\n neighbor 192\.0\.2\.1 remote-as {_ASN}(?=\n)")
_REMOTE_AS_STANDIN = "\n neighbor 192.0.2.1 remote-as 1"
_DESCRIPTION = re.compile(r"\n neighbor 192\.0\.2\.1 description [!-~][ -~]*$", re.M)
_DESCRIPTION_STANDIN = "\n neighbor 192.0.2.1 description x"
# Applied in this order: the description and remote-as rules match the neighbor stand-in.
_STANDINS = ((_IPV4, _IPV4_STANDIN), (_DESCRIPTION, _DESCRIPTION_STANDIN), (_REMOTE_AS, _REMOTE_AS_STANDIN),
             (_ROUTER_ID, _ROUTER_ID_STANDIN), (_ROUTER_BGP, _ROUTER_BGP_STANDIN),
             (_HOSTNAME, _HOSTNAME_STANDIN), (_NETWORK, _NETWORK_STANDIN))
# splitlines() breaks here and vtysh (fgets) does not, or vtysh stops at NUL: such files run whole
_ODD = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\x00]")
MAX_LINE = 1000  # characters; at most 4,000 bytes, below vtysh's 4,096-byte line buffer
ROUNDS = 4  # rounds of questions before a file still not covered runs whole
MAX_TOLD = 1024  # whole-file verdicts kept (a fabric has a few shapes; past it a file is replayed line by line)


@dataclass
class FrrMemo:
    """vtysh's answers, shared by every check of one validate run (threads may add at once:
    each entry is written whole, and two threads learning the same key learn the same)."""

    said: dict[tuple[int, str], tuple[str | None, int]] = field(default_factory=dict)
    # the node a line moved to, by (node, first two words): a guess for the next round's
    # lines not asked yet (a wrong guess costs a round, never a wrong verdict)
    moves: dict[tuple[int, tuple[str, ...]], int] = field(default_factory=dict)
    top: int | None = None  # the config node's number, where every file starts
    asked: int = 0  # lines sent to vtysh (the tests count them)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # a whole file's verdict by its keyed text: (line number, message) of each problem, and
    # whether vtysh stopped in it. Switches of a shape key alike (3 keyed texts of 2,560 files at
    # 32k GPUs), and a replay depends only on the keys (`said` never changes an answer once learnt)
    told: dict[str, tuple[tuple[tuple[int, str], ...], bool]] = field(default_factory=dict)

    def learn(self, node: int, key: str, message: str | None, after: int) -> None:
        self.said[(node, key)] = (message, after)
        words = tuple(key.split()[:2])
        guess = self.moves.setdefault((node, words), after)
        if guess != after:
            self.moves[(node, words)] = -1  # the same words go to different nodes: no guess

    def guess(self, node: int, key: str) -> int:
        after = self.moves.get((node, tuple(key.split()[:2])), node)
        return node if after == -1 else after


@dataclass
class _File:
    name: str
    text: str
    lines: list[str]
    keyed: str  # the text with the switch's own values set aside (`_STANDINS`)

    @cached_property
    def keys(self) -> list[str]:
        """The keyed text's lines, cut once (a file not told whole is walked, then asked)."""
        return _split(self.keyed)


def _split(text: str) -> list[str]:
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _odd(text: str) -> bool:
    if text.isascii():  # a few substring scans run at memchr speed; the class search does not
        return any(c in text for c in "\r\x0b\x0c\x1c\x1d\x1e\x00")
    return _ODD.search(text) is not None


def _prepare(name: str, text: str) -> _File | None:
    """The file with its keys, or None for a file that must run whole."""
    if _odd(text):
        return None
    lines = _split(text)
    if max(map(len, lines), default=0) > MAX_LINE:
        return None
    keyed = text
    for pattern, standin in _STANDINS:
        keyed = pattern.sub(standin, keyed)
    return _File(name, text, lines, keyed) if keyed.count("\n") == text.count("\n") else None


def _replay(memo: FrrMemo, f: _File) -> list[FrrProblem] | None:
    """The file's problems from the memo alone, or None where it reaches a line not asked yet."""
    told = memo.told.get(f.keyed)
    if told is None:
        told = _walk(memo, f.keys)
        if told is None:
            return None
        if len(memo.told) < MAX_TOLD:
            memo.told[f.keyed] = told
    problems, stopped = told
    out = [FrrProblem(f.name, number, f.lines[number - 1].strip() or None, message) for number, message in problems]
    return out + [FrrProblem(f.name, None, None, STOPPED)] if stopped else out


def _walk(memo: FrrMemo, keys: list[str]) -> tuple[tuple[tuple[int, str], ...], bool] | None:
    """(line number, message) of each problem of a file of these keys, and whether vtysh
    stops in it, from the memo alone; None where it reaches a line not asked yet."""
    node = memo.top
    if node is None:
        return None
    said = memo.said
    problems = []
    for number, key in enumerate(keys, 1):
        answer = said.get((node, key))
        if answer is None:
            return None
        message, node = answer
        if message is not None:
            problems.append((number, message))
        if node == _ENDED:
            return tuple(problems), True
    return tuple(problems), False


def _questions(memo: FrrMemo, files: list[_File]) -> tuple[list[str], list[str | None]]:
    """Script lines and, per line, the key vtysh's answer is filed under (None for a probe)."""
    script: list[str] = []
    keys: list[str | None] = []

    def send(line: str, key: str | None) -> None:
        script.append(line)
        keys.append(key)

    asked: dict[tuple[int, str], int] = {}  # this round's questions: another file's answer will do
    for f in files:
        for line in _HOME:
            send(line, _NOT_A_KEY)
        send(PROBE, None)
        node = at = memo.top  # where the file is; where vtysh is (as far as known or guessed)
        moved: list[tuple[str, str]] = []  # known lines that moved the file since vtysh was there
        for line, key in zip(f.lines, f.keys):
            if node is None:  # the first round: nothing known, every line is a question
                send(line, key)
                send(PROBE, None)
                continue
            answer = memo.said.get((node, key))
            after = answer[1] if answer is not None else asked.get((node, key))
            if after is None:
                if at != node:  # take vtysh where the file is, by the lines that took the file there
                    for m in moved:
                        send(*m)
                moved = []
                after = at = asked[(node, key)] = memo.guess(node, key)
                send(line, key)
                send(PROBE, None)
            elif after == _ENDED:
                break  # vtysh would read no further: nothing after it to ask
            elif after != node:
                moved.append((line, key))
            node = after
    return script, keys


def _ask(memo: FrrMemo, script: list[str], keys: list[str | None], timeout: float) -> bool:
    """Run the script; file every answer under the node vtysh reported before the line.
    False when vtysh failed as a whole (nothing learnt)."""
    script = script + [*_HOME, PROBE]  # read to the end, or ended by a line (which, below)
    keys = keys + [_NOT_A_KEY, _NOT_A_KEY, None]
    res = run_script(script, timeout)
    if res.returncode not in (0, 2):
        return False
    # line -> (message, node it was judged in; None if vtysh did not say: nothing is learnt from it)
    said_of = {c.line: (c.message, c.node) for c in complaints(res)}
    # vtysh ended early: after the last line it said anything of (or it ended on the first)
    ended_after = None if len(script) in said_of else max(said_of, default=0)
    with memo.lock:
        memo.asked += len(script)
        node: int | None = None  # where vtysh is, while known
        for number, key in enumerate(keys, 1):
            said = said_of.get(number)
            if key is None:  # a probe: vtysh names its node
                node = said[1] if said and said[0] == "% Unknown command" else None
                if memo.top is None and node is not None:
                    memo.top = node  # the first probe follows the first way home: the config node
                continue
            if keys[number] is None:  # a question: the probe after it says where it left vtysh
                after = said_of.get(number + 1)
                if ended_after is not None and ended_after <= number and after is None:
                    after = (PROBE, _ENDED)  # vtysh read this line and no other
                if node is not None and after is not None and after[1] is not None and key != _NOT_A_KEY \
                        and (said is None or said[1] == node):
                    memo.learn(node, key, said[0] if said else None, after[1])
                if after is not None and after[1] == _ENDED:
                    break
            elif node is not None:
                known = memo.said.get((node, key))
                node = known[1] if known is not None else None
    return True


def check_texts(named: list[tuple[str, str]], memo: FrrMemo, *, timeout: float = 120.0) -> list[FrrProblem]:
    """What `frr_syntax.check_frr_texts` finds in these configs, asking vtysh only what
    `memo` does not know yet (and learning it there)."""
    missing = vtysh_missing()
    if missing is not None:
        return [missing]
    whole: list[tuple[str, str]] = []
    pending: list[_File] = []
    for name, text in named:
        f = _prepare(name, text)
        if f is None:
            whole.append((name, text))
        else:
            pending.append(f)
    found: dict[str, list[FrrProblem]] = {}
    for round_ in range(ROUNDS + 1):
        left = []
        for f in pending:
            problems = _replay(memo, f)
            if problems is None:
                left.append(f)
            else:
                found[f.name] = problems
        pending = left
        if not pending or round_ == ROUNDS:
            break
        batch = pending if memo.top is not None else pending[:1]  # learn the common lines from one first
        if not _ask(memo, *_questions(memo, batch), timeout):
            break
    whole += [(f.name, f.text) for f in pending]
    if whole:
        for p in _check_one_process(whole, timeout):
            found.setdefault(p.file, []).append(p)
    return [p for name, _text in named for p in found.get(name, [])]
