"""Text from outside (a file name, a key, a tool's echo of a line) made safe to show.

An OUTDIR or a design may come from a pull request: a name holding an escape sequence
would rewrite the terminal of whoever reads the report, a newline would fake another
line of it, and most control characters have no form at all in XML 1.0 (a JUnit report
holding one does not parse). Pure, imports nothing of railonly.
"""

from __future__ import annotations


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


__all__ = ["printable"]
