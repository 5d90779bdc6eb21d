"""Text from outside (a file name, a key, a tool's echo of a line) made safe to show or to
read as a number.

An OUTDIR or a design may come from a pull request: a name holding an escape sequence
would rewrite the terminal of whoever reads the report, a newline would fake another
line of it, and most control characters have no form at all in XML 1.0 (a JUnit report
holding one does not parse). Pure, imports nothing of railonly.
"""

from __future__ import annotations

import re

_DIGIT_RUNS = re.compile(r"([0-9]+)")
_DECIMAL = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")

# An IPv4 address in the dotted form railonly writes, and one with its prefix length: by
# regex, ~20x faster than ipaddress (a 32k-GPU fabric.json has 260k link ends; the clab
# exec grammar runs it per line). ASCII digits only, no leading zeros but a lone 0.
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
IPV4 = rf"(?:{_OCTET}\.){{3}}{_OCTET}"
IPV4_CIDR = IPV4 + r"/(?:3[0-2]|[12]?[0-9])"


def printable(text: str, lines: bool = True) -> str:
    r"""`text` with every character a terminal or an XML file must not get raw escaped
    (\x1b, \u202e, a lone surrogate of an undecodable file name...); newlines and tabs
    stay when `lines`."""
    keep = "\n\t" if lines else ""
    if text.isprintable() or (lines and text.replace("\n", "").replace("\t", "").isprintable()):
        return text  # the usual case, checked at C speed
    return "".join(ch if ch.isprintable() or ch in keep else
                   (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}" if ord(ch) < 0x10000
                    else f"\\U{ord(ch):08x}") for ch in text)


def whole(text: str) -> int | None:
    """The whole number `text` writes in ASCII digits, None for anything else: str.isdigit
    takes '²' (which int() then refuses) and '٣' (which int() reads as 3, and no switch,
    kernel or CSV reader does); int() alone takes ' 3', '+3' and '1_0'."""
    if not (text.isascii() and text.isdigit()):
        return None
    try:
        return int(text)
    except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
        return None


def signed_whole(text: str) -> int | None:
    """A whole number with an optional sign ('-3', '+3'), digits as :func:`whole` reads them."""
    n = whole(text[1:] if text.startswith(("-", "+")) else text)
    return None if n is None else -n if text.startswith("-") else n


def decimal(text: str) -> float | None:
    """The finite number `text` writes in ASCII (digits, a point, an exponent: '2', '-0.5',
    '1e3'), None for anything else: float() also reads '٣' as 3, '1_0' as 10, ' 3', 'nan'
    and 'inf'."""
    if not _DECIMAL.fullmatch(text):
        return None
    value = float(text)
    return value if value - value == 0 else None  # '1e999' is inf


def natural(text: str) -> tuple:
    """A sort key that compares runs of digits as numbers: rail2-leaf0 before rail10-leaf0."""
    return tuple((0, n, "") if (n := whole(p)) is not None else (1, 0, p) for p in _DIGIT_RUNS.split(text) if p)


__all__ = ["decimal", "natural", "printable", "signed_whole", "whole"]
