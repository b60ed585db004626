"""Code pass: tricky cases per language. Each asserts the exact output, or that a block
we cannot be sure about is left byte-for-byte untouched."""

from __future__ import annotations

import ast
import sys

import pytest

from firsttoken.compress import compress_text


def fence(lang: str, body: str) -> str:
    return f"```{lang}\n{body}```"


def run(lang: str, body: str, level: str = "balanced") -> str:
    out = compress_text(fence(lang, body), level=level).text
    assert out.startswith(f"```{lang}\n") and out.endswith("```"), out
    return out[len(lang) + 4 : -3]


# ---- Python -----------------------------------------------------------------------


def test_python_comments_blank_lines_trailing_space_go_strings_stay() -> None:
    body = 'import os  # the os module\n\n\ndef f(x):   \n    s = "# not a comment"  # real\n    return s\n'
    assert run("python", body) == 'import os\ndef f(x):\n s = "# not a comment"\n return s\n'


def test_python_multiline_string_keeps_blank_lines_and_trailing_spaces() -> None:
    body = 'x = """a   \n\n# not a comment\n   """  # c\ny = 1\n'
    assert run("python", body) == 'x = """a   \n\n# not a comment\n   """\ny = 1\n'


def test_python_docstrings_kept_at_balanced_removed_at_max() -> None:
    body = 'def f():\n    """Doc."""\n    return 1\n\n\nclass C:\n    """Only a docstring."""\n'
    assert run("python", body) == 'def f():\n """Doc."""\n return 1\nclass C:\n """Only a docstring."""\n'
    # At max the docstring goes where a statement remains, never where it is alone.
    assert run("python", body, "max") == 'def f():\n return 1\nclass C:\n """Only a docstring."""\n'


def test_python_docstring_followed_by_string_statement_stays_for_idempotence() -> None:
    body = 'def f():\n """Doc."""\n "not a docstring yet"\n return 1\n'
    assert run("python", body, "max") == body


def test_python_directives_shebang_and_cookie_stay() -> None:
    body = "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\nimport os  # noqa: F401\nx = 1  # type: int\ny = 2  # plain\n"
    assert run("python", body) == "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\nimport os # noqa: F401\nx = 1 # type: int\ny = 2\n"


def test_python_license_header_dropped_at_balanced() -> None:
    body = "# Copyright 2024 Acme\n# Licensed under MIT\n\nimport os\n"
    assert run("python", body) == "import os\n"
    assert run("python", body, "max") == "import os\n"


def test_python_that_does_not_parse_is_untouched() -> None:
    for body in (">>> x = 1  # session\n", "def f(:\n  # c\n", "print 'py2'  # c\n"):
        assert run("python", body) == body


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.11 cannot parse PEP 701 f-strings")
def test_python_312_fstring_untouched_on_311() -> None:
    body = 'songs = {"a": 1}\nx = f"{songs["a"]}"  # nested quotes\n'
    assert run("python", body) == body


@pytest.mark.skipif(sys.version_info < (3, 12), reason="PEP 701 f-strings need 3.12+")
def test_python_312_fstring_kept_whole_on_312() -> None:  # pragma: no cover - runs in Pyodide
    body = 'songs = {"a": 1}\nx = f"{songs["a"]}"  # nested quotes\n'
    assert run("python", body) == 'songs = {"a": 1}\nx = f"{songs["a"]}"\n'


def test_python_fstring_with_hash_in_string_and_format_spec() -> None:
    body = 'x = f"#{1:>4} {\'#\'}"  # c\n'
    out = run("python", body)
    assert out == 'x = f"#{1:>4} {\'#\'}"\n'
    assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(body))


def test_python_crlf_is_kept() -> None:
    body = "x = 1  # c\r\n\r\ny = 2\r\n"
    assert run("python", body) == "x = 1\r\ny = 2\r\n"


def test_python_backslash_continuation_lines_are_not_joined() -> None:
    body = "x = [1, \\\n\n2]\n"
    out = run("python", body)
    assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(body))


# ---- C family, JS/TS ---------------------------------------------------------------


def test_js_url_in_string_regex_with_slashes_nested_templates() -> None:
    body = (
        'const u = "http://example.com"; // trailing\n'
        "const re = /\\/\\/+/g;  /* block */\n"
        "const t = `a ${b + `c // ${d}`} // e`;\n"
        "// whole line\n"
        "const half = a / 2; // division\n"
    )
    assert run("js", body) == (
        'const u = "http://example.com";\n'
        "const re = /\\/\\/+/g;\n"
        "const t = `a ${b + `c // ${d}`} // e`;\n"
        "const half = a / 2;\n"
    )


