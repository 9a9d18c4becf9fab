"""Free-text labels (a model shape's name and family) made safe to carry into generated files and messages.

A label is text a person typed or a file name an import took; unlike a catalogue name it may hold any script.
Two rules keep it from ever changing the structure of a file it lands in:

- `check_label` at the boundary (ModelShape's fields): the text is NFC-normalised, every run of white space
  (line and paragraph separators, tabs, NEL included) becomes one space, and what is left must be printable,
  without bidirectional-override or other invisible formatting characters, and at most `limit` characters
  long; otherwise a PlannerError names the offending characters by code point.
- `single_line` wherever text is written into a file or a one-line message (a comment heading a YAML or TOML
  file, a note): the same normalisation, then every character that is not printable is dropped and the result
  cut to a bound. It never raises, so it also cleans text that bypassed validation.
"""

from __future__ import annotations

import re
import unicodedata

from planner.errors import PlannerError

MAX_LABEL_CHARS = 120  # the shape name's bound since it was introduced; a longer name is no name
# Characters that reorder how text is displayed (Unicode's bidirectional embeddings, overrides, isolates and
# marks: UAX #9, table 4). They let a name read differently from what it is ("Trojan Source", CVE-2021-42574).
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Every character Python counts as white space (str.split's set: \t \n \v \f \r, \x1c-\x1f, space, NEL U+0085,
# NBSP, the U+2000 spaces, U+2028 line and U+2029 paragraph separators, ...): one run becomes one space.
_SPACE_RUN = re.compile(r"\s+")


def _folded(text: str) -> str:
    return _SPACE_RUN.sub(" ", unicodedata.normalize("NFC", text)).strip()


def _allowed(ch: str) -> bool:
    # isprintable() is False for control (Cc), format (Cf, which holds the bidi controls and zero-width
    # characters), surrogate, private-use and unassigned code points, and for separators other than the space.
    return ch.isprintable() and ch not in BIDI_CONTROLS


def single_line(text: str, limit: int = 200) -> str:
    """`text` as one printable line of at most `limit` characters, for a file or a message; never raises."""
    kept = "".join(ch for ch in _folded(text) if _allowed(ch))
    return kept if len(kept) <= limit else kept[: limit - 1] + "…"


def check_label(value: str, field: str = "", limit: int = MAX_LABEL_CHARS) -> str:
    """`value` NFC-normalised with its white space folded to single spaces, or a PlannerError when it holds
    characters a label cannot (control, bidi, invisible) or is longer than `limit`.

    Inside a pydantic validator leave `field` empty: the error's location names the field."""
    folded = _folded(value)
    bad = list(dict.fromkeys(ch for ch in folded if not _allowed(ch)))
    if bad:
        shown = ", ".join(f"U+{ord(ch):04X}" for ch in bad[:5])
        kinds = (
            "bidirectional or invisible formatting" if set(bad) & BIDI_CONTROLS else "control or invisible"
        )
        raise PlannerError(
            field,
            f"has {kinds} characters a name cannot use: {shown}",
            value=value,  # shown through repr(), which escapes every character refused here
            allowed=f"printable text, at most {limit} characters",
        )
    if len(folded) > limit:
        raise PlannerError(
            field, "is too long", value=f"{len(folded)} characters", allowed=f"at most {limit} characters"
        )
    return folded
