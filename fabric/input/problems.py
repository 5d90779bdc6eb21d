"""Problems found in user input, collected rather than raised one at a time.

A :class:`Problem` names where (key path and, when known, file and line), what
constraint was broken, and how to fix it. Loaders and validators append to a
list; callers stop at phase boundaries by raising :class:`InputError` with all
of them, so a user fixes everything in one round.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..safe_text import printable


@dataclass(frozen=True)
class Problem:
    path: str  # dotted key path into the input ("hb_domain.size"), "" for the whole file
    message: str  # the constraint and the offending value
    hint: str = ""  # how to fix it
    line: int | None = None  # 1-based line in the input file
    file: str | None = None

    def format(self) -> str:
        """The problem for a terminal: every part from the input escaped (a key or file name
        may hold an escape sequence that would rewrite the screen, or a newline that would
        fake another error)."""
        where = "''" if self.file == "" else printable(self.file or "design", lines=False)  # '': an empty path given
        if self.line is not None:
            where += f":{self.line}"
        key = f" {printable(self.path, lines=False)}:" if self.path else ""
        text = f"error: {where}:{key} {printable(self.message)}"
        if self.hint:
            text += f"\n  fix: {printable(self.hint)}"
        return text


# Problems printed for one input error: a hostile file can be wrong 20,000 times, and past the
# first screenful a reader fixes those and runs again (the count says how many remain).
MAX_PRINTED = 50


def report_lines(problems: list[Problem], limit: int = MAX_PRINTED) -> list[str]:
    """What a terminal shows of `problems`: the first `limit` formatted, then one line for the rest."""
    out = [p.format() for p in problems[:limit]]
    if len(problems) > limit:
        rest = len(problems) - limit
        out.append(f"... and {rest:,} more problem{'s' if rest != 1 else ''} (fix these first)")
    return out


class InputError(Exception):
    """Invalid user input; carries every problem found (CLI exit code 2)."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(p.format() for p in self.problems))


class AllInputs:
    """Reads several input files, keeping going past a bad one, so that
    :meth:`stop_if_any` reports every file's problems in one round."""

    def __init__(self):
        self.problems: list[Problem] = []

    def read(self, load, *args):
        """`load(*args)`, or None with its problems kept when the input is bad."""
        try:
            return load(*args)
        except InputError as exc:
            self.problems.extend(exc.problems)
            return None

    def stop_if_any(self) -> None:
        if self.problems:
            raise InputError(self.problems)


MAX_CHOICES_SHOWN = 20  # a 1,024-GPU lab has 2,000 node names: the first ones, then the count


def did_you_mean(word: str, choices: list[str], noun: str = "keys") -> str:
    """The closest choice, or the known `noun` (keys, nodes, devices, presets), the first few."""
    import difflib

    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    names = sorted(choices)
    more = f" ... ({len(names):,} in all)" if len(names) > MAX_CHOICES_SHOWN else ""
    return f"known {noun}: {', '.join(names[:MAX_CHOICES_SHOWN])}{more}"


def short(value: object, limit: int = 60) -> str:
    """`value` as text for a message, cut to `limit` characters: hostile input
    may carry megabytes, and a message must stay readable."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"