def test_js_ambiguous_slash_with_quote_is_untouched() -> None:
    body = 'if (ok) /"/.test(s); // c\n'
    assert run("js", body) == body


def test_jsx_is_untouched() -> None:
    body = "function A() {\n  return <p>Visit https://x.com today</p>; // c\n}\n"
    assert run("jsx", body) == body


def test_js_directives_stay_jsdoc_goes() -> None:
    body = '/// <reference path="a.d.ts" />\n/** Doc. */\n// @ts-ignore\nlet x = 1; // eslint-disable-line\nlet y = /*#__PURE__*/ f();\n'
    assert run("ts", body) == '/// <reference path="a.d.ts" />\n// @ts-ignore\nlet x = 1; // eslint-disable-line\nlet y = /*#__PURE__*/ f();\n'


def test_c_comment_between_tokens_becomes_a_space() -> None:
    assert run("c", 'int/*x*/y = 1; /* c */\nchar *s = "/* not */";\n') == 'int y = 1;\nchar *s = "/* not */";\n'


def test_c_line_comment_continued_by_backslash_is_untouched() -> None:
    body = "int x; // comment \\\nstill comment\n"
    assert run("c", body) == body


def test_multiline_block_comment_with_code_after_it_stays() -> None:
    body = "a(); /* one\n two */ b();\nc(); /* gone\n */\n"
    assert run("go", body) == "a(); /* one\n two */ b();\nc();\n"


def test_go_cgo_untouched_and_build_header_kept() -> None:
    cgo = '// #include <stdio.h>\nimport "C"\n'
    assert run("go", cgo) == cgo
    body = "//go:build linux\n\npackage x\n\n// plain\nfunc f() {} //go:noinline\n"
    assert run("go", body) == "//go:build linux\n\npackage x\nfunc f() {} //go:noinline\n"


def test_rust_lifetimes_raw_strings_doc_comments_nested_comments() -> None:
    body = "/// Doc.\nfn f<'a>(s: &'a str) -> &'a str { r#\"// \"quoted\"\"# ; s } // c\n"
    assert run("rust", body) == "/// Doc.\nfn f<'a>(s: &'a str) -> &'a str { r#\"// \"quoted\"\"# ; s }\n"
    assert run("rust", body, "max") == "fn f<'a>(s: &'a str) -> &'a str { r#\"// \"quoted\"\"# ; s }\n"
    nested = "/* a /* b */ c */\nfn g() {}\n"
    assert run("rust", nested) == nested


def test_java_text_block_kept() -> None:
    body = 'String s = """\n    // not a comment\n    """; // c\n'
    assert run("java", body) == 'String s = """\n    // not a comment\n    """;\n'


def test_inner_runs_collapse_outside_strings_only() -> None:
    assert run("go", 'type T struct {\n\tName    string `json:"name"`\n\tS  = "a    b"\n}\n') == (
        'type T struct {\nName string `json:"name"`\nS = "a    b"\n}\n'
    )


# ---- shell, SQL, YAML, markup, CSS -------------------------------------------------------


def test_shell_hash_forms_and_heredoc() -> None:
    body = (
        "echo $# ${#var} a#b \"# q\" '# s' # comment\n"
        "cat <<EOF\n# kept in heredoc\n\nEOF\n"
        "# gone\n"
    )
    assert run("bash", body) == "echo $# ${#var} a#b \"# q\" '# s'\ncat <<EOF\n# kept in heredoc\n\nEOF\n"


def test_shell_escaped_space_and_continuation_are_respected() -> None:
    body = "cp a\\ # c\necho x \\\n\necho y\n"
    out = run("sh", body)
    assert out.startswith("cp a\\ \n")
    assert "echo x \\\n\necho y\n" in out


def test_dockerfile_strings_stay_byte_identical() -> None:
    body = 'RUN echo "a    b" \\\n    && echo \'x \\\n    y\'  # not a comment\n# comment\nCMD ["a",  "b  c"]\n'
    assert run("dockerfile", body) == (
        'RUN echo "a    b" \\\n && echo \'x \\\n    y\' # not a comment\nCMD ["a", "b  c"]\n'
    )
    body = "MAINTAINER O'Brien  # c\n"
    assert run("dockerfile", body) == body


def test_shell_session_is_untouched() -> None:
    body = "$ ls\n# root prompt or comment?\n"
    assert run("bash", body) == body


def test_sql_comments_and_dialect_ambiguity() -> None:
    assert run("sql", "SELECT '--not' AS x -- c\nFROM t; /* c */\n") == "SELECT '--not' AS x\nFROM t;\n"
    for body in ("SELECT 'it\\'s -- x' FROM t;\n", "SELECT 1--1;\n", "# mysql comment\nSELECT 1;\n"):
        assert run("sql", body) == body


