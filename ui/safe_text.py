"""User and file text shown as typed: the one escaping step before any text reaches Streamlit's markdown.

Every message, caption, label and metric that Streamlit renders is markdown (GitHub-flavoured, plus Streamlit's
own `:material/...:` icons, `:smile:` emoji shortcodes, `:red[...]` colour and badge directives and `$...$`
LaTeX). So a GPU name, a file name, a cell value or a link parameter echoed inside one of them can become an
image the browser fetches from another host, a link, an icon or a formula. `plain(text)` returns markdown that
renders as exactly `text`. `tests/test_structure.py` checks that every message in app_pages/ and ui/ built from
variables goes through it.

Measured with Streamlit 1.67 in chromium (tests/e2e/test_markup_injection.py keeps it so):
- a backslash before ASCII punctuation is the CommonMark escape, and it disarms emphasis, code, links, images,
  HTML, tables, strikethrough and `$` LaTeX;
- it does NOT disarm the steps that run on the parsed text: bare `http://` / `www.` / `a@b.c` autolinks, the
  `:streamlit:` logo, and the `:name[...]` directives (an escaped `\\[` still leaves an empty coloured span).
  For those a WORD JOINER (U+2060: invisible, no line break) goes after the `:`, the `@` and before the `.` of
  `www.`, so the text no longer matches their patterns while it reads the same on screen.
"""

from __future__ import annotations

import re

WORD_JOINER = "\u2060"

# Markdown's active characters that a backslash disarms anywhere in a line. `_` only at a word's edge: inside a
# word (n_gpus) it never starts emphasis in CommonMark, and names keep their underscores readable in the source.
_ESCAPED = re.compile(r"([\\`*\[\]<>#|~$&]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z]))")
# Markers that start a block only at the start of a line: lists (- + 1. 1)), setext underlines (= -).
_LEADING_MARKER = re.compile(r"^(\s*)([-+=])")
_LEADING_NUMBER = re.compile(r"^(\s*)(\d+)([.)])(?=\s|$)")  # "1. " starts a list, "127.0.0.1" does not
# Patterns matched on the parsed text, which backslashes cannot reach (see the module note).
# :smile:, :100:, :+1:, :streamlit:, :material/...:, :red[...], http:// — but not "127.0.0.1:8080" or "10: 3".
_COLON = re.compile(r":(?=[^\W\d]|[/+\-\[]|\d[\w+-]*:)")
_AT = re.compile(r"@(?=\S)")  # a@example.com becomes a mailto link
_WWW = re.compile(r"(www)(?=\.)", re.IGNORECASE)  # www.example.com becomes a link
# CommonMark's line endings (\n, \r; no other character ends a line for it): user text is shown on one line,
# so it can never start a heading, list, quote or code block of its own below the sentence it sits in.
_LINE_BREAKS = re.compile(r"[\r\n]+")


def plain(text: object) -> str:
    """Markdown that Streamlit renders as exactly `str(text)`, on one line: no markup, icon, link or formula."""
    shown = one_line(str(text))
    shown = _ESCAPED.sub(r"\\\1", shown)
    shown = _LEADING_MARKER.sub(r"\1\\\2", shown)
    shown = _LEADING_NUMBER.sub(r"\1\2\\\3", shown)
    shown = _COLON.sub(":" + WORD_JOINER, shown)
    shown = _AT.sub("@" + WORD_JOINER, shown)
    return _WWW.sub(r"\1" + WORD_JOINER, shown)


def one_line(text: str) -> str:
    """`text` with each run of line breaks made one space: the words `plain` shows."""
    return _LINE_BREAKS.sub(" ", text)


def plain_lines(text: str) -> list[str]:
    """`plain` per line, for messages whose lines are shown as separate items (a problem list)."""
    return [plain(line) for line in str(text).splitlines() if line.strip()]
