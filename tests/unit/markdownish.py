"""A Hypothesis generator of markdown-ish prompts (prose, code fences in several
languages, JSON, tables, instruction templates, CRLF), and the compression corpus: what
the compression properties and the compression-state tests draw from."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import strategies as st

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "compress"

_WORDS = st.sampled_from(
    ["word", "the", "`code  span`", "``a ` b``", "\\`", "|", "a|b", "#", "//", "/*", "*/", "{", "}", "[x]", "'", '"',
     "--", "$#", "é", "http://x.y/z", "<!--", "-->", "\\", "```", "~~~", ":", "-"]
)
_SPACES = st.sampled_from([" ", "  ", "   ", "\t", " \t "])
_CODE_LINES = {
    "python": ['x = 1  # c', 's = "# no"', 'def f(a):', '    """Doc."""', '    return a  # r', "", "   ",
               'y = f"{x!r:>3}"', "z = '''a\n\n# in\n'''", "# comment", "    pass", "import os",
               "    y = (1,  # c\n         2)"],
    "js": ['let a = "//no";', "// c", "/* b */ x();", "const r = /a\\/b/g;", "t = `a ${b} // c`;", "", "y = a / 2; // d",
           "/** doc */", "if (a) { b(); }", "  if (b) {", "    t = `x\n    y`;", "\t}", "  /* two\n   lines */ z();",
           "    // @ts-ignore"],
    "c": ['int x = 1; // c', '/* block */', 'char *s = "/* no */";', "#define X 1 /* d */", "", "x = 'a';",
          "  int y = 2;", "#define M(a) \\", "    (a)  \\", "  f(x)\\", "    y;", '\tchar *r = R"(  a\n  b)";',
          '  s = "a\\\n  b";'],
    "go": ["// c", "x := `raw // no`", 'y := "s" // c', "", "type T struct {", "\tA    int", "}",
           "\t\tx := `a\n\t\tb`", "\t//go:noinline"],
    "rust": ["/// doc", "fn f<'a>() {} // c", 'let s = r#"// no"#;', "/* b */", "", "let c = 'x';",
             '    let s = "a\n    b";', "    /// doc", "    //! inner"],
    "sh": ["echo $# # c", "x=${#y}", "cat <<EOF", "# in heredoc", "EOF", "a 'b # c' \"d # e\"", "", "# c",
           "  echo a \\", "    --flag", "x\\", "  y", "  cat <<-EOF", "\t  in", "\tEOF", "  echo 'a\n  b'"],
    "sql": ["SELECT 1; -- c", "/* b */", "SELECT 'a -- b';", "", "FROM t", "    WHERE a = 1", "  $$\n  body\n  $$"],
    "yaml": ["a: 1 # c", "b: |", "  # kept", "  x", "c: 'd # e'", "", "# c", "- f", "  - g", "    h: 1 # c"],
    "html": ["<p>a<!-- c -->b</p>", "<pre>  x  </pre>", '<a href="#">x</a>', "", "<!-- c -->", "  <div",
             '      class="a  b"', "  >", "    text  here", "<pre>\n  x\n</pre>", "  <!--[if IE]>x<![endif]-->"],
    "css": ["a { b: c; } /* d */", 'x { content: "/* no */"; }', "", "/* c */", "  color: red; /* c */",
            "    margin: 0;"],
    "dockerfile": ["FROM x", "RUN a && \\", "    b", 'RUN echo "a    b"  # not a comment', "# c", 'RUN echo "x \\',
                   '    y"', "  ENV A=1", 'CMD ["a",  "b"]', "  # also c"],
    "unknown": ["# x   ", "", "  y  "],
}
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def _block(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["prose", "prose", "fence", "json", "table", "blank"]))
    if kind == "prose":
        lines = []
        for _ in range(draw(st.integers(1, 3))):
            words = draw(st.lists(_WORDS, min_size=1, max_size=8))
            seps = draw(st.lists(_SPACES, min_size=len(words), max_size=len(words)))
            lines.append(draw(st.sampled_from(["", "  ", "    "])) + "".join(w + s for w, s in zip(words, seps)))
        return "\n".join(lines) + "\n"
    if kind == "fence":
        lang = draw(st.sampled_from(sorted(_CODE_LINES)))
        body = "\n".join(draw(st.lists(st.sampled_from(_CODE_LINES[lang]), max_size=8)))
        return f"```{'' if lang == 'unknown' else lang}\n{body}\n```\n"
    if kind == "json":
        value = draw(st.lists(_JSON, max_size=3) | st.dictionaries(st.text(max_size=3), _JSON, max_size=3))
        dumped = json.dumps(value, indent=draw(st.sampled_from([None, 1, 2, 4])))
        return (f"```json\n{dumped}\n```\n" if draw(st.booleans()) else dumped + "\n")
    if kind == "table":
        n = draw(st.integers(1, 3))
        row = lambda: "|" + "|".join(draw(_SPACES) + draw(_WORDS) + draw(_SPACES) for _ in range(n)) + "|\n"  # noqa: E731
        delim = "|" + "|".join(draw(st.sampled_from([":---", "---:", ":-:", "-----"])) for _ in range(n)) + "|\n"
        return row() + delim + "".join(row() for _ in range(draw(st.integers(0, 2))))
    return "\n" * draw(st.integers(1, 3))


_TAGS = st.sampled_from(['<example>', '<example type="bad">', '<example type="good">', "<input>", "<rules>"])
_HEADINGS = st.sampled_from(["# Rules", "## Bad example", "## Good example", "### Example", "Setext\n---"])


@st.composite
def _structured(draw: st.DrawFn) -> str:
    """Blocks wrapped in XML-ish tags or under headings, as prompts show examples."""
    inner = "".join(draw(st.lists(_block(), min_size=1, max_size=3)))
    if draw(st.booleans()):
        tag = draw(_TAGS)
        name = tag[1:].split(">")[0].split()[0]
        gap = draw(st.sampled_from(["", "\n"]))
        return f"{tag}\n{gap}{inner}{gap}</{name}>\n"
    return f"{draw(_HEADINGS)}\n{draw(st.sampled_from(['', chr(10)]))}{inner}"


@st.composite
def markdownish(draw: st.DrawFn) -> str:
    text = "".join(draw(st.lists(_block() | _structured(), min_size=1, max_size=6)))
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text
