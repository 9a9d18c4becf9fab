"""Text that goes into the library, checked on the way in and made safe on the way out; and the folded form of
a plan's name under which two names that look the same are the same plan.

On the way in, a name, author, tag or search must be Unicode that UTF-8 can carry: a byte that is not UTF-8
typed on a command line reaches Python as a lone surrogate (PEP 383's surrogateescape), which SQLite would store
and every later reader (the Scenarios page's protobuf, PostgreSQL's driver) would fail on. On the way out,
whatever another tool or an older planner stored is shown with U+FFFD in place of what cannot be shown.

The folded key (stored beside the display name, unique among live plans): NFKC (Unicode UAX #15: compatibility
forms such as full-width letters and ligatures become their plain letters, and a letter plus a combining accent
becomes the one accented letter), then every invisible character removed (format characters, category Cf: zero-
width spaces and joiners, bidi embeddings, overrides and isolates, the soft hyphen, the byte-order mark; and the
default-ignorable marks: the combining grapheme joiner and variation selectors), then combining marks that sit
on no letter or repeat the mark before them dropped, and runs of white space made one space.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from planner.library.tables import MAX_PLAN_ID

# Default-ignorable code points that are combining marks (category Mn), not Cf: the combining grapheme joiner,
# the Mongolian free variation selectors, the variation selectors (Unicode DerivedCoreProperties.txt) and the
# Hangul fillers, which render as nothing.
IGNORABLE_MARKS = frozenset(
    [
        *(0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0, 0x180B, 0x180C, 0x180D, 0x180F),
        *range(0xFE00, 0xFE10),
        *range(0xE0100, 0xE01F0),
    ]
)
SPACES = re.compile(r"\s+")
REPLACEMENT = "\ufffd"


def utf8_problem(text: str) -> str | None:
    """Why `text` cannot be stored as UTF-8 (a byte that was not UTF-8 where it was typed), or None."""
    for index, char in enumerate(text):
        if unicodedata.category(char) == "Cs":
            return f"is not valid UTF-8 text (character {index + 1} is a byte that is not UTF-8)"
    return None


def shown(text: str) -> str:
    """Stored text as it can be shown: anything UTF-8 cannot carry replaced by U+FFFD."""
    if all(unicodedata.category(char) != "Cs" for char in text):
        return text
    return "".join(REPLACEMENT if unicodedata.category(char) == "Cs" else char for char in text)


def _invisible(char: str) -> bool:
    return unicodedata.category(char) == "Cf" or ord(char) in IGNORABLE_MARKS


def fold_name(name: str) -> str:
    """The key two plan names share when they look the same (the display name is stored as typed).

    Removing an invisible character can bring a letter and its mark together, which NFKC then composes: the
    pass repeats until nothing changes (twice for almost every name), so the key of a key is the key itself."""
    folded = _fold_once(name)
    for _ in range(4):
        again = _fold_once(folded)
        if again == folded:
            break
        folded = again
    return folded


def _fold_once(name: str) -> str:
    kept: list[str] = []
    for char in unicodedata.normalize("NFKC", name):
        if _invisible(char):
            continue
        if unicodedata.combining(char) or unicodedata.category(char) == "Mn":
            base = kept[-1] if kept else ""
            previous_mark = unicodedata.normalize("NFD", base)[-1:] if base else ""
            if not base or base.isspace() or previous_mark == char or not _has_letter_before(kept):
                continue  # a mark on nothing, on a space, or repeating the mark before it
        kept.append(char)
    return SPACES.sub(" ", "".join(kept)).strip()


def _has_letter_before(kept: list[str]) -> bool:
    """Whether the marks at the end of `kept` sit on a letter or digit (skipping the marks between)."""
    for char in reversed(kept):
        if unicodedata.category(char) != "Mn" and not unicodedata.combining(char):
            return char.isalnum()
    return False


def plan_id_in(ref: str) -> int | None:
    """The plan id `ref` spells (ASCII digits, 1 to MAX_PLAN_ID), or None."""
    text = ref.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(MAX_PLAN_ID)):
        return None
    number = int(text)
    return number if 1 <= number <= MAX_PLAN_ID else None


class FoldedNames(set[str]):
    """Names in which a name that looks the same as one of them (the same folded key) is found."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        super().__init__(names)
        self.keys = {fold_name(name) for name in self}

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and fold_name(name) in self.keys
