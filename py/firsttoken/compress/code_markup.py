"""HTML and XML lexer.

Comments are `<!-- … -->` (WHATWG HTML §13.1.6; XML 1.0 §2.5). Tags, with their quoted
attribute values, are kept whole, as are CDATA sections, processing instructions and
the raw-text or whitespace-significant elements `script`, `style`, `pre` and
`textarea`, whose content is not markup at all. A tag written over several lines
keeps only its quoted attribute values whole: the whitespace between attributes is
insignificant, so those lines may lose their indentation. Inter-element blank lines
and indentation are whitespace that HTML collapses; a removed comment leaves nothing
behind, since it renders as nothing.

Conditional comments (`<!--[if IE]>`), server-side includes (`<!--#include`) and a
few template-engine markers (Knockout `ko`, usemin `build:`) are instructions, not
remarks, and stay. Server-side code (`<?php`, `<%`) could hold `<!--` in a string:
we give up on it.
"""

from __future__ import annotations

import re

from .code import DIRECTIVE, Span, classify_leading_license

__all__ = ["lex_markup"]

_ATTRS = r"""(?:[ \t\r\n]+[^ \t\r\n"'>/=]+(?:[ \t\r\n]*=[ \t\r\n]*(?:"[^"]*"|'[^']*'|[^ \t\r\n"'=<>`]+))?)*[ \t\r\n]*/?>"""
_MARKUP = re.compile(
    r"(?P<c><!--[\s\S]*?-->)"
    r"|(?P<raw><(?P<name>script|style|pre|textarea)\b" + _ATTRS + r"[\s\S]*?</(?P=name)[ \t\r\n]*>)"
    r"|(?P<s><!\[CDATA\[[\s\S]*?\]\]>|<\?[\s\S]*?\?>|<![A-Za-z][^>]*>|</?[A-Za-z][^ \t\r\n/>]*" + _ATTRS + r")"
    r"|(?P<bad><!--|<!\[CDATA\[|</?[A-Za-z])",
    re.I,
)
_TAG = re.compile(r"</?[A-Za-z]")
# Inside a tag the grammar above lets quotes occur only around attribute values.
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")
_DIRECTIVE = re.compile(r"<!--(?:\[|#|\s*/?ko\b|\s*(?:build:|endbuild|htmlmin|prettier-ignore|inject|endinject|!))", re.I)


def lex_markup(text: str) -> list[Span] | None:
    """Comment spans (and kept markup as string spans) of HTML/XML, or None."""
    if "<?php" in text or "<%" in text:
        return None
    spans: list[Span] = []
    pos = 0
    while True:
        m = _MARKUP.search(text, pos)
        if m is None:
            break
        g = m.lastgroup
        if g == "bad":
            return None
        if g == "c":
            body = m.group()
            spans.append(Span(m.start(), m.end(), "c", DIRECTIVE if _DIRECTIVE.match(body) else "plain"))
        elif g == "s" and "\n" in m.group() and _TAG.match(text, m.start()):
            # A tag over several lines: the whitespace between its attributes is
            # markup (XML 1.0 §3.1 "S"), so only the quoted values are kept as they are,
            # and the attribute lines may lose their indentation.
            for v in _QUOTED.finditer(text, m.start(), m.end()):
                spans.append(Span(v.start(), v.end(), "s"))
        else:
            spans.append(Span(m.start(), m.end(), "s"))
        pos = m.end()
    classify_leading_license(text, spans)
    return spans
