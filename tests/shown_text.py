"""What a reader sees for markdown that ui.safe_text.plain wrote: tests compare the text, not its escaping.

Streamlit drops the backslash of a CommonMark escape (a backslash before ASCII punctuation) and the word joiner
is invisible; both are undone here, so `shown(plain(text)) == text` for one-line text.
"""

from __future__ import annotations

import re

from ui.safe_text import WORD_JOINER

_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def shown(markdown: str) -> str:
    return _ESCAPE.sub(r"\1", markdown).replace(WORD_JOINER, "")
