"""Every export's text comes from its format's own serializer; nothing is concatenated from user text.

The structure a target means to write (a dict, or a list of command-line words) goes through `json.dumps`,
`yaml.safe_dump`, `tomli_w.dumps` or `shlex.join`, which quote whatever a value holds. Comments, which no
serializer writes, are built here from `single_line` text only (planner.model.labels): NFC, no control,
line- or paragraph-separator or bidi characters, so a comment can never end early and start a key.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

import tomli_w
import yaml

from planner.model.labels import single_line

COMMENT_CHARS = 300  # one comment line's bound: a plan summary is about 150 characters


def comments(lines: Sequence[str]) -> str:
    """`# ` comment lines (YAML and TOML share the syntax), each one sanitised single line."""
    return "".join(f"# {single_line(line, COMMENT_CHARS)}\n" for line in lines)


def json_text(content: dict[str, Any]) -> str:
    return json.dumps(content, indent=2, ensure_ascii=True) + "\n"


def yaml_text(content: dict[str, Any], heading: Sequence[str] = ()) -> str:
    return comments(heading) + yaml.safe_dump(content, sort_keys=False, allow_unicode=False)


def toml_text(content: dict[str, Any], heading: Sequence[str] = ()) -> str:
    return comments(heading) + tomli_w.dumps(content)


def args_text(args: Sequence[Sequence[str]]) -> str:
    """One flag and its values per line, each line `shlex.join`ed.

    The Megatron file is meant to be spliced as `$(cat FILE)`, which splits on white space and does not
    unquote, so every word must be one that needs no quoting at all; a word that would need it is a bug of
    the exporter and raises rather than being written."""
    for arg in args:
        for word in arg:
            if not word or shlex.quote(word) != word:
                raise ValueError(f"command-line word {word!r} would need quoting")
    return "".join(shlex.join(arg) + "\n" for arg in args)
