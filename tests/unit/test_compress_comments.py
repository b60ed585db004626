"""Which comments compression keeps (issue 45, item 5): at ``balanced`` intent stays
(TODO, FIXME, XXX, HACK, BUG, NOTE, questions) and licence headers, commented-out code,
decoration and remarks go; ``max`` drops every comment but directives. Each language
family, the classifier's rules one by one, the report's counts, determinism,
idempotence and the invariants (`compress_invariants`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.unit.compress_invariants import check_text

from firsttoken.compress import compress_messages, compress_text
from firsttoken.compress.code_comments import asks, has_marker, looks_like_code
from firsttoken.compress.report import Report

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = settings(
    max_examples=int(os.environ.get("FIRSTTOKEN_COMPRESS_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def run(lang: str, body: str, level: str = "balanced") -> str:
    out = compress_text(f"```{lang}\n{body}```", level=level).text
    assert out.startswith(f"```{lang}\n") and out.endswith("```"), out
    return out[len(lang) + 4 : -3]


def removed(lang: str, body: str, level: str = "balanced") -> dict[str, object]:
    return compress_text(f"```{lang}\n{body}```", level=level).report.removed_dict()


# ---- every family: what stays at balanced, what goes at max ------------------------------

# (language, body, balanced, max): each body holds a licence header, a rule or banner,
# commented-out code, a remark and intent (markers, questions).
FAMILIES = [
    (
        "python",
        "# Copyright 2024 Acme Corp.\n# Licensed under the MIT License.\n\nimport os\n"
        "# ----------------------------------------\n# x = os.getcwd()\n# for f in files:\n#     print(f)\n"
        "# Read the config once.\n# TODO: cache this?\ndef f(p):\n    # why join here and not in the caller?\n"
        "    return os.path.join(p, 'a')  # FIXME: windows paths\n",
        "import os\n# TODO: cache this?\ndef f(p):\n # why join here and not in the caller?\n"
        " return os.path.join(p, 'a') # FIXME: windows paths\n",
        "import os\ndef f(p):\n return os.path.join(p, 'a')\n",
    ),
    (
        "c",
        "/*\n * Copyright (c) 2024 Acme Corp.\n * SPDX-License-Identifier: MIT\n */\n#include <stdio.h>\n"
        "/* ==================== helpers ==================== */\n// printf(\"debug %d\\n\", n);\n// Counts the lines.\n"
        "int count(int n) {\n    // XXX: overflows past INT_MAX?\n    return n + 1; /* HACK: off by one on purpose */\n}\n",
        "#include <stdio.h>\nint count(int n) {\n// XXX: overflows past INT_MAX?\n"
        "return n + 1; /* HACK: off by one on purpose */\n}\n",
        "#include <stdio.h>\nint count(int n) {\nreturn n + 1;\n}\n",
    ),
    (
        "java",
        "// Copyright 2024 Acme Corp. Licensed under the Apache License 2.0.\n\nclass A {\n"
        "    // -------------------------\n    // int unused = 0;\n    // Adds one.\n    int f(int x) {\n"
        "        // NOTE: x is never negative here\n        return x + 1; // is this the right rounding?\n    }\n}\n",
        "class A {\nint f(int x) {\n// NOTE: x is never negative here\nreturn x + 1; // is this the right rounding?\n}\n}\n",
        "class A {\nint f(int x) {\nreturn x + 1;\n}\n}\n",
    ),
    (
        "go",
        "// Copyright 2024 The Acme Authors. All rights reserved.\n// Use of this source code is governed by a BSD-style license.\n\n"
        "package x\n\n// fmt.Println(n)\n// Double doubles.\nfunc Double(n int) int {\n"
        "\t// BUG(alice): overflows for big n\n\treturn n * 2 // why not n << 1?\n}\n",
        "package x\nfunc Double(n int) int {\n// BUG(alice): overflows for big n\nreturn n * 2 // why not n << 1?\n}\n",
        "package x\nfunc Double(n int) int {\nreturn n * 2\n}\n",
    ),
    (
        "rust",
        "// Licensed under MIT.\n\n// let x = 1;\n// ~~~~~~~~~~~~~~~~~~~~\n/// Doubles.\nfn double(n: u32) -> u32 {\n"
        "    // FIXME: saturating?\n    n * 2 // plain remark\n}\n",
        "/// Doubles.\nfn double(n: u32) -> u32 {\n// FIXME: saturating?\nn * 2\n}\n",
        "fn double(n: u32) -> u32 {\nn * 2\n}\n",
    ),
    (
        "ts",
        "/*! Copyright 2024 Acme, MIT License */\n// console.log(user);\n// Fetch one user.\n"
        "export async function get(id: string): Promise<User> {\n  // TODO(bob): retry on 503\n"
        "  return fetch(`/u/${id}`).then((r) => r.json()); // does this throw on 404?\n}\n",
        "export async function get(id: string): Promise<User> {\n// TODO(bob): retry on 503\n"
        "return fetch(`/u/${id}`).then((r) => r.json()); // does this throw on 404?\n}\n",
        "export async function get(id: string): Promise<User> {\nreturn fetch(`/u/${id}`).then((r) => r.json());\n}\n",
    ),
    (
        "bash",
        "#!/usr/bin/env bash\n# Copyright 2024 Acme. Licensed under the Apache License 2.0.\n\n"
        "# rm -rf \"$BUILD_DIR\"\n# ####################\n# Build the site.\nset -euo pipefail\n"
        "# TODO: why does this need sudo?\nmake build  # HACK: serial build\n",
        "#!/usr/bin/env bash\nset -euo pipefail\n# TODO: why does this need sudo?\nmake build # HACK: serial build\n",
        "#!/usr/bin/env bash\nset -euo pipefail\nmake build\n",
    ),
    (
        "dockerfile",
        "# syntax=docker/dockerfile:1\n# Copyright 2024 Acme. Licensed MIT.\n\nFROM python:3.12\n"
        "# RUN pip install debugpy\n# Install the app.\n# NOTE: pin the base image?\nRUN pip install .\n",
        "# syntax=docker/dockerfile:1\nFROM python:3.12\n# NOTE: pin the base image?\nRUN pip install .\n",
        "# syntax=docker/dockerfile:1\nFROM python:3.12\nRUN pip install .\n",
    ),
    (
        "yaml",
        "# Copyright 2024 Acme. Licensed MIT.\n\nname: ci\n# --------------\n# timeout: 30\n# Runs on every push.\n"
        "on: push\njobs:\n  test:\n    # TODO: add a macOS runner?\n    runs-on: ubuntu-latest\n",
        "name: ci\non: push\njobs:\n  test:\n    # TODO: add a macOS runner?\n    runs-on: ubuntu-latest\n",
        "name: ci\non: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n",
    ),
    (
        "toml",
        "# Copyright 2024 Acme. Licensed MIT.\n\n[tool.x]\n# debug = true\n# The width.\nwidth = 88  # FIXME: 100?\n",
        "[tool.x]\nwidth = 88 # FIXME: 100?\n",
        "[tool.x]\nwidth = 88\n",
    ),
    (
        "sql",
        "-- Copyright 2024 Acme. Licensed MIT.\n\n-- SELECT * FROM users;\n-- Active users.\nSELECT id FROM users\n"
        "-- TODO: index on last_seen?\nWHERE last_seen > now() - interval '1 day';\n",
        "SELECT id FROM users\n-- TODO: index on last_seen?\nWHERE last_seen > now() - interval '1 day';\n",
        "SELECT id FROM users\nWHERE last_seen > now() - interval '1 day';\n",
    ),
    (
        "css",
        "/* Copyright 2024 Acme. Licensed MIT. */\n\n/* ===== Layout ===== */\n/* color: red; */\n/* The grid. */\n"
        ".grid {\n  display: grid; /* NOTE: no IE11 */\n  gap: 1rem; /* why not 2rem? */\n}\n",
        ".grid {\ndisplay: grid; /* NOTE: no IE11 */\ngap: 1rem; /* why not 2rem? */\n}\n",
        ".grid {\ndisplay: grid;\ngap: 1rem;\n}\n",
    ),
    (
        "html",
        "<!-- Copyright 2024 Acme. Licensed MIT. -->\n\n<!-- ========== Header ========== -->\n"
        "<!-- <a href=\"/beta\">Beta</a> -->\n<!-- The nav. -->\n<nav>\n  <!-- TODO: aria-label? -->\n"
        "  <a href=\"/\">Home</a>\n</nav>\n",
        "<nav>\n<!-- TODO: aria-label? -->\n<a href=\"/\">Home</a>\n</nav>\n",
        "<nav>\n<a href=\"/\">Home</a>\n</nav>\n",
    ),
]


@pytest.mark.parametrize(("lang", "body", "balanced", "most"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_each_family_keeps_intent_at_balanced_and_drops_every_comment_at_max(
    lang: str, body: str, balanced: str, most: str
) -> None:
    assert run(lang, body) == balanced
    assert run(lang, body, "max") == most
    for level, out in (("balanced", balanced), ("max", most)):
        assert run(lang, out, level) == out  # idempotent
        assert check_text(f"```{lang}\n{body}```", level) == []


@pytest.mark.parametrize(("lang", "body"), [(f[0], f[1]) for f in FAMILIES], ids=[f[0] for f in FAMILIES])
def test_each_family_reports_what_kind_of_comment_went(lang: str, body: str) -> None:
    kinds = removed(lang, body)["comment_kinds"]
    assert isinstance(kinds, dict)
    assert kinds["license"] >= 1 and kinds["commented_out_code"] == 1 and "intent" not in kinds
    at_max = removed(lang, body, "max")["comment_kinds"]
    assert isinstance(at_max, dict) and at_max["intent"] >= 1


def test_the_corpus_prompt_that_asks_why_its_code_fails_keeps_its_todo() -> None:
    text = (ROOT / "tests/corpus/compress/code-python-02.md").read_text(encoding="utf-8")
    todo = '# TODO: collisions? two users uploading "me.jpg" overwrite each other'
    assert todo in text
    assert todo in compress_text(text).text
    assert todo not in compress_text(text, level="max").text


def test_directives_stay_even_at_max() -> None:
    body = "#!/usr/bin/env python\nimport os  # noqa: F401\n# TODO: drop os\n"
    assert run("python", body, "max") == "#!/usr/bin/env python\nimport os # noqa: F401\n"


# ---- the rules -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["TODO: x", "todo: x", "FIXME", "XXX", "HACK: x", "BUG 123", "NOTE", "Note: x", "note (alice): x",
     "TODO(alice): x", "@todo x", "\\bug x", "see TODO below"],
)
def test_markers(text: str) -> None:
    assert has_marker(text)


@pytest.mark.parametrize("text", ["notes about it", "Bugs are rare", "footnote: x", "NOTICE", "todolist", "debug: on",
                                  "XXXX", "a Note about"])
def test_not_markers(text: str) -> None:
    assert not has_marker(text)


@pytest.mark.parametrize(
    "text",
    ['collisions? two users uploading "me.jpg" overwrite each other', 'why "me.jpg"?', "is this right ?",
     "why?", "really??", "(or is it?)", "¿por qué no?", "これでいいの？", "what about IPv6?  Remember", "?"],
)
def test_questions(text: str) -> None:
    assert asks(text)


@pytest.mark.parametrize(
    "text",
    ["x = a ? b : c", "x?.y", "x ?? y", "colou?r", ".*? lazy", "echo $?", "see https://x.com/a?b=1",
     "(?:abc)", "name?: string", "fetch()?;"],
)
def test_not_questions(text: str) -> None:
    assert not asks(text)


@pytest.mark.parametrize(
    ("family", "text"),
    [
        ("python", "print(x)"), ("python", "x = compute(1)"), ("python", "import os"), ("python", "return None"),
        ("python", "items[0]"), ("python", "if x == 1: pass"),
        ("c", 'printf("%d", n);'), ("c", "#include <stdio.h>"), ("c", "int x = 0"), ("c", "if (x) {"), ("c", "}"),
        ("go", "fmt.Println(n)"), ("go", "x := f()"), ("go", "return nil, err"), ("rust", "let v = vec![1];"),
        ("js", "console.log(user);"), ("js", "await save()"), ("js", "import x from 'y'"),
        ("shell", 'rm -rf "$BUILD"'), ("shell", "export PATH=$HOME/bin:$PATH"), ("shell", "fi"),
        ("dockerfile", "RUN apt-get update"), ("sql", "SELECT * FROM t"), ("sql", "drop table t;"),
        ("yaml", "timeout: 30"), ("toml", "debug = true"), ("css", "color: red;"), ("markup", '<a href="/">x</a>'),
    ],
)
def test_commented_out_code(family: str, text: str) -> None:
    assert looks_like_code(text, family)


@pytest.mark.parametrize(
    ("family", "text"),
    [
        ("python", "not sure"), ("python", "TCP/IP"), ("python", "Returns"), ("python", "YYYY-Www (8)"),
        ("python", "see foo() for why"), ("python", "Usage: foo"), ("python", "print(x)?"),
        ("python", "os.posix_spawn() is not available"),
        ("c", "Front = least recently used, back = most recently used."), ("c", "return early"),
        ("c", "see (above)"), ("c", "does this work (for x)?"),
        ("shell", "cd into the folder"), ("shell", "make sure this runs first"),
        ("sql", "select the newest rows"), ("yaml", "Default: the first of the listed values."),
        ("markup", "The nav."),
    ],
)
def test_prose_is_not_code(family: str, text: str) -> None:
    assert not looks_like_code(text, family)


def test_python_block_commented_out_is_code_together() -> None:
    body = "x = 1\n# for f in files:\n#     print(f)\n# if ok:\n#     go()\n"
    assert removed("python", body)["comment_kinds"] == {"commented_out_code": 1}


def test_a_question_or_marker_keeps_its_whole_sentence() -> None:
    body = (
        "x = 1\n# XXX\n# The cache key ignores the locale.  Which header sets it, if any (for\n"
        "#  requests without cookies)?\n# An unrelated remark.\ny = 2\n"
        "# NOTE: the retry waits twice as long each time\n# and gives up after the fifth try\n# Another remark.\n"
        "# Should the timeout apply to the\n# handshake?  Today it covers only the\n# body.\n# Unrelated.\nz = 3\n"
    )
    assert run("python", body) == (
        "x = 1\n# XXX\n# The cache key ignores the locale.  Which header sets it, if any (for\n"
        "#  requests without cookies)?\ny = 2\n"
        "# NOTE: the retry waits twice as long each time\n# and gives up after the fifth try\n"
        "# Should the timeout apply to the\n# handshake?  Today it covers only the\n# body.\nz = 3\n"
    )


def test_decorations() -> None:
    body = "# ====\n# ---- Setup ----\n#\n/* ********** */\nx = 1\n"
    assert removed("python", "# ====\n# ---- Setup ----\n#\nx = 1\n")["comment_kinds"] == {"decorative": 1}
    box = "/*************\n * Helpers\n *************/\nint x;\n"
    assert removed("c", box)["comment_kinds"] == {"decorative": 1}
    assert body  # the same shapes in C are covered by FAMILIES


def test_intent_inside_a_licence_header_stays() -> None:
    body = "# Copyright 2024 Acme. Licensed MIT.\n# TODO: is the year right?\nimport os\n"
    assert run("python", body) == "# TODO: is the year right?\nimport os\n"


def test_kept_python_comment_takes_the_level_of_the_statement_after_it() -> None:
    body = "def f():\n    if x:\n        y = 1\n        # TODO: why?\n    return y\n"
    assert run("python", body) == "def f():\n if x:\n  y = 1\n # TODO: why?\n return y\n"


# ---- the report ----------------------------------------------------------------------------


def test_report_counts_runs_of_comment_lines_once_and_blank_lines() -> None:
    body = "# a remark\n# that goes on\n\n\nx = 1  # another\n# print(x)\n# print(y)\n"
    assert removed("python", body) == {
        "comments": 3, "comment_kinds": {"remark": 2, "commented_out_code": 1}, "docstrings": 0, "blank_lines": 2,
    }


def test_report_round_trips_and_adds_up_over_messages() -> None:
    text = "```c\n// Copyright 2024 Acme, MIT\nint x; // printf(x);\n```"
    rep = compress_text(text).report
    assert Report.from_dict(json.loads(json.dumps(rep.to_dict()))) == rep
    both = compress_messages([{"role": "user", "content": text}, {"role": "user", "content": text + "\n"}]).report
    assert both.removed_dict()["comment_kinds"] == {"license": 2, "commented_out_code": 2}
    old = {k: v for k, v in rep.to_dict().items() if k != "removed"}  # a cache entry from before
    assert Report.from_dict(old).removed == ()


def test_nothing_removed_reports_nothing() -> None:
    assert compress_text("plain prose").report.removed_dict() == {
        "comments": 0, "comment_kinds": {}, "docstrings": 0, "blank_lines": 0,
    }


# ---- determinism, idempotence, invariants ----------------------------------------------------


def test_same_input_same_output_in_another_process() -> None:
    prompt = "\n\n".join(f"```{lang}\n{body}```" for lang, body, _, _ in FAMILIES)
    here = [compress_text(prompt, level=lv).text for lv in ("balanced", "max")]
    assert here == [compress_text(prompt, level=lv).text for lv in ("balanced", "max")]
    code = (
        "import json, sys\nfrom firsttoken.compress import compress_text\n"
        "p = sys.stdin.read()\nprint(json.dumps([compress_text(p, level=lv).text for lv in ('balanced', 'max')]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT / "py"), "LC_ALL": "C"}
    done = subprocess.run([sys.executable, "-c", code], input=prompt, capture_output=True, text=True, env=env,
                          timeout=120, check=True)
    assert json.loads(done.stdout) == here


_LINES = {
    "python": ["x = 1", "def f():\n    return 2", "# TODO: x?", "# why not y?", "# plain words", "# print(x)",
               "# ----", "# Copyright 2024 A. Licensed MIT.", "#", "y = [1,  2]  # NOTE: n", "# for a in b:\n#     c(a)", ""],
    "c": ["int x = 1;", "// TODO: x?", "/* why? */", "// plain words", "// f(x);", "/* ==== */", "", "}",
          "// Copyright 2024 A.", "int y; // HACK", "/* a\n   b? */", "#define M 1"],
    "bash": ["echo hi", "# TODO: x?", "# rm -rf /tmp/x", "# plain words", "# ----", "", "ls  # why?",
             "# Copyright A", "if true; then\n  :\nfi"],
    "yaml": ["a: 1", "# TODO: x?", "# b: 2", "# plain words", "", "c:\n  d: 3  # why?", "# ---", "- e"],
}


@st.composite
def commented_code(draw: st.DrawFn) -> str:
    lang = draw(st.sampled_from(sorted(_LINES)))
    lines = draw(st.lists(st.sampled_from(_LINES[lang]), min_size=1, max_size=14))
    indent = draw(st.sampled_from(["", "    "])) if lang != "yaml" else ""
    body = "\n".join(indent + ln if ln and lang != "python" else ln for ln in lines) + "\n"
    return f"```{lang}\n{body}```"


@SETTINGS
@given(commented_code(), st.sampled_from(["safe", "balanced", "max"]))
def test_comment_mixes_are_idempotent_and_keep_the_invariants(text: str, level: str) -> None:
    once = compress_text(text, level=level)
    assert compress_text(once.text, level=level).text == once.text
    assert compress_text(text, level=level).text == once.text
    assert check_text(text, level) == []
    if level == "balanced" and not once.report.untouched:
        for marker in ("TODO: x?", "why?", "why not y?", "HACK", "NOTE: n", "b? */"):
            assert text.count(marker) == once.text.count(marker)


def test_many_comment_lines_ending_in_a_colon_stay_cheap() -> None:
    # Each could open a commented-out block: the window search has a budget per text.
    body = "".join(f"# step {i} of the plan:\n" for i in range(3000)) + "x = 1\n"
    text = f"```python\n{body}```"
    once = compress_text(text)
    assert once.text == "```python\nx = 1\n```"
    assert compress_text(once.text).text == once.text