def test_sql_dollar_quoted_body_kept() -> None:
    body = "CREATE FUNCTION f() AS $$\n-- inside body\nSELECT 1;\n$$; -- c\n"
    assert run("sql", body) == "CREATE FUNCTION f() AS $$\n-- inside body\nSELECT 1;\n$$;\n"


def test_yaml_block_scalar_and_quotes() -> None:
    body = (
        "# top\n"
        "script: |\n  echo 1  # kept\n\n  # kept too\nkey: 'it''s # not'  # gone\n"
        "plain: don't # gone\n"
    )
    assert run("yaml", body) == (
        "script: |\n  echo 1  # kept\n\n  # kept too\nkey: 'it''s # not'\nplain: don't\n"
    )


def test_yaml_blank_line_inside_plain_scalar_stays() -> None:
    body = "key: first line\n\n  second paragraph\nother: 1\n"
    assert run("yaml", body) == body


def test_html_comments_pre_and_conditional() -> None:
    body = '<p title="<!-- no -->">a<!-- c -->b</p>\n<pre>\n  <!-- in pre -->  \n</pre>\n<!--[if IE]><p>x</p><![endif]-->\n'
    assert run("html", body) == '<p title="<!-- no -->">ab</p>\n<pre>\n  <!-- in pre -->  \n</pre>\n<!--[if IE]><p>x</p><![endif]-->\n'


def test_css_url_with_slashes_and_strings() -> None:
    body = 'a { background: url(//cdn.x/a.png); content: "/* no */"; } /* c */\n'
    assert run("scss", body) == 'a { background: url(//cdn.x/a.png); content: "/* no */"; }\n'


# ---- indentation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lang", "body", "expected"),
    [
        ("c", "int f(void) {\n    if (x) {\n        return 1;\n    }\n}\n", "int f(void) {\nif (x) {\nreturn 1;\n}\n}\n"),
        ("cpp", "  #include <a>\n\tint x;\n", "#include <a>\nint x;\n"),
        ("java", "class A {\n    void f() {\n        g();\n    }\n}\n", "class A {\nvoid f() {\ng();\n}\n}\n"),
        ("go", "func f() {\n\tif x {\n\t\treturn\n\t}\n}\n", "func f() {\nif x {\nreturn\n}\n}\n"),
        ("ts", "function f(): void {\n  const a = 1;\n    return;\n}\n", "function f(): void {\nconst a = 1;\nreturn;\n}\n"),
        ("rust", "impl A {\n    /// Doc.\n    fn f() {}\n}\n", "impl A {\n/// Doc.\nfn f() {}\n}\n"),
        ("css", "a {\n    color: red;\n}\n", "a {\ncolor: red;\n}\n"),
        ("scss", ".a {\n  &:hover {\n    color: red;\n  }\n}\n", ".a {\n&:hover {\ncolor: red;\n}\n}\n"),
        ("sql", "SELECT a\n    FROM t\n   WHERE b = 1;\n", "SELECT a\nFROM t\nWHERE b = 1;\n"),
        ("toml", "[a]\n  b = 1\n  c = [\n    2,\n  ]\n", "[a]\nb = 1\nc = [\n2,\n]\n"),
        ("html", "<ul>\n  <li>a</li>\n    text\n</ul>\n", "<ul>\n<li>a</li>\ntext\n</ul>\n"),
        ("bash", "if true; then\n    echo hi\nfi\n", "if true; then\necho hi\nfi\n"),
        ("dockerfile", "FROM x\n  RUN y\n", "FROM x\nRUN y\n"),
    ],
)
def test_indentation_goes_where_the_language_ignores_it(lang: str, body: str, expected: str) -> None:
    assert run(lang, body) == expected
    assert run(lang, expected) == expected


def test_python_indentation_becomes_one_space_per_level() -> None:
    py = "def f():\n    if x:\n        return 1\n"
    assert run("python", py) == "def f():\n if x:\n  return 1\n"
    # Continuation lines move with their statement; string interiors never move.
    py = 'def f():\n    x = g(a,\n          b)\n    s = """\n    kept\n    """\n    y = 1 + \\\n        2\n'
    assert run("python", py) == 'def f():\n x = g(a,\n       b)\n s = """\n    kept\n    """\n y = 1 + \\\n     2\n'
    # Tabs: the statement line is rewritten, its continuations keep their bytes.
    py = "if x:\n\ty = (1,\n\t     2)\n"
    assert run("python", py) == "if x:\n y = (1,\n\t     2)\n"


def test_indentation_stays_in_yaml() -> None:
    yaml = "a:\n  b:\n    - c\n"
    assert run("yaml", yaml) == yaml


@pytest.mark.parametrize(
    ("lang", "body", "expected"),
    [
        ("c", '  s = R"(\n    kept\n)";\n', 's = R"(\n    kept\n)";\n'),
        ("c", '  s = "a\\\n    kept";\n', 's = "a\\\n    kept";\n'),
        ("js", "  t = `a\n    kept ${x}\n  too`;\n", "t = `a\n    kept ${x}\n  too`;\n"),
        ("go", "\tx := `a\n\t\tkept`\n", "x := `a\n\t\tkept`\n"),
        ("rust", '    let s = "a\n        kept";\n', 'let s = "a\n        kept";\n'),
        ("java", '    String s = """\n        kept\n        """;\n', 'String s = """\n        kept\n        """;\n'),
        ("bash", "  echo 'a\n    kept'\n  cat <<-EOF\n\t\tkept\n\tEOF\n", "echo 'a\n    kept'\ncat <<-EOF\n\t\tkept\n\tEOF\n"),
        ("sql", "  AS $$\n    BEGIN\n    END\n  $$;\n", "AS $$\n    BEGIN\n    END\n  $$;\n"),
        (
            "html",
            "<div>\n  <pre>\n    kept\n  </pre>\n  <textarea>\n  kept</textarea>\n  <script>\n    f();\n  </script>\n</div>\n",
            "<div>\n<pre>\n    kept\n  </pre>\n<textarea>\n  kept</textarea>\n<script>\n    f();\n  </script>\n</div>\n",
        ),
    ],
)
def test_lines_starting_inside_a_string_keep_their_indentation(lang: str, body: str, expected: str) -> None:
    assert run(lang, body) == expected
    assert run(lang, expected) == expected


def test_continued_line_keeps_one_space() -> None:
    assert run("c", "#define M(a) \\\n    ((a) + 1)\n") == "#define M(a) \\\n ((a) + 1)\n"
    assert run("bash", "docker run\\\n    -p 80:80 \\\n    img\n") == "docker run\\\n -p 80:80 \\\n img\n"
    assert run("dockerfile", "RUN a &&\\\n    b\n") == "RUN a &&\\\n b\n"
    # An escaped backslash ends the line: nothing is continued.
    assert run("bash", "echo a\\\\\n    b\n") == "echo a\\\\\nb\n"


def test_directive_comment_keeps_its_indentation() -> None:
    assert run("go", "func f() {\n\t//go:noinline\n\tg()\n}\n") == "func f() {\n\t//go:noinline\ng()\n}\n"
    assert run("ts", "  // @ts-ignore\n  f();\n") == "  // @ts-ignore\nf();\n"


def test_kept_multiline_comment_keeps_its_inner_lines() -> None:
    body = "  /*\n   * TODO: is this still needed?\n   *   indented\n   */\n  int x;\n"
    assert run("c", body) == "/*\n   * TODO: is this still needed?\n   *   indented\n   */\nint x;\n"


def test_multiline_tag_loses_attribute_indentation_values_stay() -> None:
    body = '<View\n    android:id="@+id/a"\n    title=\'a\n    b\'\n    />\n'
    assert run("xml", body) == '<View\nandroid:id="@+id/a"\ntitle=\'a\n    b\'\n/>\n'


def test_indented_fence_dedents_within_its_own_indent() -> None:
    text = "1. Step:\n   ```c\n   int f() {\n       return 1;\n   }\n   ```"
    assert compress_text(text).text == "1. Step:\n   ```c\n   int f() {\n   return 1;\n   }\n   ```"


def test_dedent_keeps_crlf() -> None:
    assert run("java", "class A {\r\n    int x;\r\n}\r\n") == "class A {\r\nint x;\r\n}\r\n"


# ---- fences ---------------------------------------------------------------------------


def test_unknown_language_and_unclosed_fence_untouched() -> None:
    text = "```brainfuck\n+++ # not a comment   \n\n\n```\n\n```python\nx = 1  # c\n"
    assert compress_text(text).text == text


def test_indented_fence_is_reindented() -> None:
    text = "1. Step:\n   ```python\n   x = 1  # c\n\n   y = 2\n   ```"
    assert compress_text(text).text == "1. Step:\n   ```python\n   x = 1\n   y = 2\n   ```"


def test_output_never_closes_the_fence_early() -> None:
    text = "```sh\n``` # c\n```"
    assert compress_text(text).text == text


def test_untouched_reasons_are_reported() -> None:
    r = compress_text(fence("rust", "/* a /* b */ */\n")).report
    assert r.untouched == ("rust: lexer gave up",)
